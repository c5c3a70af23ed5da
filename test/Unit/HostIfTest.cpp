//===- HostIfTest.cpp - The host/NP interface's rings, freelist, DMA -----===//

#include "netvm/hostif/Dma.h"
#include "netvm/hostif/Freelist.h"
#include "netvm/hostif/Ring.h"

#include <gtest/gtest.h>

#include <vector>

using namespace netvm::hostif;

TEST(HostIfRing, SlotsAreAlignedAndHeadersBigEndian) {
  EXPECT_EQ(slotBytes(0), 64u);
  EXPECT_EQ(slotBytes(56), 64u);
  EXPECT_EQ(slotBytes(57), 128u);
  EXPECT_EQ(slotBytes(1514), 1536u);
  uint8_t h[8];
  encodeHeader(h, MsgData, 0x01020304);
  EXPECT_EQ(h[3], 1);
  EXPECT_EQ(h[4], 1);
  EXPECT_EQ(h[7], 4);
  uint32_t type, length;
  decodeHeader(h, type, length);
  EXPECT_EQ(type, uint32_t(MsgData));
  EXPECT_EQ(length, 0x01020304u);
}

// Producer and consumer over one buffer, HEAD and TAIL passed by hand as
// the interface's remote writes would.
TEST(HostIfRing, WrapsWithAWrapMessageAndKeepsOneSlotFree) {
  const uint32_t size = 512; // 8 slots
  std::vector<uint8_t> mem(size, 0xee);
  RingProducer p(size);
  RingConsumer c(size);
  auto put = [&](uint32_t payload, uint8_t fill) {
    Placement w;
    if (!p.place(payload, w))
      return false;
    if (w.wrap)
      encodeHeader(&mem[w.wrapAt], MsgWrap, 0);
    encodeHeader(&mem[w.offset], MsgData, payload);
    std::fill_n(&mem[w.offset + headerBytes], payload, fill);
    p.commit(w);
    return true;
  };
  // 3 slots + 2 slots = 5 of 8.
  ASSERT_TRUE(put(150, 1));
  ASSERT_TRUE(put(100, 2));
  EXPECT_EQ(p.tail(), 320u);
  // 3 more slots would leave none free: refused.
  EXPECT_FALSE(put(150, 3));
  c.setTail(p.tail());
  Message m;
  ASSERT_TRUE(c.peek(mem.data(), m));
  EXPECT_EQ(m.length, 150u);
  EXPECT_EQ(mem[m.offset + headerBytes + 149], 1);
  c.consume(m);
  ASSERT_TRUE(c.peek(mem.data(), m));
  EXPECT_EQ(m.length, 100u);
  c.consume(m);
  p.setHead(c.head());
  EXPECT_EQ(p.used(), 0u);
  // 4 slots do not fit before the end (3 left): WRAP, then offset 0; with
  // the filler they take 7 of 8 slots, the most there is.
  Placement w;
  ASSERT_TRUE(p.place(200, w));
  EXPECT_TRUE(w.wrap);
  EXPECT_EQ(w.wrapAt, 320u);
  EXPECT_EQ(w.offset, 0u);
  EXPECT_EQ(w.newTail, 256u);
  ASSERT_TRUE(put(200, 3));
  EXPECT_FALSE(put(0, 4)); // the free slot stays free
  c.setTail(p.tail());
  ASSERT_TRUE(c.peek(mem.data(), m)); // skips the WRAP
  EXPECT_EQ(m.offset, 0u);
  EXPECT_EQ(m.length, 200u);
  EXPECT_EQ(mem[headerBytes + 199], 3);
  c.consume(m);
  EXPECT_TRUE(c.empty());
  EXPECT_FALSE(c.peek(mem.data(), m));
  // Never larger than the ring minus a slot.
  EXPECT_FALSE(p.place(size, w));
}

TEST(HostIfRing, DamagedHeaderIsReportedNotFollowed) {
  std::vector<uint8_t> mem(1024, 0);
  RingConsumer c(1024);
  encodeHeader(mem.data(), MsgData, 5000);
  c.setTail(64);
  Message m;
  ASSERT_TRUE(c.peek(mem.data(), m));
  EXPECT_EQ(m.type, 0u);
  EXPECT_EQ(m.newHead, 0u);
  encodeHeader(mem.data(), 77, 10);
  ASSERT_TRUE(c.peek(mem.data(), m));
  EXPECT_EQ(m.type, 0u);
}

TEST(HostIfFreelist, CompletesOutOfOrderCommitsInOrder) {
  Freelist f(3);
  int a = f.issue(64), b = f.issue(192), c = f.issue(256);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_GE(c, 0);
  EXPECT_EQ(f.issue(320), -1); // full
  uint32_t head = 0;
  EXPECT_TRUE(f.complete(unsigned(c)));
  EXPECT_TRUE(f.complete(unsigned(b)));
  EXPECT_FALSE(f.commit(head)); // a still out
  EXPECT_EQ(head, 0u);
  EXPECT_TRUE(f.complete(unsigned(a)));
  EXPECT_FALSE(f.complete(unsigned(a))); // twice
  EXPECT_TRUE(f.commit(head));
  EXPECT_EQ(head, 256u);
  EXPECT_EQ(f.inUse(), 0u);
  EXPECT_GE(f.issue(320), 0); // the entries are reused
  EXPECT_FALSE(f.complete(7));
}

TEST(HostIfDma, PipelinedDescriptorsOverlapTheWrite) {
  DmaParams p;
  p.descriptorWrite = 100;
  p.descriptorFetch = 100;
  p.transferStart = 20;
  p.cyclesPerByte = 1;
  DmaEngine serial(p, false), piped(p, true);
  // Serial: a + b + c per message, back to back.
  EXPECT_EQ(serial.submit(0, 80), 300u);
  EXPECT_EQ(serial.submit(0, 80), 600u);
  // Pipelined: the second descriptor is written during the first move.
  uint64_t readAt = 0;
  EXPECT_EQ(piped.submit(0, 80, &readAt), 300u);
  EXPECT_EQ(readAt, 200u);
  EXPECT_EQ(piped.submit(0, 80), 500u);
  EXPECT_EQ(piped.submit(0, 80), 700u);
  EXPECT_EQ(piped.transfers, 3u);
  EXPECT_EQ(piped.bytesMoved, 240u);
  // Idle engine: a late request starts when it comes.
  EXPECT_EQ(piped.submit(1000, 0), 1220u);
}
