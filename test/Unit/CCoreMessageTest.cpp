//===- CCoreMessageTest.cpp - C-CORE schemas, messages, classifier --------===//

#include "netvm/ccore/Message.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace netvm::ccore;

static const char *flightSchema = R"(# flights
format flight id 7 size 64 {
  u32 flightno;          # at 8
  u16 gate;              # at 12
  u8 status @ 15;
  bytes carrier[3];      # at 16
  u32 price @ 20;
}
format bag id 8 {
  u32 tag;
  u32 weight;
}
)";

static Schema parseOk(const char *text) {
  std::string error;
  std::optional<Schema> schema = parseSchema(text, "t.ccs", error);
  EXPECT_TRUE(schema.has_value()) << error;
  return schema ? *schema : Schema();
}

static std::string parseError(const char *text) {
  std::string error;
  std::optional<Schema> schema = parseSchema(text, "t.ccs", error);
  EXPECT_FALSE(schema.has_value());
  return error;
}

TEST(CCoreSchema, OffsetsSizesAndIds) {
  Schema s = parseOk(flightSchema);
  ASSERT_EQ(s.formats.size(), 2u);
  const Format *f = s.format("flight");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->id, 7);
  EXPECT_EQ(f->size, 64u);
  EXPECT_EQ(f->field("flightno")->offset, 8u);
  EXPECT_EQ(f->field("gate")->offset, 12u);
  EXPECT_EQ(f->field("gate")->size, 2u);
  EXPECT_EQ(f->field("status")->offset, 15u);
  EXPECT_EQ(f->field("carrier")->offset, 16u);
  EXPECT_EQ(f->field("carrier")->size, 3u);
  EXPECT_EQ(f->field("price")->offset, 20u);
  EXPECT_EQ(f->field("price")->line, 7u);
  EXPECT_EQ(f->field("price")->column, 3u);
  // Without a size, a format ends with its last field.
  EXPECT_EQ(s.format("bag")->size, 16u);
  EXPECT_EQ(s.formatById(8), s.format("bag"));
  EXPECT_EQ(s.formatById(9), nullptr);
}

TEST(CCoreSchema, ErrorsHaveLineAndColumn) {
  EXPECT_EQ(parseError("format a id 1 {\n  u32 x;\n  u64 y;\n}\n"),
            "t.ccs:3:3: error: unknown field type 'u64' (expected u8, u16, "
            "u32 or bytes)\n");
  EXPECT_EQ(parseError("format a id 1 {\n  u32 x;\n  u16 y @ 10;\n}\n"),
            "t.ccs:3:11: error: field 'y' overlaps field 'x' (bytes 8-11)\n");
  EXPECT_EQ(parseError("format a id 1 {\n  u32 x @ 4;\n}\n"),
            "t.ccs:2:11: error: field 'x' at offset 4 overlaps the message "
            "header (bytes 0-7)\n");
  EXPECT_EQ(parseError("format a id 1 size 10 {\n  u32 x;\n  u32 y;\n}\n"),
            "t.ccs:1:20: error: size 10 of format 'a' is smaller than its "
            "fields (16 bytes)\n");
  EXPECT_EQ(parseError("format a {\n  u32 x;\n}\n"),
            "t.ccs:1:10: error: format 'a' needs an 'id N'\n");
  EXPECT_EQ(parseError("format a id 70000 { u8 x; }"),
            "t.ccs:1:13: error: a format id 70000 is out of range (at most "
            "65535)\n");
  EXPECT_EQ(parseError(""),
            "t.ccs:1:1: error: the schema declares no format\n");
  // Every error of a file, not only the first.
  std::string two = parseError(
      "format a id 1 { u32 x; u32 x; }\nformat b id 1 { bytes z[0]; }\n");
  EXPECT_EQ(two, "t.ccs:1:28: error: field 'x' is declared twice in format "
                 "'a'\n"
                 "t.ccs:2:13: error: format id 1 is already 'a''s\n"
                 "t.ccs:2:25: error: bytes field 'z' has size 0\n");
  EXPECT_EQ(parseError("format a id 1 { u32 x }"),
            "t.ccs:1:23: error: expected ';' after field 'x', found '}'\n");
}

