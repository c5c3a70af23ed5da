//===- Tcp.h - TCP of established connections on the MEs --------*- C++ -*-===//
//
// The onloader's TCP data path for established connections
// (docs/onload.md, "TCP"). Receive: the host sets a connection up
// (the handshake is the host's) and installs its state, two 32-byte SRAM
// lines, with acceptTcp; the MEs verify the TCP checksum, look the
// connection up, hand in-order segments to its socket with rcv_nxt
// advanced and send the cumulative ACK themselves. Everything else of a
// known connection (out of order, duplicate, outside the window, flags
// other than ACK/PSH, options, no payload) is diverted to the host's slow
// path, which reassembles and hands rcv_nxt back to the MEs when it has no
// hole left. TcpReceiver is the plain C++ receive model: the host's slow
// path and, separately instantiated, the reference the runs are checked
// against. Send (runTcpSend): the MEs build the segments from the state
// and process the peer's ACKs; the host retransmits.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_TCP_H
#define NETVM_ONLOAD_TCP_H

#include "netvm/emu/Emulator.h"
#include "netvm/emu/Image.h"
#include "netvm/onload/Onload.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace netvm::onload {

enum TcpFlags : uint8_t {
  TcpFin = 1,
  TcpSyn = 2,
  TcpRst = 4,
  TcpPsh = 8,
  TcpAck = 16
};

/// A TCP segment as the generator makes it (IPv4, no options).
struct TcpSegment {
  uint32_t srcIp = 0x0a000001, dstIp = 0x0a000002;
  uint16_t srcPort = 5000, dstPort = 80;
  uint32_t seq = 0, ack = 0;
  uint8_t flags = TcpAck | TcpPsh;
  uint16_t window = 65535;
  std::vector<uint8_t> payload;
  bool badChecksum = false; // corrupt the TCP checksum
};

/// An Ethernet/IPv4/TCP frame carrying `s`, with correct checksums unless
/// asked otherwise (DF set, TTL 64, IP id 0).
std::vector<uint8_t> buildTcpFrame(const TcpSegment &s);

/// The TCP checksum of the segment in `frame` (Ethernet, IPv4 without
/// options), pseudo-header included, as a receiver verifies it: 0xffff
/// when the checksum is right (the folded sum, not complemented).
uint16_t tcpChecksumSum(const std::vector<uint8_t> &frame);

/// An established connection as the host's handshake leaves it, from the
/// receiver's side: the remote end sends to local.
struct TcpConnection {
  uint32_t localIp = 0x0a000002, remoteIp = 0x0a000001;
  uint16_t localPort = 80, remotePort = 5000;
  uint32_t rcvNxt = 0;     // the peer's ISN + 1
  uint32_t sndNxt = 0;     // our ISN + 1 (the ACKs' sequence number)
  uint16_t window = 65535; // advertised; larger segments go to the host
};

/// The receive side of TCP in plain C++: in-order delivery, reassembly of
/// segments ahead of rcv_nxt (inside the window), duplicates dropped,
/// cumulative ACKs. Sequence numbers wrap.
class TcpReceiver {
public:
  explicit TcpReceiver(uint32_t rcvNxt = 0, uint32_t window = 65535)
      : next(rcvNxt), window(window) {}
  /// A segment's payload at `seq`; returns the ACK it calls for (rcv_nxt
  /// after it).
  uint32_t input(uint32_t seq, const uint8_t *data, size_t length);
  uint32_t rcvNxt() const { return next; }
  /// Data is queued past a hole.
  bool reassembling() const { return !ahead.empty(); }
  const std::vector<uint8_t> &delivered() const { return bytes; }
  uint64_t inOrder = 0, queued = 0, duplicates = 0, outsideWindow = 0;

private:
  void drain();
  uint32_t next, window;
  std::map<uint32_t, std::vector<uint8_t>> ahead; // by offset from `next`
  std::vector<uint8_t> bytes;
};

