//===- Dma.h - The DMA engine and the interface's features ------*- C++ -*-===//
//
// The cost model of moving bytes between the network processor's DRAM and
// host memory (docs/onload.md, "Cost model"; parameters from seed 002's
// IXP1200 PCI card). A DMA takes three steps: (a) a microengine thread
// writes a descriptor into DRAM, (b) the DMA engine fetches it, (c) the
// engine moves the bytes across the bus, a fixed start plus a time per
// byte. Without pipelining the thread waits for (c) before writing the next
// descriptor; with pipelining two descriptors alternate (double buffering),
// so (a) of one message overlaps (b) and (c) of the previous. Programmed
// I/O by the host (writes into the NP's memory, uncached reads from it) has
// its own start and per-byte costs. All times are ME cycles.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_HOSTIF_DMA_H
#define NETVM_HOSTIF_DMA_H

#include <cstdint>

namespace netvm::hostif {

struct DmaParams {
  unsigned descriptorWrite = 260; // (a)
  unsigned descriptorFetch = 260; // (b)
  unsigned transferStart = 70;    // fixed part of (c)
  double cyclesPerByte = 2.94;    // (c): 204 MB/s at 600 MHz
  /// (c) for DMA reads from host memory: 85 MB/s (seed 002's chipset).
  double readCyclesPerByte = 7.06;
  /// Host programmed I/O: write-combined writes into NP memory (198 MB/s),
  /// and uncached reads of NP memory, a bus round trip per 64-byte burst.
  unsigned pioWriteStart = 60;
  double pioWriteCyclesPerByte = 3.03;
  unsigned pioReadBurstCycles = 600; // per 64 bytes
};

/// The time line of one DMA engine and the thread feeding it descriptors.
class DmaEngine {
public:
  DmaEngine(const DmaParams &params, bool pipelined)
      : params(params), pipelined(pipelined) {}
  /// A transfer of `bytes` whose descriptor can be written from cycle
  /// `ready`: the cycle its data has arrived. `readAt`, if given, gets the
  /// cycle the engine starts reading the source (the source must hold the
  /// bytes until then).
  /// `fromHost`: a read of host memory (its slower rate).
  uint64_t submit(uint64_t ready, uint32_t bytes, uint64_t *readAt = nullptr,
                  bool fromHost = false);
  /// The cycle the engine could take the next descriptor.
  uint64_t idleAt() const { return engineFree; }
  /// The cycles (c) alone would take for `bytes`.
  uint64_t transferCycles(uint32_t bytes, bool fromHost = false) const;

  uint64_t transfers = 0, bytesMoved = 0, busyCycles = 0;

private:
  DmaParams params;
  bool pipelined;
  uint64_t engineFree = 0, writerFree = 0;
  uint64_t doneLast = 0, doneBeforeLast = 0;
};

/// How the host learns about new UP messages.
enum class Notify : uint8_t {
  Polling,    // the host looks every pollInterval cycles
  Interrupts, // an interrupt for every TAIL update
  Adaptive,   // an interrupt, then polling until the ring is empty (NAPI)
};
const char *notifyName(Notify notify);

/// The features of seed 002, each of which can be turned off so that its
/// effect can be measured.
struct Features {
  /// Double-buffered DMA descriptors.
  bool pipelinedDma = true;
  /// HEAD/TAIL updates: at once when the NP side is idle, at most every
  /// updatePeriod cycles under load (otherwise after every message).
  bool adaptiveUpdates = true;
  uint64_t updatePeriod = 120000; // 200 us at 600 MHz (seed 002)
  /// Small messages waiting together go in one DMA of at most combineBytes.
  bool combining = true;
  uint32_t combineBytes = 2048;
  Notify notify = Notify::Adaptive;
  uint64_t pollInterval = 3000; // 5 us
};

} // namespace netvm::hostif

#endif // NETVM_HOSTIF_DMA_H
