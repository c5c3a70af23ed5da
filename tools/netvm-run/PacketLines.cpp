//===- PacketLines.cpp - tcpdump-like lines for packets -------------------===//
//
// The headers come from protodb::decode (netvm's NetPDL database says
// where every header and field is); this file only chooses tcpdump's words
// for them. Where tcpdump decodes more (application protocols, TCP
// options, relative sequence numbers), the line stops at what the headers
// say, as `tcpdump -S` would start it.
//
//===----------------------------------------------------------------------===//

#include "PacketLines.h"

#include "netvm/ProtoDB/ProtoDB.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <ctime>
#include <string>
#include <vector>

using namespace netvm;
using namespace netvm::tools;
using protodb::DecodedHeader;

namespace {
/// One packet's decoded headers and the words printed so far.
struct Line {
  llvm::ArrayRef<uint8_t> bytes;
  uint32_t wireLength;
  std::vector<DecodedHeader> headers;
  bool linkHeader;
  std::string text;
  llvm::raw_string_ostream os{text};

  uint32_t value(const DecodedHeader &h, llvm::StringRef field) const {
    return h.value(field, bytes).value_or(0);
  }
  llvm::ArrayRef<uint8_t> fieldBytes(const DecodedHeader &h,
                                     llvm::StringRef field) const {
    const protodb::DecodedField *f = h.field(field);
    if (!f)
      return {};
    return bytes.slice(f->offset, f->size);
  }
  bool is(size_t i, llvm::StringRef name) const {
    return i < headers.size() && headers[i].protocol->name == name;
  }
  /// The bytes on the wire from header `i` on.
  uint32_t wireFrom(size_t i) const {
    uint32_t at = i < headers.size() ? headers[i].offset : bytes.size();
    return wireLength > at ? wireLength - at : 0;
  }

  void mac(llvm::ArrayRef<uint8_t> a) {
    for (size_t i = 0; i < a.size(); ++i)
      os << (i ? ":" : "") << llvm::format_hex_no_prefix(a[i], 2);
  }
  void ipv4(llvm::ArrayRef<uint8_t> a) {
    for (size_t i = 0; i < a.size(); ++i)
      os << (i ? "." : "") << unsigned(a[i]);
  }
  /// RFC 5952: lower-case groups, the longest run of two or more zero
  /// groups (the first of equal runs) as "::".
  void ipv6(llvm::ArrayRef<uint8_t> a) {
    if (a.size() != 16)
      return;
    uint16_t g[8];
    for (int i = 0; i < 8; ++i)
      g[i] = a[2 * i] << 8 | a[2 * i + 1];
    int best = -1, bestLen = 1;
    for (int i = 0; i < 8;) {
      int j = i;
      while (j < 8 && g[j] == 0)
        ++j;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
      i = j == i ? i + 1 : j;
    }
    for (int i = 0; i < 8; ++i) {
      if (i == best) {
        os << "::";
        i += bestLen - 1;
        continue;
      }
      if (i && i != best + bestLen)
        os << ":";
      os << llvm::format("%x", g[i]);
    }
  }
  void address(const DecodedHeader &ip, llvm::StringRef field) {
    if (ip.protocol->name == "ip")
      ipv4(fieldBytes(ip, field));
    else
      ipv6(fieldBytes(ip, field));
  }

  static const char *etherTypeName(uint32_t type) {
    switch (type) {
    case 0x0800:
      return "IPv4";
    case 0x86dd:
      return "IPv6";
    case 0x0806:
      return "ARP";
    case 0x8100:
      return "802.1Q";
    case 0x88a8:
      return "802.1Q-QinQ";
    case 0x9100:
      return "802.1Q-9100";
    case 0x8847:
      return "MPLS unicast";
    case 0x8848:
      return "MPLS multicast";
    }
    return "Unknown";
  }
  void etherType(uint32_t type) {
    if (type <= 1500)
      os << "802.3";
    else
      os << "ethertype " << etherTypeName(type) << " ("
         << llvm::format_hex(type, 6) << ")";
  }

