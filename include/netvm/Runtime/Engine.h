//===- Engine.h - Running applications, whatever the engine -----*- C++ -*-===//
//
// One interface over the ways netvm runs an application: the reference
// interpreter and native code (JIT-compiled or linked AOT objects, through
// the C runtime of runtime/include/netvm/runtime.h), one packet at a time.
// netvm-run uses it for the interpreter and for pull mode (native code in
// push mode goes through the runtime's runners, which can use threads);
// tests and benchmarks use it to drive either engine the same way.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_ENGINE_H
#define NETVM_RUNTIME_ENGINE_H

#include "netvm/io/PacketIO.h"
#include "netvm/abi.h"

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netvm {
class ApplicationOp;
}

namespace netvm::rt {

/// A packet that left the application.
struct Output {
  unsigned sink = 0;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> info;
  uint32_t seconds = 0, microseconds = 0;
};

/// An exception, as every engine can report it.
struct ExceptionReport {
  std::string kind;     // e.g. "packet_bounds"
  std::string pe;       // NetPE name
  std::string handler;  // init, push, pull
  std::string location; // file:line:col of the NetIL instruction
  std::string detail;   // extra explanation (interpreter only)
};

/// What happened to one packet (or one pull).
struct PacketResult {
  std::vector<Output> outputs;
  std::vector<ExceptionReport> exceptions;
  unsigned drops = 0;
  unsigned unconnected = 0;
};

struct PECounters {
  uint64_t runs = 0, sent = 0, dropped = 0, exceptions = 0;
};

struct EngineOptions {
  /// Loop iterations a packet may run before the watchdog exception.
  uint64_t watchdogBudget = 1u << 20;
  /// Info memory size when no NetPE declares more (interpreter; compiled
  /// applications carry their size).
  uint32_t defaultInfoSize = 64;
};

class Engine {
public:
  virtual ~Engine();

  /// The reference interpreter on `app` (which must outlive the engine).
  static std::unique_ptr<Engine> interpreter(ApplicationOp app,
                                             const EngineOptions &options,
                                             std::string &error);
  /// Native code described by `app` (a JIT-compiled or linked descriptor).
  static std::unique_ptr<Engine> native(const netvm_app_desc *app,
                                        const EngineOptions &options,
                                        std::string &error);

  /// Run the init handlers; returns their exceptions.
  virtual std::vector<ExceptionReport> initialize() = 0;
  /// Push one packet through source `source`.
  virtual PacketResult push(unsigned source, const TracePacket &packet) = 0;
  /// Pull one exchange buffer out of sink `sink`.
  virtual PacketResult pull(unsigned sink) = 0;
  /// Where pulls from sources get their packets.
  virtual void
  setSourcePuller(std::function<std::optional<TracePacket>(unsigned)> fn) = 0;

  virtual llvm::ArrayRef<std::string> sourceNames() const = 0;
  virtual llvm::ArrayRef<std::string> sinkNames() const = 0;
  virtual llvm::ArrayRef<std::string> peNames() const = 0;
  virtual llvm::ArrayRef<uint8_t> dataMemory(unsigned pe) const = 0;
  virtual llvm::MutableArrayRef<uint8_t> mutableDataMemory(unsigned pe) = 0;
  virtual llvm::ArrayRef<uint8_t> sharedMemory() const = 0;
  virtual PECounters counters(unsigned pe) const = 0;
};

} // namespace netvm::rt

#endif // NETVM_RUNTIME_ENGINE_H
