//===- Tcp.cpp - TCP of established connections on the MEs ---------------===//
//
// docs/onload.md, "TCP". The frames and the generator, the plain C++
// receive model (TcpReceiver), the hand-written ME program (receive and
// transmit) and the receive run's host side: accept() installing a
// connection's state, the slow path and the hand-back of rcv_nxt to the
// MEs. The send run's host is TcpSend.cpp.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Tcp.h"

#include "Bytes.h"
#include "Layout.h"
#include "TcpWire.h"

#include "netvm/emu/Emulator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

namespace netvm::onload {

using namespace bytes;
using namespace tcpwire;

std::vector<uint8_t> buildTcpFrame(const TcpSegment &s) {
  size_t tcpLength = 20 + s.payload.size();
  std::vector<uint8_t> f(14 + 20 + tcpLength, 0);
  const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1};
  std::copy(macs, macs + 12, f.begin());
  put16(f, 12, 0x0800);
  f[14] = 0x45;
  put16(f, 16, uint32_t(20 + tcpLength));
  put16(f, 20, 0x4000);
  f[22] = 64;
  f[23] = 6;
  put32(f, 26, s.srcIp);
  put32(f, 30, s.dstIp);
  put16(f, 24, ~fold(sum16(&f[14], 20)) & 0xffff);
  put16(f, 34, s.srcPort);
  put16(f, 36, s.dstPort);
  put32(f, 38, s.seq);
  put32(f, 42, s.ack);
  put16(f, 46, 0x5000 | s.flags);
  put16(f, 48, s.window);
  std::copy(s.payload.begin(), s.payload.end(), f.begin() + 54);
  uint64_t sum = sum16(&f[26], 8) + 6 + tcpLength + sum16(&f[34], tcpLength);
  uint32_t checksum = ~fold(sum) & 0xffff;
  if (s.badChecksum)
    checksum ^= 0x0101;
  put16(f, 50, checksum);
  return f;
}

uint16_t tcpChecksumSum(const std::vector<uint8_t> &f) {
  if (f.size() < 54)
    return 0;
  size_t tcpLength = get16(&f[16]) - 20;
  if (34 + tcpLength > f.size())
    return 0;
  return uint16_t(
      fold(sum16(&f[26], 8) + 6 + tcpLength + sum16(&f[34], tcpLength)));
}

//===----------------------------------------------------------------------===//
// The receive model
//===----------------------------------------------------------------------===//

uint32_t TcpReceiver::input(uint32_t seq, const uint8_t *data, size_t length) {
  int32_t offset = int32_t(seq - next);
  if (offset > 0) {
    // Ahead of rcv_nxt: keep it if it fits the window.
    if (uint64_t(offset) + length > window) {
      ++outsideWindow;
      return next;
    }
    auto [it, fresh] = ahead.emplace(uint32_t(offset),
                                     std::vector<uint8_t>(data, data + length));
    if (!fresh && it->second.size() < length)
      it->second.assign(data, data + length);
    ++queued;
    return next;
  }
  size_t skip = size_t(-int64_t(offset));
  if (skip >= length) {
    ++duplicates;
    return next;
  }
  ++inOrder;
  bytes.insert(bytes.end(), data + skip, data + length);
  uint32_t advanced = uint32_t(length - skip);
  next += advanced;
  // Queued segments are kept by their offset from rcv_nxt.
  std::map<uint32_t, std::vector<uint8_t>> moved;
  for (auto &[at, b] : ahead)
    moved.emplace(at - advanced, std::move(b));
  ahead.swap(moved);
  drain();
  return next;
}

void TcpReceiver::drain() {
  while (!ahead.empty()) {
    auto it = ahead.begin();
    int32_t at = int32_t(it->first);
    if (at > 0)
      return;
    std::vector<uint8_t> b = std::move(it->second);
    ahead.erase(it);
    size_t skip = size_t(-int64_t(at));
    if (skip >= b.size())
      continue;
    uint32_t advanced = uint32_t(b.size() - skip);
    bytes.insert(bytes.end(), b.begin() + skip, b.end());
    next += advanced;
    std::map<uint32_t, std::vector<uint8_t>> moved;
    for (auto &[off, rest] : ahead)
      moved.emplace(off - advanced, std::move(rest));
    ahead.swap(moved);
  }
}

//===----------------------------------------------------------------------===//
// Generated connections and the reference
//===----------------------------------------------------------------------===//

TcpConnection tcpwire::numberedConnection(unsigned i,
                                          std::vector<bool> &slots) {
  TcpConnection c;
  c.localPort = uint16_t(80 + i);
  // Remote ports that keep the connections' table slots apart.
  c.remotePort = uint16_t(5000 + i);
  while (slots[c.localPort ^ c.remotePort])
    c.remotePort = uint16_t(c.remotePort + 1000);
  slots[c.localPort ^ c.remotePort] = true;
  return c;
}