  /// The link layer (Ethernet, VLAN tags, MPLS labels, LLC); the index of
  /// the first header above it.
  size_t link() {
    size_t i = 0;
    if (is(0, "ethernet")) {
      const DecodedHeader &eth = headers[0];
      if (eth.truncated) {
        os << " [|ether]"; // tcpdump's words, its space included
        return headers.size();
      }
      if (linkHeader) {
        mac(fieldBytes(eth, "src"));
        os << " > ";
        mac(fieldBytes(eth, "dst"));
        os << ", ";
        etherType(value(eth, "type"));
        os << ", length " << wireLength << ": ";
      }
      i = 1;
    }
    for (; i < headers.size() && !headers[i].truncated; ++i) {
      const DecodedHeader &h = headers[i];
      if (is(i, "vlan")) {
        if (linkHeader) {
          os << "vlan " << value(h, "vlanid") << ", p " << value(h, "pri")
             << (value(h, "dei") ? ", DEI" : "") << ", ";
          etherType(value(h, "type"));
          os << ", ";
        }
      } else if (is(i, "mpls")) {
        os << (is(i - 1, "mpls") ? "" : "MPLS ") << "(label "
           << value(h, "label") << ", tc " << value(h, "tc")
           << (value(h, "s") ? ", [S]" : "") << ", ttl " << value(h, "ttl")
           << ") ";
      } else {
        break;
      }
    }
    return i;
  }

  /// With -e, the link layer just below header `i` has said what it is:
  /// tcpdump then leaves out "IP", "IP6", "ARP".
  bool namedByLink(size_t i) const {
    return linkHeader && i > 0 &&
           (is(i - 1, "ethernet") || is(i - 1, "vlan") || is(i - 1, "mpls"));
  }

  /// The header at `i` and what it carries.
  void network(size_t i) {
    if (i >= headers.size()) {
      // Nothing decoded there: a runt, or a protocol the database does
      // not know.
      if (!headers.empty() && headers.back().truncated) {
        if (!is(0, "ethernet") || headers.size() > 1)
          os << "[|" << headers.back().protocol->name << "]";
      } else if (is(0, "ethernet"))
        os << "ethertype " << etherTypeName(value(headers[0], "type"))
           << ", length " << wireFrom(0);
      return;
    }
    const DecodedHeader &h = headers[i];
    llvm::StringRef name = h.protocol->name;
    if (h.truncated) {
      // tcpdump's words, spaces included: "IP  [|ip]" (" [|ip]" with -e),
      // " [|ip6]".
      if (name == "ip")
        os << (namedByLink(i) ? "" : "IP ") << " [|ip]";
      else if (name == "ipv6")
        os << " [|ip6]";
      else
        os << "[|" << name << "]";
      return;
    }
    if (name == "ip" || name == "ipv6")
      return internet(i);
    if (name == "arp")
      return arp(h);
    if (name == "llc") {
      os << "LLC, dsap " << llvm::format_hex(value(h, "dsap"), 4) << ", ssap "
         << llvm::format_hex(value(h, "ssap"), 4) << ", ctrl "
         << llvm::format_hex(value(h, "ctrl"), 4) << ", length " << wireFrom(i);
      return;
    }
    os << name << ", length " << wireFrom(i);
  }

  void internet(size_t i) {
    const DecodedHeader &ip = headers[i];
    bool v4 = ip.protocol->name == "ip";
    if (!namedByLink(i))
      os << (v4 ? "IP " : "IP6 ");
    // The transport's length: what the IP header says is left after its
    // own header (and IPv6's extension headers).
    size_t t = i + 1;
    uint32_t ipEnd =
        v4 ? ip.offset + value(ip, "tlen") : ip.offset + 40 + value(ip, "plen");
    uint32_t transportAt =
        t < headers.size() ? headers[t].offset : ip.offset + ip.length;
    uint32_t left = ipEnd > transportAt ? ipEnd - transportAt : 0;
    bool ports =
        (is(t, "tcp") || is(t, "udp")) && headers[t].field("dport") != nullptr;
    address(ip, "src");
    if (ports)
      os << "." << value(headers[t], "sport");
    os << " > ";
    address(ip, "dst");
    if (ports)
      os << "." << value(headers[t], "dport");
    os << ": ";
    if (t >= headers.size()) {
      uint32_t proto = v4 ? value(ip, "proto") : value(ip, "nexthdr");
      if (v4 && value(ip, "foffset"))
        os << "ip-proto-" << proto;
      else
        os << "ip-proto-" << proto << " " << left;
      return;
    }
    const DecodedHeader &th = headers[t];
    llvm::StringRef name = th.protocol->name;
    if (th.truncated) {
      os << " [|" << name << "]";
      return;
    }
    if (name == "tcp")
      return tcp(th, left);
    if (name == "udp") {
      uint32_t ulen = value(th, "len");
      os << "UDP, length " << (ulen >= 8 ? ulen - 8 : 0);
      return;
    }
    if (name == "icmp" || name == "icmp6")
      return icmp(th, name == "icmp6", left);
    if (name == "ip" || name == "ipv6")
      return internet(t);
    if (name == "gre") {
      os << "GREv" << value(th, "ver") << ", length " << left;
      return;
    }
    os << name << ", length " << left;
  }

