//===- PacketIOTest.cpp - pcap and hex packet I/O
//----------------------------===//

#include "netvm/io/PacketIO.h"

#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

#include <fstream>

using namespace netvm::rt;

static std::string tempPath(const char *suffix) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("netvm-unit", suffix, path);
  return std::string(path);
}

TEST(PacketIO, PcapRoundTrip) {
  std::string path = tempPath("pcap");
  std::string error;
  {
    auto writer = PcapWriter::create(path, 1, error);
    ASSERT_NE(writer, nullptr) << error;
    for (uint8_t i = 0; i < 3; ++i) {
      TracePacket p;
      p.bytes.assign(10 + i, i);
      p.wireLength = 100;
      p.seconds = 7;
      p.microseconds = i;
      writer->write(p);
    }
    EXPECT_EQ(writer->count(), 3u);
  }
  auto reader = PacketReader::open(path, /*hex=*/false, error);
  ASSERT_NE(reader, nullptr) << error;
  EXPECT_EQ(reader->linkType(), 1);
  TracePacket p;
  for (uint8_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(reader->next(p, error));
    EXPECT_EQ(p.bytes, std::vector<uint8_t>(10 + i, i));
    EXPECT_EQ(p.wireLength, 100u);
    EXPECT_EQ(p.seconds, 7u);
    EXPECT_EQ(p.microseconds, i);
  }
  EXPECT_FALSE(reader->next(p, error));
  EXPECT_TRUE(error.empty());
  llvm::sys::fs::remove(path);
}

TEST(PacketIO, HexLines) {
  std::string path = tempPath("txt");
  std::ofstream(path) << "# two packets\n0x01 02 ff\n\n  0a 0B\n";
  std::string error;
  auto reader = PacketReader::open(path, /*hex=*/true, error);
  ASSERT_NE(reader, nullptr);
  TracePacket p;
  ASSERT_TRUE(reader->next(p, error));
  EXPECT_EQ(p.bytes, (std::vector<uint8_t>{1, 2, 0xff}));
  ASSERT_TRUE(reader->next(p, error));
  EXPECT_EQ(p.bytes, (std::vector<uint8_t>{0x0a, 0x0b}));
  EXPECT_FALSE(reader->next(p, error));
  llvm::sys::fs::remove(path);
}

TEST(PacketIO, HexErrorsNameTheLine) {
  std::string path = tempPath("txt");
  std::ofstream(path) << "01 02\n01 zz\n";
  std::string error;
  auto reader = PacketReader::open(path, true, error);
  TracePacket p;
  ASSERT_TRUE(reader->next(p, error));
  EXPECT_FALSE(reader->next(p, error));
  EXPECT_NE(error.find(":2: 'zz' is not a hexadecimal byte"), std::string::npos)
      << error;
  std::ofstream(path) << "100\n";
  reader = PacketReader::open(path, true, error);
  error.clear();
  EXPECT_FALSE(reader->next(p, error));
  EXPECT_NE(error.find("does not fit in a byte"), std::string::npos);
  llvm::sys::fs::remove(path);
}

TEST(PacketIO, MissingFiles) {
  std::string error;
  EXPECT_EQ(PacketReader::open("/nonexistent/x.pcap", false, error), nullptr);
  EXPECT_NE(error.find("/nonexistent/x.pcap"), std::string::npos);
  TracePacket p;
  EXPECT_FALSE(PacketReader::readHexPacket("/nonexistent/p.txt", p, error));
}

TEST(PacketIO, NotAPcap) {
  std::string path = tempPath("pcap");
  std::ofstream(path) << "this is not a capture file at all";
  std::string error;
  EXPECT_EQ(PacketReader::open(path, false, error), nullptr);
  EXPECT_FALSE(error.empty());
  llvm::sys::fs::remove(path);
}

/// A classic pcap file of `count` packets of 20 bytes (wire length 60) with
/// the header's snapshot length `snap`.
static std::string smallPcap(uint32_t snap, unsigned count) {
  std::string path = tempPath("pcap");
  std::string error;
  auto writer = PcapWriter::create(path, 1, error, snap);
  for (unsigned i = 0; i < count; ++i) {
    TracePacket p;
    p.bytes.assign(20, static_cast<uint8_t>(i));
    p.wireLength = 60;
    p.seconds = i;
    writer->write(p);
  }
  return path;
}

TEST(PacketIO, MappedFilesAreReadInPlace) {
  std::string path = smallPcap(96, 3), error;
  auto reader = PacketReader::open(path, /*hex=*/false, error);
  ASSERT_NE(reader, nullptr) << error;
  EXPECT_TRUE(reader->stableViews());
  EXPECT_EQ(reader->snapLength(), 96u);
  PacketView first, view;
  ASSERT_TRUE(reader->nextView(first, error));
  ASSERT_TRUE(reader->nextView(view, error));
  // In place: the views are where the file's records are, 16 bytes apart
  // from the end of the one before.
  EXPECT_EQ(view.data, first.data + 20 + 16);
  EXPECT_EQ(view.length, 20u);
  EXPECT_EQ(view.wireLength, 60u);
  EXPECT_EQ(view.seconds, 1u);
  EXPECT_EQ(first.data[0], 0u);
  EXPECT_EQ(view.data[0], 1u);
  ASSERT_TRUE(reader->nextView(view, error));
  EXPECT_FALSE(reader->nextView(view, error));
  EXPECT_TRUE(error.empty());
  llvm::sys::fs::remove(path);
}

TEST(PacketIO, LibpcapReadsWhatTheMapDoesNotExpect) {
  // A snapshot length of 10 with 20-byte records: libpcap cuts each record
  // to 10 bytes, and the mapped reader leaves the file to it.
  std::string path = smallPcap(10, 2), error;
  auto reader = PacketReader::open(path, /*hex=*/false, error);
  ASSERT_NE(reader, nullptr) << error;
  PacketView view;
  ASSERT_TRUE(reader->nextView(view, error)) << error;
  EXPECT_FALSE(reader->stableViews());
  EXPECT_EQ(view.length, 10u);
  EXPECT_EQ(view.wireLength, 60u);
  ASSERT_TRUE(reader->nextView(view, error)) << error;
  EXPECT_EQ(view.seconds, 1u);
  EXPECT_FALSE(reader->nextView(view, error));
  llvm::sys::fs::remove(path);
}

TEST(PacketIO, ReadAheadKeepsEveryPacket) {
  // Faulting the next pages in on another thread, while the views before
  // them are released, changes nothing the reader delivers.
  std::string path = smallPcap(96, 3000), error;
  auto reader = PacketReader::open(path, /*hex=*/false, error);
  ASSERT_NE(reader, nullptr) << error;
  ASSERT_TRUE(reader->stableViews());
  PacketView view;
  unsigned seen = 0;
  while (reader->nextView(view, error)) {
    EXPECT_EQ(view.seconds, seen);
    EXPECT_EQ(view.data[19], static_cast<uint8_t>(seen));
    ++seen;
    if (seen % 700 == 0) {
      reader->readAhead(700 * 36);
      reader->release();
    }
  }
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(seen, 3000u);
  // At the end it has nothing to do; the reader may go while it runs.
  reader->readAhead(1 << 20);
  reader.reset();
  auto again = PacketReader::open(path, /*hex=*/false, error);
  ASSERT_NE(again, nullptr) << error;
  again->readAhead(1 << 30);
  again.reset();
  llvm::sys::fs::remove(path);
}