TEST(CCoreMessage, EncodeDecodeRoundTrip) {
  Schema s = parseOk(flightSchema);
  const Format &f = *s.format("flight");
  Values in;
  in["flightno"].number = 0x01020304;
  in["gate"].number = 0xBEEF;
  in["status"].number = 9;
  in["carrier"].bytes = {'D', 'L'};
  in["price"].number = 450;
  std::vector<uint8_t> m;
  std::string error;
  ASSERT_TRUE(encode(f, 0xA0B0C0D0, in, m, error)) << error;
  ASSERT_EQ(m.size(), 64u);
  EXPECT_EQ(m[0], 0xA0);
  EXPECT_EQ(m[3], 0xD0);
  EXPECT_EQ(m[5], 7);  // format id
  EXPECT_EQ(m[7], 64); // length
  EXPECT_EQ(m[8], 1);
  EXPECT_EQ(m[11], 4);
  EXPECT_EQ(m[12], 0xBE);
  EXPECT_EQ(m[15], 9);
  EXPECT_EQ(m[16], 'D');
  EXPECT_EQ(m[18], 0);
  EXPECT_EQ(m[23], 450 & 0xFF);
  Values out;
  ASSERT_TRUE(decode(f, m.data(), m.size(), out, error)) << error;
  EXPECT_EQ(out["flightno"].number, 0x01020304u);
  EXPECT_EQ(out["gate"].number, 0xBEEFu);
  EXPECT_EQ(out["price"].number, 450u);
  EXPECT_EQ(out["carrier"].bytes, std::vector<uint8_t>({'D', 'L', 0}));

  Values bad;
  bad["gate"].number = 0x10000;
  EXPECT_FALSE(encode(f, 1, bad, m, error));
  EXPECT_EQ(error, "value 65536 does not fit u16 field 'gate'");
  bad.clear();
  bad["nope"].number = 1;
  EXPECT_FALSE(encode(f, 1, bad, m, error));
  EXPECT_EQ(error, "format 'flight' has no field 'nope'");

  ASSERT_TRUE(encode(f, 1, in, m, error));
  EXPECT_FALSE(decode(*s.format("bag"), m.data(), m.size(), out, error));
  EXPECT_EQ(error, "the message is of format 7, not 'bag' (8)");
  EXPECT_FALSE(decode(f, m.data(), 20, out, error));
}

TEST(CCoreClassifier, PerFormatQueuesAndCountedRejects) {
  Schema s = parseOk(flightSchema);
  Classifier c(s);
  ChannelKey flights{"airline", "gate-display", 1, 7};
  ChannelKey bags{"airline", "baggage", 2, 8};
  std::string error;
  ASSERT_TRUE(c.openChannel(flights, error));
  ASSERT_TRUE(c.openChannel(bags, error));
  EXPECT_FALSE(c.openChannel({"a", "b", 0, 99}, error));
  ASSERT_TRUE(c.openStream(10, flights, error));
  ASSERT_TRUE(c.openStream(11, flights, error));
  ASSERT_TRUE(c.openStream(20, bags, error));
  EXPECT_FALSE(c.openStream(20, flights, error));
  EXPECT_FALSE(c.openStream(30, {"x", "y", 0, 7}, error));

  std::vector<uint8_t> f1, f2, b1;
  Values v;
  v["price"].number = 1;
  ASSERT_TRUE(encode(*s.format("flight"), 10, v, f1, error));
  v["price"].number = 2;
  ASSERT_TRUE(encode(*s.format("flight"), 11, v, f2, error));
  ASSERT_TRUE(encode(*s.format("bag"), 20, {}, b1, error));
  using V = Classifier::Verdict;
  EXPECT_EQ(c.classify(f1.data(), f1.size()), V::Queued);
  EXPECT_EQ(c.classify(b1.data(), b1.size()), V::Queued);
  EXPECT_EQ(c.classify(f2.data(), f2.size()), V::Queued);
  EXPECT_EQ(c.classify(f1.data(), 5), V::Short);
  EXPECT_EQ(c.classify(f1.data(), 40), V::Short);
  std::vector<uint8_t> stray = f1;
  stray[3] = 99; // stream 99
  EXPECT_EQ(c.classify(stray.data(), stray.size()), V::UnknownStream);
  std::vector<uint8_t> mixed = b1;
  mixed[3] = 10; // a bag message on a flight stream
  EXPECT_EQ(c.classify(mixed.data(), mixed.size()), V::WrongFormat);

  ASSERT_EQ(c.queue(7)->size(), 2u);
  EXPECT_EQ(c.queue(7)->front(), f1); // in arrival order
  EXPECT_EQ(c.queue(7)->back(), f2);
  ASSERT_EQ(c.queue(8)->size(), 1u);
  EXPECT_EQ(c.queue(9), nullptr);
  EXPECT_EQ(c.counters().queued, 3u);
  EXPECT_EQ(c.counters().rejected[unsigned(V::Short)], 2u);
  EXPECT_EQ(c.counters().rejected[unsigned(V::UnknownStream)], 1u);
  EXPECT_EQ(c.counters().rejected[unsigned(V::WrongFormat)], 1u);
  EXPECT_EQ(c.channelCount(flights), 2u);
  EXPECT_EQ(c.channelCount(bags), 1u);
}