TcpTraffic makeTcpTraffic(const TcpTrafficOptions &o) {
  TcpTraffic t;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<std::vector<TcpSegment>> flows(o.flows);
  std::vector<bool> slots(65536, false);
  for (unsigned i = 0; i < o.flows; ++i) {
    TcpConnection c = numberedConnection(i, slots);
    // One connection's sequence numbers wrap.
    c.rcvNxt = i == 0 ? uint32_t(0) - o.payloadBytes * (o.segments / 2) - 7
                      : uint32_t(rng());
    c.sndNxt = uint32_t(rng());
    t.connections.push_back(c);
    for (unsigned k = 0; k < o.segments; ++k) {
      TcpSegment s;
      s.srcIp = c.remoteIp;
      s.dstIp = c.localIp;
      s.srcPort = c.remotePort;
      s.dstPort = c.localPort;
      s.seq = c.rcvNxt + k * o.payloadBytes;
      s.ack = c.sndNxt;
      for (unsigned b = 0; b < o.payloadBytes; ++b)
        s.payload.push_back(uint8_t(i * 31 + k * 7 + b * 13 + (b >> 8)));
      flows[i].push_back(std::move(s));
    }
  }
  // Interleave the flows at random, then lose, reorder and duplicate.
  std::vector<std::pair<int, TcpSegment>> wire;
  std::vector<size_t> at(o.flows, 0);
  for (size_t left = size_t(o.flows) * o.segments; left; --left) {
    unsigned f;
    do
      f = unsigned(rng() % o.flows);
    while (at[f] == flows[f].size());
    wire.emplace_back(int(f), flows[f][at[f]++]);
  }
  std::vector<std::pair<int, TcpSegment>> out;
  std::multimap<size_t, std::pair<int, TcpSegment>> later;
  for (size_t i = 0; i < wire.size() || !later.empty(); ++i) {
    for (auto it = later.begin(); it != later.end() && it->first <= i;)
      out.push_back(it->second), it = later.erase(it);
    if (i >= wire.size())
      continue;
    auto &item = wire[i];
    if (coin(rng) < o.loss) {
      later.emplace(i + 3 + rng() % 10, item); // the retransmission
      continue;
    }
    if (coin(rng) < o.duplicate)
      later.emplace(i + 1 + rng() % 10, item);
    if (i + 1 < wire.size() && coin(rng) < o.reorder) {
      out.push_back(wire[i + 1]);
      out.push_back(item);
      ++i;
      continue;
    }
    out.push_back(item);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    t.frames.push_back(buildTcpFrame(out[i].second));
    t.segments.push_back(out[i].second);
    t.connection.push_back(out[i].first);
    if (o.badEvery && (i + 1) % o.badEvery == 0) {
      TcpSegment bad = out[i].second;
      bad.badChecksum = true;
      t.frames.push_back(buildTcpFrame(bad));
      t.segments.push_back(bad);
      t.connection.push_back(out[i].first);
    }
  }
  return t;
}

TcpReference referenceReceive(const TcpTraffic &traffic) {
  std::vector<TcpReceiver> receivers;
  for (const TcpConnection &c : traffic.connections)
    receivers.emplace_back(c.rcvNxt, 0x40000000);
  TcpReference r;
  r.ack.assign(traffic.frames.size(), -1);
  for (size_t i = 0; i < traffic.frames.size(); ++i) {
    const TcpSegment &s = traffic.segments[i];
    int c = traffic.connection[i];
    if (c < 0 || s.badChecksum)
      continue;
    r.ack[i] = receivers[c].input(s.seq, s.payload.data(), s.payload.size());
  }
  for (const TcpReceiver &rx : receivers)
    r.delivered.push_back(rx.delivered());
  return r;
}

double TcpResult::segmentsPerSecond() const {
  uint64_t segments = fastSegments + divertedSegments + hostSegments;
  if (lastDelivery <= firstArrival || !segments)
    return 0;
  return double(segments) * clockMHz * 1e6 /
         double(lastDelivery - firstArrival);
}

//===----------------------------------------------------------------------===//
// The ME program
//===----------------------------------------------------------------------===//

// Registers: a0 buffer, a1 frame length, a3 connection index, a5 rcv_nxt,
// a7 verdict (0: in-order candidate, 1: a known connection's segment the
// MEs will not deliver, else the entry's info), b0 0xffff, b3 TCP length,
// b4 the IP checksum (the sum takes it back), b5 payload length, b6 rx
// stamp, b7 the packet's number; a2, a4, a6, b1, b2 scratch.
//
// Two phases: the checks and the checksum run in parallel on every
// context; the state's part (lookup, rcv_nxt, the ACK, the entry to the
// host) runs in packet-number order, one frame at a time, behind the
// scratch ticket, so that rcv_nxt is read and written by one context at
// a time and the host sees the frames in wire order.
static const char *tcpChecks = R"(    alu_shf[b3, --, b, $$4, >>16]
    alu[b1, b3, +, 14]
    alu[--, a1, -, b1]
    bcs[ordered]
    alu[b3, b3, -, 20]
    bcs[ordered]
    alu[--, b3, -, 20]
    bcs[ordered]
    alu_shf[b4, --, b, $$6, >>16]
)";

// After the checksum: the header again (56 bytes), and whether the segment
// can take the fast path: data offset 5, no flag but ACK and PSH.
static const char *tcpEligible = R"(
    alu[--, a2, -, b0]
    bne[tcp_bad]
    dram[read, $$0, a0, 0, 7], ctx_swap[s3]
    alu[b5, b3, -, 20]
    immed[a7, 1]
    alu[a6, $$11, and, b0]
    immed[b1, 0xffe7]
    alu[a6, a6, and, b1]
    immed[b1, 0x5000]
    alu[--, a6, -, b1]
    bne[ordered]
    immed[a7, 0]
    br[ordered]
tcp_bad:
    scratch[incr, --, STATS, STAT_CHECKSUM]
    immed[a7, REFUSED]
)";

