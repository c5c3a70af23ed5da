//===- Layout.h - Where the onload layer keeps things on the NP -*- C++ -*-===//
//
// Rings, counters and tables shared by the ME program (MEProgram.cpp) and
// the host side (Receive.cpp). Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_LAYOUT_H
#define NETVM_ONLOAD_LAYOUT_H

#include <cstdint>

namespace netvm::onload {

constexpr unsigned freeRing = 0, toHostRing = 4;
constexpr uint32_t freeRingAddress = 0x0, freeRingWords = 512;
constexpr uint32_t toHostAddress = 0x1000,
                   toHostWords = 1024; // 204 entries of 5 words
constexpr unsigned entryWords = 5;
constexpr uint32_t markerBuffer = 0xffffffff;
/// Scratch counters of refused frames.
constexpr uint32_t statsAddress = 0x2000;
constexpr uint32_t statNotUdp = 0, statFragment = 4, statChecksum = 8,
                   statNoSocket = 12, statMalformed = 16;
/// SRAM: a word per UDP port (its control block's address, 0 for none),
/// then the control blocks, 16 bytes each: socket, datagrams, 2 spare.
constexpr uint32_t portTable = 0x100000;
constexpr uint32_t controlBlocks = 0x140000, controlBlockBytes = 16;
/// DRAM receive buffers.
constexpr uint32_t bufferBase = 0x100000, bufferBytes = 2048;

} // namespace netvm::onload

#endif // NETVM_ONLOAD_LAYOUT_H