/// Generated connections: `flows` connections (local port 80 + i, remote
/// 10.0.0.1:5000 + i, + 1000 until its table slot is free; ISNs from the seed,
/// one near the wrap) each sending `segments` segments of `payloadBytes`,
/// interleaved at random; with probability `loss` a segment is lost and
/// retransmitted 3-12 frames later, `reorder` swaps it with the next frame,
/// `duplicate` sends it again later; every `badEvery`-th frame is followed by a
/// copy with a bad checksum (0: none). Deterministic in `seed`.
struct TcpTraffic {
  std::vector<TcpConnection> connections;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<TcpSegment> segments; // frames[i] carries segments[i]
  std::vector<int> connection;      // of frame i, -1 for none
};
struct TcpTrafficOptions {
  unsigned flows = 4, segments = 50, payloadBytes = 512;
  double loss = 0, reorder = 0, duplicate = 0;
  unsigned badEvery = 0;
  uint64_t seed = 1;
};
TcpTraffic makeTcpTraffic(const TcpTrafficOptions &options);

/// The ME program: receiving MEs (config.rxMEs, 8 contexts each), and with
/// `transmit` the transmitting MEs of the send path (config.txMEs).
/// `fastPath` false gives the host path: the MEs move every frame, in
/// order, to the host, which runs the whole receive (checksum included);
/// the transmitting MEs then only send the frames the host built.
std::string tcpMeProgram(const OnloadConfig &config, bool fastPath,
                         bool transmit = false);

struct TcpConnectionResult {
  std::vector<uint8_t> delivered; // the socket's byte stream
  uint64_t fastSegments = 0, divertedSegments = 0, resumes = 0;
  /// Fast segments after the connection's first diverted one: the MEs
  /// took rcv_nxt back from the host.
  uint64_t fastAfterDivert = 0;
};

struct TcpResult {
  std::vector<TcpConnectionResult> connections;
  /// Per frame: the ACK number sent for it by the MEs or the host, if any.
  std::vector<int64_t> meAck, hostAck;
  uint64_t acksSent = 0, badAcks = 0; // ACK frames; wrong headers or sums
  uint64_t meChecksumDrops = 0, hostChecksumDrops = 0;
  uint64_t notTcp = 0, noConnection = 0, inconsistent = 0;
  uint64_t fastSegments = 0, divertedSegments = 0, hostSegments = 0;
  uint64_t hostBusyCycles = 0, meStateSegments = 0, meStateBytes = 0;
  uint64_t firstArrival = 0, lastDelivery = 0, cycles = 0;
  double clockMHz = 0;
  std::vector<std::string> faults;
  /// Payload-carrying segments delivered per second of emulated time
  /// between the first receive and the last delivery.
  double segmentsPerSecond() const;
};

/// The host's accept(), once its handshake is done: installs the state of
/// connection `index` (at most maxTcpConnections) in SRAM and its entry in
/// the connection table. False (with `error`) if its table slot (local
/// port xor remote port) is taken: such a connection would have to run on
/// the host only, which this slice does not build.
constexpr unsigned maxTcpConnections = 1024;
bool acceptTcp(me::Emulator &emulator, unsigned index,
               const TcpConnection &connection, std::string &error);

/// Runs the receive path on the emulator: the host accepts every
/// connection of `traffic`, the frames arrive (lossless input), the MEs and
/// the host do their parts; every delivered byte and ACK is recorded.
bool runTcpReceive(const OnloadConfig &config, const me::Image &image,
                   const TcpTraffic &traffic, bool fastPath, TcpResult &result,
                   std::string &error);

/// The reference: every connection's TcpReceiver fed the frames with good
/// checksums in wire order; per frame the ACK it calls for (-1 for frames
/// of no connection or with bad checksums).
struct TcpReference {
  std::vector<std::vector<uint8_t>> delivered;
  std::vector<int64_t> ack;
};
TcpReference referenceReceive(const TcpTraffic &traffic);

//===----------------------------------------------------------------------===//
// The send path (TcpSend.cpp; docs/onload.md, "TCP")
//===----------------------------------------------------------------------===//