// The ordered part. The state (64 bytes at a6): 0 remote IP, 4 local IP,
// 8 remote port << 16 | local port, 12 rcv_nxt, 16 snd_nxt, 20 K (the
// diverted count before the current chain), 24 mode << 31 | D (mode 1:
// diverted to the host; D: segments diverted), 28 socket queue; 32 R (the
// diverted segments the host has handled), 36 H (the host's rcv_nxt after
// them, with nothing queued), 40 C (the chain's end), 44 window << 16 |
// the ACK's IP checksum, 48 the ACK's constant TCP sum, 52 snd_una, 56
// segments and 60 bytes the MEs delivered.
//
// The chain: the diverted segments K+1..D, each starting where the one
// before ended (C: the last one's end). In mode 1 the MEs take rcv_nxt
// back when K < R <= D: segment R is in the chain, so R+1..D continue
// from at most H without a hole, and the host will end them at
// max(H, C) with nothing queued; that is the rcv_nxt the MEs resume with.
// A segment the MEs could not judge (a7 1) starts an empty chain after
// itself.
static const char *tcpOrdered = R"(    alu[--, a7, -, 1]
    bhi[emit]
    alu[b1, $$8, and, b0]
    alu_shf[a6, --, b, $$9, >>16]
    alu[a6, a6, xor, b1]
    alu_shf[a6, --, b, a6, <<2]
    immed[b1, TCP_TABLE]
    sram[read, $0, a6, b1, 1], ctx_swap[s4]
    alu[a6, --, b, $0]
    beq[no_conn]
    sram[read, $0, a6, 0, 16], ctx_swap[s4]
    alu_shf[a3, --, b, $$6, <<16]
    alu_shf[b1, --, b, $$7, >>16]
    alu[a3, a3, or, b1]
    alu[--, a3, -, $0]
    bne[no_conn]
    alu_shf[a3, --, b, $$7, <<16]
    alu_shf[b1, --, b, $$8, >>16]
    alu[a3, a3, or, b1]
    alu[--, a3, -, $1]
    bne[no_conn]
    alu_shf[a3, --, b, $$8, <<16]
    alu_shf[b1, --, b, $$9, >>16]
    alu[a3, a3, or, b1]
    alu[--, a3, -, $2]
    bne[no_conn]
    immed[b1, TCP_STATES]
    alu[a3, a6, -, b1]
    alu_shf[a3, --, b, a3, >>6]
    alu_shf[a4, --, b, $$9, <<16]
    alu_shf[b1, --, b, $$10, >>16]
    alu[b2, a4, or, b1]
    immed[b1, 0x7fffffff]
    alu[b4, $6, and, b1]
    alu[--, a7, -, 0]
    bne[divert]
    alu[a10, --, b, $13]
    immed[a9, ACK_ADVANCED]
    br_bclr[$$11, 4, ack_done]
    alu_shf[a4, --, b, $$10, <<16]
    alu_shf[b1, --, b, $$11, >>16]
    alu[a8, a4, or, b1]
    alu_shf[a4, --, b, a3, <<5]
    immed[b1, TCP_COUNTERS]
    alu[b8, a4, +, b1]
    alu[b9, a8, -, $13]
    beq[ack_same]
    bmi[ack_old]
    alu[--, a8, -, $4]
    beq[ack_new]
    bpl[ack_old]
ack_new:
    alu[$0, --, b, a8]
    sram[write, $0, a6, 52, 1], ctx_swap[s4]
    alu[a10, --, b, a8]
    sram[incr, --, b8, 0]
    alu[$0, --, b, b9]
    sram[add, $0, b8, 12], ctx_swap[s4]
    br[ack_done]
ack_same:
    alu[--, b5, -, 0]
    bne[ack_done]
    immed[a9, ACK_DUPLICATE]
    sram[incr, --, b8, 4]
    br[ack_done]
ack_old:
    immed[a9, ACK_OLD]
    sram[incr, --, b8, 8]
ack_done:
    alu[a5, --, b, $3]
    br_bclr[$6, 31, check]
    alu[a2, --, b, $8]
    alu[--, a2, -, b4]
    bhi[divert]
    alu[--, a2, -, $5]
    bcs[divert]
    beq[divert]
    alu[a5, --, b, $9]
    alu[b1, --, b, $10]
    alu[--, b1, -, a5]
    beq[check]
    bmi[check]
    alu[a5, --, b, b1]
check:
    alu[--, b5, -, 0]
    beq[ack_only]
    alu[--, a5, -, b2]
    bne[divert]
    alu_shf[a4, --, b, $11, >>16]
    alu[--, a4, -, b5]
    bcs[divert]
    alu[a5, a5, +, b5]
    alu[$0, --, b, a5]
    sram[write, $0, a6, 12, 1], ctx_swap[s4]
    br_bclr[$6, 31, resumed]
    alu[$0, --, b, $5]
    alu[$1, --, b, b4]
    sram[write, $0, a6, 20, 2], ctx_swap[s4]
