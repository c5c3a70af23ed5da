//===- Session.h - A UDP socket stack for programs, over a design -*- C++
//-*-===//
//
// The onload layer (docs/onload.md, "Socket API") driven by a program
// instead of a modelled application: a Session opens the stack of one
// design (emu-nic, softnic, onloader) on ONE emulated machine for its
// whole life (the ME programs loaded once; control blocks, counters,
// rings, buffers and the host-memory rings kept from call to call), binds
// UDP ports to sockets, takes received frames from a wire side (bytes or
// a pcap file), hands datagrams to recv() and sends datagrams through the
// design's transmit path, collecting the frames that leave. Every call
// runs the machine on: the host's costs (OnloadConfig::host) and the
// program's own work (compute) are placed on one emulated time line, so a
// session reports latency and throughput as well as work. The C API over
// it is netvm/onload/socket.h. No exceptions, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_SESSION_H
#define NETVM_ONLOAD_SESSION_H

#include "netvm/emu/Emulator.h"
#include "netvm/onload/Onload.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace netvm::onload {

/// Sockets a stack holds at most: the onloader's control blocks in SRAM
/// (64 bytes each, from Layout.h's controlBlocks); the other designs keep
/// the same limit so that the three accept the same programs.
constexpr unsigned maxSockets = 256;

struct SessionStats {
  /// Host work of the runs and of the calls, on HostCosts' model.
  HostCounters host;
  /// Frames refused, by place, summed over the runs.
  Drops drops;
  uint64_t fed = 0;                         // frames put on the wire
  uint64_t received = 0, receivedBytes = 0; // datagrams handed to recv()
  uint64_t truncated = 0;                   // recv() buffers too small
  uint64_t wouldBlock = 0;                  // recv() with nothing to give
  uint64_t queued = 0;                      // delivered, not yet received
  uint64_t sent = 0, sentBytes = 0;         // send() calls, payload bytes
  uint64_t transmitted = 0;                 // frames that left the fabric
  uint64_t transmitMismatches = 0;          // ... not the host stack's frame
  uint64_t dmaTransfers = 0, dmaBytes = 0, tailUpdates = 0, headUpdates = 0;
  /// Times the machine ran (each call that waits or is charged runs it
  /// on), and the cycle its clock stands at.
  uint64_t runs = 0, cycles = 0;
  double clockMHz = 0;
  /// Summed over the datagrams recv() returned: from the cycle its frame
  /// was fed to the cycle recv() returned it (the copy or mapping done).
  uint64_t receiveLatencyCycles = 0;
  /// Summed over the transmitted frames: from send() to leaving the fabric.
  uint64_t sendLatencyCycles = 0;
  /// The program's own work between calls (compute()).
  uint64_t computeCycles = 0;
};

/// A datagram as recv() returns it.
struct SessionDatagram {
  uint32_t srcIp = 0;
  uint16_t srcPort = 0;
  std::vector<uint8_t> payload;
  /// The cycles its frame was fed and the datagram reached the socket.
  uint64_t fedAt = 0, deliveredAt = 0;
};

struct SharedHost;
struct SessionHooks;
class Side;
class TrafficInput;

class Session {
public:
  enum class Recv { Ok, WouldBlock, Error };

  /// A stack of `config.design` (not raw) running `image`, the assembled
  /// meProgram(config). Null with `error` set if the configuration does
  /// not fit the machine.
  static std::unique_ptr<Session>
  open(const OnloadConfig &config, const me::Image &image, std::string &error);
  ~Session();

  /// The stack's own IPv4 address (the destination of received datagrams
  /// is not checked; it is the source of sent ones). 10.0.0.2 by default.
  void setLocalAddress(uint32_t ip) { localIp = ip; }
  uint32_t localAddress() const { return localIp; }

  enum class Bind { Ok, OutOfRange, InUse, Full };
  /// A socket for UDP port `port` (1-65535) in `socket`; otherwise `error`
  /// says why: the port is out of range or bound already, or the socket
  /// table is full.
  Bind bind(unsigned port, int &socket, std::string &error);
  /// The port of socket `socket`, 0 if there is no such socket.
  unsigned port(int socket) const;

  /// Puts a received frame (Ethernet) on the wire: it reaches the MSF at
  /// the session's clock (now()), when the machine next runs.
  void feed(const uint8_t *frame, size_t length);
  /// Puts every packet of a pcap file (Ethernet) on the wire.
  bool feedPcap(const std::string &path, std::string &error);

