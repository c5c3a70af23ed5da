//===- Dma.cpp - The DMA engine's time line ------------------------------===//
//
// Serial or double-buffered descriptors in front of one engine
// (docs/onload.md, "Cost model").
//
//===----------------------------------------------------------------------===//

#include "netvm/hostif/Dma.h"

#include <algorithm>
#include <cmath>

namespace netvm::hostif {

uint64_t DmaEngine::transferCycles(uint32_t bytes, bool fromHost) const {
  double perByte = fromHost ? params.readCyclesPerByte : params.cyclesPerByte;
  return params.transferStart + uint64_t(std::ceil(double(bytes) * perByte));
}

uint64_t DmaEngine::submit(uint64_t ready, uint32_t bytes, uint64_t *readAt,
                           bool fromHost) {
  uint64_t move = params.descriptorFetch + transferCycles(bytes, fromHost);
  uint64_t start, done;
  if (pipelined) {
    // The descriptor's buffer is free once the transfer two back is done.
    uint64_t write = std::max({ready, writerFree, doneBeforeLast});
    uint64_t written = write + params.descriptorWrite;
    writerFree = written;
    start = std::max(written, engineFree);
  } else {
    start = std::max(ready, engineFree) + params.descriptorWrite;
  }
  done = start + move;
  busyCycles += move;
  engineFree = done;
  doneBeforeLast = doneLast;
  doneLast = done;
  ++transfers;
  bytesMoved += bytes;
  if (readAt)
    *readAt = start + params.descriptorFetch;
  return done;
}

const char *notifyName(Notify notify) {
  switch (notify) {
  case Notify::Polling:
    return "polling";
  case Notify::Interrupts:
    return "interrupts";
  case Notify::Adaptive:
    return "adaptive";
  }
  return "?";
}

} // namespace netvm::hostif
