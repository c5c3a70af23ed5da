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
#include <memory>
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
/// The TCP slice (Tcp.cpp): a word per (local port xor remote port)
/// holding the connection's state address (0: none), then the states, 64
/// bytes (two 32-byte lines) each; the ticket that orders the MEs' state
/// updates by packet number, in scratch.
constexpr uint32_t tcpTable = 0x200000, tcpStates = 0x240000;
constexpr uint32_t tcpTicket = 0x2040;
/// The TCP send path: per-connection counters in SRAM (TcpWire.h), the
/// two tickets of the transmitting contexts (the state's turn, the wire's
/// turn) in scratch.
constexpr uint32_t tcpCounters = 0x280000;
constexpr uint32_t tcpTxStateTicket = 0x2044, tcpTxWireTicket = 0x2048;
/// DRAM receive buffers.
constexpr uint32_t bufferBase = 0x100000, bufferBytes = 2048;
/// DRAM transmit buffers (after at most 512 receive buffers).
constexpr uint32_t txBufferBase = 0x200000;

} // namespace netvm::onload

#include <ostream>

#include "netvm/emu/Emulator.h"
#include "netvm/onload/Onload.h"

namespace netvm::onload {
/// Writes the port table and a control block (with its header template)
/// per bound port into SRAM, before the run.
bool setUpSockets(me::Emulator &emulator, const std::vector<uint16_t> &ports,
                  std::string &error);
/// The same for one socket (a session's bind: the others' control blocks
/// and their counters stay as they are).
bool setUpSocket(me::Emulator &emulator, unsigned socket, uint16_t port,
                 std::string &error);

/// Writes the control block of socket `socket` at `block` in SRAM, with
/// the transmit header template of `header` (its addresses and ports).
bool writeControlBlock(me::Emulator &emulator, uint32_t block, unsigned socket,
                       const Datagram &header, std::string &error);

/// Puts the DRAM addresses of `count` receive buffers on FREE_RING.
void putFreeBuffers(netvm_emu_host *host, unsigned count);
/// An ME fault as "ME m context c pc p: reason".
std::string describeFault(const me::Fault &fault);

/// The ME code at `rx_loop` of a receive program: a free buffer into a0,
/// the frame received into it (to `rx_end` at the end of the input), its
/// length in a1, its number in b7 and the arrival cycle in b6.
extern const char *const rxLoopHead;
/// The ME code that puts the entry [a0, a1, a7, b6, now, b7] (buffer,
/// length, kind, arrival, hand-over cycle, number) on TO_HOST.
extern const char *const toHostPut;
/// The ME code at `tx_loop` of a transmit program: an entry from FROM_HOST
/// into a0 (buffer), a1, a7, b6 (its words 1-3); to `tx_end` for a marker.
extern const char *const txLoopHead;
/// The ME code at `rx_end` of a receive program: the end marker (six
/// words) on TO_HOST, then the context stops.
extern const char *const rxEndToHost;

/// The ME code that reads the frame at a0's first 48 bytes into $$0.. and
/// branches to `other` unless it is IPv4 without options carrying
/// `protocol`, to `fragment` for a fragment; sets b0 to 0xffff.
void ipv4Checks(std::ostream &os, unsigned protocol, const char *other,
                const char *fragment);

/// The ME code that adds the B-bank register `value` to the IP header
/// checksum in a3 (its 16-bit field grew by `value`): a3 = ~(~a3 + value),
/// folded; b0 holds 0xffff, b1 is scratch.
void checksumAdd(std::ostream &os, const char *value);

/// The ME code that sums a UDP (protocol 17) or TCP (6) datagram's
/// checksum into a2 (MEProgram.cpp); labels get `prefix`.
void sumLoop(std::ostream &os, const std::string &prefix,
             unsigned protocol = 17);

/// What a Session (Session.cpp) hooks into its machine's two directions in
/// place of the modelled application: the recv() and send() calls and
/// their costs are the session's; the sides charge the rest of the host's
/// work.
struct SessionHooks {
  /// Receive: a datagram of frame `number` (its place on the wire)
  /// reached the socket bound to `port` at cycle `at`.
  std::function<void(uint16_t port, uint32_t srcIp, uint16_t srcPort,
                     const uint8_t *payload, uint32_t length, uint32_t number,
                     uint64_t at)>
      deliver;
  /// Transmit: the control block each datagram's header comes from
  /// (onloader; the session writes the blocks into SRAM).
  std::vector<uint32_t> blocks;
  /// Transmit: a frame left the fabric at `cycle` (datagram `seq`, or
  /// UINT32_MAX if its buffer held none).
  std::function<void(uint32_t seq, const uint8_t *bytes, size_t length,
                     uint64_t cycle)>
      transmitted;
};

/// What the two directions of a session's machine share: one DMA engine
/// and one host processor (its driver, stack and the program take turns).
struct SharedHost {
  explicit SharedHost(const OnloadConfig &config)
      : dma(config.dma, config.features.pipelinedDma) {}
  hostif::DmaEngine dma;
  uint64_t hostFree = 0; // the host is busy until then
};

/// One direction of a session's machine (Session.cpp): its NP side and
/// host, looked at every tick by the session's host function; the traffic
/// it was made with grows as the program feeds and sends.
class Side {
public:
  virtual ~Side();
  /// One look at the machine at the host's clock.
  virtual void step(netvm_emu_host *host) = 0;
  /// Nothing outstanding at `now`: every frame fed has been taken and
  /// handled (receive), every datagram sent has left (transmit).
  virtual bool idle(uint64_t now) const = 0;
  /// A socket was bound to `port` (the next socket number).
  virtual void bound(uint16_t port) { (void)port; }
  /// The transmit side's output (the frames that leave), else null.
  virtual me::PacketOutput *output() { return nullptr; }
};
std::unique_ptr<Side> receiveSide(const OnloadConfig &config,
                                  const Traffic &traffic,
                                  const SessionHooks &hooks,
                                  OnloadResult &result, SharedHost &shared);
std::unique_ptr<Side> transmitSide(const OnloadConfig &config,
                                   const Traffic &traffic,
                                   const SessionHooks &hooks,
                                   OnloadResult &result, SharedHost &shared);
/// The MEs' drop counters (scratch, statsAddress) into `drops`.
void readMeDrops(const me::Emulator &emulator, Drops &drops);

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

/// Takes the next entry off TO_HOST into `w` (entryWords), counting the
/// end markers it passes; false when the ring holds no entry.
bool takeToHost(netvm_emu_host *host, uint32_t *w, unsigned &markers);

/// Takes the buffers on ring TX_DONE (the host's view, no cost).
std::vector<uint32_t> takeDone(netvm_emu_host *host);

/// The frames of `traffic`, in order, as the fabric's input.
class TrafficInput : public me::PacketInput {
public:
  explicit TrafficInput(const Traffic &traffic, bool live = false)
      : traffic(traffic), isLive(live) {}
  ~TrafficInput() override;
  bool next(me::InputPacket &packet) override;
  /// A session's wire: frames fed later are read when the machine resumes.
  bool live() const override { return isLive; }

private:
  const Traffic &traffic;
  size_t index = 0;
  bool isLive;
};
} // namespace netvm::onload

#endif // NETVM_ONLOAD_LAYOUT_H