  void tcp(const DecodedHeader &h, uint32_t left) {
    uint32_t flags = value(h, "flags"), seq = value(h, "seq");
    uint32_t hlen = value(h, "hlen") * 4;
    uint32_t length = left > hlen ? left - hlen : 0;
    // tcpdump's letters, in its order.
    static const std::pair<uint32_t, char> letters[] = {
        {0x01, 'F'}, {0x02, 'S'}, {0x04, 'R'}, {0x08, 'P'},
        {0x10, '.'}, {0x20, 'U'}, {0x40, 'E'}, {0x80, 'W'}};
    os << "Flags [";
    bool any = false;
    for (auto [bit, letter] : letters)
      if (flags & bit) {
        os << letter;
        any = true;
      }
    os << (any ? "" : "none") << "]";
    if (length > 0 || (flags & 0x07)) {
      os << ", seq " << seq;
      if (length > 0)
        os << ":" << uint32_t(seq + length);
    }
    if (flags & 0x10)
      os << ", ack " << value(h, "ack");
    os << ", win " << value(h, "window");
    if (flags & 0x20)
      os << ", urg " << value(h, "urgptr");
    os << ", length " << length;
  }

  void icmp(const DecodedHeader &h, bool v6, uint32_t left) {
    uint32_t type = value(h, "type");
    bool echo = v6 ? (type == 128 || type == 129) : (type == 8 || type == 0);
    bool request = v6 ? type == 128 : type == 8;
    os << (v6 ? "ICMP6, " : "ICMP ");
    if (echo && h.offset + 8 <= bytes.size()) {
      auto word = [&](uint32_t at) {
        return uint32_t(bytes[at] << 8 | bytes[at + 1]);
      };
      os << "echo " << (request ? "request" : "reply") << ", id "
         << word(h.offset + 4) << ", seq " << word(h.offset + 6);
    } else {
      os << "type " << type << ", code " << value(h, "code");
    }
    os << ", length " << left;
  }

  void arp(const DecodedHeader &h) {
    size_t i = &h - headers.data();
    if (!namedByLink(i))
      os << "ARP, ";
    uint32_t op = value(h, "op");
    bool ethernetIPv4 = value(h, "hwlen") == 6 && value(h, "plen") == 4;
    if (ethernetIPv4 && op == 1) {
      os << "Request who-has ";
      ipv4(fieldBytes(h, "tpa"));
      llvm::ArrayRef<uint8_t> tha = fieldBytes(h, "tha");
      if (llvm::any_of(tha, [](uint8_t b) { return b != 0; })) {
        os << " (";
        mac(tha);
        os << ")";
      }
      os << " tell ";
      ipv4(fieldBytes(h, "spa"));
    } else if (ethernetIPv4 && op == 2) {
      os << "Reply ";
      ipv4(fieldBytes(h, "spa"));
      os << " is-at ";
      mac(fieldBytes(h, "sha"));
    } else {
      os << "op " << op;
    }
    os << ", length " << wireFrom(i);
  }
};
} // namespace

void PacketLines::timestamp(llvm::raw_ostream &os, const netvm_packet &packet) {
  uint64_t micros = uint64_t(packet.seconds) * 1000000 + packet.microseconds;
  if (!seenFirst) {
    firstMicros = previousMicros = micros;
    seenFirst = true;
  }
  auto clock = [&](uint64_t us, bool date) {
    time_t seconds = us / 1000000;
    struct tm tm;
    localtime_r(&seconds, &tm);
    char buffer[64];
    strftime(buffer, sizeof buffer, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S",
             &tm);
    os << buffer << llvm::format(".%06u ", unsigned(us % 1000000));
  };
  auto delta = [&](uint64_t since) {
    uint64_t d = micros >= since ? micros - since : 0;
    os << llvm::format(" %02u:%02u:%02u.%06u ", unsigned(d / 3600000000),
                       unsigned(d / 60000000 % 60), unsigned(d / 1000000 % 60),
                       unsigned(d % 1000000));
  };
  switch (options.timestamps) {
  case 0:
    clock(micros, false);
    break;
  case 1:
    break;
  case 2:
    os << llvm::format("%u.%06u ", packet.seconds, packet.microseconds);
    break;
  case 3:
    delta(previousMicros);
    break;
  case 4:
    clock(micros, true);
    break;
  default:
    delta(firstMicros);
    break;
  }
  previousMicros = micros;
}

