//===- Interpreter.h - The reference interpreter of netvm -------*- C++ -*-===//
//
// Executes a `netvm.application` directly on its IR, one exchange buffer at
// a time, with the exact semantics of NetIL: init handlers at instantiation,
// persistent data memory, info memory travelling with the packet, fan-out
// duplication, pull ports, coprocessors, and a defined, reported exception
// for every runtime error (out-of-bounds access, division by zero, an
// exhausted watchdog budget). It is the oracle every other execution path is
// tested against, so it favours clarity over speed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_INTERPRETER_INTERPRETER_H
#define NETVM_INTERPRETER_INTERPRETER_H

#include "NetVM/NetVMOps.h"
#include "netvm/Runtime/Result.h"
#include "netvm/coprocessor.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netvm::interp {

struct Options {
  /// Loop iterations (executions of netvm.watchdog) one packet may run,
  /// across all NetPEs it visits, before the watchdog exception (paper
  /// section 3.3). IR without watchdogs is stopped after 256 operations per
  /// unit of budget.
  uint64_t watchdogBudget = 1u << 20;
  /// Info memory size when no NetPE declares more.
  uint32_t defaultInfoSize = 64;
};

// The interpreter reports in the run library's types (Result.h), so that
// its results need no conversion to be compared with other engines'.
using Packet = rt::TracePacket;
using Output = rt::Output;
using Exception = rt::ExceptionReport;
using Result = rt::PacketResult;
using PECounters = rt::PECounters;

class Interpreter {
public:
  ~Interpreter();

  /// Prepare `app` for execution. Fails (with a diagnostic on `app`) if a
  /// NetPE uses an unknown coprocessor. Does not run init handlers.
  static std::unique_ptr<Interpreter> create(ApplicationOp app,
                                             const Options &options);

  /// Run every init handler once, in declaration order. Exceptions raised
  /// by init handlers are returned.
  std::vector<Exception> initialize();

  /// Push one packet in through source number `source`; its info memory
  /// starts as `info` (then zeros) when given, else as zeros.
  Result push(unsigned source, const Packet &packet,
              llvm::ArrayRef<uint8_t> info = {});

  /// Pull one exchange buffer out of sink number `sink`, whose connection
  /// comes from a pull output port or a source. Pulls from sources call
  /// `pullSource`. Returns nothing if the upstream produced nothing.
  Result pull(unsigned sink);

  /// Supplies packets to `netvm.receive` on ports connected to sources.
  void setSourcePuller(std::function<std::optional<Packet>(unsigned)> fn);

  llvm::ArrayRef<std::string> sourceNames() const;
  llvm::ArrayRef<std::string> sinkNames() const;
  llvm::ArrayRef<std::string> peNames() const;
  /// Data memory of NetPE `pe` (declaration order).
  llvm::ArrayRef<uint8_t> dataMemory(unsigned pe) const;
  llvm::MutableArrayRef<uint8_t> mutableDataMemory(unsigned pe);
  llvm::ArrayRef<uint8_t> sharedMemory() const;
  llvm::MutableArrayRef<uint8_t> mutableSharedMemory();
  /// The instance of coprocessor `name` NetPE `pe` uses, or null.
  netvm_copro *coprocessor(unsigned pe, llvm::StringRef name);
  const PECounters &counters(unsigned pe) const;
  /// Total operations executed so far.
  uint64_t operationsExecuted() const;
  /// Count every block's executions into `counts` from now on (null:
  /// stop): the profile the cost model weighs blocks with
  /// (netvm/Analysis/CostModel.h).
  void setBlockCounts(llvm::DenseMap<mlir::Block *, uint64_t> *counts);

  struct Impl;

private:
  explicit Interpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace netvm::interp

#endif // NETVM_INTERPRETER_INTERPRETER_H
