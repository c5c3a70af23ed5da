//===- OnloadTcpTest.cpp - TCP on the MEs against a reference -------------===//
//
// TCP of established connections (docs/onload.md, "TCP"). The receive
// model on its own, then generated connections with loss, reordering,
// duplicates and bad checksums through the MEs and the host: every
// socket's byte stream equals the reference's, every frame of a
// connection is ACKed once (by the MEs or the host) with the reference's
// ACK number, and the MEs' ACK frames are well formed. Then the send path
// to a reference peer over a lossy wire: the peer's bytes equal what was
// sent, and the counts of segments, ACKs, retransmissions and timeouts.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/onload/Tcp.h"

#include <gtest/gtest.h>

using namespace netvm;
using namespace netvm::onload;

static TcpResult runTcp(const OnloadConfig &config, const TcpTraffic &traffic,
                        bool fastPath) {
  me::AssemblerOptions options;
  options.machine = config.machine;
  me::Image image;
  std::vector<std::string> errors;
  EXPECT_TRUE(
      assemble(tcpMeProgram(config, fastPath), "<tcp>", options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  TcpResult r;
  std::string error;
  EXPECT_TRUE(runTcpReceive(config, image, traffic, fastPath, r, error))
      << error;
  EXPECT_TRUE(r.faults.empty()) << r.faults[0];
  return r;
}

/// In-order traffic: `flows` connections of `segments` segments.
static TcpTrafficOptions inOrder(unsigned flows, unsigned segments,
                                 unsigned payloadBytes) {
  TcpTrafficOptions o;
  o.flows = flows;
  o.segments = segments;
  o.payloadBytes = payloadBytes;
  return o;
}

static std::vector<uint8_t> bytes(std::initializer_list<int> v) {
  return std::vector<uint8_t>(v.begin(), v.end());
}

TEST(OnloadTcp, ReceiverDeliversInOrderReassemblesAndAcksCumulatively) {
  TcpReceiver rx(0xfffffffe); // wraps after two bytes
  std::vector<uint8_t> a = bytes({1, 2}), b = bytes({3, 4}), c = bytes({5, 6});
  EXPECT_EQ(rx.input(0xfffffffe, a.data(), 2), 0u);
  EXPECT_EQ(rx.input(2, c.data(), 2), 0u); // ahead: queued, ACK stays
  EXPECT_TRUE(rx.reassembling());
  EXPECT_EQ(rx.input(0xfffffffe, a.data(), 2), 0u); // duplicate
  EXPECT_EQ(rx.input(0, b.data(), 2), 4u);          // fills the hole
  EXPECT_FALSE(rx.reassembling());
  EXPECT_EQ(rx.delivered(), bytes({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rx.duplicates, 1u);
  EXPECT_EQ(rx.queued, 1u);
  // A segment overlapping what was delivered gives only its new part.
  std::vector<uint8_t> d = bytes({6, 7, 8});
  EXPECT_EQ(rx.input(3, d.data(), 3), 6u);
  EXPECT_EQ(rx.delivered(), bytes({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(OnloadTcp, FramesCarryCorrectChecksums) {
  TcpSegment s;
  s.payload = bytes({1, 2, 3});
  EXPECT_EQ(tcpChecksumSum(buildTcpFrame(s)), 0xffff);
  s.badChecksum = true;
  EXPECT_NE(tcpChecksumSum(buildTcpFrame(s)), 0xffff);
}

static void checkAgainstReference(const TcpTraffic &t, const TcpResult &r) {
  TcpReference ref = referenceReceive(t);
  ASSERT_EQ(r.connections.size(), t.connections.size());
  for (size_t c = 0; c < t.connections.size(); ++c) {
    SCOPED_TRACE("connection " + std::to_string(c));
    EXPECT_EQ(r.connections[c].delivered.size(), ref.delivered[c].size());
    EXPECT_TRUE(r.connections[c].delivered == ref.delivered[c]);
  }
  for (size_t i = 0; i < t.frames.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    if (ref.ack[i] < 0) {
      EXPECT_EQ(r.meAck[i], -1);
      EXPECT_EQ(r.hostAck[i], -1);
      continue;
    }
    // Exactly one of the two ACKs it, with the reference's number.
    EXPECT_NE(r.meAck[i] >= 0, r.hostAck[i] >= 0);
    EXPECT_EQ(r.meAck[i] >= 0 ? r.meAck[i] : r.hostAck[i], ref.ack[i]);
  }
  EXPECT_EQ(r.badAcks, 0u);
  EXPECT_EQ(r.inconsistent, 0u);
  EXPECT_EQ(r.noConnection, 0u);
  EXPECT_EQ(r.notTcp, 0u);
}

TEST(OnloadTcp, InOrderSegmentsStayOnTheMEs) {
  // 333 bytes, odd: the checksum's last partial word.
  TcpTrafficOptions o = inOrder(5, 40, 333);
  TcpTraffic t = makeTcpTraffic(o);
  OnloadConfig config;
  TcpResult r = runTcp(config, t, true);
  checkAgainstReference(t, r);
  EXPECT_EQ(r.fastSegments, 200u);
  EXPECT_EQ(r.divertedSegments, 0u);
  EXPECT_EQ(r.acksSent, 200u);
  EXPECT_EQ(r.meStateSegments, 200u);
  EXPECT_EQ(r.meStateBytes, 200u * 333);
  for (const TcpConnectionResult &c : r.connections)
    EXPECT_EQ(c.delivered.size(), 40u * 333);
}

TEST(OnloadTcp, LossReorderingAndDuplicatesGoThroughTheHostAndBack) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TcpTrafficOptions o = inOrder(6, 60, 200);
    o.loss = 0.05;
    o.reorder = 0.05;
    o.duplicate = 0.03;
    o.badEvery = 37;
    o.seed = seed;
    TcpTraffic t = makeTcpTraffic(o);
    OnloadConfig config;
    TcpResult r = runTcp(config, t, true);
    checkAgainstReference(t, r);
    for (const TcpConnectionResult &c : r.connections)
      EXPECT_EQ(c.delivered.size(), 60u * 200);
    // Bad checksums are dropped and counted by the MEs; the slow path was
    // used and the MEs took rcv_nxt back afterwards.
    EXPECT_EQ(r.meChecksumDrops, t.frames.size() / 38);
    EXPECT_GT(r.meChecksumDrops, 0u);
    EXPECT_GT(r.divertedSegments, 0u);
    EXPECT_EQ(r.fastSegments + r.divertedSegments,
              t.frames.size() - r.meChecksumDrops);
    EXPECT_EQ(r.acksSent, r.fastSegments);
    uint64_t resumed = 0;
    for (const TcpConnectionResult &c : r.connections)
      resumed += c.fastAfterDivert;
    EXPECT_GT(resumed, 0u);
  }
}

TEST(OnloadTcp, TheMEsTakeRcvNxtBackOnceTheHostHasCaughtUp) {
  // Light loss over eight flows: the host hands rcv_nxt back after each
  // hole, and more than 90% of the segments stay on the MEs.
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TcpTrafficOptions o = inOrder(8, 40, 200);
    o.loss = 0.02;
    o.reorder = 0.02;
    o.seed = seed;
    TcpTraffic t = makeTcpTraffic(o);
    OnloadConfig config;
    TcpResult r = runTcp(config, t, true);
    checkAgainstReference(t, r);
    uint64_t resumed = 0;
    for (const TcpConnectionResult &c : r.connections)
      resumed += c.fastAfterDivert;
    EXPECT_GT(r.divertedSegments, 0u);
    EXPECT_GT(resumed, 0u);
    EXPECT_GT(r.fastSegments, 9 * r.divertedSegments);
  }
}

TEST(OnloadTcp, HeavyLossOnManySeedsStillMatchesTheReference) {
  // 10% loss, reordering and duplicates, a bad checksum every 11th frame:
  // hand-backs and new holes interleave; nothing may differ.
  for (uint64_t seed = 1; seed <= 12; ++seed)
    for (unsigned flows : {1u, 4u}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " +
                   std::to_string(flows) + " flows");
      TcpTrafficOptions o;
      o.flows = flows;
      o.segments = 60;
      o.payloadBytes = 40 + unsigned(seed) * 23;
      o.loss = o.reorder = o.duplicate = 0.1;
      o.badEvery = 11;
      o.seed = seed;
      TcpTraffic t = makeTcpTraffic(o);
      TcpResult r = runTcp(OnloadConfig(), t, true);
      checkAgainstReference(t, r);
    }
}

TEST(OnloadTcp, TheHostPathDeliversTheSameBytes) {
  TcpTrafficOptions o = inOrder(4, 30, 256);
  o.loss = 0.05;
  o.reorder = 0.05;
  o.badEvery = 29;
  TcpTraffic t = makeTcpTraffic(o);
  OnloadConfig config;
  TcpResult r = runTcp(config, t, false);
  checkAgainstReference(t, r);
  EXPECT_EQ(r.fastSegments, 0u);
  EXPECT_EQ(r.acksSent, 0u);
  EXPECT_GT(r.hostChecksumDrops, 0u);
  EXPECT_EQ(r.hostSegments + r.hostChecksumDrops, t.frames.size());
}

TEST(OnloadTcp, SegmentsOutsideTheWindowOrOfNoConnectionAreNotLost) {
  TcpTrafficOptions o = inOrder(2, 10, 300);
  TcpTraffic t = makeTcpTraffic(o);
  t.connections[1].window = 200; // every segment is larger: the host's
  // A frame of no connection.
  TcpSegment stray = t.segments[0];
  stray.dstPort = 4000;
  t.frames.push_back(buildTcpFrame(stray));
  t.segments.push_back(stray);
  t.connection.push_back(-1);
  OnloadConfig config;
  TcpResult r = runTcp(config, t, true);
  TcpReference ref = referenceReceive(t);
  EXPECT_TRUE(r.connections[0].delivered == ref.delivered[0]);
  EXPECT_TRUE(r.connections[1].delivered == ref.delivered[1]);
  EXPECT_EQ(r.connections[0].fastSegments, 10u);
  EXPECT_EQ(r.connections[1].fastSegments, 0u);
  EXPECT_EQ(r.connections[1].divertedSegments, 10u);
  EXPECT_EQ(r.noConnection, 1u);
}

TEST(OnloadTcp, FlaggedSegmentsGoToTheHostAndTheMEsResumeAfter) {
  // Segments with FIN or URG set are not the MEs' (an empty chain after
  // each): the host delivers their payload, the MEs take the rest.
  TcpTrafficOptions o = inOrder(2, 30, 100);
  TcpTraffic t = makeTcpTraffic(o);
  unsigned flagged = 0, k = 0;
  for (size_t i = 0; i < t.frames.size(); ++i)
    if (t.connection[i] == 0 && k++ % 10 == 3) {
      t.segments[i].flags |= i % 2 ? TcpFin : 0x20;
      t.frames[i] = buildTcpFrame(t.segments[i]);
      ++flagged;
    }
  ASSERT_GT(flagged, 2u);
  TcpResult r = runTcp(OnloadConfig(), t, true);
  checkAgainstReference(t, r);
  EXPECT_GE(r.connections[0].divertedSegments, flagged);
  EXPECT_EQ(r.connections[0].fastSegments + r.connections[0].divertedSegments,
            30u);
  EXPECT_GT(r.connections[0].fastAfterDivert, 0u);
  EXPECT_EQ(r.connections[1].fastSegments, 30u);
}

TEST(OnloadTcp, AcceptRefusesATakenTableSlot) {
  OnloadConfig config;
  me::AssemblerOptions options;
  me::Image image;
  std::vector<std::string> errors;
  ASSERT_TRUE(
      assemble(tcpMeProgram(config, true), "<tcp>", options, image, errors));
  me::Emulator emulator(config.machine);
  std::string error;
  ASSERT_TRUE(emulator.load(image, error)) << error;
  TcpConnection a, b;
  a.localPort = 80, a.remotePort = 5001;
  b.localPort = 81, b.remotePort = 5000; // 80 ^ 5001 == 81 ^ 5000
  EXPECT_TRUE(acceptTcp(emulator, 0, a, error)) << error;
  EXPECT_FALSE(acceptTcp(emulator, 1, b, error));
  EXPECT_NE(error.find("taken"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// The send path: the MEs build the segments and process the ACKs
//===----------------------------------------------------------------------===//

static TcpSendResult runSend(const OnloadConfig &config,
                             const TcpSendOptions &o, bool fastPath) {
  me::AssemblerOptions options;
  options.machine = config.machine;
  me::Image image;
  std::vector<std::string> errors;
  EXPECT_TRUE(assemble(tcpMeProgram(config, fastPath, true), "<tcp-send>",
                       options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  TcpSendResult r;
  std::string error;
  EXPECT_TRUE(runTcpSend(config, image, o, fastPath, r, error)) << error;
  EXPECT_TRUE(r.faults.empty()) << r.faults[0];
  return r;
}

/// `flows` connections each sending `bytes` in sends of `sendBytes`,
/// segments of `mss`, at most `window` unacknowledged.
static TcpSendOptions sending(unsigned flows, uint32_t bytes, unsigned mss,
                              uint32_t sendBytes, uint32_t window) {
  TcpSendOptions o;
  o.flows = flows;
  o.bytes = bytes;
  o.mss = mss;
  o.sendBytes = sendBytes;
  o.window = window;
  return o;
}

/// Every connection's peer received exactly what its application sent,
/// and both ends agree it is all acknowledged.
static void checkSent(const TcpSendOptions &o, const TcpSendResult &r,
                      bool fastPath) {
  ASSERT_EQ(r.connections.size(), o.flows);
  for (size_t c = 0; c < r.connections.size(); ++c) {
    SCOPED_TRACE("connection " + std::to_string(c));
    const TcpSendConnection &k = r.connections[c];
    EXPECT_EQ(k.sent.size(), o.bytes);
    EXPECT_EQ(k.received.size(), k.sent.size());
    EXPECT_TRUE(k.received == k.sent);
    uint32_t end = k.connection.sndNxt + o.bytes;
    EXPECT_EQ(k.sndUna, end);
    EXPECT_EQ(k.peerAck, end);
    if (fastPath) {
      EXPECT_EQ(k.meSndNxt, end);
      EXPECT_EQ(k.meSndUna, end);
      EXPECT_EQ(k.meAckedBytes, o.bytes);
      EXPECT_EQ(k.meBytes, o.bytes);
    }
  }
  EXPECT_EQ(r.badFrames, 0u);
  EXPECT_EQ(r.inconsistent, 0u);
  EXPECT_EQ(r.payloadBytes, uint64_t(o.flows) * o.bytes);
}

TEST(OnloadTcpSend, TheMEsSegmentChecksumAndTakeTheAcks) {
  // A lossless wire: every segment once, built by the MEs; one ACK from
  // the peer per segment, each advancing snd_una on the MEs.
  // 20000 bytes: not a multiple of the MSS nor of the send size.
  TcpSendOptions o = sending(3, 20000, 1000, 3000, 6000);
  TcpSendResult r = runSend(OnloadConfig(), o, true);
  checkSent(o, r, true);
  // 20000 bytes in sends of 3000 (the last 2000): 20 segments.
  uint64_t perFlow = 6 * 3 + 2;
  EXPECT_EQ(r.meSegments, 3 * perFlow);
  EXPECT_EQ(r.hostSegments, 0u);
  EXPECT_EQ(r.retransmittedSegments + r.timeouts + r.fastRetransmits, 0u);
  EXPECT_EQ(r.sendCalls, 3u * 7);
  EXPECT_EQ(r.peerAcks, r.meSegments);
  EXPECT_EQ(r.ackEntries, r.peerAcks);
  EXPECT_EQ(r.hostAckFrames, 0u);
  for (const TcpSendConnection &k : r.connections) {
    EXPECT_EQ(k.meSegments, perFlow);
    EXPECT_EQ(k.meAcksAdvanced, perFlow);
    EXPECT_EQ(k.meAcksDuplicate + k.meAcksOld, 0u);
  }
  // Connection 0's sequence numbers wrapped.
  EXPECT_LT(r.connections[0].sndUna, r.connections[0].connection.sndNxt);
}

TEST(OnloadTcpSend, OddPayloadsAndSmallSegments) {
  for (unsigned mss : {1u, 63u, 64u, 513u, 1460u}) {
    SCOPED_TRACE("mss " + std::to_string(mss));
    TcpSendOptions o = sending(2, mss * 13 + 5, mss, mss * 4, mss * 8);
    TcpSendResult r = runSend(OnloadConfig(), o, true);
    checkSent(o, r, true);
    EXPECT_EQ(r.hostSegments, 0u);
  }
}

TEST(OnloadTcpSend, LossAndReorderingAreRecoveredByTheHost) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TcpSendOptions o = sending(3, 40000, 512, 4096, 8192);
    o.loss = 0.03;
    o.reorder = 0.03;
    o.seed = seed;
    TcpSendResult r = runSend(OnloadConfig(), o, true);
    checkSent(o, r, true);
    EXPECT_GT(r.dataLost + r.acksLost, 0u);
    EXPECT_GT(r.retransmittedSegments, 0u);
    EXPECT_EQ(r.hostSegments, r.retransmittedSegments);
    EXPECT_GT(r.fastRetransmits + r.timeouts, 0u);
    uint64_t duplicate = 0, advanced = 0;
    for (const TcpSendConnection &k : r.connections) {
      duplicate += k.meAcksDuplicate;
      advanced += k.meAcksAdvanced;
    }
    EXPECT_GT(duplicate, 0u);
    EXPECT_GT(advanced, 0u);
    EXPECT_EQ(r.ackEntries + r.acksInFlight, r.peerAcks - r.acksLost);
  }
}

TEST(OnloadTcpSend, ATailLossIsRecoveredByTheTimer) {
  // One connection, four segments, the last one lost: no ACK follows it,
  // only the timer can recover, with one segment the host builds.
  TcpSendOptions o = sending(1, 4000, 1000, 4000, 4000);
  o.dropData = {3};
  TcpSendResult r = runSend(OnloadConfig(), o, true);
  checkSent(o, r, true);
  EXPECT_EQ(r.dataLost, 1u);
  EXPECT_EQ(r.timeouts, 1u);
  EXPECT_EQ(r.fastRetransmits, 0u);
  EXPECT_EQ(r.retransmittedSegments, 1u);
  EXPECT_EQ(r.meSegments, 4u);
  EXPECT_EQ(r.hostSegments, 1u);
  EXPECT_EQ(r.connections[0].meAcksAdvanced, 4u);
  EXPECT_EQ(r.connections[0].meAcksDuplicate, 0u);
  // The recovery waited for the timer.
  EXPECT_GT(r.lastAck - r.firstSend, o.rto);
}

TEST(OnloadTcpSend, AHoleIsFilledOnTheThirdDuplicateAck) {
  // Eight segments in flight, the third lost: the five after it are
  // ACKed with the hole's number, the third duplicate ACK resends it, and
  // the timer never fires.
  TcpSendOptions o = sending(1, 8 * 512, 512, 8 * 512, 8 * 512);
  o.dropData = {2};
  TcpSendResult r = runSend(OnloadConfig(), o, true);
  checkSent(o, r, true);
  EXPECT_EQ(r.fastRetransmits, 1u);
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.retransmittedSegments, 1u);
  const TcpSendConnection &k = r.connections[0];
  EXPECT_EQ(k.meAcksDuplicate, 5u);
  EXPECT_EQ(k.meAcksAdvanced, 3u); // 1, 2, then all 8 at once
  EXPECT_EQ(k.meAckedBytes, o.bytes);
  EXPECT_LT(r.lastAck - r.firstSend, o.rto);
}

TEST(OnloadTcpSend, TheHostPathSendsTheSameBytes) {
  TcpSendOptions o = sending(2, 30000, 1460, 8192, 16384);
  o.loss = 0.02;
  o.reorder = 0.02;
  TcpSendResult r = runSend(OnloadConfig(), o, false);
  checkSent(o, r, false);
  EXPECT_EQ(r.meSegments, 0u);
  EXPECT_EQ(r.ackEntries, 0u);
  EXPECT_EQ(r.hostAckFrames, r.peerAcks - r.acksLost);
  // The host path costs the host more per segment than the ME path.
  o.loss = o.reorder = 0;
  TcpSendResult host = runSend(OnloadConfig(), o, false);
  TcpSendResult me = runSend(OnloadConfig(), o, true);
  checkSent(o, me, true);
  EXPECT_GT(host.hostCyclesPerSegment(), 3 * me.hostCyclesPerSegment());
}

TEST(OnloadTcpSend, DataBothWaysOnOneConnection) {
  // The peer sends too: the receiving MEs deliver its segments and ACK
  // them with the current snd_nxt while the transmitting MEs advance
  // snd_nxt and carry the current rcv_nxt; the ACK fields of the peer's
  // data segments advance snd_una. Loss on everything but the peer's data.
  for (bool fastPath : {true, false}) {
    SCOPED_TRACE(fastPath ? "ME path" : "host path");
    TcpSendOptions o = sending(2, 20000, 1000, 4000, 8000);
    o.peerBytes = 15000;
    o.loss = o.reorder = 0.03;
    o.seed = 5;
    TcpSendResult r = runSend(OnloadConfig(), o, fastPath);
    checkSent(o, r, fastPath);
    EXPECT_EQ(r.peerSegments, 2u * 15);
    for (const TcpSendConnection &k : r.connections) {
      EXPECT_EQ(k.peerSent.size(), 15000u);
      EXPECT_TRUE(k.socketReceived == k.peerSent);
      EXPECT_LE(k.peerAcked, 15000u);
      if (fastPath) {
        EXPECT_EQ(k.meDelivered, 15u);
        EXPECT_EQ(k.peerAcked, 15000u); // an ACK of the last reached it
      }
    }
    if (fastPath) {
      EXPECT_EQ(r.meAckFrames + r.meAckFramesLost, 2u * 15);
      EXPECT_GT(r.meAckFrames, 0u);
    } else {
      EXPECT_EQ(r.meAckFrames, 0u);
    }
  }
}
