//===- netvm-pcapgen.cpp - Generate reproducible packet traces
//----------------===//
//
// Writes pcap traces (through libpcap) of synthetic but well-formed traffic
// for tests, examples and benchmarks: Ethernet II with IPv4 (TCP, UDP, ICMP,
// options, fragments), IPv6 (TCP, UDP, ICMPv6), ARP, 802.1Q VLAN tags, MPLS,
// and malformed frames (runts and truncated captures). The same seed and
// options always give the same bytes, so traces can be regenerated instead of
// committed. --link-type rewrites the link layer of every frame (Linux
// cooked v1 and v2, raw IP, BSD and OpenBSD loopback), as captures of those
// link types carry the same packets.
//
//===----------------------------------------------------------------------===//

#include "netvm/io/PacketIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <pcap/pcap.h>

#include <arpa/inet.h>
#include <cstdint>
#include <cstring>
#include <vector>

namespace cl = llvm::cl;
using netvm::rt::PcapWriter;
using netvm::rt::TracePacket;

static cl::OptionCategory genCategory("netvm-pcapgen options");
static cl::opt<std::string> output("o", cl::desc("Output pcap file"),
                                   cl::value_desc("file"), cl::Required,
                                   cl::cat(genCategory));
static cl::opt<uint64_t> count("n",
                               cl::desc("Number of packets (default 1000)"),
                               cl::init(1000), cl::cat(genCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("Random seed (default 1)"),
                              cl::init(1), cl::cat(genCategory));
static cl::opt<bool> hexOutput(
    "hex",
    cl::desc("Write text instead of pcap: one packet per line as "
             "hexadecimal bytes (the input format of netvm-run --hex and of "
             "the standalone runtime)"),
    cl::cat(genCategory));
static cl::opt<std::string> fromPcap(
    "from",
    cl::desc("Convert this pcap file instead of generating packets (with "
             "--hex: pcap to text)"),
    cl::value_desc("trace.pcap"), cl::cat(genCategory));
static cl::opt<std::string> linkTypeName(
    "link-type",
    cl::desc("The link type of generated packets, by libpcap's name: EN10MB "
             "(Ethernet, the default), LINUX_SLL, LINUX_SLL2, RAW, NULL, LOOP; "
             "each frame's Ethernet header becomes that link layer's"),
    cl::value_desc("name"), cl::init("EN10MB"), cl::cat(genCategory));
static cl::opt<unsigned> malformedPercent(
    "malformed",
    cl::desc("Percentage of runt and truncated frames (default 3)"),
    cl::init(3), cl::cat(genCategory));

namespace {

/// xorshift64*: small, fast and the same everywhere.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }

private:
  uint64_t state;
};

class Builder {
public:
  std::vector<uint8_t> bytes;
  void u8(uint32_t v) { bytes.push_back(static_cast<uint8_t>(v)); }
  void u16(uint32_t v) {
    u8(v >> 8);
    u8(v);
  }
  void u32(uint32_t v) {
    u16(v >> 16);
    u16(v);
  }
  void fill(size_t n, Random &rng) {
    for (size_t i = 0; i < n; ++i)
      u8(rng.below(256));
  }
  size_t size() const { return bytes.size(); }
  void put16(size_t at, uint32_t v) {
    bytes[at] = static_cast<uint8_t>(v >> 8);
    bytes[at + 1] = static_cast<uint8_t>(v);
  }
};

uint32_t checksum(const std::vector<uint8_t> &b, size_t from, size_t len,
                  uint32_t initial = 0) {
  uint64_t sum = initial;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (b[from + i] << 8) | b[from + i + 1];
  if (len & 1)
    sum += b[from + len - 1] << 8;
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint32_t>(~sum & 0xffff);
}

// Addresses that the paper's filters look for appear often.
const uint32_t kHosts[] = {0x0A010101, 0x0A020202, 0x0A030303, 0x0A040404,
                           0xC0A80001, 0xC0A80102, 0x08080808, 0x14010105};
const uint16_t kPorts[] = {80, 443, 22, 53, 20, 30, 123, 8080};

void ethernet(Builder &b, Random &rng, uint32_t type) {
  static const uint8_t macs[][6] = {{0x00, 0x11, 0x22, 0x33, 0x44, 0x55},
                                    {0x00, 0x01, 0x02, 0x03, 0x04, 0x05},
                                    {0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee},
                                    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
  const uint8_t *dst = macs[rng.below(4)], *src = macs[rng.below(3)];
  for (int i = 0; i < 6; ++i)
    b.u8(dst[i]);
  for (int i = 0; i < 6; ++i)
    b.u8(src[i]);
  b.u16(type);
}

/// An IPv4 header (with `optionWords` words of NOP options) carrying
/// `protocol`; returns the offset of the header for the length fix-up.
size_t ipv4(Builder &b, Random &rng, uint32_t protocol, unsigned optionWords,
            bool fragment) {
  size_t start = b.size();
  b.u8(0x40 | (5 + optionWords));
  b.u8(rng.chance(20) ? 0x10 : 0);
  b.u16(0); // total length, fixed up later
  b.u16(rng.below(65536));
  uint32_t flagsFrag = 0x4000; // DF
  if (fragment)
    flagsFrag = rng.chance(50) ? 0x2000 : (0x2000 | (1 + rng.below(100)));
  b.u16(flagsFrag);
  b.u8(1 + rng.below(128));
  b.u8(protocol);
  b.u16(0); // checksum
  b.u32(kHosts[rng.below(8)]);
  b.u32(kHosts[rng.below(8)]);
  for (unsigned i = 0; i < optionWords; ++i)
    b.u32(0x01010101);
  return start;
}

void finishIPv4(Builder &b, size_t start) {
  b.put16(start + 2, b.size() - start);
  unsigned ihl = (b.bytes[start] & 0x0f) * 4;
  b.put16(start + 10, checksum(b.bytes, start, ihl));
}

void transport(Builder &b, Random &rng, uint32_t protocol) {
  switch (protocol) {
  case 6: // TCP
    b.u16(kPorts[rng.below(8)]);
    b.u16(kPorts[rng.below(8)]);
    b.u32(rng.next());
    b.u32(rng.next());
    b.u8(5 << 4);
    b.u8(1u << rng.below(6)); // one of FIN SYN RST PSH ACK URG
    b.u16(65535);
    b.u16(0);
    b.u16(0);
    b.fill(rng.below(64), rng);
    break;
  case 17: { // UDP
    size_t start = b.size();
    b.u16(kPorts[rng.below(8)]);
    b.u16(kPorts[rng.below(8)]);
    b.u16(0);
    b.u16(0);
    b.fill(rng.below(48), rng);
    b.put16(start + 4, b.size() - start);
    break;
  }
  case 1:  // ICMP echo
  case 58: // ICMPv6 echo
    b.u8(protocol == 1 ? (rng.chance(50) ? 8 : 0)
                       : (rng.chance(50) ? 128 : 129));
    b.u8(0);
    b.u16(0);
    b.u32(rng.next());
    b.fill(rng.below(32), rng);
    break;
  default:
    b.fill(8 + rng.below(32), rng);
  }
}

std::vector<uint8_t> makePacket(Random &rng) {
  Builder b;
  unsigned kind = rng.below(100);
  if (kind < 8) { // ARP
    ethernet(b, rng, 0x0806);
    b.u16(1);
    b.u16(0x0800);
    b.u8(6);
    b.u8(4);
    b.u16(rng.chance(50) ? 1 : 2);
    b.fill(6, rng);
    b.u32(kHosts[rng.below(8)]);
    b.fill(6, rng);
    b.u32(kHosts[rng.below(8)]);
    return b.bytes;
  }
  if (kind < 20) { // IPv6
    ethernet(b, rng, 0x86DD);
    uint32_t next = rng.chance(40) ? 6 : rng.chance(60) ? 17 : 58;
    b.u32(0x60000000 | rng.below(1 << 20));
    size_t lenAt = b.size();
    b.u16(0);
    b.u8(next);
    b.u8(64);
    for (int i = 0; i < 2; ++i) {
      b.u32(0x20010db8);
      b.u32(0);
      b.u32(0);
      b.u32(1 + rng.below(4));
    }
    size_t payload = b.size();
    transport(b, rng, next);
    b.put16(lenAt, b.size() - payload);
    return b.bytes;
  }
  unsigned vlanTags = kind < 28 ? 1 + (kind < 22) : 0;
  bool mpls = kind >= 28 && kind < 32;
  if (vlanTags) {
    ethernet(b, rng, 0x8100);
    for (unsigned i = 0; i < vlanTags; ++i) {
      b.u16(rng.below(4096));
      b.u16(i + 1 < vlanTags ? 0x8100 : 0x0800);
    }
  } else if (mpls) {
    ethernet(b, rng, 0x8847);
    unsigned labels = 1 + rng.below(2);
    for (unsigned i = 0; i < labels; ++i)
      b.u32((rng.below(1 << 20) << 12) | (i + 1 == labels ? 0x100 : 0) | 64);
  } else {
    ethernet(b, rng, 0x0800);
  }
  uint32_t protocol = kind < 60 ? 6 : kind < 85 ? 17 : kind < 95 ? 1 : 47;
  unsigned options = rng.chance(5) ? 1 + rng.below(3) : 0;
  bool fragment = rng.chance(4);
  size_t ip = ipv4(b, rng, protocol, options, fragment);
  transport(b, rng, protocol);
  finishIPv4(b, ip);
  return b.bytes;
}

} // namespace

/// `frame` (an Ethernet frame) with its link layer rewritten as a capture
/// of `linkType` would carry it: the Ethernet header (14 bytes; its
/// EtherType or 802.3 length) becomes a Linux cooked v1 or v2 header, an
/// address family word (loopback), or nothing (raw IP). Packet types,
/// interface indexes and the IPv6 family vary with `rng`.
static std::vector<uint8_t> relink(const std::vector<uint8_t> &frame,
                                   int linkType, Random &rng) {
  uint16_t type = static_cast<uint16_t>(frame[12] << 8 | frame[13]);
  std::vector<uint8_t> payload(frame.begin() + 14, frame.end());
  // An 802.3 frame's protocol in a cooked header: 802.2 (LLC) unless raw
  // IPX (DSAP and SSAP 0xFF).
  uint16_t protocol = type;
  if (type <= 1500)
    protocol = payload.size() >= 2 && payload[0] == 0xFF && payload[1] == 0xFF
                   ? 0x0001
                   : 0x0004;
  std::vector<uint8_t> header;
  auto put16 = [&](uint16_t v) {
    header.push_back(static_cast<uint8_t>(v >> 8));
    header.push_back(static_cast<uint8_t>(v));
  };
  static const uint16_t packetTypes[] = {0, 1, 2, 3, 4};
  uint16_t packetType = packetTypes[rng.below(5)];
  switch (linkType) {
  case DLT_LINUX_SLL:
    put16(packetType);
    put16(1); // ARPHRD_ETHER
    put16(6);
    header.insert(header.end(), frame.begin() + 6, frame.begin() + 12);
    put16(0);
    put16(protocol);
    break;
  case DLT_LINUX_SLL2: {
    put16(protocol);
    put16(0);
    uint32_t ifindex = 1 + static_cast<uint32_t>(rng.below(4));
    put16(static_cast<uint16_t>(ifindex >> 16));
    put16(static_cast<uint16_t>(ifindex));
    put16(1); // ARPHRD_ETHER
    header.push_back(static_cast<uint8_t>(packetType));
    header.push_back(6);
    header.insert(header.end(), frame.begin() + 6, frame.begin() + 12);
    put16(0);
    break;
  }
  case DLT_NULL:
  case DLT_LOOP: {
    // BSD's families: 2 for IPv4; IPv6's differ by system (24, 28, 30).
    static const uint32_t inet6[] = {24, 28, 30};
    uint32_t family = type == 0x0800   ? 2
                      : type == 0x86dd ? inet6[rng.below(3)]
                                       : static_cast<uint32_t>(rng.below(40));
    // NULL: in this host's byte order (the file's); LOOP: big-endian.
    uint32_t word = linkType == DLT_NULL ? family : htonl(family);
    uint8_t bytes[4];
    std::memcpy(bytes, &word, 4);
    header.insert(header.end(), bytes, bytes + 4);
    break;
  }
  default: // DLT_RAW
    break;
  }
  header.insert(header.end(), payload.begin(), payload.end());
  return header;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(genCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-pcapgen - write a reproducible synthetic packet trace\n\n"
      "Mix: ~8% ARP, ~12% IPv6 (TCP/UDP/ICMPv6), ~8% 802.1Q (some QinQ),\n"
      "~4% MPLS, the rest IPv4 (TCP, UDP, ICMP, GRE; some with options or\n"
      "fragmented), plus --malformed percent of runts and truncated\n"
      "captures. The same options always produce the same file.\n");
  std::string error;
  int linkType = pcap_datalink_name_to_val(linkTypeName.c_str());
  if (!llvm::is_contained({DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_RAW,
                           DLT_NULL, DLT_LOOP},
                          linkType)) {
    llvm::errs() << "netvm-pcapgen: --link-type: '" << linkTypeName
                 << "' is not one of EN10MB, LINUX_SLL, LINUX_SLL2, RAW, "
                    "NULL, LOOP\n";
    return 1;
  }
  // --from keeps the input's link type and snapshot length.
  std::unique_ptr<netvm::rt::PacketReader> reader;
  uint32_t snapLength = 262144;
  if (!fromPcap.empty()) {
    if (linkTypeName.getNumOccurrences()) {
      llvm::errs() << "netvm-pcapgen: --link-type applies to generated "
                      "packets; --from keeps the input's\n";
      return 1;
    }
    reader = netvm::rt::PacketReader::open(fromPcap, false, error);
    if (!reader) {
      llvm::errs() << "netvm-pcapgen: " << error << "\n";
      return 1;
    }
    linkType = reader->linkType();
    snapLength = reader->snapLength();
  }
  std::unique_ptr<PcapWriter> writer;
  std::unique_ptr<llvm::raw_fd_ostream> text;
  if (hexOutput) {
    std::error_code ec;
    text = std::make_unique<llvm::raw_fd_ostream>(output, ec,
                                                  llvm::sys::fs::OF_Text);
    if (ec) {
      llvm::errs() << "netvm-pcapgen: " << output << ": " << ec.message()
                   << "\n";
      return 1;
    }
  } else {
    writer = PcapWriter::create(output, linkType, error, snapLength);
    if (!writer) {
      llvm::errs() << "netvm-pcapgen: " << error << "\n";
      return 1;
    }
  }
  auto emit = [&](const TracePacket &packet) {
    if (writer) {
      writer->write(packet);
      return;
    }
    for (size_t i = 0; i < packet.bytes.size(); ++i)
      *text << (i ? " " : "") << llvm::format_hex_no_prefix(packet.bytes[i], 2);
    *text << "\n";
  };
  // Everything written reaches the file, or the error names it.
  auto finish = [&]() {
    if (writer && !writer->flush(error)) {
      llvm::errs() << "netvm-pcapgen: " << error << "\n";
      return 1;
    }
    if (text) {
      text->close();
      if (text->has_error()) {
        llvm::errs() << "netvm-pcapgen: " << output << ": "
                     << text->error().message() << "\n";
        text->clear_error();
        return 1;
      }
    }
    return 0;
  };
  if (reader) {
    TracePacket packet;
    while (reader->next(packet, error))
      emit(packet);
    if (!error.empty()) {
      llvm::errs() << "netvm-pcapgen: " << error << "\n";
      return 1;
    }
    return finish();
  }
  Random rng(seed);
  for (uint64_t i = 0; i < count; ++i) {
    TracePacket packet;
    packet.bytes = makePacket(rng);
    // Ethernet minimum frame size (without FCS).
    if (packet.bytes.size() < 60)
      packet.bytes.resize(60, 0);
    if (linkType != DLT_EN10MB)
      packet.bytes = relink(packet.bytes, linkType, rng);
    packet.wireLength = packet.bytes.size();
    if (rng.chance(malformedPercent)) {
      // A runt (shorter than an Ethernet header) or a truncated capture.
      size_t keep = rng.chance(30) ? rng.below(14) : 14 + rng.below(40);
      packet.bytes.resize(std::min(keep, packet.bytes.size()));
    }
    packet.seconds = 1700000000 + static_cast<uint32_t>(i / 1000);
    packet.microseconds = static_cast<uint32_t>((i % 1000) * 1000);
    emit(packet);
  }
  return finish();
}
