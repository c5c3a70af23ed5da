//===- Session.h - A UDP socket stack for programs, over a design -*- C++
//-*-===//
//
// The onload layer (docs/onload.md, "Socket API") driven by a program
// instead of a modelled application: a Session opens the stack of one
// design (emu-nic, softnic, onloader) on the emulator, binds UDP ports to
// sockets, takes received frames from a wire side (bytes or a pcap file),
// hands datagrams to recv() and sends datagrams through the design's
// transmit path, collecting the frames that leave. The host's costs are
// counted on the model of OnloadConfig::host, per call. The C API over it
// is netvm/onload/socket.h. No exceptions, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_SESSION_H
#define NETVM_ONLOAD_SESSION_H

#include "netvm/onload/Onload.h"

#include <cstddef>
#include <cstdint>
#include <deque>
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
  uint64_t runs = 0, cycles = 0; // emulator runs and their emulated cycles
  double clockMHz = 0;
};

/// A datagram as recv() returns it.
struct SessionDatagram {
  uint32_t srcIp = 0;
  uint16_t srcPort = 0;
  std::vector<uint8_t> payload;
};

class Session {
public:
  enum class Recv { Ok, WouldBlock, Error };

  /// A stack of `config.design` (not raw) running `image`, the assembled
  /// meProgram(config). Null with `error` set if the configuration does
  /// not fit the machine.
  static std::unique_ptr<Session>
  open(const OnloadConfig &config, const me::Image &image, std::string &error);

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

  /// Puts a received frame (Ethernet) on the wire.
  void feed(const uint8_t *frame, size_t length);
  /// Puts every packet of a pcap file (Ethernet) on the wire.
  bool feedPcap(const std::string &path, std::string &error);

  /// The next datagram of `socket`: up to `capacity` bytes copied into
  /// `buffer`, its full length in `length` (more than `capacity`: it was
  /// truncated, as POSIX UDP does, and counted), the sender in `from`.
  /// With none queued, the emulator runs the receive path over the frames
  /// on the wire; WouldBlock if that gave the socket nothing (the wire is
  /// empty: recv never waits).
  Recv recv(int socket, uint8_t *buffer, size_t capacity, size_t &length,
            uint32_t &fromIp, uint16_t &fromPort, std::string &error);

  /// Sends `length` bytes (at most 1472: no fragmentation) from `socket`
  /// to `dstIp`:`dstPort` through the design's transmit path. The frames
  /// leave when flush() runs the sends (the C API's transmitted_count and
  /// stats_get flush first).
  bool send(int socket, uint32_t dstIp, uint16_t dstPort, const uint8_t *data,
            size_t length, std::string &error);
  /// Runs the receive path over the wire and the transmit path over the
  /// sends not yet run.
  bool flush(std::string &error);
  /// The frames that left the fabric so far, in the order they left.
  const std::vector<std::vector<uint8_t>> &transmitted() const {
    return wireOut;
  }

  SessionStats stats() const;
  const OnloadConfig &config() const { return cfg; }

private:
  Session(const OnloadConfig &config, const me::Image &image)
      : cfg(config), image(image) {}
  bool receive(std::string &error);
  void add(const OnloadResult &r);
  uint64_t charge(double cycles);

  struct Socket {
    uint16_t port = 0;
    std::deque<SessionDatagram> queue;
  };
  struct Send {
    int socket = 0;
    Datagram datagram;
  };

  OnloadConfig cfg;
  me::Image image;
  uint32_t localIp = 0x0a000002;
  std::vector<Socket> sockets;
  std::map<uint16_t, int> byPort;
  std::vector<std::vector<uint8_t>> wireIn;
  std::vector<Send> sends;
  /// (destination IP << 32 | socket << 16 | port) -> its header's
  /// control block, counted from destinationBlocks.
  std::map<uint64_t, uint32_t> routes;
  std::vector<std::vector<uint8_t>> wireOut;
  SessionStats totals;
};

} // namespace netvm::onload

#endif // NETVM_ONLOAD_SESSION_H
