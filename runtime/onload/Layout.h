//===- Layout.h - Where the onload layer keeps things on the NP -*- C++ -*-===//
//
// Rings, counters and tables shared by the ME program (MEProgram.cpp) and
// the NP and host sides (Receive.cpp, Transmit.cpp), and the helpers the
// two directions share. Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_LAYOUT_H
#define NETVM_ONLOAD_LAYOUT_H

#include "netvm/onload/Session.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace netvm::onload {

constexpr unsigned freeRing = 0, toHostRing = 4;
constexpr uint32_t freeRingAddress = 0x0, freeRingWords = 512;
constexpr uint32_t toHostAddress = 0x1000,
                   toHostWords = 1024; // 170 entries of 6 words
/// [buffer, length, info, rx stamp, done stamp, packet number]; info is
/// refusedInfo for a frame the MEs refused (its buffer comes back).
constexpr unsigned entryWords = 6;
constexpr uint32_t refusedInfo = 0xfffffffe;
/// Transmit: [buffer, frame length, flags, control block] to the MEs, the
/// buffers back.
constexpr unsigned fromHostRing = 5, txDoneRing = 6;
constexpr uint32_t fromHostAddress = 0x2400, fromHostWords = 256;
constexpr uint32_t txDoneAddress = 0x2800, txDoneWords = 256;
constexpr unsigned txEntryWords = 4;
constexpr uint32_t txFillChecksum = 1, txBuildHeaders = 2;
constexpr uint32_t markerBuffer = 0xffffffff;
/// Scratch counters of refused frames.
constexpr uint32_t statsAddress = 0x2000;
constexpr uint32_t statNotUdp = 0, statFragment = 4, statChecksum = 8,
                   statNoSocket = 12, statMalformed = 16;
/// SRAM: a word per UDP port (its control block's address, 0 for none),
/// then the control blocks, 64 bytes each: socket, datagrams received,
/// datagrams sent, a spare word, and 48 bytes holding the socket's
/// transmit header template (42 bytes used).
constexpr uint32_t portTable = 0x100000;
constexpr uint32_t controlBlocks = 0x140000, controlBlockBytes = 64;
constexpr uint32_t templateOffset = 16;
/// A session's transmit templates for other destinations than the
/// generated traffic's: control blocks after the sockets' (maxSockets).
constexpr uint32_t destinationBlocks =
    controlBlocks + maxSockets * controlBlockBytes;
/// DRAM receive buffers.
constexpr uint32_t bufferBase = 0x100000, bufferBytes = 2048;
/// DRAM transmit buffers (after at most 512 receive buffers).
constexpr uint32_t txBufferBase = 0x200000;

} // namespace netvm::onload

#include "netvm/emu/Emulator.h"
#include "netvm/onload/Onload.h"

namespace netvm::onload {
/// Writes the port table and a control block (with its header template)
/// per bound port into SRAM, before the run.
bool setUpSockets(me::Emulator &emulator, const std::vector<uint16_t> &ports,
                  std::string &error);

/// Writes the control block of socket `socket` at `block` in SRAM, with
/// the transmit header template of `header` (its addresses and ports).
bool writeControlBlock(me::Emulator &emulator, uint32_t block, unsigned socket,
                       const Datagram &header, std::string &error);

/// What a Session (Session.cpp) hooks into a run in place of the modelled
/// application: the recv() and send() calls and their costs are the
/// session's; the runs charge the rest of the host's work.
struct SessionHooks {
  /// Receive: a datagram reached the socket bound to `port`.
  std::function<void(uint16_t port, uint32_t srcIp, uint16_t srcPort,
                     const uint8_t *payload, uint32_t length)>
      deliver;
  /// Transmit: the control block each datagram's header comes from
  /// (onloader), and the blocks to write before the run.
  std::vector<uint32_t> blocks;
  std::vector<std::pair<uint32_t, std::pair<unsigned, Datagram>>> templates;
  /// Transmit: a frame left the fabric (datagram `seq`, or UINT32_MAX if
  /// its buffer held none).
  std::function<void(uint32_t seq, const uint8_t *bytes, size_t length)>
      transmitted;
  /// Emulated cycles after which a run is stopped as stuck (0: none).
  uint64_t maxCycles = 0;
};

/// runReceive and runTransmit with a session's hooks (null: the modelled
/// application).
bool receiveRun(const OnloadConfig &config, const me::Image &image,
                const Traffic &traffic, const SessionHooks *hooks,
                OnloadResult &result, std::string &error);
bool transmitRun(const OnloadConfig &config, const me::Image &image,
                 const Traffic &traffic, const SessionHooks *hooks,
                 OnloadResult &result, std::string &error);

/// Counts datagram `seq` (whose checks passed) as delivered unless it was
/// already; false for a duplicate (counted).
bool countDelivery(OnloadResult &result, std::vector<bool> &seen, uint32_t seq,
                   uint64_t bytes);

/// Per-stage latency sums, named "N name" so that they sort in order.
class StageSums {
public:
  void add(const char *name, uint64_t from, uint64_t to) {
    sums[name] += to >= from ? double(to - from) : 0;
  }
  /// The means over the delivered datagrams, and the emulator's end.
  void finish(OnloadResult &result, const me::Stats &stats) const;

private:
  std::map<std::string, double> sums;
};

/// The machine of a run: the configuration's, with the emulator's own
/// host-crossing cost off (the interface model charges instead).
me::MachineConfig onloadMachine(const OnloadConfig &config);

/// Puts a marker entry on FROM_HOST for every transmitting context.
void stopTransmitters(netvm_emu_host *host, const OnloadConfig &config);

/// Takes the buffers on ring TX_DONE (the host's view, no cost).
std::vector<uint32_t> takeDone(netvm_emu_host *host);

/// The frames of `traffic`, in order, as the fabric's input.
class TrafficInput : public me::PacketInput {
public:
  explicit TrafficInput(const Traffic &traffic) : traffic(traffic) {}
  ~TrafficInput() override;
  bool next(me::InputPacket &packet) override;

private:
  const Traffic &traffic;
  size_t index = 0;
};
} // namespace netvm::onload

#endif // NETVM_ONLOAD_LAYOUT_H