/// tcpdump's -x/-X dump: 16 bytes a line in groups of two, then (-X) the
/// same bytes as ASCII.
static void hexDump(llvm::raw_ostream &os, llvm::ArrayRef<uint8_t> bytes,
                    bool ascii) {
  for (size_t at = 0; at < bytes.size(); at += 16) {
    llvm::ArrayRef<uint8_t> row =
        bytes.slice(at, std::min<size_t>(16, bytes.size() - at));
    std::string hex;
    for (size_t i = 0; i < row.size(); ++i)
      hex += (i % 2 == 0 && i ? " " : "") + llvm::toHex(row[i], true);
    os << llvm::format("\t0x%04x:  ", unsigned(at)) << hex;
    if (ascii) {
      os.indent(39 - hex.size()) << "  ";
      for (uint8_t b : row)
        os << (b >= 0x20 && b < 0x7f ? char(b) : '.');
    }
    os << "\n";
  }
}

/// Where the network layer of a frame of link type `linkType` (other
/// than Ethernet) starts, and the database's name of its protocol (empty
/// when the link layer names none netvm decodes).
static std::pair<llvm::StringRef, uint32_t>
networkLayer(int linkType, llvm::ArrayRef<uint8_t> bytes) {
  auto byEtherType = [&](size_t at) -> llvm::StringRef {
    if (at + 2 > bytes.size())
      return "";
    switch (bytes[at] << 8 | bytes[at + 1]) {
    case 0x0800:
      return "ip";
    case 0x86dd:
      return "ipv6";
    case 0x0806:
      return "arp";
    }
    return "";
  };
  switch (linkType) {
  case 113: // LINUX_SLL: the protocol at 14 of a 16-byte header
    return {byEtherType(14), 16};
  case 276: // LINUX_SLL2: the protocol first in a 20-byte header
    return {byEtherType(0), 20};
  case 0:     // NULL: an address family in the capturing host's byte order
  case 108: { // LOOP: in network byte order
    if (bytes.size() < 4)
      return {"", 4};
    uint32_t family = bytes[0] | bytes[1] << 8 | bytes[2] << 16 |
                      static_cast<uint32_t>(bytes[3]) << 24;
    if (family > 0xFFFF)
      family = __builtin_bswap32(family);
    if (family == 2)
      return {"ip", 4};
    if (family == 24 || family == 28 || family == 30)
      return {"ipv6", 4};
    return {"", 4};
  }
  default: // raw IP: the version
    if (bytes.empty())
      return {"", 0};
    return {bytes[0] >> 4 == 4 ? "ip" : bytes[0] >> 4 == 6 ? "ipv6" : "", 0};
  }
}

void PacketLines::print(llvm::raw_ostream &os, const netvm_packet &packet) {
  llvm::ArrayRef<uint8_t> bytes(packet.data, packet.length);
  std::vector<DecodedHeader> headers;
  if (options.linkType == 1) {
    headers = protodb::decode(db, bytes);
  } else {
    auto [name, offset] = networkLayer(options.linkType, bytes);
    if (const protodb::Protocol *first =
            name.empty() ? nullptr : db.lookup(name))
      headers = protodb::decode(db, bytes, *first, offset);
  }
  Line line{bytes,
            packet.wire_length ? packet.wire_length : packet.length,
            std::move(headers),
            options.linkHeader && options.linkType == 1,
            {}};
  timestamp(os, packet);
  size_t network = line.link();
  line.network(network);
  os << line.text << "\n";
  uint32_t from =
      network < line.headers.size() ? line.headers[network].offset : 0;
  if (options.hex)
    hexDump(os, bytes.drop_front(options.hex > 1 ? 0 : from), options.ascii);
  else if (options.asciiOnly) {
    for (uint8_t b : bytes.drop_front(from))
      os << (b == '\n' || (b >= 0x20 && b < 0x7f) ? char(b) : '.');
    os << "\n";
  }
}
