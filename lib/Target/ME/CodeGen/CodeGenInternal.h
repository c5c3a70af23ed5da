//===- CodeGenInternal.h - Pieces of the ME back end ------------*- C++ -*-===//
//
// Shared by the register allocator, the handler emitter and the packet
// path: physical registers, the allocation of a me.func, and the
// conventions between handler code and the generated packet path.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_TARGET_ME_CODEGEN_CODEGENINTERNAL_H
#define NETVM_LIB_TARGET_ME_CODEGEN_CODEGENINTERNAL_H

#include "Program.h"

#include "ME/MEOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <set>
#include <string>

namespace netvm::me {

/// A physical register (or local-memory slot) of one context.
struct Reg {
  enum Kind { GprA, GprB, XferS, XferD, LM, None } kind = None;
  unsigned index = 0;
  std::string name() const;
  Operand operand() const;
  bool operator==(const Reg &o) const {
    return kind == o.kind && index == o.index;
  }
};

/// The registers the packet path hands a handler (me.arg) and keeps for
/// itself: a0 buffer, b0 length, a1 wire length, b1 input port, b2 tag,
/// a2 watchdog counter; a15 and b15 are the emitter's temporaries.
Reg fixedArgRegister(llvm::StringRef name);
constexpr unsigned watchdogRegA = 2;
constexpr unsigned tempIndex = 15;
/// $$12-$$15 are pkt_read's; the header prefetch uses $$0 up.
constexpr unsigned pktReadXfer = 12;

struct AllocationOptions {
  llvm::SmallVector<unsigned> poolA{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  llvm::SmallVector<unsigned> poolB{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  unsigned firstFreeDramXfer = 0, endDramXfer = pktReadXfer;
  /// SRAM transfer registers $0 .. endSramXfer - 1 ($15 is the packet
  /// path's, for me.send_copy).
  unsigned endSramXfer = 15;
  unsigned spillSlots = 15; // *l$index0[0..14]; [15] is the watchdog budget
};

struct Allocation {
  llvm::DenseMap<mlir::Value, Reg> registers;
  unsigned spills = 0;
};

mlir::LogicalResult allocateRegisters(medialect::FuncOp func,
                                      const AllocationOptions &options,
                                      Allocation &allocation);

/// Where a handler's exits go: labels of the packet path.
struct ExitLabels {
  std::function<std::string(unsigned port)> send;
  std::string drop;
  /// me.drop {logged}: the drop logged as an event.
  std::string dropLogged;
  /// me.drop {counted}: the SRAM word to increment (0: none).
  uint32_t dropCounter = 0;
  std::string raise; // with a15 = pe | kind << 16, b15 = location
  unsigned pe = 0;
  /// The local-memory word (window 0) that says whether the packet holds
  /// the state token; -1: me.state_token is nothing (init handlers,
  /// stateless applications).
  int stateWord = -1;
  /// Appends the code of me.send_copy on `port`; false with an error when
  /// the port does not lead to exactly one sink.
  std::function<bool(unsigned port, CodeSection &section, std::string &error)>
      sendCopy;
};

struct EmitStats {
  unsigned instructions = 0, bankMoves = 0;
};

/// Appends the code of an allocated handler to `section`, its entry at
/// label `entry`.
mlir::LogicalResult emitHandler(medialect::FuncOp func,
                                const Allocation &allocation,
                                const ExitLabels &exits,
                                const std::string &entry, CodeSection &section,
                                EmitStats &stats);

/// Parses one instruction of ME assembly (a line of the packet path); its
/// branch target, if any, is returned in `target`.
Line asmLine(const std::string &text, const std::string &comment = "");

} // namespace netvm::me

#endif // NETVM_LIB_TARGET_ME_CODEGEN_CODEGENINTERNAL_H