/// Established connections sending to a reference peer over an emulated
/// wire: connection i is 10.0.0.2:80+i (local, the sender) to
/// 10.0.0.1:5000+i (the peer, a TcpReceiver); its application sends `bytes`
/// bytes in send() calls of `sendBytes`, at most `window` bytes
/// unacknowledged. The MEs cut each send into segments of `mss` payload
/// bytes. Frames leaving the fabric reach the peer `delay` cycles later
/// unless lost (`loss`) or held back 3 `delay`s more (`reorder`); the
/// peer ACKs every segment, and its ACKs come back into the fabric the
/// same way. The host retransmits from snd_una (go-back-N) when no ACK has
/// advanced snd_una for `rto` cycles, and one segment at snd_una on the
/// third duplicate ACK (`fastRetransmit`). Connection 0's sequence numbers
/// wrap. Deterministic in `seed`.
struct TcpSendOptions {
  unsigned flows = 2;
  uint32_t bytes = 32 * 1024, sendBytes = 8192;
  unsigned mss = 1460;
  uint32_t window = 16 * 1460;
  double loss = 0, reorder = 0;
  uint64_t seed = 1, delay = 2000, rto = 200000;
  bool fastRetransmit = true;
  /// Data frames the wire loses besides (by their order of leaving the
  /// fabric, from 0): a test's exact losses.
  std::vector<uint64_t> dropData;
  /// Data both ways: the peer also sends `peerBytes` per connection, a
  /// segment of `mss` every 2 `delay` cycles, each carrying its ACK; the
  /// receiving MEs deliver it and ACK it. The peer does not retransmit, so
  /// its data segments are never lost nor held back (the receive path's
  /// losses are the receive runs'); its pure ACKs and everything the local
  /// end sends are.
  uint32_t peerBytes = 0;
};

struct TcpSendConnection {
  TcpConnection connection;         // local: the sender
  std::vector<uint8_t> sent;        // what the application sent
  std::vector<uint8_t> received;    // the peer's byte stream
  uint32_t sndUna = 0, peerAck = 0; // at the end: the host's and the peer's
  uint64_t meAcksAdvanced = 0, meAcksDuplicate = 0, meAcksOld = 0;
  uint64_t meAckedBytes = 0, meSegments = 0, meBytes = 0; // SRAM counters
  uint32_t meSndNxt = 0, meSndUna = 0; // the state's words at the end
  /// Data both ways: what the peer sent, what reached the socket, how far
  /// the local end's ACKs (its ACK frames and data segments) reached the
  /// peer, and the segments the MEs delivered (state word 56).
  std::vector<uint8_t> peerSent, socketReceived;
  uint32_t peerAcked = 0;
  uint64_t meDelivered = 0;
};

struct TcpSendResult {
  std::vector<TcpSendConnection> connections;
  /// Frames that left the fabric: data segments built by the MEs and by
  /// the host (the host path's, and every retransmission), and frames
  /// that failed a check (checksums, addresses, ports, flags, the ACK
  /// number, the payload against the application's bytes).
  uint64_t meSegments = 0, hostSegments = 0, badFrames = 0;
  /// Data both ways: the ACK frames the receiving MEs sent for the peer's
  /// data, the peer's data segments.
  uint64_t meAckFrames = 0, meAckFramesLost = 0, peerSegments = 0;
  uint64_t retransmittedSegments = 0, timeouts = 0, fastRetransmits = 0;
  uint64_t sendCalls = 0;
  /// The wire: data segments lost and held back, the peer's ACKs sent,
  /// lost and held back.
  uint64_t dataLost = 0, dataReordered = 0;
  uint64_t peerAcks = 0, acksLost = 0, acksReordered = 0;
  /// The peer's ACKs still on the wire when the last byte was acknowledged.
  uint64_t acksInFlight = 0;
  /// The host's side of the ACKs: entries the MEs handed over (ME path),
  /// frames the host parsed (host path).
  uint64_t ackEntries = 0, hostAckFrames = 0, inconsistent = 0;
  uint64_t hostBusyCycles = 0, payloadBytes = 0;
  uint64_t firstSend = 0, lastAck = 0, cycles = 0;
  double clockMHz = 0;
  std::vector<std::string> faults;
  /// New segments (not retransmissions) per second and payload Mbit/s
  /// from the first send to the last ACK, emulated time.
  double segmentsPerSecond() const;
  double mbitPerSecond() const;
  /// Host cycles per new segment.
  double hostCyclesPerSegment() const;
};

/// Runs the send path: `fastPath` the ME path (the MEs build and checksum
/// the segments and process the ACKs), else the host path (the host
/// builds every frame and parses every ACK, the MEs move frames). The
/// image is tcpMeProgram(config, fastPath, true).
bool runTcpSend(const OnloadConfig &config, const me::Image &image,
                const TcpSendOptions &options, bool fastPath,
                TcpSendResult &result, std::string &error);

} // namespace netvm::onload

#endif // NETVM_ONLOAD_TCP_H