resumed:
    alu[$0, --, b, b5]
    sram[add, $0, a6, 60], ctx_swap[s4]
    sram[incr, --, a6, 56]
    alu_shf[a4, --, b, $$1, <<16]
    alu_shf[b1, --, b, $$2, >>16]
    alu[$$0, a4, or, b1]
    alu_shf[a4, --, b, $$2, <<16]
    alu_shf[b1, --, b, $$0, >>16]
    alu[$$1, a4, or, b1]
    alu_shf[a4, --, b, $$0, <<16]
    alu_shf[b1, --, b, $$1, >>16]
    alu[$$2, a4, or, b1]
    immed[$$3, 0x08004500]
    immed[$$4, 0x00280000]
    immed[$$5, 0x40004006]
    alu_shf[a4, --, b, $11, <<16]
    alu[b1, $$7, and, b0]
    alu[$$6, a4, or, b1]
    alu_shf[a4, --, b, $$8, >>16]
    alu_shf[a4, --, b, a4, <<16]
    alu[b1, $$6, and, b0]
    alu[$$7, a4, or, b1]
    alu_shf[a4, --, b, $$7, >>16]
    alu_shf[a4, --, b, a4, <<16]
    alu_shf[b1, --, b, $$9, >>16]
    alu[$$8, a4, or, b1]
    alu_shf[a4, --, b, $$8, <<16]
    alu_shf[b1, --, b, $4, >>16]
    alu[$$9, a4, or, b1]
    alu_shf[a4, --, b, $4, <<16]
    alu_shf[b1, --, b, a5, >>16]
    alu[$$10, a4, or, b1]
    alu_shf[a4, --, b, a5, <<16]
    immed[b1, 0x5010]
    alu[$$11, a4, or, b1]
    alu[a2, --, b, $12]
    alu_shf[b1, --, b, $4, >>16]
    alu[a2, a2, +, b1]
    alu[b1, $4, and, b0]
    alu[a2, a2, +, b1]
    alu_shf[b1, --, b, a5, >>16]
    alu[a2, a2, +, b1]
    alu[b1, a5, and, b0]
    alu[a2, a2, +, b1]
    alu_shf[b1, --, b, a2, >>16]
    alu[a4, a2, and, b0]
    alu[a2, a4, +, b1]
    alu_shf[b1, --, b, a2, >>16]
    alu[a4, a2, and, b0]
    alu[a2, a4, +, b1]
    alu[a2, a2, xor, b0]
    alu[b1, --, b, a2]
    alu_shf[a4, --, b, $11, >>16]
    alu_shf[a4, --, b, a4, <<16]
    alu[$$12, a4, or, b1]
    immed[$$13, 0]
    immed[b1, ACK_OFFSET]
    dram[write, $$0, a0, b1, 7], ctx_swap[s3]
    immed[$0, 54]
    immed[$1, 0]
    immed[$2, 0]
    alu[$3, --, b, b7]
    msf[tx, $0, a0, b1, 4], ctx_swap[s2]
    immed[b1, KIND_FAST]
    alu[a7, a3, or, b1]
    br[emit]
ack_only:
    alu[--, b2, -, a5]
    beq[pure_ack]
    bpl[divert]
pure_ack:
    br_bset[$6, 31, divert]
    alu[a1, --, b, a10]
    alu_shf[b1, --, b, a9, <<16]
    alu[a7, a3, or, b1]
    immed[b1, KIND_ACK]
    alu[a7, a7, or, b1]
    br[emit]
divert:
    alu[a4, --, b, b2]
    alu[a4, a4, +, b5]
    alu[--, a7, -, 0]
    bne[div_alone]
    br_bclr[$6, 31, div_chain]
    alu[--, b2, -, $10]
    bne[div_chain]
    alu[$0, --, b, a4]
    sram[write, $0, a6, 40, 1], ctx_swap[s4]
    br[div_count]
div_alone:
    alu[$0, b4, +, 1]
    br[div_start]
div_chain:
    alu[$0, --, b, b4]
div_start:
    sram[write, $0, a6, 20, 1], ctx_swap[s4]
    alu[$0, --, b, a4]
    sram[write, $0, a6, 40, 1], ctx_swap[s4]
div_count:
    alu[a4, b4, +, 1]
    immed[b1, 0x80000000]
    alu[$0, a4, or, b1]
    sram[write, $0, a6, 24, 1], ctx_swap[s4]
    immed[b1, KIND_DIVERT]
    alu[a7, a3, or, b1]
    br[emit]
no_conn:
    immed[a7, KIND_NO_CONNECTION]
emit:
)";

// The transmitting contexts (the send path, TcpSend.cpp). Entries
// [buffer, length, flags << 24 | number, state address] from FROM_HOST.
// A build entry (flag bit 24) holds a payload of `length` bytes at buffer +
// 54: in the entries' order (the state ticket) the context takes seq =
// snd_nxt and the ACK number rcv_nxt from the state and advances snd_nxt;
// then, in parallel with the others, it writes the Ethernet, IPv4 and TCP
// headers (the IP checksum from the state's 40-byte one, the window from
// line 2), sums the segment with the pseudo-header and writes the TCP
// checksum; in the entries' order again (the wire ticket) it transmits
// the frame, tagged with the entry's third word, and gives the buffer back
// on TX_DONE. Other entries (the host's frames) are sent as they are.
// Registers: a0 buffer, a1 length, a3 IP checksum, a5 seq, a7 flags and
// number, a11 the payload's first two bytes, b0 0xffff, b6 state, b7
// number, b5 length; a2, a4, a6, b1-b4 scratch (the sum).
static const char *tcpTxLoop = R"(    alu[b5, --, b, $1]
    immed[b1, 0xffffff]
    alu[b7, a7, and, b1]
    immed[b0, 0xffff]
    br_bclr[a7, 24, tx_state]
    dram[read, $$0, a0, 48, 1], ctx_swap[s3]
    alu[a11, $$1, and, b0]
)";

