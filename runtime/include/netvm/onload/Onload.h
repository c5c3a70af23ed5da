//===- Onload.h - UDP/IP split between the host and the MEs -----*- C++ -*-===//
//
// The onload layer (docs/onload.md): a UDP/IP receive path split three ways
// between microengine code running on the emulator and a host that runs
// the rest of the stack, connected by the host/NP interface
// (netvm/hostif): emu-nic (the MEs only move packets; the host copies them
// out of the NP's memory, checks checksums, takes an interrupt per packet),
// softnic (the MEs verify checksums and DMA whole frames into preallocated
// kernel buffers; the host runs the protocol and copies to the user), and
// onloader (the MEs verify, parse, look up the socket's control block in
// SRAM and DMA the payload straight into that socket's queue in user
// memory; the host only wakes the process). A fourth design, raw, moves
// frames to a user-level poller with no stack at all: the interface's own
// throughput (seed 002). The host's work is real code (parsing, checksums,
// socket lookup, copies) whose cost is counted in host cycles by HostCosts.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_ONLOAD_H
#define NETVM_ONLOAD_ONLOAD_H

#include "netvm/emu/Image.h"
#include "netvm/emu/Machine.h"
#include "netvm/hostif/Dma.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netvm::onload {

enum class Design : uint8_t { EmuNic, SoftNic, Onloader, Raw };
const char *designName(Design design);
bool parseDesign(const std::string &name, Design &design);

/// The host's costs, in host cycles (the host runs at the MEs' clock, as
/// the IXP2350's XScale does). docs/onload.md gives each one's source.
struct HostCosts {
  unsigned interrupt = 2000;  // entry, handler, exit
  unsigned syscall = 1000;    // a system call's crossing
  unsigned wakeup = 800;      // waking a sleeping process
  unsigned protocol = 1500;   // IP and UDP input, socket lookup, queueing
  unsigned poll = 60;         // one look at a ring
  unsigned mapBuffer = 3000;  // pin and map a user buffer for the MEs
  unsigned mapCached = 100;   // ... found in the mapping cache
  unsigned protocolTx = 1200; // UDP and IP output: route, headers
  double copyPerByte = 2.0;   // memcpy between host buffers
  double checksumPerByte = 1.5;
};

struct OnloadConfig {
  Design design = Design::Onloader;
  hostif::Features features;
  hostif::DmaParams dma;
  HostCosts host;
  /// Onloader: keep the mappings of user buffers between calls.
  bool cacheMappings = true;
  /// DRAM packet buffers the MEs receive into, and transmit from.
  unsigned buffers = 128, txBuffers = 48;
  /// The UP ring (emu-nic has none; onloader: one per socket).
  uint32_t upRingBytes = 256 * 1024;
  /// The DOWN ring of send descriptors (64 bytes each, one kept free).
  uint32_t downRingBytes = 64 * 64;
  /// Receiving and transmitting microengines (8 contexts each).
  unsigned rxMEs = 2, txMEs = 2;
  /// Offered load: the line rate in Gbit/s, 0 for lossless input.
  double lineRateGbps = 0;
  /// How often the host side is looked at (ME cycles).
  unsigned tick = 50;
  me::MachineConfig machine;
};

/// A UDP datagram as the traffic generator makes it.
struct Datagram {
  uint32_t srcIp = 0x0a000001, dstIp = 0x0a000002;
  uint16_t srcPort = 5000, dstPort = 9000;
  std::vector<uint8_t> payload;
  bool badChecksum = false; // corrupt the UDP checksum
  bool fragment = false;    // set MF (a first fragment)
};

/// An Ethernet/IPv4/UDP frame carrying `d`, with correct IP and UDP
/// checksums unless asked otherwise.
std::vector<uint8_t> buildFrame(const Datagram &d);

/// The ME program of a design, as assembly (docs/onload.md, "The ME
/// side"); the caller assembles it (netvm/Target/ME/Assembler.h).
std::string meProgram(const OnloadConfig &config);

