//===- AST.h - The parsed form of one NetIL source file ---------*- C++ -*-===//
//
// What the NetIL parser produces and the stack-to-SSA translator consumes:
// the segments of one NetPE (ports, metadata, handlers as instruction lists
// with labels, initialised data) with the source position of everything, so
// that later checks can point at the offending text.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_NETIL_AST_H
#define NETVM_LIB_FRONTEND_NETIL_AST_H

#include "NetVM/NetVMAttributes.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace netvm::netil {

/// The operand syntax of an instruction.
enum class OperandKind {
  None,        // add
  Imm32,       // push 12
  Imm32Pair,   // push2 1, 2
  Imm8,        // popi 2
  Label,       // jcmp.eq L
  OptLabel,    // cmp.s [L] (NetBee's table gives it a label it never uses)
  SwitchTable, // switch N: v: L ... default: L
  PushPort,    // pkt.send out
  PullPort,    // pkt.receive in
  CoproReg,    // copro.in lookup, 3
  CoproInit,   // copro.init lookup, datalabel
};

enum class Opcode : uint16_t {
#define NETIL_OPCODE(Id, Name, Code, Operand, Pops, Pushes) Id,
#define NETIL_UNSUPPORTED(Id, Name, Code, Operand, Reason) Id,
#include "Opcodes.def"
};

struct OpcodeInfo {
  Opcode id;
  llvm::StringRef mnemonic;
  uint8_t code;
  OperandKind operand;
  int pops, pushes;            // -1: depends on the operand
  llvm::StringRef unsupported; // non-empty: why netvm rejects it
};

/// The opcode with this mnemonic, or null.
const OpcodeInfo *lookupOpcode(llvm::StringRef mnemonic);
/// All opcodes, in table order.
llvm::ArrayRef<OpcodeInfo> allOpcodes();

struct SwitchCase {
  uint32_t value;
  std::string label;
  llvm::SMLoc loc;
};

struct Instr {
  const OpcodeInfo *info = nullptr;
  llvm::SMLoc loc;       // the mnemonic
  uint32_t imm = 0;      // Imm32, Imm8, CoproReg register/operation
  uint32_t imm2 = 0;     // second value of push2
  std::string name;      // Label, port or coprocessor name
  llvm::SMLoc nameLoc;   // position of `name`
  std::string dataLabel; // copro.init's initialised-data label
  llvm::SMLoc dataLoc;
  std::vector<SwitchCase> cases;
  std::optional<SwitchCase> defaultCase;

  Opcode op() const { return info->id; }
  /// Values consumed and produced, resolving operand-dependent effects.
  std::pair<unsigned, unsigned> stackEffect() const;
  /// Whether control never continues to the next instruction.
  bool endsFlow() const;
  /// Whether the instruction may branch to `name` or switch cases.
  bool isBranch() const;
};

/// One code segment (.init, .push or .pull).
struct Handler {
  HandlerKind kind;
  llvm::SMLoc loc; // the segment name
  std::optional<uint32_t> maxStack;
  llvm::SMLoc maxStackLoc;
  std::optional<uint32_t> locals;
  llvm::SMLoc localsLoc;
  std::vector<Instr> code;
  /// Label name -> index of the instruction it precedes (code.size() for a
  /// label at the end of the segment).
  llvm::StringMap<unsigned> labels;
  llvm::StringMap<llvm::SMLoc> labelLocs;
  llvm::SMLoc endLoc; // the closing `ends`
};

struct PortDecl {
  std::string name;
  PortKind kind;
  llvm::SMLoc loc;
};

struct Program {
  std::string peName;
  llvm::SMLoc peNameLoc;
  std::vector<PortDecl> ports;
  std::optional<uint32_t> datamemSize;
  llvm::SMLoc datamemLoc;
  std::optional<uint32_t> infoSize;
  llvm::SMLoc infoLoc;
  std::optional<uint32_t> sharedSize; // from set.share
  llvm::SMLoc sharedLoc;
  std::vector<std::pair<std::string, llvm::SMLoc>> coprocessors;
  std::optional<Handler> handlers[3]; // indexed by HandlerKind
  std::vector<uint8_t> data;          // the .data segment
  llvm::StringMap<uint32_t> dataLabels;
  llvm::SMLoc fileLoc; // start of the file, for file-wide diagnostics
};

} // namespace netvm::netil

#endif // NETVM_LIB_FRONTEND_NETIL_AST_H