  /// The next datagram of `socket`: up to `capacity` bytes copied into
  /// `buffer`, its full length in `length` (more than `capacity`: it was
  /// truncated, as POSIX UDP does, and counted), the sender in `from`.
  /// With none queued, the machine runs on until one reaches the socket
  /// or everything fed has been handled; WouldBlock if the socket got
  /// nothing (the wire is empty: recv never waits longer). The system
  /// call and the copy (or mapping) then take the host's time.
  Recv recv(int socket, uint8_t *buffer, size_t capacity, size_t &length,
            uint32_t &fromIp, uint16_t &fromPort, std::string &error);

  /// Sends `length` bytes (at most 1472: no fragmentation) from `socket`
  /// to `dstIp`:`dstPort` through the design's transmit path: the host
  /// takes it up at its next free moment once the machine runs on (any
  /// later call); flush() runs until it has left (the C API's
  /// transmitted_count and stats_get flush first).
  bool send(int socket, uint32_t dstIp, uint16_t dstPort, const uint8_t *data,
            size_t length, std::string &error);
  /// Runs the machine until everything fed has been handled and every
  /// datagram sent has left the fabric.
  bool flush(std::string &error);
  /// The program's own work between calls (a think time): `cycles` of the
  /// host processor, which the driver and stack preempt (interrupts,
  /// protocol work) while the NP goes on.
  bool compute(uint64_t cycles, std::string &error);
  /// The emulated clock: the cycle the machine stands at.
  uint64_t now() const;
  /// The cycle each transmitted frame left the fabric.
  const std::vector<uint64_t> &transmittedAt() const { return wireOutAt; }
  /// Onloader: the datagram count word of `socket`'s control block in
  /// SRAM, which the receiving MEs increment (false for other designs).
  bool controlBlockCount(int socket, uint32_t &count) const;
  /// The frames that left the fabric so far, in the order they left.
  const std::vector<std::vector<uint8_t>> &transmitted() const {
    return wireOut;
  }

  SessionStats stats() const;
  const OnloadConfig &config() const { return cfg; }

private:
  Session(const OnloadConfig &config, const me::Image &image);
  static uint64_t step(netvm_emu_host *host, void *self);
  /// Runs the machine until `done(cycle)` holds at a look of the host,
  /// within a budget; `what` names the call in errors.
  bool runUntil(const std::function<bool(uint64_t)> &done, const char *what,
                std::string &error);
  /// After a run: a fault, a machine that stopped, a budget exceeded or a
  /// stray datagram is an error.
  bool checkRun(const char *what, uint64_t budget, std::string &error);
  /// The host processor is busy for `cycles` from now (after what it is
  /// busy with): the machine runs until then.
  bool busy(uint64_t cycles, const char *what, std::string &error);
  uint64_t charge(double cycles);

  struct Socket {
    uint16_t port = 0;
    std::deque<SessionDatagram> queue;
  };

  OnloadConfig cfg;
  me::Image image;
  uint32_t localIp = 0x0a000002;
  std::vector<Socket> sockets;
  std::map<uint16_t, int> byPort;
  /// (destination IP << 32 | socket << 16 | port) -> its header's
  /// control block, counted from destinationBlocks.
  std::map<uint64_t, uint32_t> routes;
  /// The machine and what its two directions work on: the frames fed and
  /// the datagrams sent (both only grow), their results so far.
  std::unique_ptr<me::Emulator> machine;
  std::unique_ptr<SharedHost> shared;
  std::unique_ptr<SessionHooks> hooks;
  std::unique_ptr<Traffic> wire, sends;
  std::unique_ptr<OnloadResult> rxResult, txResult;
  std::unique_ptr<TrafficInput> input;
  std::unique_ptr<Side> rxSide, txSide;
  std::vector<uint64_t> fedAt, sentAt;
  std::vector<std::vector<uint8_t>> wireOut;
  std::vector<uint64_t> wireOutAt;
  /// The condition a run waits for, and its deadline.
  const std::function<bool(uint64_t)> *wanted = nullptr;
  uint64_t deadline = 0;
  bool timedOut = false;
  size_t faultsSeen = 0;
  /// Why the machine failed; every later call that runs it fails too.
  std::string failure;
  SessionStats totals;
};

} // namespace netvm::onload

#endif // NETVM_ONLOAD_SESSION_H
