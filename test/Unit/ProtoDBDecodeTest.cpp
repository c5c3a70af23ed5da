//===- ProtoDBDecodeTest.cpp - Decoding packets with a NetPDL database ----===//
//
// protodb::decode on netvm's database: where the headers and fields are,
// every truncation of a packet (never a read past the captured bytes, the
// last header marked truncated), a do-while loop whose condition reads the
// fields its body decodes, and loops that do not move forward.
//
//===----------------------------------------------------------------------===//

#include "netvm/ProtoDB/ProtoDB.h"

#include "gtest/gtest.h"

#include <vector>

using namespace netvm::protodb;

/// Ethernet, IPv4 (one NOP option and the end of the list: hlen 6), TCP
/// to port 80 with 3 bytes of payload.
static std::vector<uint8_t> tcpPacket() {
  std::vector<uint8_t> p = {
      0,    1,    2,    3,    4,  5, 6, 7, 8,  9, 10, 11,
      0x08, 0x00,                                        // ethernet
      0x46, 0,    0,    47,   0,  1, 0, 0, 64, 6, 0,  0, // ip
      10,   1,    1,    1,    10, 2, 2, 2, 1,  0, 0,  0, // addresses, options
      0x04, 0xd2, 0,    80,   0,  0, 0, 1, 0,  0, 0,  0, // tcp ports, seq, ack
      0x50, 0x18, 0xff, 0xff, 0,  0, 0, 0,               // hlen 5, PSH ACK
      'a',  'b',  'c'};
  return p;
}

static std::vector<std::string> names(const std::vector<DecodedHeader> &hs) {
  std::vector<std::string> out;
  for (const DecodedHeader &h : hs)
    out.push_back(h.protocol->name);
  return out;
}

TEST(ProtoDBDecode, Headers) {
  std::vector<uint8_t> p = tcpPacket();
  std::vector<DecodedHeader> hs = decode(Database::builtin(), p);
  ASSERT_EQ(names(hs),
            (std::vector<std::string>{"ethernet", "ip", "tcp", "payload"}));
  EXPECT_EQ(hs[1].offset, 14u);
  EXPECT_EQ(hs[1].length, 24u);
  EXPECT_EQ(hs[1].value("hlen", p), 6u);
  EXPECT_EQ(hs[1].value("ver", p), 4u);
  EXPECT_EQ(hs[2].offset, 38u);
  EXPECT_EQ(hs[2].value("dport", p), 80u);
  EXPECT_EQ(hs[2].value("flags", p), 0x18u);
  EXPECT_EQ(hs[3].length, 3u);
  for (const DecodedHeader &h : hs)
    EXPECT_FALSE(h.truncated);
}

TEST(ProtoDBDecode, EveryTruncation) {
  std::vector<uint8_t> full = tcpPacket();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> p(full.begin(), full.begin() + n);
    std::vector<DecodedHeader> hs = decode(Database::builtin(), p);
    for (const DecodedHeader &h : hs)
      for (const DecodedField &f : h.fields)
        EXPECT_LE(f.offset + f.size, n) << f.name << " at length " << n;
    // Cut inside a header: it is the last one and says so.
    if (n < 58) {
      ASSERT_FALSE(hs.empty()) << n;
      EXPECT_TRUE(hs.back().truncated) << n;
    }
  }
}

TEST(ProtoDBDecode, GreSourceRouting) {
  // GRE with the routing bit: SREs up to one with family 0 and length 0
  // (a do-while loop whose condition reads what its body decoded), then
  // IPv4 inside.
  std::vector<uint8_t> p = {
      0,    1,    2,    3,    4,    5,    6, 7, 8,  9,  10, 11,
      0x08, 0x00,                                              // ethernet
      0x45, 0,    0,    64,   0,    1,    0, 0, 64, 47, 0,  0, // ip, proto 47
      10,   1,    1,    1,    10,   2,    2, 2,                // addresses
      0x40, 0x00, 0x08, 0x00, 0,    0,    0, 0, // gre: R, checksum
      0x08, 0x00, 0,    2,    0xaa, 0xbb,       // an SRE of 2 bytes
      0,    0,    0,    0,                      // the last SRE
      0x45, 0,    0,    20,   0,    1,    0, 0, 64, 17, 0,  0, // inner ip
      10,   3,    3,    3,    10,   4,    4, 4};
  std::vector<DecodedHeader> hs = decode(Database::builtin(), p);
  // The inner IPv4 says UDP, which the capture does not hold.
  ASSERT_EQ(names(hs),
            (std::vector<std::string>{"ethernet", "ip", "gre", "ip", "udp"}));
  EXPECT_TRUE(hs[4].truncated);
  EXPECT_EQ(hs[3].offset, 52u);
}

TEST(ProtoDBDecode, LoopsEnd) {
  // A while loop that decodes nothing, and one that never stops moving
  // forward until the packet ends: both end, and nothing is read past it.
  const char *text = R"(<netpdl name="t" version="1">
  <protocol name="startproto" layer="0">
    <encapsulation> <nextproto proto="#p"/> </encapsulation>
  </protocol>
  <protocol name="p" layer="2">
    <format><fields>
      <loop type="while" expr="1"> <if expr="0"><if-true>
        <field type="fixed" name="never" size="1"/></if-true></if> </loop>
      <loop type="while" expr="1"> <field type="fixed" name="b" size="1"/> </loop>
    </fields></format>
  </protocol>
</netpdl>)";
  LoadError error;
  std::unique_ptr<Database> db = Database::parse(text, "t.xml", error);
  ASSERT_NE(db, nullptr) << error.loc.str() << ": " << error.message;
  std::vector<uint8_t> p(100, 7);
  std::vector<DecodedHeader> hs = decode(*db, p);
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_TRUE(hs[0].truncated);
  EXPECT_EQ(hs[0].fields.size(), 100u);
}