// The state's turn: seq and the ACK number, snd_nxt advanced; the headers
// and the counters; the sum's inputs.
static const char *tcpTxBuild = R"(    br_bclr[a7, 24, tx_pass]
    sram[read, $0, b6, 0, 12], ctx_swap[s4]
    alu[a5, --, b, $4]
    alu[a4, a5, +, b5]
    alu[$0, --, b, a4]
    sram[write, $0, b6, 16, 1], ctx_swap[s4]
    scratch[incr, --, TX_STATE_TICKET, 0], ctx_swap[s1]
    immed[$$0, 0x02000000]
    immed[$$1, 0x00010200]
    immed[$$2, 0x00000002]
    immed[$$3, 0x08004500]
    alu[b3, a1, +, 40]
    alu_shf[$$4, --, b, b3, <<16]
    immed[$$5, 0x40004006]
    alu[a3, $11, and, b0]
)";

// The headers' words after the IP checksum (a3), the counters.
static const char *tcpTxHeaders = R"(    alu_shf[a4, --, b, a3, <<16]
    alu_shf[b1, --, b, $1, >>16]
    alu[$$6, a4, or, b1]
    alu_shf[a4, --, b, $1, <<16]
    alu_shf[b1, --, b, $0, >>16]
    alu[$$7, a4, or, b1]
    alu_shf[a4, --, b, $0, <<16]
    alu[b1, $2, and, b0]
    alu[$$8, a4, or, b1]
    alu_shf[a4, --, b, $2, >>16]
    alu_shf[a4, --, b, a4, <<16]
    alu_shf[b1, --, b, a5, >>16]
    alu[$$9, a4, or, b1]
    alu_shf[a4, --, b, a5, <<16]
    alu_shf[b1, --, b, $3, >>16]
    alu[$$10, a4, or, b1]
    alu_shf[a4, --, b, $3, <<16]
    immed[b1, 0x5018]
    alu[$$11, a4, or, b1]
    alu_shf[a4, --, b, $11, >>16]
    alu_shf[$$12, --, b, a4, <<16]
    alu[$$13, --, b, a11]
    dram[write, $$0, a0, 0, 7], ctx_swap[s3]
    immed[b1, TCP_STATES]
    alu[a4, --, b, b6]
    alu[a4, a4, -, b1]
    alu_shf[a4, --, b, a4, >>1]
    immed[b1, TCP_COUNTERS]
    alu[a4, a4, +, b1]
    sram[incr, --, a4, 16]
    alu[$0, --, b, a1]
    sram[add, $0, a4, 20], ctx_swap[s4]
    alu[b3, a1, +, 20]
    alu[b4, --, b, a3]
)";

// After the sum (a2): the checksum into bytes 50-51, the frame's length.
static const char *tcpTxSend = R"(
    alu[a2, a2, xor, b0]
    alu[b1, --, b, a2]
    alu_shf[a4, --, b, $11, >>16]
    alu_shf[a4, --, b, a4, <<16]
    alu[$$0, a4, or, b1]
    alu[$$1, --, b, a11]
    dram[write, $$0, a0, 48, 1], ctx_swap[s3]
    alu[a1, a1, +, 54]
    br[tx_wire]
tx_pass:
    scratch[incr, --, TX_STATE_TICKET, 0], ctx_swap[s1]
)";

// The wire's turn: transmit, the ticket on, the buffer back.
static const char *tcpTxWire = R"(    alu[$0, --, b, a1]
    alu[$1, --, b, a1]
    immed[$2, 0]
    alu[$3, --, b, a7]
    msf[tx, $0, a0, 0, 4], ctx_swap[s2]
    scratch[incr, --, TX_WIRE_TICKET, 0], ctx_swap[s1]
    alu[$0, --, b, a0]
    scratch[put, $0, TX_DONE, 0, 1], ctx_swap[s1]
    br[tx_loop]
tx_end:
    ctx_arb[kill]
)";

/// The ME code that waits (other contexts run) until the scratch word
/// `ticket` equals b7, at `label`, going on at `turn`.
static void ticketWait(std::ostream &os, const char *label, const char *ticket,
                       const char *turn) {
  os << label << ":\n    scratch[read, $0, " << ticket
     << ", 0, 1], ctx_swap[s1]\n    alu[--, b7, -, $0]\n    beq[" << turn
     << "]\n    ctx_arb[voluntary]\n    br[" << label << "]\n"
     << turn << ":\n";
}