/// One stage of a message's way from the wire to the socket: its mean over
/// the delivered datagrams, in ME cycles.
struct Stage {
  std::string name;
  double cycles = 0;
};

struct Drops {
  uint64_t fabric = 0; // no receive buffer at the MSF (emulator's count)
  uint64_t meNotUdp = 0, meFragment = 0, meChecksum = 0, meNoSocket = 0,
           meMalformed = 0;
  uint64_t hostNotUdp = 0, hostFragment = 0, hostChecksum = 0, hostNoSocket = 0,
           hostMalformed = 0;
  uint64_t total() const;
};

struct HostCounters {
  uint64_t busyCycles = 0;
  uint64_t interrupts = 0, syscalls = 0, wakeups = 0, polls = 0;
  uint64_t copiedBytes = 0, checksummedBytes = 0, pioReadBytes = 0;
  uint64_t protocolRuns = 0, mappings = 0, mappingHits = 0;
};

struct OnloadResult {
  uint64_t offered = 0;
  uint64_t delivered = 0, deliveredBytes = 0; // payload bytes
  uint64_t corrupted = 0, duplicates = 0, missing = 0;
  Drops drops;
  HostCounters host;
  uint64_t dmaTransfers = 0, dmaBytes = 0, tailUpdates = 0, headUpdates = 0;
  uint64_t combinedMessages = 0; // messages that shared a DMA
  uint64_t firstArrival = 0, lastDelivery = 0, cycles = 0;
  double clockMHz = 0;
  std::vector<Stage> stages;
  std::vector<std::string> faults;
  /// Datagrams (of the ones that should arrive) per second of emulated time
  /// between the first receive and the last delivery.
  double datagramsPerSecond() const;
  double hostCyclesPerDatagram() const;
};

/// What a run should deliver: for every frame, the socket port it goes to
/// and its payload, or dropped (a bad checksum, a fragment, no socket).
struct Traffic {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Datagram> datagrams;
  std::vector<uint16_t> boundPorts; // sockets the application bound
};

/// Generated traffic: `count` datagrams of `payloadBytes` (at least 4: a
/// sequence number leads every payload), spread over `ports` destination
/// ports, every `badEvery`-th with a bad checksum and every
/// `fragmentEvery`-th a fragment (0: none).
Traffic makeTraffic(unsigned count, unsigned payloadBytes, unsigned ports,
                    unsigned badEvery = 0, unsigned fragmentEvery = 0,
                    unsigned unboundEvery = 0);

/// Traffic for the transmit path: `count` datagrams of `payloadBytes` sent
/// from the bound ports 9000.. (round robin) to 10.0.0.1:5000; `frames` are
/// the frames that must leave, byte for byte.
Traffic makeSendTraffic(unsigned count, unsigned payloadBytes, unsigned ports);

/// The header a socket bound to `port` and connected to 10.0.0.1:5000 puts
/// in front of its datagrams, as the onloader's MEs complete it: 42 bytes
/// with zero lengths and the IP checksum of a zero total length.
std::vector<uint8_t> headerTemplate(uint16_t port);
/// The same for the addresses and ports of `header` (its payload and
/// flags are ignored).
std::vector<uint8_t> headerTemplate(const Datagram &header);

/// Runs the transmit path: the application sends every datagram of
/// `traffic` (makeSendTraffic); every frame that leaves the fabric is
/// checked byte for byte against `traffic.frames`.
bool runTransmit(const OnloadConfig &config, const me::Image &image,
                 const Traffic &traffic, OnloadResult &result,
                 std::string &error);

/// Runs the receive path: the assembled `image` of meProgram(config) on the
/// emulator, the interface and the host. Checks every delivered datagram
/// byte for byte against `traffic`.
bool runReceive(const OnloadConfig &config, const me::Image &image,
                const Traffic &traffic, OnloadResult &result,
                std::string &error);

} // namespace netvm::onload

#endif // NETVM_ONLOAD_ONLOAD_H
