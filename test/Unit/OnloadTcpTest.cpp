//===- OnloadTcpTest.cpp - TCP receive on the MEs against a reference -----===//
//
// The first TCP slice (docs/onload.md, "TCP (first slice)"): the receive
// model on its own, then generated connections with loss, reordering,
// duplicates and bad checksums through the MEs and the host: every
// socket's byte stream equals the reference's, every frame of a
// connection is ACKed once (by the MEs or the host) with the reference's
// ACK number, and the MEs' ACK frames are well formed.
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