std::string tcpMeProgram(const OnloadConfig &config, bool fastPath,
                         bool transmit) {
  std::ostringstream os;
  os << "; onload TCP receive, " << (fastPath ? "ME data path" : "host path")
     << " (generated by runtime/onload/Tcp.cpp)\n"
     << ".equ FREE_RING, " << freeRing << "\n"
     << ".equ TO_HOST, " << toHostRing << "\n"
     << ".equ STATS, " << statsAddress << "\n"
     << ".equ STAT_CHECKSUM, " << statChecksum << "\n"
     << ".equ TICKET, " << tcpTicket << "\n"
     << ".equ TCP_TABLE, " << tcpTable << "\n"
     << ".equ TCP_STATES, " << tcpStates << "\n"
     << ".equ ACK_OFFSET, " << ackOffset << "\n"
     << ".equ REFUSED, " << refusedInfo << "\n"
     << ".equ KIND_FAST, " << (kindFast << 24) << "\n"
     << ".equ KIND_DIVERT, " << (kindDivert << 24) << "\n"
     << ".equ KIND_NO_CONNECTION, " << (kindNoConnection << 24) << "\n"
     << ".equ KIND_ACK, " << (kindAck << 24) << "\n"
     << ".equ ACK_ADVANCED, " << ackAdvanced << "\n"
     << ".equ ACK_DUPLICATE, " << ackDuplicate << "\n"
     << ".equ ACK_OLD, " << ackOld << "\n"
     << ".equ TCP_COUNTERS, " << tcpCounters << "\n"
     << ".ring FREE_RING, " << freeRingAddress << ", " << freeRingWords << "\n"
     << ".ring TO_HOST, " << toHostAddress << ", " << toHostWords << "\n";
  if (transmit)
    os << ".equ FROM_HOST, " << fromHostRing << "\n"
       << ".equ TX_DONE, " << txDoneRing << "\n"
       << ".equ TX_STATE_TICKET, " << tcpTxStateTicket << "\n"
       << ".equ TX_WIRE_TICKET, " << tcpTxWireTicket << "\n"
       << ".ring FROM_HOST, " << fromHostAddress << ", " << fromHostWords
       << "\n"
       << ".ring TX_DONE, " << txDoneAddress << ", " << txDoneWords << "\n";
  os << "\n.me 0";
  if (config.rxMEs > 1)
    os << "-" << config.rxMEs - 1;
  os << "\n.ctx_enable 0xff\n";
  os << rxLoopHead;
  if (fastPath) {
    os << "    immed[a7, " << (kindNotTcp << 24) << "]\n";
    ipv4Checks(os, 6, "ordered", "ordered");
    os << tcpChecks;
    sumLoop(os, "tcp_", 6);
    os << tcpEligible;
  } else {
    os << "    immed[a7, " << (kindHost << 24) << "]\n";
  }
  os << "\n";
  ticketWait(os, "ordered", "TICKET", "turn");
  os << tcpOrdered << toHostPut
     << "    scratch[incr, --, TICKET, 0], ctx_swap[s1]\n"
     << "    br[rx_loop]\n"
     << rxEndToHost;
  if (transmit) {
    os << "\n.me " << config.rxMEs;
    if (config.txMEs > 1)
      os << "-" << config.rxMEs + config.txMEs - 1;
    os << "\n.ctx_enable 0xff\n" << txLoopHead << tcpTxLoop;
    ticketWait(os, "tx_state", "TX_STATE_TICKET", "tx_state_turn");
    os << tcpTxBuild;
    checksumAdd(os, "b5");
    os << tcpTxHeaders;
    sumLoop(os, "tx_", 6);
    os << tcpTxSend;
    ticketWait(os, "tx_wire", "TX_WIRE_TICKET", "tx_wire_turn");
    os << tcpTxWire;
  }
  return os.str();
}

//===----------------------------------------------------------------------===//
// The host
//===----------------------------------------------------------------------===//

bool takeToHost(netvm_emu_host *host, uint32_t *w, unsigned &markers) {
  while (netvm_emu_host_ring_count(host, toHostRing) >= int(entryWords) &&
         netvm_emu_host_ring_get(host, toHostRing, w, entryWords) == 0) {
    if (w[0] != markerBuffer)
      return true;
    ++markers;
  }
  return false;
}

bool acceptTcp(me::Emulator &emulator, unsigned index, const TcpConnection &c,
               std::string &error) {
  if (index >= maxTcpConnections) {
    error = "at most " + std::to_string(maxTcpConnections) + " TCP connections";
    return false;
  }
  uint32_t slot = tcpTable + 4 * uint32_t(c.localPort ^ c.remotePort);
  std::vector<uint8_t> old;
  if (!emulator.readMemory(me::Memory::Sram, slot, 4, old)) {
    error = "the TCP connection table is outside SRAM";
    return false;
  }
  if (get32(old.data())) {
    error = "connection " + std::to_string(index) +
            ": its table slot (local port xor remote port) is taken";
    return false;
  }
  uint32_t state = tcpStates + index * stateBytes;
  std::vector<uint8_t> s(stateBytes, 0);
  put32(s, 0, c.remoteIp);
  put32(s, 4, c.localIp);
  put32(s, 8, uint32_t(c.remotePort) << 16 | c.localPort);
  put32(s, 12, c.rcvNxt);
  put32(s, 16, c.sndNxt);
  put32(s, 28, index);
  put32(s, 52, c.sndNxt);
  // The ACKs' IP header is the same for every ACK of the connection
  // (DF, TTL 64, id 0, 40 bytes), and so is their TCP sum but for the
  // sequence and ACK numbers the MEs add.
  std::vector<uint8_t> ip(20, 0);
  ip[0] = 0x45;
  put16(ip, 2, 40);
  put16(ip, 6, 0x4000);
  ip[8] = 64;
  ip[9] = 6;
  put32(ip, 12, c.localIp);
  put32(ip, 16, c.remoteIp);
  uint32_t ipChecksum = ~fold(sum16(ip.data(), 20)) & 0xffff;
  put32(s, 44, uint32_t(c.window) << 16 | ipChecksum);
  uint64_t partial = sum16(&ip[12], 8) + 6 + 20 + c.localPort + c.remotePort +
                     0x5010 + c.window;
  put32(s, 48, fold(partial));
  std::vector<uint8_t> entry(4);
  put32(entry, 0, state);
  return emulator.writeMemory(me::Memory::Sram, state, s.data(), stateBytes,
                              error) &&
         emulator.writeMemory(me::Memory::Sram, slot, entry.data(), 4, error);
}

