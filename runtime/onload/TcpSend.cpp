//===- TcpSend.cpp - TCP transmit of established connections -------------===//
//
// docs/onload.md, "TCP": the send half of the onloader's TCP data path.
// The application's send() posts a descriptor of its buffer (the mapping
// cache as in UDP); the NP side's DMA reads the payload an MSS at a time
// into transmit buffers; the MEs take snd_nxt and rcv_nxt from the
// connection's state in SRAM, build the headers and the checksum, advance
// snd_nxt and transmit (Tcp.cpp, tcpTxLoop). The peer's ACKs come back
// into the fabric, where the receiving MEs advance snd_una and hand the
// host an entry saying so. Recovery is the host's: a retransmission timer
// (go-back-N from snd_una) and fast retransmit on the third duplicate ACK,
// with frames the host builds itself. The peer is the reference
// TcpReceiver behind a seeded lossy, reordering wire.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Tcp.h"

#include "Bytes.h"
#include "Layout.h"
#include "TcpWire.h"

#include "netvm/emu/Emulator.h"
#include "netvm/hostif/Dma.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>

namespace netvm::onload {

using namespace bytes;
using namespace tcpwire;

double TcpSendResult::segmentsPerSecond() const {
  uint64_t segments = meSegments + hostSegments - retransmittedSegments;
  if (lastAck <= firstSend || !segments)
    return 0;
  return double(segments) * clockMHz * 1e6 / double(lastAck - firstSend);
}

double TcpSendResult::mbitPerSecond() const {
  if (lastAck <= firstSend)
    return 0;
  return double(payloadBytes) * 8 * clockMHz / double(lastAck - firstSend);
}

double TcpSendResult::hostCyclesPerSegment() const {
  uint64_t segments = meSegments + hostSegments - retransmittedSegments;
  return segments ? double(hostBusyCycles) / double(segments) : 0;
}

namespace {

/// The fabric's input: the peer's ACKs as they arrive (live: the run
/// pauses to let the receiving contexts see new ones).
class Wire : public me::PacketInput {
public:
  bool next(me::InputPacket &packet) override {
    if (frames.empty())
      return false;
    packet.bytes = std::move(frames.front());
    frames.pop_front();
    packet.wireLength = 0;
    return true;
  }
  bool live() const override { return open; }
  std::deque<std::vector<uint8_t>> frames;
  bool open = true;
};

/// A segment for the NP side to read and post: built by the MEs (a new
/// segment of the ME path) or by the host (the host path, retransmissions).
struct Segment {
  unsigned connection = 0;
  uint32_t seq = 0, length = 0;
  bool hostBuilt = false, retransmission = false;
};

struct Read {
  uint64_t done = 0;
  Segment segment;
  uint32_t buffer = 0;
};

class TcpSender : public me::PacketOutput {
public:
  TcpSender(const OnloadConfig &config, const TcpSendOptions &options,
            bool fastPath, TcpSendResult &result, me::Emulator &emulator,
            Wire &wire)
      : config(config), options(options), fastPath(fastPath), result(result),
        emulator(emulator), wire(wire),
        dma(config.dma, config.features.pipelinedDma), dataRng(options.seed),
        ackRng(options.seed * 0x9e3779b97f4a7c15ull + 1) {
    for (unsigned i = 0; i < config.txBuffers; ++i)
      buffers.push_back(txBufferBase + i * bufferBytes);
  }
  /// Connection i's state lives at tcpStates + 64 * i.
  void add(const TcpConnection &c, std::vector<uint8_t> data) {
    Conn k;
    k.c = c;
    k.sndUna = k.posted = k.sentEnd = c.sndNxt;
    k.peer = TcpReceiver(c.sndNxt, 0x40000000);
    k.socket = TcpReceiver(c.rcvNxt, 0x40000000);
    k.data = std::move(data);
    k.peerData.resize(options.peerBytes);
    for (size_t b = 0; b < k.peerData.size(); ++b)
      k.peerData[b] = uint8_t(conns.size() * 17 + b * 5 + (b >> 8));
    byPort[c.localPort] = unsigned(conns.size());
    conns.push_back(std::move(k));
  }
  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<TcpSender *>(self)->call(host);
  }
  void transmit(const me::Transmission &t) override;
  void finish();
  bool finished() const { return done; }

private:
  struct Conn {
    TcpConnection c;
    std::vector<uint8_t> data;
    uint32_t sndUna = 0, posted = 0, offered = 0;
    /// The end of what has left (its buffer back on TX_DONE): the timer
    /// runs while snd_una is behind it, and go-back-N resends up to it.
    uint32_t sentEnd = 0;
    uint64_t lastProgress = 0;
    unsigned dupAcks = 0, backoff = 0; // the timeout is rto << backoff
    TcpReceiver peer;
    // Data both ways: the peer's data, how much it sent, how far the
    // local end ACKed it (offsets), when it sends next; the local socket.
    std::vector<uint8_t> peerData;
    uint32_t peerSent = 0, peerAcked = 0;
    uint64_t peerNextAt = 1;
    TcpReceiver socket;
  };
  uint64_t call(netvm_emu_host *host);
  void wireStep(uint64_t now);
  void npSide(netvm_emu_host *host, uint64_t now);
  void entries(netvm_emu_host *host, uint64_t now);
  void acked(unsigned conn, uint32_t una, bool duplicate, uint64_t now);
  void retransmit(unsigned conn, uint32_t from, uint32_t to);
  void application(uint64_t now);
  std::vector<uint8_t> hostFrame(const Segment &s, uint32_t ack) const;
  void peerSends(uint64_t now);
  /// A segment from the peer: its snd_nxt, the ACK of what it received.
  static TcpSegment fromPeer(const Conn &k) {
    TcpSegment s;
    s.srcIp = k.c.remoteIp;
    s.dstIp = k.c.localIp;
    s.srcPort = k.c.remotePort;
    s.dstPort = k.c.localPort;
    s.seq = k.c.rcvNxt + k.peerSent;
    s.ack = k.peer.rcvNxt();
    return s;
  }
  void peerTakesAck(Conn &k, uint32_t ack) {
    uint32_t offset = ack - k.c.rcvNxt;
    if (int32_t(offset - k.peerAcked) > 0)
      k.peerAcked = offset;
  }
  uint64_t charge(double cycles) {
    uint64_t c = uint64_t(std::llround(cycles));
    result.hostBusyCycles += c;
    hostFree += c;
    return c;
  }
  double pioWrite(uint32_t bytes) const {
    return config.dma.pioWriteStart + bytes * config.dma.pioWriteCyclesPerByte;
  }
  /// A host-built segment: output processing, the checksum, the
  /// descriptor written across, and with `copy` its payload copied out of
  /// the user's buffer (a retransmission; the host path's send() copied
  /// its data once already).
  void chargeHostSegment(uint32_t length, bool copy) {
    const HostCosts &h = config.host;
    charge(h.protocolTx + (copy ? h.copyPerByte * length : 0) +
           h.checksumPerByte * (length + 32) + pioWrite(16) + pioWrite(4));
  }

