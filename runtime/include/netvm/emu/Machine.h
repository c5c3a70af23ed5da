//===- Machine.h - Configuration of the emulated network processor -*- C++
//-*-===//
//
// The sizes, counts, latencies and rates of the IXP2400-class network
// processor the emulator models. The assembler checks programs against the
// same sizes. docs/me-isa.md ("Machine parameters") gives the default of
// every number and where it comes from.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_MACHINE_H
#define NETVM_EMU_MACHINE_H

#include <cstdint>

namespace netvm::me {

enum class RingOverflow : uint8_t {
  Fault, // a put on a full ring stops the ME (the default)
  Drop,  // the put is dropped and counted
};

struct MachineConfig {
  // Structure.
  unsigned numMEs = 8;
  unsigned controlStore = 4096; // instructions per ME
  unsigned localMemoryWords = 640;
  uint32_t scratchBytes = 16 * 1024;
  uint32_t sramBytes = 8 * 1024 * 1024;
  uint32_t dramBytes = 64 * 1024 * 1024;

  // Clock and timing, in ME cycles.
  double clockMHz = 600;
  unsigned branchPenalty = 3; // taken branch, minus its defer slots
  unsigned swapPenalty = 1;   // a context swap (ctx_arb or ctx_swap[])
  unsigned scratchLatency = 60;
  unsigned sramLatency = 100;
  unsigned dramLatency = 180;
  unsigned hashLatency = 40;
  unsigned rxLatency = 180; // packet in RBUF -> in DRAM + descriptor
  unsigned txLatency = 180; // tx command -> packet left the MSF
  unsigned nnLatency = 4;   // next-neighbour write -> visible to the next ME
  /// Memory controllers: each serves one command at a time, in arrival
  /// order, for commandCycles + ceil(bytes / bytesPerCycle) cycles (0
  /// bytesPerCycle: no transfer time); a command completes at
  /// max(arrival, controller free) + service + latency. All zero: no
  /// queueing (every command takes exactly its latency).
  unsigned scratchCommandCycles = 1, scratchBytesPerCycle = 4;
  unsigned sramCommandCycles = 1, sramBytesPerCycle = 4;
  unsigned dramCommandCycles = 4, dramBytesPerCycle = 4;
  /// SRAM channels, each with its own controller (the settings above) over
  /// an equal, contiguous part of SRAM: channel c serves addresses
  /// [c * sramBytes / sramChannels, (c + 1) * sramBytes / sramChannels).
  unsigned sramChannels = 2;
  /// The host (XScale/PCI) interface: a host ring operation costs the host
  /// hostCrossingCycles + hostWordCycles per word (in ME cycles).
  unsigned hostCrossingCycles = 300, hostWordCycles = 9;
  /// Cross-ME effects are exchanged at quantum boundaries; the quantum is
  /// clamped to the shortest memory latency so memory timing stays exact.
  unsigned quantum = 16;

  // Media switch fabric.
  double lineRateGbps = 0;        // 0: lossless (input waits for free RBUFs)
  unsigned rbufElements = 16;     // packets buffered between wire and MEs
  unsigned maxPacketBytes = 2048; // rx copies at most this much to DRAM

  /// The hash unit multiplies by this polynomial over GF(2), modulo
  /// x^64 + x^4 + x^3 + x + 1.
  uint64_t hashMultiplier = 0x9E3779B97F4A7C15ull;

  RingOverflow ringOverflow = RingOverflow::Fault;
  uint64_t maxCycles = 0; // 0: run until the machine is quiescent
  /// Stop a machine that makes no progress: no memory write or atomic, no
  /// ring put or non-empty get, no packet received or sent, no
  /// next-neighbour write and nothing from the host for this many cycles
  /// (a context spinning forever, or polling rings nothing fills).
  /// 0: never.
  uint64_t stallCycles = 100'000'000;
  /// Count the cycles each instruction issued (MEStats::pcCycles): the
  /// profile the partitioner's cost model is calibrated with.
  bool profile = false;
};

} // namespace netvm::me

#endif // NETVM_EMU_MACHINE_H