namespace {

class FrameInput : public me::PacketInput {
public:
  explicit FrameInput(const std::vector<std::vector<uint8_t>> &frames)
      : frames(frames) {}
  bool next(me::InputPacket &packet) override {
    if (index == frames.size())
      return false;
    packet.bytes = frames[index++];
    packet.wireLength = 0;
    return true;
  }

private:
  const std::vector<std::vector<uint8_t>> &frames;
  size_t index = 0;
};

/// The host: takes the MEs' entries in wire order, runs the slow path
/// and checks the ACKs the MEs send.
class TcpHost : public me::PacketOutput {
public:
  TcpHost(const OnloadConfig &config, const TcpTraffic &traffic,
          TcpResult &result)
      : config(config), traffic(traffic), result(result) {
    for (const TcpConnection &c : traffic.connections) {
      stacks.emplace_back(c.rcvNxt, 0x40000000);
      diverted.push_back(0);
      byTuple[key(c.remoteIp, c.localIp, c.remotePort, c.localPort)] =
          unsigned(stacks.size() - 1);
    }
    result.connections.resize(traffic.connections.size());
    result.meAck.assign(traffic.frames.size(), -1);
    result.hostAck.assign(traffic.frames.size(), -1);
  }
  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<TcpHost *>(self)->call(host);
  }
  void transmit(const me::Transmission &t) override;
  void finish() {
    for (size_t i = 0; i < stacks.size(); ++i)
      result.connections[i].delivered = stacks[i].delivered();
  }

private:
  static uint64_t key(uint32_t src, uint32_t dst, uint16_t sport,
                      uint16_t dport) {
    return uint64_t(src ^ dst * 2654435761u) << 32 | uint32_t(sport) << 16 |
           dport;
  }
  uint64_t call(netvm_emu_host *host);
  void handle(netvm_emu_host *host, const uint32_t *entry, uint64_t now);
  uint64_t charge(double cycles) {
    uint64_t c = uint64_t(std::llround(cycles));
    result.hostBusyCycles += c;
    hostFree += c;
    return c;
  }

  const OnloadConfig &config;
  const TcpTraffic &traffic;
  TcpResult &result;
  std::vector<TcpReceiver> stacks; // the host's view of each connection
  std::vector<uint32_t> diverted;  // diverted entries handled
  std::map<uint64_t, unsigned> byTuple;
  std::set<unsigned> recvCalled; // sockets read in this look
  bool started = false;
  unsigned markers = 0;
  size_t handled = 0;
  uint64_t hostFree = 0;
};

void TcpHost::transmit(const me::Transmission &t) {
  ++result.acksSent;
  std::vector<uint8_t> f(t.bytes, t.bytes + t.length);
  uint32_t number = t.hasTag ? t.tag : UINT32_MAX;
  if (f.size() != 54 || number >= traffic.frames.size() ||
      traffic.connection[number] < 0) {
    ++result.badAcks;
    return;
  }
  const TcpConnection &c = traffic.connections[traffic.connection[number]];
  const std::vector<uint8_t> &in = traffic.frames[number];
  bool ok = fold(sum16(&f[14], 20)) == 0xffff && tcpChecksumSum(f) == 0xffff &&
            std::equal(f.begin(), f.begin() + 6, in.begin() + 6) &&
            std::equal(f.begin() + 6, f.begin() + 12, in.begin()) &&
            get16(&f[12]) == 0x0800 && get16(&f[16]) == 40 &&
            get32(&f[26]) == c.localIp && get32(&f[30]) == c.remoteIp &&
            get16(&f[34]) == c.localPort && get16(&f[36]) == c.remotePort &&
            get32(&f[38]) == c.sndNxt && get16(&f[46]) == 0x5010 &&
            get16(&f[48]) == c.window;
  if (!ok || result.meAck[number] >= 0) {
    ++result.badAcks;
    return;
  }
  result.meAck[number] = get32(&f[42]);
}

uint64_t TcpHost::call(netvm_emu_host *host) {
  uint64_t now = netvm_emu_host_now(host);
  if (!started) {
    started = true;
    putFreeBuffers(host, config.buffers);
  }
  recvCalled.clear();
  // The host takes entries while it is free (a busy host leaves them in
  // the ring and the MEs run out of buffers).
  uint32_t w[entryWords];
  while (hostFree <= now && takeToHost(host, w, markers))
    handle(host, w, now);
  if (markers == config.rxMEs * 8 && handled == traffic.frames.size())
    return 0;
  return config.tick;
}