TEST(CCoreReliableUdp, FragmentsCarryHeaderAndPayload) {
  std::vector<uint8_t> m(600);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = uint8_t(i * 7);
  m[0] = 0, m[1] = 0, m[2] = 1, m[3] = 2; // stream 0x102
  FragmentOptions options;
  options.payload = 256;
  options.firstSequence = 9;
  std::vector<std::vector<uint8_t>> fragments;
  std::string error;
  ASSERT_TRUE(fragmentMessages({m, m}, options, fragments, error)) << error;
  ASSERT_EQ(fragments.size(), 6u);
  const std::vector<uint8_t> &last = fragments[5];
  ASSERT_EQ(last.size(), rudpHeaderBytes + 88);
  // Stream, sequence 10 (the second message), index 2 of 3, 88 of 600.
  std::vector<uint8_t> header(last.begin(), last.begin() + rudpHeaderBytes);
  EXPECT_EQ(header, (std::vector<uint8_t>{0, 0, 1, 2, 0, 0, 0, 10, 0, 2, 0, 3,
                                          0, 88, 2, 88}));
  EXPECT_TRUE(
      std::equal(last.begin() + rudpHeaderBytes, last.end(), m.begin() + 512));
  // Reassembled in order, the payloads are the messages.
  std::vector<uint8_t> joined;
  for (size_t f = 0; f < 3; ++f)
    joined.insert(joined.end(), fragments[f].begin() + rudpHeaderBytes,
                  fragments[f].end());
  EXPECT_EQ(joined, m);
}

TEST(CCoreReliableUdp, LossIsReproducibleAndLimitsAreChecked) {
  std::vector<std::vector<uint8_t>> messages(200, std::vector<uint8_t>(600, 1));
  FragmentOptions options;
  options.payload = 100;
  options.lossPercent = 10;
  std::vector<std::vector<uint8_t>> a, b;
  std::string error;
  ASSERT_TRUE(fragmentMessages(messages, options, a, error));
  ASSERT_TRUE(fragmentMessages(messages, options, b, error));
  EXPECT_EQ(a, b);
  EXPECT_LT(a.size(), 1200u);
  EXPECT_GT(a.size(), 1000u);
  options.payload = 18; // 34 fragments
  EXPECT_FALSE(fragmentMessages(messages, options, a, error));
  EXPECT_NE(error.find("does not fit 32 fragments of 18 bytes"),
            std::string::npos);
  options.payload = 0;
  EXPECT_FALSE(fragmentMessages(messages, options, a, error));
  EXPECT_EQ(error, "the fragment payload must be 1-65535 bytes");
}