  const OnloadConfig &config;
  const TcpSendOptions &options;
  bool fastPath;
  TcpSendResult &result;
  me::Emulator &emulator;
  Wire &wire;
  hostif::DmaEngine dma;
  std::mt19937_64 dataRng, ackRng;
  std::vector<Conn> conns;
  std::map<uint16_t, unsigned> byPort;
  std::deque<Segment> pending, resend; // resend first
  std::map<uint32_t, Segment> holding; // buffer -> the segment in it
  std::deque<Read> reads;
  std::vector<uint32_t> buffers;
  std::multimap<uint64_t, std::pair<unsigned, std::vector<uint8_t>>> toPeer;
  std::multimap<uint64_t, std::vector<uint8_t>> toFabric;
  uint32_t number = 0;
  uint64_t dataFrames = 0;
  uint64_t hostFree = 0;
  unsigned markers = 0, nextConn = 0;
  bool started = false, done = false;
};

std::vector<uint8_t> TcpSender::hostFrame(const Segment &s,
                                          uint32_t ack) const {
  const Conn &k = conns[s.connection];
  TcpSegment seg;
  seg.srcIp = k.c.localIp;
  seg.dstIp = k.c.remoteIp;
  seg.srcPort = k.c.localPort;
  seg.dstPort = k.c.remotePort;
  seg.seq = s.seq;
  seg.ack = ack;
  seg.window = k.c.window;
  uint32_t offset = s.seq - k.c.sndNxt;
  seg.payload.assign(k.data.begin() + offset,
                     k.data.begin() + offset + s.length);
  std::vector<uint8_t> f = buildTcpFrame(seg);
  // buildTcpFrame addresses the local end; this frame leaves it.
  std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
  return f;
}

void TcpSender::transmit(const me::Transmission &t) {
  std::vector<uint8_t> f(t.bytes, t.bytes + t.length);
  const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  // A data segment of the send path, or (data both ways) an ACK the
  // receiving MEs sent for the peer's data.
  bool pureAck = f.size() == 54;
  bool ok = f.size() >= 54 && std::equal(macs, macs + 12, f.begin()) &&
            get16(&f[12]) == 0x0800 && f[14] == 0x45 &&
            get16(&f[16]) + 14u == f.size() && get16(&f[20]) == 0x4000 &&
            f[22] == 64 && f[23] == 6 && fold(sum16(&f[14], 20)) == 0xffff &&
            tcpChecksumSum(f) == 0xffff &&
            get16(&f[46]) == (pureAck ? 0x5010 : 0x5018) && get16(&f[52]) == 0;
  auto it = ok ? byPort.find(uint16_t(get16(&f[34]))) : byPort.end();
  if (it == byPort.end()) {
    ++result.badFrames;
    return;
  }
  unsigned conn = it->second;
  const Conn &k = conns[conn];
  uint32_t length = uint32_t(f.size() - 54);
  uint32_t offset = get32(&f[38]) - k.c.sndNxt;
  // The ACK number: no further than the peer's data sent.
  uint32_t acked = get32(&f[42]) - k.c.rcvNxt;
  if (get32(&f[26]) != k.c.localIp || get32(&f[30]) != k.c.remoteIp ||
      get16(&f[36]) != k.c.remotePort || acked > k.peerSent ||
      get16(&f[48]) != k.c.window || length > options.mss ||
      uint64_t(offset) + length > k.data.size() ||
      !std::equal(f.begin() + 54, f.end(), k.data.begin() + offset)) {
    ++result.badFrames;
    return;
  }
  bool meBuilt = t.hasTag && (t.tag >> 24) & txTcpBuild;
  if (pureAck)
    ++result.meAckFrames;
  else
    ++(meBuilt ? result.meSegments : result.hostSegments);
  std::uniform_real_distribution<double> coin(0, 1);
  bool drop = coin(dataRng) < options.loss;
  if (pureAck && drop) {
    ++result.meAckFramesLost;
    return;
  }
  uint64_t index = pureAck ? 0 : dataFrames++;
  if (drop || (!pureAck && std::count(options.dropData.begin(),
                                      options.dropData.end(), index))) {
    ++result.dataLost;
    return;
  }
  uint64_t at = t.cycle + options.delay;
  if (coin(dataRng) < options.reorder) {
    ++result.dataReordered;
    at += 3 * options.delay;
  }
  toPeer.emplace(at, std::make_pair(conn, std::move(f)));
}

void TcpSender::wireStep(uint64_t now) {
  std::uniform_real_distribution<double> coin(0, 1);
  while (!toPeer.empty() && toPeer.begin()->first <= now) {
    auto node = toPeer.extract(toPeer.begin());
    uint64_t at = node.key();
    auto &[conn, f] = node.mapped();
    Conn &k = conns[conn];
    // The peer's events in time order: its data sent before this frame
    // arrived is before its ACK on the wire (which carries its snd_nxt).
    peerSends(at);
    peerTakesAck(k, get32(&f[42]));
    if (f.size() == 54)
      continue; // an ACK of the peer's data: not ACKed in turn
    k.peer.input(get32(&f[38]), f.data() + 54, f.size() - 54);
    TcpSegment a = fromPeer(k);
    a.flags = TcpAck;
    ++result.peerAcks;
    if (coin(ackRng) < options.loss) {
      ++result.acksLost;
      continue;
    }
    at += options.delay;
    if (coin(ackRng) < options.reorder) {
      ++result.acksReordered;
      at += 3 * options.delay;
    }
    toFabric.emplace(at, buildTcpFrame(a));
  }
  peerSends(now);
  bool fed = false;
  while (!toFabric.empty() && toFabric.begin()->first <= now) {
    wire.frames.push_back(std::move(toFabric.begin()->second));
    toFabric.erase(toFabric.begin());
    fed = true;
  }
  if (fed)
    emulator.pause(); // the receiving contexts read the wire on resuming
}

void TcpSender::peerSends(uint64_t now) {
  for (Conn &k : conns) {
    while (k.peerSent < k.peerData.size() && k.peerNextAt <= now) {
      TcpSegment d = fromPeer(k);
      uint32_t length = std::min<uint32_t>(
          options.mss, uint32_t(k.peerData.size()) - k.peerSent);
      d.payload.assign(k.peerData.begin() + k.peerSent,
                       k.peerData.begin() + k.peerSent + length);
      k.peerSent += length;
      ++result.peerSegments;
      toFabric.emplace(k.peerNextAt + options.delay, buildTcpFrame(d));
      k.peerNextAt += 2 * options.delay;
    }
  }
}

void TcpSender::npSide(netvm_emu_host *host, uint64_t now) {
  for (uint32_t b : takeDone(host)) {
    buffers.push_back(b);
    auto it = holding.find(b);
    if (it == holding.end())
      continue;
    Conn &k = conns[it->second.connection];
    uint32_t end = it->second.seq + it->second.length;
    if (it->second.retransmission)
      k.lastProgress = now; // a retransmission left: the timer restarts
    if (int32_t(end - k.sentEnd) > 0) {
      if (k.sentEnd == k.sndUna)
        k.lastProgress = now; // the timer starts
      k.sentEnd = end;
    }
    holding.erase(it);
  }
  // Reads complete in order (one DMA engine): post their entries in order,
  // the entries' numbers order the MEs' work.
  while (!reads.empty() && reads.front().done <= now) {
    const Read &r = reads.front();
    const Segment &s = r.segment;
    const Conn &k = conns[s.connection];
    uint32_t flags = 0, length;
    if (s.hostBuilt) {
      // The ACK number: rcv_nxt as the MEs have it, or the host's own.
      uint32_t ack = k.socket.rcvNxt();
      uint8_t word[4];
      if (fastPath &&
          netvm_emu_host_read(host, NETVM_EMU_SRAM,
                              tcpStates + s.connection * stateBytes + 12, word,
                              4) == 0)
        ack = get32(word);
      std::vector<uint8_t> f = hostFrame(s, ack);
      length = uint32_t(f.size());
      netvm_emu_host_write(host, NETVM_EMU_DRAM, r.buffer, f.data(), length);
    } else {
      flags = txTcpBuild;
      length = s.length;
      netvm_emu_host_write(host, NETVM_EMU_DRAM, r.buffer + 54,
                           k.data.data() + (s.seq - k.c.sndNxt), length);
    }
    uint32_t entry[txEntryWords] = {r.buffer, length,
                                    flags << 24 | (number++ & 0xffffff),
                                    tcpStates + s.connection * stateBytes};
    netvm_emu_host_ring_put(host, fromHostRing, entry, txEntryWords);
    holding[r.buffer] = s;
    reads.pop_front();
  }
  unsigned limit = config.features.pipelinedDma ? 2 : 1;
  while (reads.size() < limit && !buffers.empty() &&
         !(pending.empty() && resend.empty())) {
    std::deque<Segment> &from = resend.empty() ? pending : resend;
    Read r;
    r.segment = from.front();
    from.pop_front();
    r.buffer = buffers.back();
    buffers.pop_back();
    r.done = dma.submit(now, r.segment.length + (r.segment.hostBuilt ? 54 : 0),
                        nullptr, true);
    reads.push_back(r);
  }
}

void TcpSender::retransmit(unsigned conn, uint32_t from, uint32_t to) {
  while (int32_t(to - from) > 0) {
    Segment s;
    s.connection = conn;
    s.seq = from;
    s.length = std::min<uint32_t>(options.mss, to - from);
    s.hostBuilt = s.retransmission = true;
    chargeHostSegment(s.length, true);
    resend.push_back(s);
    ++result.retransmittedSegments;
    from += s.length;
  }
}

void TcpSender::acked(unsigned conn, uint32_t una, bool duplicate,
                      uint64_t now) {
  Conn &k = conns[conn];
  if (int32_t(una - k.sndUna) > 0 && int32_t(una - k.posted) <= 0) {
    k.sndUna = una;
    k.lastProgress = now;
    k.dupAcks = k.backoff = 0;
    result.lastAck = std::max(result.lastAck, hostFree);
    return;
  }
  if (duplicate && una == k.sndUna && k.sndUna != k.sentEnd &&
      ++k.dupAcks == 3 && options.fastRetransmit) {
    ++result.fastRetransmits;
    k.lastProgress = now; // the timer restarts
    retransmit(conn, k.sndUna,
               k.sndUna +
                   std::min<uint32_t>(options.mss, k.sentEnd - k.sndUna));
  }
}

void TcpSender::entries(netvm_emu_host *host, uint64_t now) {
  const HostCosts &h = config.host;
  uint32_t w[entryWords];
  while (hostFree <= now && takeToHost(host, w, markers)) {
    uint32_t buffer = w[0], length = w[1], info = w[2];
    uint32_t kind = info >> 24;
    if (kind == kindAck) {
      // The MEs processed the ACK: the entry says where snd_una is.
      netvm_emu_host_ring_put(host, freeRing, &buffer, 1);
      ++result.ackEntries;
      charge(h.poll);
      unsigned conn = info & 0xffff;
      if (conn >= conns.size()) {
        ++result.inconsistent;
        continue;
      }
      acked(conn, length, ((info >> 16) & 0xff) == ackDuplicate, now);
      continue;
    }
    std::vector<uint8_t> f(length);
    bool read =
        info != refusedInfo && netvm_emu_host_read(host, NETVM_EMU_DRAM, buffer,
                                                   f.data(), length) == 0;
    netvm_emu_host_ring_put(host, freeRing, &buffer, 1);
    if ((kind != kindHost && kind != kindFast) || !read || f.size() < 54) {
      // Well-formed, in-order frames only: nothing is diverted here.
      ++result.inconsistent;
      continue;
    }
    f.resize(std::min<size_t>(f.size(), 14 + get16(&f[16])));
    auto it = byPort.find(uint16_t(get16(&f[36])));
    if (it == byPort.end()) {
      ++result.inconsistent;
      continue;
    }
    Conn &k = conns[it->second];
    uint32_t payload = uint32_t(f.size() - 54);
    if (kind == kindFast) {
      // The peer's data, delivered and ACKed by the MEs, which also took
      // its ACK field: recv() and snd_una from the state.
      charge(h.syscall);
      if (get32(&f[38]) != k.socket.rcvNxt())
        ++result.inconsistent;
      k.socket.input(get32(&f[38]), f.data() + 54, payload);
      uint8_t word[4];
      if (netvm_emu_host_read(host, NETVM_EMU_SRAM,
                              tcpStates + it->second * stateBytes + 52, word,
                              4) == 0)
        acked(it->second, get32(word), false, now);
      continue;
    }
    // The host path: the driver's interrupt, the checksum, TCP input (and
    // the peer's data to the socket).
    ++result.hostAckFrames;
    charge(h.interrupt + h.checksumPerByte * (f.size() - 14) + h.protocol +
           h.copyPerByte * payload);
    if (tcpChecksumSum(f) != 0xffff || !(f[47] & TcpAck)) {
      ++result.inconsistent;
      continue;
    }
    if (payload)
      k.socket.input(get32(&f[38]), f.data() + 54, payload);
    acked(it->second, get32(&f[42]), !payload, now);
  }
}

void TcpSender::application(uint64_t now) {
  const HostCosts &h = config.host;
  // Retransmission timers first (a timer interrupt each).
  for (unsigned i = 0; i < conns.size(); ++i) {
    Conn &k = conns[i];
    if (k.sndUna == k.sentEnd ||
        now - k.lastProgress < (options.rto << k.backoff))
      continue;
    k.backoff = std::min(k.backoff + 1, 6u);
    ++result.timeouts;
    charge(h.interrupt);
    retransmit(i, k.sndUna, k.sentEnd);
    k.lastProgress = now;
    k.dupAcks = 0;
  }
  // One send() at a time, the connections in turn, while the window has
  // room for it.
  for (unsigned n = 0; n < conns.size() && hostFree <= now; ++n) {
    unsigned i = (nextConn + n) % unsigned(conns.size());
    Conn &k = conns[i];
    uint32_t left = uint32_t(k.data.size()) - k.offered;
    uint32_t length = std::min(left, options.sendBytes);
    if (!length || (k.posted - k.sndUna) + length > options.window)
      continue;
    nextConn = i + 1;
    if (!result.firstSend)
      result.firstSend = std::max<uint64_t>(now, 1);
    ++result.sendCalls;
    if (fastPath) {
      // The user's buffer, mapped (cached), in one descriptor: the NP
      // side reads it an MSS at a time, the MEs build the segments.
      charge(h.syscall + (config.cacheMappings ? h.mapCached : h.mapBuffer) +
             pioWrite(16) + pioWrite(4));
    } else {
      charge(h.syscall + h.copyPerByte * length);
    }
    for (uint32_t at = 0; at < length; at += options.mss) {
      Segment s;
      s.connection = i;
      s.seq = k.posted + at;
      s.length = std::min(options.mss, length - at);
      s.hostBuilt = !fastPath;
      if (!fastPath)
        chargeHostSegment(s.length, false);
      pending.push_back(s);
    }
    k.posted += length;
    k.offered += length;
    result.payloadBytes += length;
    break;
  }
}

uint64_t TcpSender::call(netvm_emu_host *host) {
  uint64_t now = netvm_emu_host_now(host);
  if (!started) {
    started = true;
    putFreeBuffers(host, config.buffers);
  }
  if (!done)
    wireStep(now);
  npSide(host, now);
  hostFree = std::max(hostFree, now);
  entries(host, now);
  if (hostFree <= now)
    application(now);
  bool all = pending.empty() && resend.empty() && reads.empty() &&
             buffers.size() == config.txBuffers;
  for (const Conn &k : conns)
    all = all && k.offered == k.data.size() && k.sndUna == k.posted &&
          k.socket.delivered().size() == k.peerData.size();
  if (done)
    // The receiving contexts take what is on the wire, then stop: the
    // host reads their last entries.
    return markers == config.rxMEs * 8 ? 0 : config.tick;
  // Far beyond any run (2^34 cycles): stop, unfinished (the caller says
  // so).
  if (now > (uint64_t(1) << 34)) {
    wire.open = false;
    emulator.pause();
    return 0;
  }
  if (!all)
    return config.tick;
  // Everything acknowledged: stop the transmitting contexts and end the
  // wire (the receiving contexts stop on resuming; ACKs still on their
  // way are counted).
  done = true;
  stopTransmitters(host, config);
  wire.open = false;
  result.acksInFlight = toFabric.size();
  emulator.pause();
  return config.tick;
}

void TcpSender::finish() {
  result.connections.clear();
  for (size_t i = 0; i < conns.size(); ++i) {
    const Conn &k = conns[i];
    TcpSendConnection c;
    c.connection = k.c;
    c.sent = k.data;
    c.received = k.peer.delivered();
    c.sndUna = k.sndUna;
    c.peerAck = k.peer.rcvNxt();
    c.peerSent = k.peerData;
    c.socketReceived = k.socket.delivered();
    c.peerAcked = k.peerAcked;
    std::vector<uint8_t> s, n;
    if (emulator.readMemory(me::Memory::Sram, tcpStates + i * stateBytes,
                            stateBytes, s) &&
        emulator.readMemory(me::Memory::Sram, tcpCounters + i * counterBytes,
                            counterBytes, n)) {
      c.meSndNxt = get32(&s[16]);
      c.meSndUna = get32(&s[52]);
      c.meDelivered = get32(&s[56]);
      c.meAcksAdvanced = get32(&n[0]);
      c.meAcksDuplicate = get32(&n[4]);
      c.meAcksOld = get32(&n[8]);
      c.meAckedBytes = get32(&n[12]);
      c.meSegments = get32(&n[16]);
      c.meBytes = get32(&n[20]);
    }
    result.connections.push_back(std::move(c));
  }
}

} // namespace

