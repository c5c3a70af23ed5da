//===- Result.h - What happened to a packet, whatever the engine -*- C++
//-*-===//
//
// The one result type of netvm: what one packet (or one pull, or the init
// handlers) did inside an application, as every engine reports it. The
// reference interpreter produces it directly, the native engines build it
// from the C runtime's callbacks and runner events, and netvm-run, the
// Python package and the tests read it. Plain C++ over the C ABI's
// numbering (abi.h): no MLIR, so that any client can include it cheaply.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_RESULT_H
#define NETVM_RUNTIME_RESULT_H

#include "netvm/abi.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netvm::rt {

/// A packet that left the application through a sink.
struct Output {
  unsigned sink = 0; // index of the sink (declaration order)
  /// The packet's bytes and info memory; empty when the caller asked for
  /// verdicts only (ResultDetail::Verdicts).
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> info;
  uint32_t seconds = 0, microseconds = 0;
  /// The packet's length (bytes.size() when the bytes are kept).
  uint32_t length = 0;
  /// Its length on the wire (of the packet it came from; 0: unknown).
  uint32_t wireLength = 0;
};

/// An exception, as every engine reports it.
struct ExceptionReport {
  uint32_t kind = 0;    // NETVM_EXC_*
  int pe = -1;          // index of the NetPE, -1 if unknown
  uint32_t handler = 0; // NETVM_HANDLER_*
  std::string location; // file:line:col of the NetIL instruction
  std::string detail;   // extra explanation (the interpreter's)

  /// "packet_bounds", ... (netvm_exception_name).
  const char *kindName() const { return netvm_exception_name(kind); }
  /// "init", "push", "pull" (netvm_handler_name).
  const char *handlerName() const { return netvm_handler_name(handler); }
};

/// What happened to one packet (or one pull, or the init handlers).
struct PacketResult {
  std::vector<Output> outputs;
  std::vector<ExceptionReport> exceptions;
  /// Exchange buffers dropped (netvm.drop, duplicates included, buffers
  /// discarded by exbuf.delete or replaced by pkt.receive).
  unsigned drops = 0;
  /// Exchange buffers sent to an output port that is not connected.
  unsigned unconnected = 0;

  void clear() {
    outputs.clear();
    exceptions.clear();
    drops = unconnected = 0;
  }
  bool empty() const {
    return outputs.empty() && exceptions.empty() && !drops && !unconnected;
  }
};

/// How much of each packet's result a batch reports.
enum class ResultDetail {
  Verdicts, // sinks, lengths, exceptions, drops: no packet or info bytes
  Full,     // everything, bytes and info memory included
};

struct PECounters {
  uint64_t runs = 0, sent = 0, dropped = 0, exceptions = 0;
};

/// Totals over the life of an engine (init handlers included).
struct Counters {
  uint64_t packets = 0; // pushed in
  uint64_t dropped = 0, unconnected = 0;
  uint64_t exceptions[NETVM_EXC_KINDS] = {};

  uint64_t totalExceptions() const {
    uint64_t n = 0;
    for (uint64_t e : exceptions)
      n += e;
    return n;
  }
};

struct SinkCounters {
  uint64_t packets = 0, bytes = 0;
};

} // namespace netvm::rt

#endif // NETVM_RUNTIME_RESULT_H