void TcpHost::handle(netvm_emu_host *host, const uint32_t *w, uint64_t now) {
  ++handled;
  uint32_t buffer = w[0], length = w[1], info = w[2], number = w[5];
  hostFree = std::max(hostFree, now);
  if (!result.firstArrival || w[3] < result.firstArrival)
    result.firstArrival = w[3];
  const HostCosts &costs = config.host;
  auto done = [&] { netvm_emu_host_ring_put(host, freeRing, &buffer, 1); };
  if (info == refusedInfo) { // a bad checksum, counted by the MEs
    done();
    return;
  }
  uint32_t kind = info >> 24;
  std::vector<uint8_t> f(length);
  if (netvm_emu_host_read(host, NETVM_EMU_DRAM, buffer, f.data(), length) !=
      0) {
    ++result.inconsistent;
    done();
    return;
  }
  done();
  if (kind == kindNoConnection) {
    ++result.noConnection; // no listener: a real stack would send RST
    charge(costs.interrupt + costs.protocol);
    return;
  }
  // Whatever the MEs did not check, the host does (host path: all of it).
  bool tcp = f.size() >= 54 && get16(&f[12]) == 0x0800 && f[14] == 0x45 &&
             f[23] == 6 && (get16(&f[20]) & 0x3fff) == 0 &&
             get16(&f[16]) + 14u <= f.size() && get16(&f[16]) >= 40;
  if (kind == kindNotTcp || (kind == kindHost && !tcp)) {
    ++result.notTcp; // no IP reassembly, no other protocol in this slice
    charge(costs.interrupt + costs.protocol);
    return;
  }
  size_t ipLength = get16(&f[16]);
  f.resize(14 + ipLength);
  if (kind == kindHost) {
    charge(costs.interrupt + costs.checksumPerByte * ipLength);
    if (tcpChecksumSum(f) != 0xffff) {
      ++result.hostChecksumDrops;
      return;
    }
  }
  uint32_t src = get32(&f[26]), dst = get32(&f[30]);
  uint16_t sport = uint16_t(get16(&f[34])), dport = uint16_t(get16(&f[36]));
  unsigned conn = info & 0xffff;
  if (kind == kindHost) {
    auto it = byTuple.find(key(src, dst, sport, dport));
    if (it == byTuple.end()) {
      ++result.noConnection;
      charge(costs.protocol);
      return;
    }
    conn = it->second;
  }
  if (conn >= stacks.size()) {
    ++result.inconsistent;
    return;
  }
  size_t dataOffset = 14 + 20 + (f[46] >> 4) * 4u;
  uint32_t seq = get32(&f[38]);
  const uint8_t *payload = f.data() + std::min(dataOffset, f.size());
  size_t payloadLength = f.size() - std::min(dataOffset, f.size());
  TcpReceiver &stack = stacks[conn];
  TcpConnectionResult &cr = result.connections[conn];
  if (kind == kindFast) {
    // The MEs delivered it (their DMA into the socket's queue, modelled by
    // this read) and sent the ACK: the application's recv() is all.
    if (seq != stack.rcvNxt())
      ++result.inconsistent;
    stack.input(seq, payload, payloadLength);
    ++result.fastSegments;
    ++cr.fastSegments;
    cr.fastAfterDivert += cr.divertedSegments != 0;
    // TCP is a byte stream: one recv() takes what a socket holds, so a
    // look at the ring costs a socket with data one call.
    if (recvCalled.insert(conn).second)
      charge(costs.syscall);
  } else {
    // The slow path: the stack's input, a copy to the socket and an ACK
    // the host sends.
    uint32_t ack = stack.input(seq, payload, payloadLength);
    result.hostAck[number] = ack;
    if (kind == kindDivert)
      ++result.divertedSegments, ++cr.divertedSegments;
    else
      ++result.hostSegments;
    charge((kind == kindDivert ? costs.interrupt : 0) + costs.protocol +
           costs.copyPerByte * payloadLength + costs.protocolTx +
           costs.syscall);
    if (kind == kindDivert && !stack.reassembling()) {
      // No hole left: hand rcv_nxt back. The MEs take it if what they
      // diverted since continues without a hole (the chain, above).
      ++diverted[conn];
      uint32_t resume[2] = {diverted[conn], stack.rcvNxt()};
      uint8_t bytes[8];
      for (int i = 0; i < 2; ++i)
        for (int b = 0; b < 4; ++b)
          bytes[4 * i + b] = uint8_t(resume[i] >> (24 - 8 * b));
      netvm_emu_host_write(host, NETVM_EMU_SRAM,
                           tcpStates + conn * stateBytes + 32, bytes, 8);
      ++cr.resumes;
    } else if (kind == kindDivert) {
      ++diverted[conn];
    }
  }
  result.lastDelivery = std::max(result.lastDelivery, hostFree);
}

} // namespace

bool runTcpReceive(const OnloadConfig &config, const me::Image &image,
                   const TcpTraffic &traffic, bool fastPath, TcpResult &result,
                   std::string &error) {
  result = TcpResult();
  me::MachineConfig machine = onloadMachine(config);
  if (config.buffers == 0 || config.buffers > freeRingWords ||
      bufferBase + uint64_t(config.buffers) * bufferBytes > txBufferBase) {
    error = "between 1 and 512 receive buffers fit the free ring and DRAM";
    return false;
  }
  me::Emulator emulator(machine);
  if (!emulator.load(image, error))
    return false;
  if (fastPath)
    for (size_t i = 0; i < traffic.connections.size(); ++i)
      if (!acceptTcp(emulator, unsigned(i), traffic.connections[i], error))
        return false;
  FrameInput input(traffic.frames);
  emulator.setInput(&input);
  TcpHost host(config, traffic, result);
  emulator.setOutput(&host);
  emulator.attachHost(&TcpHost::step, &host, 0);
  emulator.run();
  host.finish();
  const me::Stats &stats = emulator.stats();
  result.cycles = stats.cycles;
  result.clockMHz = stats.clockMHz;
  for (const me::Fault &f : stats.faults)
    result.faults.push_back(describeFault(f));
  Drops drops;
  readMeDrops(emulator, drops);
  result.meChecksumDrops = drops.meChecksum;
  if (fastPath)
    for (size_t i = 0; i < traffic.connections.size(); ++i) {
      std::vector<uint8_t> s;
      if (emulator.readMemory(me::Memory::Sram, tcpStates + i * stateBytes,
                              stateBytes, s)) {
        result.meStateSegments += get32(&s[56]);
        result.meStateBytes += get32(&s[60]);
      }
    }
  return true;
}

} // namespace netvm::onload