bool runTcpSend(const OnloadConfig &config, const me::Image &image,
                const TcpSendOptions &options, bool fastPath,
                TcpSendResult &result, std::string &error) {
  result = TcpSendResult();
  if (options.flows == 0 || options.flows > maxTcpConnections ||
      options.mss == 0 || options.mss > 1460 || options.sendBytes == 0 ||
      options.sendBytes > options.window || options.bytes == 0) {
    error = "1 to " + std::to_string(maxTcpConnections) +
            " connections, an MSS of 1 to 1460 bytes, sends of at least a "
            "byte and at most the window";
    return false;
  }
  if (config.buffers == 0 || config.buffers > freeRingWords ||
      bufferBase + uint64_t(config.buffers) * bufferBytes > txBufferBase ||
      config.txBuffers == 0 ||
      config.txBuffers > fromHostWords / txEntryWords - 16) {
    error = "between 1 and 512 receive buffers, and 1 to " +
            std::to_string(fromHostWords / txEntryWords - 16) +
            " transmit buffers";
    return false;
  }
  me::MachineConfig machine = onloadMachine(config);
  if (txBufferBase + uint64_t(config.txBuffers) * bufferBytes >
      machine.dramBytes) {
    error = "the transmit buffers do not fit DRAM";
    return false;
  }
  me::Emulator emulator(machine);
  if (!emulator.load(image, error))
    return false;
  Wire wire;
  TcpSender sender(config, options, fastPath, result, emulator, wire);
  std::mt19937_64 rng(options.seed);
  std::vector<bool> slots(65536, false);
  for (unsigned i = 0; i < options.flows; ++i) {
    TcpConnection c = numberedConnection(i, slots);
    c.rcvNxt = uint32_t(rng());
    // Connection 0's sequence numbers wrap half way.
    c.sndNxt = i == 0 ? uint32_t(0) - options.bytes / 2 - 7 : uint32_t(rng());
    std::vector<uint8_t> data(options.bytes);
    for (size_t b = 0; b < data.size(); ++b)
      data[b] = uint8_t(i * 29 + b * 11 + (b >> 9));
    if (fastPath && !acceptTcp(emulator, i, c, error))
      return false;
    sender.add(c, std::move(data));
  }
  emulator.setInput(&wire);
  emulator.setOutput(&sender);
  emulator.attachHost(&TcpSender::step, &sender, 0);
  do
    emulator.run();
  while (emulator.stats().stopReason == "paused");
  sender.finish();
  const me::Stats &stats = emulator.stats();
  result.cycles = stats.cycles;
  result.clockMHz = stats.clockMHz;
  for (const me::Fault &f : stats.faults)
    result.faults.push_back(describeFault(f));
  if (!sender.finished()) {
    error = "the send path did not finish (" + stats.stopReason + ")";
    return false;
  }
  return true;
}

} // namespace netvm::onload
