//===- Instance.h - Running compiled applications from Python ---*- C++ -*-===//
//
// One instance of a JIT-compiled application over the C runtime
// (runtime/include/netvm/runtime.h): private data memory, one packet at a
// time (run), many with per-packet verdicts (runBatch) or counted only
// (runCounted, for traces). Plain C++; nothing here touches Python, so that
// the bindings can release the GIL around every call that runs packets.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_PYTHON_INSTANCE_H
#define NETVM_PYTHON_INSTANCE_H

#include "netvm/runtime.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace netvm::python {

struct OutputRecord {
  uint32_t sink = 0;
  std::vector<uint8_t> bytes, info;
  uint32_t seconds = 0, microseconds = 0;
};

struct ExceptionRecord {
  uint32_t kind = 0;
  const netvm_site *site = nullptr; // in the descriptor; may be null
};

/// What happened to one packet.
struct PacketRecord {
  std::vector<OutputRecord> outputs;
  std::vector<ExceptionRecord> exceptions;
  uint64_t dropped = 0, unconnected = 0;
};

/// Per-packet results of a batch, in caller-provided arrays.
struct BatchArrays {
  int32_t *sink;      // first sink the packet left through, or -1
  uint32_t *outputs;  // packets that left (fan-out makes several)
  int32_t *exception; // kind of the first exception, or -1
};

class Instance {
public:
  /// Instantiate `app` (data memory zeroed) and run its init handlers;
  /// throws std::runtime_error if the runtime refuses it.
  Instance(const netvm_app_desc *app, uint64_t watchdog);
  ~Instance();
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;

  const netvm_app_desc *app() const { return desc; }
  const PacketRecord &initRecord() const { return init; }

  /// Push one packet (copied first: the caller's bytes never change).
  PacketRecord run(uint32_t source, const uint8_t *data, uint32_t length,
                   uint32_t wireLength, uint32_t seconds,
                   uint32_t microseconds);
  /// Push `count` packets, in order, filling `out` for each. The packets'
  /// bytes may be modified in place (the caller passes a copy).
  void runBatch(uint32_t source, netvm_packet *packets, size_t count,
                BatchArrays out);
  /// Push `count` packets through the application's batch entry, keeping
  /// only the counters (the fastest way; bytes may change in place).
  void runCounted(uint32_t source, netvm_packet *packets, size_t count);

  uint8_t *data(uint32_t pe, uint32_t &size);
  uint8_t *shared(uint32_t &size);
  netvm_counters counters() const;
  netvm_pe_counters peCounters(uint32_t pe) const;
  void sinkCounters(uint32_t sink, uint64_t &packets, uint64_t &bytes) const;

  /// Marks the instance busy for the lifetime of the guard: one thread at
  /// a time runs packets (the GIL is released meanwhile). Throws
  /// std::runtime_error if another thread is using it.
  class Busy {
  public:
    explicit Busy(Instance &instance);
    ~Busy();

  private:
    Instance &instance;
  };

private:
  enum class Mode { Record, Batch, Count };
  void setMode(Mode mode);
  static void onOutput(void *user, uint32_t sink, const netvm_exbuf *xb);
  static void onException(void *user, uint32_t kind, const netvm_site *site);

  const netvm_app_desc *desc;
  netvm_instance *vm = nullptr;
  Mode mode = Mode::Count;
  PacketRecord current, init;
  BatchArrays batch{};
  uint64_t batchStart = 0; // arrival number of the batch's first packet
  uint64_t batchCount = 0;
  std::vector<uint8_t> scratch;
  std::atomic<bool> busy{false};
};

} // namespace netvm::python

#endif // NETVM_PYTHON_INSTANCE_H
