//===- PcapFilter.cpp - tcpdump expressions to the netvm dialect --------------===//
//
// Three steps:
//  1. ANTLR parses the expression (PcapFilter.g4); a listener turns the
//     first syntax error into a message with the expression and a caret.
//  2. A walk over the parse tree does what libpcap's grammar actions and
//     gencode.c do for Ethernet links: it resolves qualifiers (a bare
//     operand after 'and'/'or' inherits those of the term before it) and
//     builds a predicate tree whose leaves compare packet fields, in the
//     order libpcap evaluates them.
//  3. The tree becomes one push handler: short-circuit branches over
//     netvm.load (each with the bounds check that makes a packet too short
//     for a field reject the whole expression, as in bpf_filter), ending in
//     netvm.send @match or netvm.drop.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/PcapFilter.h"

#include "NetVM/NetVMOps.h"

#include "PcapFilterLexer.h"
#include "PcapFilterParser.h"
#include "FilterSupport.h"
#include "antlr4-runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/ether.h>
#include <netinet/in.h>
#include <cstdio>
// net/ethernet.h's macros; the names below are libpcap's constants.
#undef ETHERTYPE_IP
#undef ETHERTYPE_ARP
#undef ETHERTYPE_REVARP
#undef ETHERTYPE_IPV6
#undef ETHERTYPE_AARP
#undef ETHERTYPE_IPX
#undef ETHERTYPE_LOOPBACK
#undef ETHERTYPE_AT
#undef ETHERMTU

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

using namespace mlir;
using namespace netvm;
using P = netvm_pcapfilter::PcapFilterParser;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

using filter::fail;
using filter::FilterError;

bool isComparison(llvm::StringRef token) {
  return llvm::is_contained(
      {"'>='", "'<='", "'!='", "'=='", "'>'", "'<'", "'='"}, token);
}

/// tcpdump expressions' words for ANTLR's syntax errors.
const filter::SyntaxWords kSyntaxWords{
    "expression", "an operand: an address, a number, a name, a protocol or '('",
    "this does not make a term here",
    [](llvm::ArrayRef<llvm::StringRef> items) -> std::optional<std::string> {
      if (llvm::all_of(items, isComparison))
        return "a comparison (=, !=, <, <=, >, >=) after the value";
      return std::nullopt;
    }};

//===----------------------------------------------------------------------===//
// Predicates: libpcap's blocks, as a tree
//===----------------------------------------------------------------------===//

struct Val;
using ValP = std::shared_ptr<Val>;
/// A 32-bit value.
struct Val {
  /// Chain: the header type libpcap's protochain loop ends at, from the
  /// network header at offset k (IPv6 if `ipv6`, else IPv4).
  enum Kind { Const, Load, WireLen, Binary, Neg, Chain } kind = Const;
  uint32_t k = 0;     // Const: the value; Load: constant part of the offset
  bool ipv6 = false;  // Chain
  unsigned size = 0;  // Load: 1, 2 or 4 bytes
  bool ipHeader = false; // Load: add the IPv4 header length,
  uint32_t ipHeaderAt = 0; //   4*(p[ipHeaderAt] & 15)
  ValP index;         // Load: variable part of the offset (may be null)
  char op = 0;        // Binary: + - * / % & | ^ < (shl) > (shr)
  ValP a, b;
};

struct Pred;
using PredP = std::shared_ptr<Pred>;
/// A test: true/false, and/or/not with left-to-right short circuits, or a
/// comparison.
struct Pred {
  enum Kind { True, False, And, Or, Not, Rel } kind = True;
  PredP a, b;
  arith::CmpIPredicate rel = arith::CmpIPredicate::eq;
  ValP lhs, rhs;
};

ValP constant(uint32_t k) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Const;
  v->k = k;
  return v;
}
ValP load(uint32_t offset, unsigned size, ValP index = nullptr,
          bool ipHeader = false, uint32_t ipHeaderAt = 0) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Load;
  v->k = offset;
  v->size = size;
  v->index = std::move(index);
  v->ipHeader = ipHeader;
  v->ipHeaderAt = ipHeaderAt;
  return v;
}
ValP binary(char op, ValP a, ValP b) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Binary;
  v->op = op;
  v->a = std::move(a);
  v->b = std::move(b);
  return v;
}

/// A predicate node of `kind` over `a` and `b`.
PredP predicate(Pred::Kind kind, PredP a = nullptr, PredP b = nullptr) {
  auto p = std::make_shared<Pred>();
  p->kind = kind;
  p->a = std::move(a);
  p->b = std::move(b);
  return p;
}
PredP boolean(bool value) {
  return predicate(value ? Pred::True : Pred::False);
}
PredP conj(PredP a, PredP b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return predicate(Pred::And, std::move(a), std::move(b));
}
PredP disj(PredP a, PredP b) {
  return predicate(Pred::Or, std::move(a), std::move(b));
}
PredP negate(PredP a) { return predicate(Pred::Not, std::move(a)); }
PredP makeRelation(arith::CmpIPredicate rel, ValP lhs, ValP rhs) {
  PredP p = predicate(Pred::Rel);
  p->rel = rel;
  p->lhs = std::move(lhs);
  p->rhs = std::move(rhs);
  return p;
}

//===----------------------------------------------------------------------===//
// libpcap's code generation for Ethernet (gencode.c), as predicates
//===----------------------------------------------------------------------===//

enum : uint32_t {
  ETHERTYPE_IP = 0x0800,
  ETHERTYPE_ARP = 0x0806,
  ETHERTYPE_REVARP = 0x8035,
  ETHERTYPE_IPV6 = 0x86dd,
  ETHERTYPE_MOPDL = 0x6001,
  ETHERTYPE_MOPRC = 0x6002,
  ETHERTYPE_DN = 0x6003,
  ETHERTYPE_LAT = 0x6004,
  ETHERTYPE_SCA = 0x6007,
  ETHERTYPE_ATALK = 0x809b,
  ETHERTYPE_AARP = 0x80f3,
  ETHERTYPE_IPX = 0x8137,
  ETHERTYPE_PPPOED = 0x8863,
  ETHERTYPE_LOOPBACK = 0x9000,
  ETHERMTU = 1500,
  // 802.2 LLC service access points.
  LLCSAP_IP = 0x06,
  LLCSAP_8021D = 0x42,
  LLCSAP_SNAP = 0xaa,
  LLCSAP_IPX = 0xe0,
  LLCSAP_NETBEUI = 0xf0,
  LLCSAP_ISONS = 0xfe,
  // OSI network layer protocol identifiers and IS-IS PDU types.
  ISO8473_CLNP = 0x81,
  ISO9542_ESIS = 0x82,
  ISO10589_ISIS = 0x83,
};

/// Protocol qualifiers (libpcap's Q_*).
enum class Proto {
  Default, Link, IP, IP6, ARP, RARP, TCP, UDP, ICMP, ICMP6, IGMP, SCTP, AH,
  ESP, PIM, VRRP, IGRP, CARP, ATALK, AARP, DECNET, LAT, SCA, MOPRC, MOPDL,
  ISO, ESIS, ISIS, ISIS_L1, ISIS_L2, ISIS_IIH, ISIS_LSP, ISIS_SNP, ISIS_CSNP,
  ISIS_PSNP, CLNP, STP, IPX, NETBEUI, RADIO
};
/// Direction qualifiers; Addr1 to TA are 802.11's.
enum class Dir { Default, Src, Dst, Or, And, Addr1, Addr2, Addr3, Addr4, RA, TA };
enum class Addr {
  Default, Host, Net, Port, PortRange, Proto, ProtoChain, Gateway
};
/// The qualifiers a term leaves for a bare operand after it; `valid` is
/// false after terms that leave none (libpcap's qerr).
struct Qual {
  Proto proto = Proto::Default;
  Dir dir = Dir::Default;
  Addr addr = Addr::Default;
  bool valid = false;
};

/// The keyword of a protocol qualifier, as libpcap names it in messages.
const char *protoName(Proto p) {
  static const char *const names[] = {
      "default", "link", "ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp",
      "icmp6", "igmp", "sctp", "ah", "esp", "pim", "vrrp", "igrp", "carp",
      "atalk", "aarp", "decnet", "lat", "sca", "moprc", "mopdl", "iso",
      "esis", "isis", "l1", "l2", "iih", "lsp", "snp", "csnp", "psnp",
      "clnp", "stp", "ipx", "netbeui", "radio"};
  return names[static_cast<int>(p)];
}

/// libpcap's message for an 802.11 direction qualifier used on another
/// address (`onMac`: on an Ethernet address), or on `what` (ports).
std::string wlanDirError(Dir d, bool onMac,
                         const char *what =
                             "addresses other than 802.11 MAC addresses") {
  static const char *const names[] = {"addr1", "addr2", "addr3", "addr4",
                                      "ra", "ta"};
  int i = static_cast<int>(d) - static_cast<int>(Dir::Addr1);
  std::string q = names[i];
  std::string which = i < 4 ? "'" + q + "' and 'address" + q.substr(4) + "' are"
                            : "'" + q + "' is";
  if (onMac)
    return which + " only supported on 802.11 with 802.11 headers";
  return which + (i < 4 ? " not valid qualifiers" : " not a valid qualifier") +
         " for " + what;
}
bool isWlanDir(Dir d) { return d >= Dir::Addr1; }

/// The IP protocol number of a transport qualifier.
std::optional<uint32_t> ipProtocolOf(Proto p) {
  switch (p) {
  case Proto::TCP: return 6;
  case Proto::UDP: return 17;
  case Proto::SCTP: return 132;
  case Proto::ICMP: return 1;
  case Proto::IGMP: return 2;
  case Proto::IGRP: return 9;
  case Proto::AH: return 51;
  case Proto::ESP: return 50;
  case Proto::PIM: return 103;
  case Proto::VRRP: return 112;
  case Proto::CARP: return 112;
  case Proto::ICMP6: return 58;
  default: return std::nullopt;
  }
}

/// Compare `size` bytes at `offset` (masked) with `value`.
PredP cmp(uint32_t offset, unsigned size, uint32_t value,
          uint32_t mask = 0xFFFFFFFFu,
          arith::CmpIPredicate rel = arith::CmpIPredicate::eq) {
  ValP v = load(offset, size);
  if (mask != 0xFFFFFFFFu)
    v = binary('&', v, constant(mask));
  return makeRelation(rel, v, constant(value));
}
/// libpcap's gen_bcmp: `bytes` at `offset`, compared a word at a time
/// from the end (then a half word, then a byte).
PredP bytesEqual(uint32_t offset, const std::vector<uint8_t> &bytes) {
  PredP all;
  size_t size = bytes.size();
  auto word = [&](size_t at, unsigned n) {
    uint32_t v = 0;
    for (unsigned i = 0; i < n; ++i)
      v = v << 8 | bytes[at + i];
    return v;
  };
  while (size >= 4) {
    all = conj(all, cmp(offset + size - 4, 4, word(size - 4, 4)));
    size -= 4;
  }
  while (size >= 2) {
    all = conj(all, cmp(offset + size - 2, 2, word(size - 2, 2)));
    size -= 2;
  }
  if (size > 0)
    all = conj(all, cmp(offset, 1, bytes[0]));
  return all;
}

class Generator {
public:
  /// Where the link-layer type and the network-layer header are: libpcap's
  /// off_linktype and off_linkpl + off_nl (off_nl_nosnap for 802.3 frames
  /// with an 802.2 header), which `vlan` and `mpls` move for every
  /// primitive after them.
  uint32_t offLinkType = 12, offLinkPayload = 14, offNetwork = 0,
           offNetworkNoSnap = 3;
  unsigned labelDepth = 0; // MPLS labels seen
  /// The netmask `ip broadcast` needs (pcap_compile's netmask argument).
  std::optional<uint32_t> netmask;
  /// libpcap turns its optimizer off for expressions with `protochain`
  /// (whose loop it cannot analyze); set when one is generated.
  bool noOptimize = false;
  uint32_t net() const { return offLinkPayload + offNetwork; }

  /// The same as cmp, at `offset` from the IPv4 payload (the transport
  /// header).
  PredP cmpTransport(uint32_t offset, unsigned size, uint32_t value,
                     arith::CmpIPredicate rel = arith::CmpIPredicate::eq) {
    return makeRelation(
        rel, load(net() + offset, size, nullptr, /*ipHeader=*/true, net()),
        constant(value));
  }

  /// An 802.3 frame: the type/length field is a length (<= 1500).
  PredP ieee8023() {
    return negate(cmp(offLinkType, 2, ETHERMTU, 0xFFFFFFFFu,
                      arith::CmpIPredicate::ugt));
  }
  /// An 802.2 SNAP header with `orgcode` and `type` (gen_snap).
  PredP snap(uint32_t orgcode, uint32_t type) {
    return bytesEqual(offLinkPayload,
                      {LLCSAP_SNAP, LLCSAP_SNAP, 0x03, uint8_t(orgcode >> 16),
                       uint8_t(orgcode >> 8), uint8_t(orgcode), uint8_t(type >> 8),
                       uint8_t(type)});
  }

  /// gen_linktype for Ethernet (gen_ether_linktype): an EtherType above
  /// 1500, or an 802.2 LLC service access point.
  PredP linktype(uint32_t type, antlr4::ParserRuleContext *at) {
    if (labelDepth > 0) {
      // Under MPLS labels: the bottom of the stack, then an IP version.
      if (type != ETHERTYPE_IP && type != ETHERTYPE_IPV6)
        fail(at, "unsupported protocol over mpls");
      PredP bottom = cmp(net() - 4 + 2, 1, 0x01, 0x01);
      return conj(bottom,
                  cmp(net(), 1, type == ETHERTYPE_IP ? 0x40 : 0x60, 0xF0));
    }
    switch (type) {
    case LLCSAP_ISONS:
    case LLCSAP_IP:
    case LLCSAP_NETBEUI:
      // DSAP and SSAP.
      return conj(ieee8023(), cmp(offLinkPayload, 2, type << 8 | type));
    case LLCSAP_IPX: {
      // Ethernet_II, or 802.3 with the IPX SAP, raw 802.3 (0xFFFF) or
      // SNAP.
      PredP frames = disj(cmp(offLinkPayload, 1, LLCSAP_IPX),
                          cmp(offLinkPayload, 2, 0xFFFF));
      frames = disj(snap(0x000000, ETHERTYPE_IPX), frames);
      return disj(cmp(offLinkType, 2, ETHERTYPE_IPX),
                  conj(ieee8023(), frames));
    }
    case ETHERTYPE_ATALK:
    case ETHERTYPE_AARP: {
      PredP snapped = conj(ieee8023(), type == ETHERTYPE_ATALK
                                           ? snap(0x080007, ETHERTYPE_ATALK)
                                           : snap(0x000000, ETHERTYPE_AARP));
      return disj(cmp(offLinkType, 2, type), snapped);
    }
    default:
      if (type <= ETHERMTU) // the DSAP
        return conj(ieee8023(), cmp(offLinkType + 2, 1, type));
      return cmp(offLinkType, 2, type);
    }
  }
  PredP ipProto(uint32_t v) { return cmp(net() + 9, 1, v); }
  PredP ip6Proto(uint32_t v) { return cmp(net() + 6, 1, v); }
  /// Not a fragment other than the first (libpcap's gen_ipfrag).
  PredP ipFirstFragment() { return cmp(net() + 6, 2, 0, 0x1FFF); }

  /// `vlan [id]`: a VLAN TPID, optionally the VLAN ID; later primitives
  /// look 4 bytes further.
  PredP vlan(std::optional<uint32_t> id, antlr4::ParserRuleContext *at) {
    if (labelDepth > 0)
      fail(at, "no VLAN match after MPLS");
    PredP b = disj(disj(linktype(0x8100, at), linktype(0x88a8, at)),
                   linktype(0x9100, at));
    if (id) {
      if (*id > 0x0FFF)
        fail(at, "VLAN tag " + std::to_string(*id) +
                     " greater than maximum 4095");
      b = conj(b, cmp(net(), 2, *id, 0x0FFF));
    }
    offLinkPayload += 4;
    offLinkType += 4;
    return b;
  }

  /// `mpls [label]`: an MPLS label stack entry; later primitives look
  /// past it.
  PredP mpls(std::optional<uint32_t> label, antlr4::ParserRuleContext *at) {
    PredP b = labelDepth > 0 ? negate(cmp(net() - 4 + 2, 1, 0x01, 0x01))
                             : linktype(0x8847, at);
    if (label) {
      if (*label > 0xFFFFF)
        fail(at, "MPLS label " + std::to_string(*label) +
                     " greater than maximum 1048575");
      b = conj(b, cmp(net(), 4, *label << 12, 0xFFFFF000u));
    }
    offNetwork += 4;
    offNetworkNoSnap += 4;
    ++labelDepth;
    return b;
  }

  /// gen_proto: protocol `v` inside `p` (for `proto` and the
  /// abbreviations).
  PredP proto(uint32_t v, Proto p, Dir dir, antlr4::ParserRuleContext *at) {
    if (dir != Dir::Default)
      fail(at, "direction applied to 'proto'");
    switch (p) {
    case Proto::Default:
      return disj(proto(v, Proto::IP, dir, at), proto(v, Proto::IP6, dir, at));
    case Proto::Link:
      return linktype(v, at);
    case Proto::IP:
      return conj(linktype(ETHERTYPE_IP, at), ipProto(v));
    case Proto::IP6: {
      // The next header, or after a fragment header.
      PredP fragment = conj(ip6Proto(44), cmp(net() + 40, 1, v));
      return conj(linktype(ETHERTYPE_IPV6, at),
                  disj(ip6Proto(v), fragment));
    }
    case Proto::ISO:
      // The NLPID after the 802.2 header.
      return conj(linktype(LLCSAP_ISONS, at),
                  cmp(offLinkPayload + offNetworkNoSnap, 1, v));
    case Proto::ISIS:
      // The PDU type in the IS-IS header.
      return conj(proto(ISO10589_ISIS, Proto::ISO, Dir::Default, at),
                  cmp(offLinkPayload + offNetworkNoSnap + 4, 1, v));
    case Proto::ARP:
    case Proto::RARP:
      fail(at, std::string(protoName(p)) +
                   " does not encapsulate another protocol");
    case Proto::ATALK:
      fail(at, "AppleTalk encapsulation is not specifiable");
    case Proto::DECNET:
      fail(at, "DECNET encapsulation is not specifiable");
    case Proto::LAT:
    case Proto::SCA:
    case Proto::MOPRC:
    case Proto::MOPDL:
      fail(at, llvm::StringRef(protoName(p)).upper() +
                   " does not encapsulate another protocol");
    case Proto::CLNP:
      fail(at, "'clnp proto' is not supported");
    default:
      fail(at, std::string("'") + protoName(p) + " proto' is bogus");
    }
  }

  /// A protocol name alone (gen_proto_abbrev).
  PredP abbreviation(Proto p, antlr4::ParserRuleContext *at) {
    auto isis = [&](std::initializer_list<uint32_t> types) {
      // libpcap ors each further type in front of the first two.
      std::vector<uint32_t> t(types);
      PredP b = disj(proto(t[0], Proto::ISIS, Dir::Default, at),
                     proto(t[1], Proto::ISIS, Dir::Default, at));
      for (size_t i = 2; i < t.size(); ++i)
        b = disj(proto(t[i], Proto::ISIS, Dir::Default, at), b);
      return b;
    };
    switch (p) {
    case Proto::TCP:
    case Proto::UDP:
    case Proto::SCTP:
    case Proto::AH:
    case Proto::ESP:
    case Proto::PIM:
      return proto(*ipProtocolOf(p), Proto::Default, Dir::Default, at);
    case Proto::ICMP:
    case Proto::IGMP:
    case Proto::IGRP:
    case Proto::VRRP:
    case Proto::CARP:
      return proto(*ipProtocolOf(p), Proto::IP, Dir::Default, at);
    case Proto::ICMP6:
      return proto(58, Proto::IP6, Dir::Default, at);
    case Proto::IP: return linktype(ETHERTYPE_IP, at);
    case Proto::IP6: return linktype(ETHERTYPE_IPV6, at);
    case Proto::ARP: return linktype(ETHERTYPE_ARP, at);
    case Proto::RARP: return linktype(ETHERTYPE_REVARP, at);
    case Proto::ATALK: return linktype(ETHERTYPE_ATALK, at);
    case Proto::AARP: return linktype(ETHERTYPE_AARP, at);
    case Proto::DECNET: return linktype(ETHERTYPE_DN, at);
    case Proto::SCA: return linktype(ETHERTYPE_SCA, at);
    case Proto::LAT: return linktype(ETHERTYPE_LAT, at);
    case Proto::MOPDL: return linktype(ETHERTYPE_MOPDL, at);
    case Proto::MOPRC: return linktype(ETHERTYPE_MOPRC, at);
    case Proto::ISO: return linktype(LLCSAP_ISONS, at);
    case Proto::ESIS:
      return proto(ISO9542_ESIS, Proto::ISO, Dir::Default, at);
    case Proto::ISIS:
      return proto(ISO10589_ISIS, Proto::ISO, Dir::Default, at);
    case Proto::CLNP:
      return proto(ISO8473_CLNP, Proto::ISO, Dir::Default, at);
    // IS-IS PDU types: LAN hellos 15 (L1) and 16 (L2), point-to-point
    // hello 17, LSPs 18 and 20, CSNPs 24 and 25, PSNPs 26 and 27.
    case Proto::ISIS_L1: return isis({15, 17, 18, 24, 26});
    case Proto::ISIS_L2: return isis({16, 17, 20, 25, 27});
    case Proto::ISIS_IIH: return isis({15, 16, 17});
    case Proto::ISIS_LSP: return isis({18, 20});
    case Proto::ISIS_SNP: return isis({24, 25, 26, 27});
    case Proto::ISIS_CSNP: return isis({24, 25});
    case Proto::ISIS_PSNP: return isis({26, 27});
    case Proto::STP: return linktype(LLCSAP_8021D, at);
    case Proto::IPX: return linktype(LLCSAP_IPX, at);
    case Proto::NETBEUI: return linktype(LLCSAP_NETBEUI, at);
    case Proto::Link:
      fail(at, "link layer applied in wrong context");
    case Proto::RADIO:
      fail(at, "'radio' is not a valid protocol type");
    case Proto::Default:
      break;
    }
    llvm_unreachable("no protocol");
  }

  /// gen_hostop: the address at `srcOff`/`dstOff` (from the network header).
  PredP hostop(uint32_t addr, uint32_t mask, Dir dir, uint32_t srcOff,
               uint32_t dstOff, antlr4::ParserRuleContext *at) {
    switch (dir) {
    case Dir::Src:
      return cmp(net() + srcOff, 4, addr, mask);
    case Dir::Dst:
      return cmp(net() + dstOff, 4, addr, mask);
    case Dir::And:
      return conj(hostop(addr, mask, Dir::Src, srcOff, dstOff, at),
                  hostop(addr, mask, Dir::Dst, srcOff, dstOff, at));
    case Dir::Default:
    case Dir::Or:
      return disj(hostop(addr, mask, Dir::Src, srcOff, dstOff, at),
                  hostop(addr, mask, Dir::Dst, srcOff, dstOff, at));
    default:
      fail(at, wlanDirError(dir, false));
    }
  }

  /// gen_dnhostop: a DECnet address in a long or short data header, with
  /// or without a padding byte.
  PredP dnhost(uint32_t addr, Dir dir, antlr4::ParserRuleContext *at) {
    uint32_t shortOff, longOff;
    switch (dir) {
    case Dir::Dst:
      shortOff = 1;
      longOff = 7;
      break;
    case Dir::Src:
      shortOff = 3;
      longOff = 15;
      break;
    case Dir::And:
      return conj(dnhost(addr, Dir::Src, at), dnhost(addr, Dir::Dst, at));
    case Dir::Default:
    case Dir::Or:
      return disj(dnhost(addr, Dir::Src, at), dnhost(addr, Dir::Dst, at));
    default:
      fail(at, wlanDirError(dir, false));
    }
    // libpcap compares the address and the flag masks byte-swapped
    // (ntohs), as it does on the machine it runs on.
    uint32_t a = ntohs(static_cast<uint16_t>(addr));
    uint32_t base = net() + 2;
    PredP b = conj(cmp(base, 2, ntohs(0x0681), ntohs(0x07FF)),
                   cmp(base + 1 + longOff, 2, a));
    b = disj(conj(cmp(base, 1, 0x06, 0x07), cmp(base + longOff, 2, a)), b);
    b = disj(conj(cmp(base, 2, ntohs(0x0281), ntohs(0x07FF)),
                  cmp(base + 1 + shortOff, 2, a)),
             b);
    b = disj(conj(cmp(base, 1, 0x02, 0x07), cmp(base + shortOff, 2, a)), b);
    return conj(linktype(ETHERTYPE_DN, at), b);
  }

  /// gen_host for IPv4 (and DECnet) addresses.
  PredP host(uint32_t addr, uint32_t mask, Proto p, Dir dir, const char *what,
             antlr4::ParserRuleContext *at) {
    switch (p) {
    case Proto::Default: {
      PredP b = host(addr, mask, Proto::IP, dir, what, at);
      if (labelDepth > 0) // only IPv4 under MPLS labels
        return b;
      b = disj(b, host(addr, mask, Proto::ARP, dir, what, at));
      return disj(b, host(addr, mask, Proto::RARP, dir, what, at));
    }
    case Proto::IP:
      return conj(linktype(ETHERTYPE_IP, at),
                  hostop(addr, mask, dir, 12, 16, at));
    case Proto::ARP:
      return conj(linktype(ETHERTYPE_ARP, at),
                  hostop(addr, mask, dir, 14, 24, at));
    case Proto::RARP:
      return conj(linktype(ETHERTYPE_REVARP, at),
                  hostop(addr, mask, dir, 14, 24, at));
    case Proto::DECNET:
      return dnhost(addr, dir, at);
    case Proto::Link:
      fail(at, std::string("link-layer modifier applied to ") + what);
    case Proto::IP6:
      fail(at, "'ip6' modifier applied to ip host");
    case Proto::ATALK:
      fail(at, "AppleTalk host filtering not implemented");
    case Proto::LAT:
    case Proto::SCA:
    case Proto::MOPRC:
    case Proto::MOPDL:
    case Proto::AARP:
    case Proto::ISO:
    case Proto::IPX:
      fail(at, llvm::StringRef(protoName(p)).upper() +
                   " host filtering not implemented");
    default:
      fail(at, std::string("'") + protoName(p) + "' modifier applied to " +
                   what);
    }
  }

  /// gen_host6: 16 bytes at 8 (source) or 24 (destination) of the IPv6
  /// header, a word at a time.
  PredP host6(const uint8_t addr[16], const uint8_t mask[16], Proto p,
              Dir dir, const char *what, antlr4::ParserRuleContext *at) {
    if (p == Proto::Link)
      fail(at, std::string("link-layer modifier applied to ip6 ") + what);
    if (p != Proto::Default && p != Proto::IP6)
      fail(at, std::string("'") + protoName(p) + "' modifier applied to ip6 " +
                   what);
    std::function<PredP(Dir)> op = [&](Dir d) -> PredP {
      if (d == Dir::And)
        return conj(op(Dir::Src), op(Dir::Dst));
      if (d == Dir::Default || d == Dir::Or)
        return disj(op(Dir::Src), op(Dir::Dst));
      if (isWlanDir(d))
        fail(at, wlanDirError(d, false));
      uint32_t base = net() + (d == Dir::Src ? 8 : 24);
      PredP all;
      for (unsigned w = 0; w < 4; ++w) {
        uint32_t a = 0, m = 0;
        for (unsigned i = 0; i < 4; ++i) {
          a = a << 8 | addr[4 * w + i];
          m = m << 8 | mask[4 * w + i];
        }
        all = conj(all, cmp(base + 4 * w, 4, a & m, m));
      }
      return all;
    };
    return conj(linktype(ETHERTYPE_IPV6, at), op(dir));
  }

  /// gen_ehostop: an Ethernet address (source at 6, destination at 0),
  /// compared as libpcap's gen_bcmp does: the last four bytes, then the
  /// first two.
  PredP ehost(const uint8_t mac[6], Dir dir, antlr4::ParserRuleContext *at) {
    if (isWlanDir(dir))
      fail(at, wlanDirError(dir, true));
    if (dir == Dir::And)
      return conj(ehost(mac, Dir::Src, at), ehost(mac, Dir::Dst, at));
    if (dir == Dir::Default || dir == Dir::Or)
      return disj(ehost(mac, Dir::Src, at), ehost(mac, Dir::Dst, at));
    return bytesEqual(dir == Dir::Src ? 6 : 0,
                      std::vector<uint8_t>(mac, mac + 6));
  }

  /// `[ether] broadcast`, `ip broadcast` (gen_broadcast).
  PredP broadcast(Proto p, antlr4::ParserRuleContext *at) {
    static const uint8_t all[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    switch (p) {
    case Proto::Default:
    case Proto::Link:
      return ehost(all, Dir::Dst, at);
    case Proto::IP: {
      if (!netmask)
        fail(at, "netmask not known, so 'ip broadcast' not supported");
      uint32_t hostmask = ~*netmask;
      PredP b = disj(cmp(net() + 16, 4, 0, hostmask),
                     cmp(net() + 16, 4, hostmask, hostmask));
      return conj(linktype(ETHERTYPE_IP, at), b);
    }
    default:
      fail(at, "only link-layer/IP broadcast filters supported");
    }
  }

  /// `[ether] multicast`, `ip multicast`, `ip6 multicast`
  /// (gen_multicast).
  PredP multicast(Proto p, antlr4::ParserRuleContext *at) {
    switch (p) {
    case Proto::Default:
    case Proto::Link:
      // ether[0] & 1 != 0
      return makeRelation(arith::CmpIPredicate::ne,
                          binary('&', load(0, 1), constant(1)), constant(0));
    case Proto::IP:
      return conj(linktype(ETHERTYPE_IP, at),
                  cmp(net() + 16, 1, 224, 0xFFFFFFFFu,
                      arith::CmpIPredicate::uge));
    case Proto::IP6:
      return conj(linktype(ETHERTYPE_IPV6, at), cmp(net() + 24, 1, 255));
    default:
      fail(at, "link-layer multicast filters supported only on "
               "ethernet/FDDI/token ring/ARCNET/802.11/ATM LANE/Fibre "
               "Channel");
    }
  }

  /// `[ip|ip6] protochain v` (gen_protochain): a loop over the IPv6
  /// extension headers and AH headers to a header of type `v`.
  PredP protochain(uint32_t v, Proto p, antlr4::ParserRuleContext *at) {
    if (p == Proto::Default)
      return disj(protochain(v, Proto::IP, at), protochain(v, Proto::IP6, at));
    if (p != Proto::IP && p != Proto::IP6)
      fail(at, "bad protocol applied for 'protochain'");
    noOptimize = true;
    bool ipv6 = p == Proto::IP6;
    PredP type = linktype(ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP, at);
    auto chain = std::make_shared<Val>();
    chain->kind = Val::Chain;
    chain->k = net();
    chain->ipv6 = ipv6;
    return conj(type, makeRelation(arith::CmpIPredicate::eq, chain,
                                   constant(v)));
  }

  /// `llc` and its frame types (gen_llc*): an 802.3 frame that is not
  /// raw IPX, and the control byte.
  PredP llc() {
    return conj(ieee8023(), negate(cmp(offLinkPayload, 2, 0xFFFF)));
  }
  PredP llcControl(uint32_t value, uint32_t mask) {
    return conj(llc(), cmp(offLinkPayload + 2, 1, value, mask));
  }

  /// gen_portatom / gen_portrangeatom on the IPv4 transport header.
  PredP portAtom(uint32_t off, uint32_t lo, uint32_t hi, bool ipv6) {
    auto at = [&](arith::CmpIPredicate rel, uint32_t v) {
      return ipv6 ? cmp(net() + 40 + off, 2, v, 0xFFFFFFFFu, rel)
                  : cmpTransport(off, 2, v, rel);
    };
    if (lo == hi)
      return at(arith::CmpIPredicate::eq, lo);
    return conj(at(arith::CmpIPredicate::uge, lo),
                at(arith::CmpIPredicate::ule, hi));
  }
  PredP portDir(uint32_t lo, uint32_t hi, Dir dir, bool ipv6,
                antlr4::ParserRuleContext *at) {
    switch (dir) {
    case Dir::Src:
      return portAtom(0, lo, hi, ipv6);
    case Dir::Dst:
      return portAtom(2, lo, hi, ipv6);
    case Dir::And:
      return conj(portAtom(0, lo, hi, ipv6), portAtom(2, lo, hi, ipv6));
    case Dir::Default:
    case Dir::Or:
      return disj(portAtom(0, lo, hi, ipv6), portAtom(2, lo, hi, ipv6));
    default:
      fail(at, wlanDirError(dir, false));
    }
  }
  /// gen_portop(6): one transport protocol.
  PredP portOp(uint32_t lo, uint32_t hi, uint32_t ipproto, Dir dir,
               bool ipv6, antlr4::ParserRuleContext *at) {
    if (ipv6)
      return conj(ip6Proto(ipproto), portDir(lo, hi, dir, true, at));
    return conj(conj(ipProto(ipproto), ipFirstFragment()),
                portDir(lo, hi, dir, false, at));
  }
  /// gen_port(6) for `proto` (TCP, UDP, SCTP or all three).
  PredP portFamily(uint32_t lo, uint32_t hi, Proto p, Dir dir, bool ipv6,
                   antlr4::ParserRuleContext *at) {
    PredP b;
    if (p == Proto::Default) {
      // libpcap: (tcp or udp), then sctp or that.
      PredP tcpUdp = disj(portOp(lo, hi, 6, dir, ipv6, at),
                          portOp(lo, hi, 17, dir, ipv6, at));
      b = disj(portOp(lo, hi, 132, dir, ipv6, at), tcpUdp);
    } else {
      b = portOp(lo, hi, *ipProtocolOf(p), dir, ipv6, at);
    }
    return conj(linktype(ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP, at), b);
  }
  /// `port`/`portrange` with a transport qualifier (Default for all
  /// three); the numbers are checked by the caller.
  PredP port(uint32_t lo, uint32_t hi, Proto p, Dir dir,
             antlr4::ParserRuleContext *at) {
    if (lo > hi)
      std::swap(lo, hi);
    return disj(portFamily(lo, hi, p, dir, false, at),
                portFamily(lo, hi, p, dir, true, at));
  }
};

//===----------------------------------------------------------------------===//
// The parse tree, walked the way libpcap's grammar actions go
//===----------------------------------------------------------------------===//

/// Named numbers of libpcap's scanner (icmptype, tcp-syn, ...).
std::optional<uint32_t> namedConstant(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<uint32_t>>(name)
      .Case("icmptype", 0).Case("icmpcode", 1)
      .Case("icmp-echoreply", 0).Case("icmp-unreach", 3)
      .Case("icmp-sourcequench", 4).Case("icmp-redirect", 5)
      .Case("icmp-echo", 8).Case("icmp-routeradvert", 9)
      .Case("icmp-routersolicit", 10).Case("icmp-timxceed", 11)
      .Case("icmp-paramprob", 12).Case("icmp-tstamp", 13)
      .Case("icmp-tstampreply", 14).Case("icmp-ireq", 15)
      .Case("icmp-ireqreply", 16).Case("icmp-maskreq", 17)
      .Case("icmp-maskreply", 18)
      .Case("icmp6type", 0).Case("icmp6code", 1)
      .Case("icmp6-destinationunreach", 1).Case("icmp6-packettoobig", 2)
      .Case("icmp6-timeexceeded", 3).Case("icmp6-parameterproblem", 4)
      .Case("icmp6-echo", 128).Case("icmp6-echoreply", 129)
      .Case("icmp6-multicastlistenerquery", 130)
      .Case("icmp6-multicastlistenerreportv1", 131)
      .Case("icmp6-multicastlistenerdone", 132)
      .Case("icmp6-routersolicit", 133).Case("icmp6-routeradvert", 134)
      .Case("icmp6-neighborsolicit", 135).Case("icmp6-neighboradvert", 136)
      .Case("icmp6-redirect", 137).Case("icmp6-routerrenum", 138)
      .Case("icmp6-nodeinformationquery", 139)
      .Case("icmp6-nodeinformationresponse", 140)
      .Case("icmp6-ineighbordiscoverysolicit", 141)
      .Case("icmp6-ineighbordiscoveryadvert", 142)
      .Case("icmp6-multicastlistenerreportv2", 143)
      .Case("icmp6-homeagentdiscoveryrequest", 144)
      .Case("icmp6-homeagentdiscoveryreply", 145)
      .Case("icmp6-mobileprefixsolicit", 146)
      .Case("icmp6-mobileprefixadvert", 147)
      .Case("icmp6-certpathsolicit", 148)
      .Case("icmp6-certpathadvert", 149)
      .Case("icmp6-multicastrouteradvert", 151)
      .Case("icmp6-multicastroutersolicit", 152)
      .Case("icmp6-multicastrouterterm", 153)
      .Case("tcpflags", 13).Case("tcp-fin", 0x01).Case("tcp-syn", 0x02)
      .Case("tcp-rst", 0x04).Case("tcp-push", 0x08).Case("tcp-ack", 0x10)
      .Case("tcp-urg", 0x20).Case("tcp-ece", 0x40).Case("tcp-cwr", 0x80)
      .Default(std::nullopt);
}

/// A number as libpcap's scanner reads it: decimal, 0x hexadecimal, or
/// octal with a leading 0.
uint32_t parseNumber(antlr4::tree::TerminalNode *tok) {
  std::string text = tok->getText();
  unsigned radix = 10;
  llvm::StringRef digits = text;
  if (digits.starts_with_insensitive("0x")) {
    radix = 16;
    digits = digits.drop_front(2);
  } else if (digits.size() > 1 && digits.front() == '0') {
    radix = 8;
    digits = digits.drop_front();
  }
  uint64_t v = 0;
  for (char c : digits) {
    unsigned d = llvm::hexDigitValue(c);
    if (d >= radix)
      fail(tok, "'" + text + "' is not a valid number");
    v = v * radix + d;
    if (v > 0xFFFFFFFFull)
      fail(tok, "number '" + text + "' does not fit in 32 bits");
  }
  return static_cast<uint32_t>(v);
}

/// A dotted IPv4 address or network of 1 to 4 parts, left-aligned like
/// libpcap's __pcap_atoin: the value and its number of bits.
std::pair<uint32_t, unsigned> parseDotted(antlr4::tree::TerminalNode *tok) {
  llvm::SmallVector<llvm::StringRef> parts;
  std::string text = tok->getText();
  llvm::StringRef(text).split(parts, '.');
  uint32_t v = 0;
  for (llvm::StringRef part : parts) {
    unsigned n;
    if (part.getAsInteger(10, n) || n > 255)
      fail(tok, "invalid IPv4 address '" + text + "'");
    v = v << 8 | n;
  }
  return {v, static_cast<unsigned>(8 * parts.size())};
}

ValP simplify(const ValP &v);

/// An 802.11 frame type or subtype name of libpcap's grammar, for the
/// error it gives on Ethernet.
bool isWlanTypeName(llvm::StringRef name) {
  return llvm::is_contained({"data", "mgt", "management", "ctl", "control"},
                            name.lower());
}
/// The subtype names of each 802.11 type (management, control, data).
const std::vector<std::vector<llvm::StringRef>> &wlanSubtypes() {
  static const std::vector<std::vector<llvm::StringRef>> names = {
      {"assocreq", "assoc-req", "assocresp", "assoc-resp", "reassocreq",
       "reassoc-req", "reassocresp", "reassoc-resp", "probereq", "probe-req",
       "proberesp", "probe-resp", "beacon", "atim", "disassoc",
       "disassociation", "auth", "authentication", "deauth",
       "deauthentication"},
      {"ps-poll", "rts", "cts", "ack", "cf-end", "cf-end-ack"},
      {"data", "data-cf-ack", "data-cf-poll", "data-cf-ack-poll", "null",
       "cf-ack", "cf-poll", "cf-ack-poll", "qos-data", "qos-data-cf-ack",
       "qos-data-cf-poll", "qos-data-cf-ack-poll", "qos", "qos-cf-poll",
       "qos-cf-ack-poll"}};
  return names;
}

/// A name as the resolver functions of libpcap (nametoaddr.c) see it.
namespace names {

/// pcap_nametoport: a service's TCP and UDP ports; the protocol is TCP,
/// UDP, or -1 (both) when the name gives the same port for both.
bool port(const std::string &name, int &port, int &proto) {
  auto lookup = [&](int socktype, int protocol) {
    struct addrinfo hints = {}, *res = nullptr;
    hints.ai_family = PF_UNSPEC;
    hints.ai_socktype = socktype;
    hints.ai_protocol = protocol;
    int found = -1;
    if (getaddrinfo(nullptr, name.c_str(), &hints, &res) != 0)
      return found;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
      if (!ai->ai_addr)
        continue;
      if (ai->ai_addr->sa_family == AF_INET) {
        found = ntohs(reinterpret_cast<sockaddr_in *>(ai->ai_addr)->sin_port);
        break;
      }
      if (ai->ai_addr->sa_family == AF_INET6) {
        found =
            ntohs(reinterpret_cast<sockaddr_in6 *>(ai->ai_addr)->sin6_port);
        break;
      }
    }
    freeaddrinfo(res);
    return found;
  };
  int tcp = lookup(SOCK_STREAM, IPPROTO_TCP);
  int udp = lookup(SOCK_DGRAM, IPPROTO_UDP);
  if (tcp >= 0) {
    port = tcp;
    proto = udp == tcp ? -1 : IPPROTO_TCP;
    return true;
  }
  if (udp >= 0) {
    port = udp;
    proto = IPPROTO_UDP;
    return true;
  }
  return false;
}

/// pcap_nametoportrange: "N-M", or two service names around the first '-'.
bool portRange(const std::string &name, int &lo, int &hi, int &proto) {
  int a, b;
  if (sscanf(name.c_str(), "%d-%d", &a, &b) == 2) {
    lo = a;
    hi = b;
    proto = -1;
    return true;
  }
  size_t dash = name.find('-');
  if (dash == std::string::npos)
    return false;
  int firstProto;
  if (!port(name.substr(0, dash), lo, firstProto) ||
      !port(name.substr(dash + 1), hi, proto))
    return false;
  if (proto != firstProto)
    proto = -1;
  return true;
}

/// pcap_nametoproto: /etc/protocols (getprotobyname_r).
std::optional<uint32_t> ipProtocol(const std::string &name) {
  struct protoent entry, *found = nullptr;
  char buffer[1024];
  if (getprotobyname_r(name.c_str(), &entry, buffer, sizeof buffer,
                       &found) != 0 ||
      !found)
    return std::nullopt;
  return static_cast<uint32_t>(found->p_proto);
}

/// pcap_nametoeproto, then pcap_nametollc: libpcap's own tables.
std::optional<uint32_t> etherProtocol(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<uint32_t>>(name)
      .Case("aarp", ETHERTYPE_AARP).Case("arp", ETHERTYPE_ARP)
      .Case("atalk", ETHERTYPE_ATALK).Case("decnet", ETHERTYPE_DN)
      .Case("ip", ETHERTYPE_IP).Case("ip6", ETHERTYPE_IPV6)
      .Case("lat", ETHERTYPE_LAT).Case("loopback", ETHERTYPE_LOOPBACK)
      .Case("mopdl", ETHERTYPE_MOPDL).Case("moprc", ETHERTYPE_MOPRC)
      .Case("rarp", ETHERTYPE_REVARP).Case("sca", ETHERTYPE_SCA)
      .Case("iso", LLCSAP_ISONS).Case("stp", LLCSAP_8021D)
      .Case("ipx", LLCSAP_IPX).Case("netbeui", LLCSAP_NETBEUI)
      .Default(std::nullopt);
}

/// pcap_nametonetaddr: /etc/networks (getnetbyname_r); 0 if unknown.
uint32_t network(const std::string &name) {
  struct netent entry, *found = nullptr;
  char buffer[1024];
  int herr;
  if (getnetbyname_r(name.c_str(), &entry, buffer, sizeof buffer, &found,
                     &herr) != 0 ||
      !found)
    return 0;
  return found->n_net;
}

/// pcap_nametoaddrinfo: the host's addresses (getaddrinfo, as libpcap
/// asks for them).
struct AddrInfo {
  struct addrinfo *list = nullptr;
  ~AddrInfo() {
    if (list)
      freeaddrinfo(list);
  }
};
bool host(const std::string &name, AddrInfo &out) {
  struct addrinfo hints = {};
  hints.ai_family = PF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  return getaddrinfo(name.c_str(), nullptr, &hints, &out.list) == 0;
}

} // namespace names

class Walker {
public:
  explicit Walker(Generator &gen) : gen(gen) {}

  PredP program(P::ProgramContext *ctx) {
    if (!ctx->expr())
      return boolean(true); // the empty expression accepts everything
    return expr(ctx->expr(), Qual()).first;
  }

  /// An error libpcap's optimizer would give (a division by a value that
  /// folds to 0), raised only if the optimizer runs.
  std::optional<FilterError> optimizerError;

private:
  Generator &gen;

  using Result = std::pair<PredP, Qual>;

  static bool isAnd(P::BoolopContext *op) { return op->AND() || op->ANDAND(); }

  Result expr(P::ExprContext *ctx, Qual before) {
    if (auto *t = dynamic_cast<P::TermExprContext *>(ctx))
      return term(t->term(), before);
    auto *b = static_cast<P::BinaryExprContext *>(ctx);
    auto [lhs, lq] = expr(b->expr(), before);
    Result rhs = b->operand()->term()
                     ? term(b->operand()->term(), lq)
                     : Result{id(b->operand()->id(), lq), lq};
    PredP p = isAnd(b->boolop()) ? conj(lhs, rhs.first)
                                 : disj(lhs, rhs.first);
    return {p, rhs.second};
  }

  Result term(P::TermContext *ctx, Qual before) {
    if (auto *n = dynamic_cast<P::NotTermContext *>(ctx)) {
      auto [p, q] = term(n->term(), before);
      return {negate(p), q};
    }
    return rterm(static_cast<P::PlainTermContext *>(ctx)->rterm(), before);
  }

  Result rterm(P::RtermContext *ctx, Qual before) {
    if (auto *q = dynamic_cast<P::QualifiedContext *>(ctx)) {
      Qual qual = head(q->head());
      return {id(q->id(), qual), qual};
    }
    if (auto *p = dynamic_cast<P::ParenthesizedContext *>(ctx))
      return {expr(p->expr(), Qual()).first, before};
    if (auto *p = dynamic_cast<P::ProtocolContext *>(ctx))
      return {gen.abbreviation(pname(p->pname()), p), Qual()};
    if (auto *r = dynamic_cast<P::RelationContext *>(ctx))
      return {relation(r), Qual()};
    return {other(static_cast<P::OtherPrimitiveContext *>(ctx)->other()),
            Qual()};
  }

  Proto pname(P::PnameContext *ctx) {
    if (!ctx)
      return Proto::Default;
    static const std::map<std::string, Proto> byName = [] {
      std::map<std::string, Proto> m;
      for (int p = static_cast<int>(Proto::Link);
           p <= static_cast<int>(Proto::RADIO); ++p)
        m[protoName(static_cast<Proto>(p))] = static_cast<Proto>(p);
      for (const char *link : {"ether", "ppp", "slip", "fddi", "tr", "wlan"})
        m[link] = Proto::Link;
      m["es-is"] = Proto::ESIS;
      m["is-is"] = Proto::ISIS;
      return m;
    }();
    return byName.at(ctx->getText());
  }

  Qual head(P::HeadContext *ctx) {
    Qual q;
    q.valid = true;
    auto dqual = [&](P::DqualContext *d) {
      if (!d)
        return;
      bool src = d->SRC() != nullptr, dst = d->DST() != nullptr;
      if (src && dst)
        q.dir = d->AND() ? Dir::And : Dir::Or;
      else if (src || dst)
        q.dir = src ? Dir::Src : Dir::Dst;
      else
        q.dir = d->ADDR1()   ? Dir::Addr1
                : d->ADDR2() ? Dir::Addr2
                : d->ADDR3() ? Dir::Addr3
                : d->ADDR4() ? Dir::Addr4
                : d->RA()    ? Dir::RA
                             : Dir::TA;
    };
    auto aqual = [&](P::AqualContext *a) {
      if (!a)
        return;
      q.addr = a->HOST()        ? Addr::Host
               : a->NET()       ? Addr::Net
               : a->PORT()      ? Addr::Port
                                : Addr::PortRange;
    };
    if (auto *h = dynamic_cast<P::HeadDirectionContext *>(ctx)) {
      q.proto = pname(h->pname());
      dqual(h->dqual());
      aqual(h->aqual());
    } else if (auto *h = dynamic_cast<P::HeadAddressContext *>(ctx)) {
      q.proto = pname(h->pname());
      aqual(h->aqual());
    } else if (auto *h = dynamic_cast<P::HeadProtoContext *>(ctx)) {
      q.proto = pname(h->pname());
      q.addr = Addr::Proto;
    } else if (auto *h = dynamic_cast<P::HeadProtochainContext *>(ctx)) {
      q.proto = pname(h->pname());
      q.addr = Addr::ProtoChain;
    } else {
      q.proto = pname(static_cast<P::HeadGatewayContext *>(ctx)->pname());
      q.addr = Addr::Gateway;
    }
    return q;
  }

  /// An operand under qualifiers `q` (libpcap's nid/pnum rules).
  PredP id(P::IdContext *ctx, Qual q) {
    if (!q.valid)
      fail(ctx, "'" + ctx->getText() +
                    "' needs a qualifier (such as host, net or port) or a "
                    "term before it to take its qualifiers from");
    if (auto *n = dynamic_cast<P::NotIdContext *>(ctx))
      return negate(id(n->id(), q));
    if (auto *l = dynamic_cast<P::IdListContext *>(ctx)) {
      std::vector<P::IdContext *> ids = l->id();
      PredP p = id(ids[0], q);
      // The operators sit between the ids, in order.
      size_t next = 1;
      for (antlr4::tree::ParseTree *child : l->children) {
        auto *tok = dynamic_cast<antlr4::tree::TerminalNode *>(child);
        if (!tok)
          continue;
        size_t type = tok->getSymbol()->getType();
        bool isAnd = type == P::AND || type == P::ANDAND;
        bool isOr = type == P::OR || type == P::OROR;
        if (!isAnd && !isOr)
          continue;
        PredP rhs = id(ids[next++], q);
        p = isAnd ? conj(p, rhs) : disj(p, rhs);
      }
      return p;
    }
    if (auto *n = dynamic_cast<P::NumberContext *>(ctx))
      return ncode(nullptr, parseNumber(n->NUM()), q, ctx);
    if (auto *n = dynamic_cast<P::Ipv4Context *>(ctx)) {
      rejectNonAddress(q, ctx);
      return ncode(n->HID(), 0, q, ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv4PrefixContext *>(ctx)) {
      auto [v, bits] = parseDotted(n->HID());
      uint32_t len = parseNumber(n->NUM());
      if (len > 32)
        fail(n->NUM(), "mask length must be <= 32");
      uint32_t mask = len == 0 ? 0 : 0xFFFFFFFFu << (32 - len);
      v <<= 32 - bits;
      if (v & ~mask)
        fail(ctx, "non-network bits set in \"" + n->HID()->getText() + "/" +
                      std::to_string(len) + "\"");
      return mcode(v, mask, q, ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv4MaskContext *>(ctx)) {
      auto [v, bits] = parseDotted(n->HID(0));
      auto [m, mbits] = parseDotted(n->HID(1));
      v <<= 32 - bits;
      m <<= 32 - mbits;
      if (v & ~m)
        fail(ctx, "non-network bits set in \"" + n->HID(0)->getText() +
                      " mask " + n->HID(1)->getText() + "\"");
      return mcode(v, m, q, ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv6Context *>(ctx))
      return mcode6(n->HID6()->getText(), 128, q, ctx);
    if (auto *n = dynamic_cast<P::Ipv6PrefixContext *>(ctx))
      return mcode6(n->HID6()->getText(), parseNumber(n->NUM()), q, ctx);
    if (auto *n = dynamic_cast<P::MacContext *>(ctx))
      return ecode(n->EID()->getText(), q, ctx);
    if (dynamic_cast<P::ArcnetContext *>(ctx))
      fail(ctx, "aid supported only on ARCnet");
    return scode(static_cast<P::NamedContext *>(ctx), q);
  }

  /// The grammar's checks on a dotted IPv4 address.
  void rejectNonAddress(const Qual &q, antlr4::ParserRuleContext *at) {
    const char *qual = q.addr == Addr::Port         ? "port"
                       : q.addr == Addr::PortRange  ? "portrange"
                       : q.addr == Addr::Proto      ? "proto"
                       : q.addr == Addr::ProtoChain ? "protochain"
                                                    : nullptr;
    if (qual)
      fail(at, std::string("'") + qual + "' modifier applied to ip host");
  }

  /// gen_port / gen_portrange for a port qualifier: `ipproto` is the
  /// transport the number or name stands for (-1: all).
  PredP ports(int lo, int hi, int ipproto, const Qual &q,
              antlr4::ParserRuleContext *at) {
    for (int port : {lo, hi}) {
      if (port < 0)
        fail(at, "illegal port number " + std::to_string(port) + " < 0");
      if (port > 65535)
        fail(at, "illegal port number " + std::to_string(port) + " > 65535");
    }
    if (isWlanDir(q.dir))
      fail(at, wlanDirError(q.dir, false,
                            q.addr == Addr::Port ? "ports" : "port ranges"));
    Proto p = ipproto == IPPROTO_TCP   ? Proto::TCP
              : ipproto == IPPROTO_UDP ? Proto::UDP
              : ipproto == IPPROTO_SCTP ? Proto::SCTP
                                        : Proto::Default;
    return gen.port(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi), p,
                    q.dir, at);
  }
  /// The transport a `port` or `portrange` qualifier names (-1: all).
  int portProtocol(const Qual &q, antlr4::ParserRuleContext *at) {
    switch (q.proto) {
    case Proto::TCP: return IPPROTO_TCP;
    case Proto::UDP: return IPPROTO_UDP;
    case Proto::SCTP: return IPPROTO_SCTP;
    case Proto::Default: return -1;
    default:
      fail(at, std::string("illegal qualifier of '") +
                   (q.addr == Addr::Port ? "port" : "portrange") + "'");
    }
  }

  /// gen_ncode: a number, or a dotted address (`dotted`).
  PredP ncode(antlr4::tree::TerminalNode *dotted, uint32_t v, const Qual &q,
              antlr4::ParserRuleContext *at) {
    unsigned bits = 32;
    if (dotted && q.proto == Proto::DECNET) {
      // area.node
      unsigned area, node;
      if (sscanf(dotted->getText().c_str(), "%u.%u", &area, &node) != 2)
        fail(at, "malformed decnet address '" + dotted->getText() + "'");
      v = ((area << 10) & 0176000) | (node & 01777);
    } else if (dotted) {
      std::tie(v, bits) = parseDotted(dotted);
    }
    switch (q.addr) {
    case Addr::Default:
    case Addr::Host:
    case Addr::Net: {
      const char *what = q.addr == Addr::Net ? "net" : "host";
      if (q.proto == Proto::DECNET)
        return gen.host(v, 0, q.proto, q.dir, what, at);
      if (q.proto == Proto::Link)
        fail(at, "illegal link layer address");
      uint32_t mask = 0xFFFFFFFFu;
      if (!dotted && q.addr == Addr::Net) {
        // A short network number moves to the top.
        while (v && (v & 0xFF000000u) == 0) {
          v <<= 8;
          mask <<= 8;
        }
      } else if (bits < 32) {
        v <<= 32 - bits;
        mask <<= 32 - bits;
      }
      return gen.host(v, mask, q.proto, q.dir, what, at);
    }
    case Addr::Port:
    case Addr::PortRange: {
      int ipproto = portProtocol(q, at);
      if (v > 65535)
        fail(at, "illegal port number " + std::to_string(v) + " > 65535");
      return ports(static_cast<int>(v), static_cast<int>(v), ipproto, q, at);
    }
    case Addr::Gateway:
      fail(at, "'gateway' requires a name");
    case Addr::Proto:
      return gen.proto(v, q.proto, q.dir, at);
    case Addr::ProtoChain:
      return gen.protochain(v, q.proto, at);
    }
    llvm_unreachable("unknown qualifier");
  }

  /// gen_mcode: a network with a mask.
  PredP mcode(uint32_t v, uint32_t mask, const Qual &q,
              antlr4::ParserRuleContext *at) {
    if (q.addr != Addr::Net)
      fail(at, "Mask syntax for networks only");
    return gen.host(v, mask, q.proto, q.dir, "net", at);
  }

  /// gen_mcode6: an IPv6 address or network.
  PredP mcode6(const std::string &text, uint32_t len, const Qual &q,
               antlr4::ParserRuleContext *at) {
    uint8_t addr[16], mask[16] = {0};
    if (inet_pton(AF_INET6, text.c_str(), addr) != 1)
      fail(at, "bogus IPv6 address " + text);
    if (len > 128)
      fail(at, "mask length must be <= 128");
    for (uint32_t i = 0; i < 16; ++i)
      mask[i] = len >= 8 * (i + 1) ? 0xFF
                : len <= 8 * i     ? 0
                                   : uint8_t(0xFF << (8 - (len - 8 * i)));
    for (unsigned i = 0; i < 16; ++i)
      if (addr[i] & ~mask[i])
        fail(at, "non-network bits set in \"" + text + "/" +
                     std::to_string(len) + "\"");
    switch (q.addr) {
    case Addr::Default:
    case Addr::Host:
      if (len != 128)
        fail(at, "Mask syntax for networks only");
      [[fallthrough]];
    case Addr::Net:
      return gen.host6(addr, mask, q.proto, q.dir,
                       q.addr == Addr::Net ? "net" : "host", at);
    default:
      fail(at, "invalid qualifier against IPv6 address");
    }
  }

  /// gen_ecode: an Ethernet address.
  PredP ecode(const std::string &text, const Qual &q,
              antlr4::ParserRuleContext *at) {
    if ((q.addr != Addr::Host && q.addr != Addr::Default) ||
        q.proto != Proto::Link)
      fail(at, "ethernet address used in non-ether expression");
    // pcap_ether_aton: one or two hexadecimal digits between separators.
    uint8_t mac[6] = {0};
    size_t i = 0, n = 0;
    while (i < text.size() && n < 6) {
      if (text[i] == ':' || text[i] == '.' || text[i] == '-')
        ++i;
      unsigned d = llvm::hexDigitValue(text[i++]);
      if (i < text.size() && llvm::isHexDigit(text[i]))
        d = d << 4 | llvm::hexDigitValue(text[i++]);
      mac[n++] = static_cast<uint8_t>(d);
    }
    return gen.ehost(mac, q.dir, at);
  }

  /// gen_scode: a name (a host, network, port or protocol name).
  PredP scode(P::NamedContext *ctx, const Qual &q) {
    std::string name = ctx->name()->getText();
    if (ctx->name()->ESCAPED())
      name = name.substr(1);
    else if (std::optional<uint32_t> k = namedConstant(name))
      return ncode(nullptr, *k, q, ctx); // libpcap reads these as numbers
    switch (q.addr) {
    case Addr::Net: {
      uint32_t addr = names::network(name);
      if (addr == 0)
        fail(ctx, "unknown network '" + name + "'");
      uint32_t mask = 0xFFFFFFFFu;
      while (addr && (addr & 0xFF000000u) == 0) {
        addr <<= 8;
        mask <<= 8;
      }
      return gen.host(addr, mask, q.proto, q.dir, "net", ctx);
    }
    case Addr::Default:
    case Addr::Host:
      return hostName(name, q, ctx);
    case Addr::Port: {
      int wanted = portProtocol(q, ctx), port, proto;
      if (!names::port(name, port, proto))
        fail(ctx, "unknown port '" + name + "'");
      return ports(port, port, transportOf(wanted, proto, "port", name, ctx),
                   q, ctx);
    }
    case Addr::PortRange: {
      int wanted = portProtocol(q, ctx), lo, hi, proto;
      if (!names::portRange(name, lo, hi, proto))
        fail(ctx, "unknown port in range '" + name + "'");
      return ports(lo, hi,
                   transportOf(wanted, proto, "port in range", name, ctx), q,
                   ctx);
    }
    case Addr::Gateway:
      // libpcap built with IPv6 support has no 'gateway'.
      fail(ctx, "'gateway' not supported in this configuration");
    case Addr::Proto:
      return gen.proto(protocolNumber(name, q, ctx), q.proto, q.dir, ctx);
    case Addr::ProtoChain:
      return gen.protochain(protocolNumber(name, q, ctx), q.proto, ctx);
    }
    llvm_unreachable("unknown qualifier");
  }

  /// The transport a port name stands for under a `wanted` qualifier
  /// (-1: none), as gen_scode checks it.
  int transportOf(int wanted, int found, const char *what,
                  const std::string &name, antlr4::ParserRuleContext *at) {
    if (wanted < 0)
      return found;
    if (found >= 0 && found != wanted)
      fail(at, std::string(what) + " '" + name + "' is " +
                   (found == IPPROTO_TCP ? "tcp"
                    : found == IPPROTO_UDP ? "udp"
                                           : "sctp"));
    return wanted;
  }

  /// lookup_proto: a protocol name for `proto` or `protochain`.
  uint32_t protocolNumber(const std::string &name, const Qual &q,
                          antlr4::ParserRuleContext *at) {
    switch (q.proto) {
    case Proto::Default:
    case Proto::IP:
    case Proto::IP6:
      if (std::optional<uint32_t> v = names::ipProtocol(name))
        return *v;
      fail(at, "unknown ip proto '" + name + "'");
    case Proto::Link:
      if (std::optional<uint32_t> v = names::etherProtocol(name))
        return *v;
      fail(at, "unknown ether proto '" + name + "'");
    case Proto::ISO:
      if (name == "esis")
        return ISO9542_ESIS;
      if (name == "isis")
        return ISO10589_ISIS;
      if (name == "clnp")
        return ISO8473_CLNP;
      fail(at, "unknown osi proto '" + name + "'");
    default:
      fail(at, "unknown protocol: " + name);
    }
  }

  /// A host name: an Ethernet host from /etc/ethers for `ether`, otherwise
  /// its IPv4 and IPv6 addresses, or'ed in the resolver's order.
  PredP hostName(const std::string &name, const Qual &q,
                 antlr4::ParserRuleContext *at) {
    if (q.proto == Proto::Link) {
      struct ether_addr mac;
      if (ether_hostton(name.c_str(), &mac) != 0)
        fail(at, "unknown ether host '" + name + "'");
      return gen.ehost(mac.ether_addr_octet, q.dir, at);
    }
    if (q.proto == Proto::DECNET)
      fail(at, "decnet name support not included, '" + name +
                   "' cannot be translated");
    names::AddrInfo addresses;
    if (!names::host(name, addresses))
      fail(at, "unknown host '" + name + "'");
    static const uint8_t all[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff};
    const char *what = q.addr == Addr::Net ? "net" : "host";
    PredP b;
    for (struct addrinfo *ai = addresses.list; ai; ai = ai->ai_next) {
      PredP one;
      if (ai->ai_family == AF_INET) {
        if (q.proto == Proto::IP6)
          continue;
        auto *sin = reinterpret_cast<sockaddr_in *>(ai->ai_addr);
        one = gen.host(ntohl(sin->sin_addr.s_addr), 0xFFFFFFFFu, q.proto,
                       q.dir, what, at);
      } else if (ai->ai_family == AF_INET6) {
        if (q.proto == Proto::IP)
          continue;
        auto *sin6 = reinterpret_cast<sockaddr_in6 *>(ai->ai_addr);
        one = gen.host6(sin6->sin6_addr.s6_addr, all, q.proto, q.dir, what,
                        at);
      } else {
        continue;
      }
      b = b ? disj(b, one) : one;
    }
    if (!b)
      fail(at, "unknown host '" + name + "'" +
                   (q.proto == Proto::Default
                        ? ""
                        : " for specified address family"));
    return b;
  }

  //--- Relations and arithmetic (gen_relation, gen_load, gen_arth) -------//

  /// An arithmetic value and the protocol checks its accessors need.
  struct Arith {
    ValP value;
    PredP checks;
  };

  PredP relation(P::RelationContext *ctx) {
    Arith a0 = arith(ctx->arith(0)), a1 = arith(ctx->arith(1));
    P::RelopContext *op = ctx->relop();
    arith::CmpIPredicate rel = op->GT()     ? arith::CmpIPredicate::ugt
                               : op->GE()   ? arith::CmpIPredicate::uge
                               : op->LT()   ? arith::CmpIPredicate::ult
                               : op->LE()   ? arith::CmpIPredicate::ule
                               : op->NE()   ? arith::CmpIPredicate::ne
                                            : arith::CmpIPredicate::eq;
    // libpcap: the checks of the left operand, then of the right one, then
    // the comparison.
    return conj(conj(a0.checks, a1.checks),
                makeRelation(rel, a0.value, a1.value));
  }

  Arith arith(P::ArithContext *ctx) {
    if (auto *p = dynamic_cast<P::ParenArithContext *>(ctx))
      return arith(p->arith());
    if (auto *n = dynamic_cast<P::NegateContext *>(ctx)) {
      Arith a = arith(n->arith());
      auto v = std::make_shared<Val>();
      v->kind = Val::Neg;
      v->a = a.value;
      return {v, a.checks};
    }
    if (auto *n = dynamic_cast<P::ArithNumberContext *>(ctx))
      return {constant(parseNumber(n->NUM())), nullptr};
    if (auto *c = dynamic_cast<P::ConstantContext *>(ctx)) {
      std::optional<uint32_t> k = namedConstant(c->WORD()->getText());
      if (!k)
        fail(ctx, "syntax error: '" + c->WORD()->getText() +
                      "' is not a number, nor a named one (such as tcp-syn)");
      return {constant(*k), nullptr};
    }
    if (dynamic_cast<P::LengthContext *>(ctx)) {
      auto v = std::make_shared<Val>();
      v->kind = Val::WireLen;
      return {v, nullptr};
    }
    if (auto *a = dynamic_cast<P::AccessContext *>(ctx))
      return access(a);
    // Binary operators. As in libpcap's gen_arth, the result keeps only
    // the left operand's protocol checks.
    auto bin = [&](P::ArithContext *l, P::ArithContext *r, char op) {
      Arith a0 = arith(l), a1 = arith(r);
      bool division = op == '/' || op == '%', shift = op == '<' || op == '>';
      const char *zero = op == '/' ? "division by zero" : "modulus by zero";
      // libpcap's code generator looks at the first instruction of the
      // right operand: a load of the constant 0 (as in "ip[0]", whose
      // index comes first) or of one above 31.
      std::optional<uint32_t> first = firstImmediate(a1.value);
      if (division && first && *first == 0)
        fail(r, zero);
      if (shift && first && *first > 31)
        fail(r, "shift by more than 31 bits");
      // Its optimizer refuses a divisor that folds to 0, and a shift of a
      // variable by a constant above 31.
      ValP folded = simplify(a1.value);
      size_t at = r->getStart()->getStartIndex();
      if (division && folded->kind == Val::Const && folded->k == 0 &&
          !optimizerError)
        optimizerError = FilterError{at, zero};
      if (shift && folded->kind == Val::Const && folded->k > 31 &&
          simplify(a0.value)->kind != Val::Const && !optimizerError)
        optimizerError = FilterError{at, "shift by more than 31 bits"};
      return Arith{binary(op, a0.value, a1.value), a0.checks};
    };
    if (auto *b = dynamic_cast<P::MulDivContext *>(ctx))
      return bin(b->arith(0), b->arith(1),
                 b->STAR() ? '*' : b->SLASH() ? '/' : '%');
    if (auto *b = dynamic_cast<P::AddSubContext *>(ctx))
      return bin(b->arith(0), b->arith(1), b->PLUS() ? '+' : '-');
    if (auto *b = dynamic_cast<P::ShiftContext *>(ctx))
      return bin(b->arith(0), b->arith(1), b->SHL() ? '<' : '>');
    if (auto *b = dynamic_cast<P::BitAndContext *>(ctx))
      return bin(b->arith(0), b->arith(1), '&');
    auto *b = static_cast<P::BitOrContext *>(ctx);
    return bin(b->arith(0), b->arith(1), b->PIPE() ? '|' : '^');
  }

  /// The constant the first instruction libpcap generates for `v` loads,
  /// if it loads one: an index comes before the load it feeds, a left
  /// operand before the right one.
  static std::optional<uint32_t> firstImmediate(const ValP &v) {
    switch (v->kind) {
    case Val::Const:
      return v->k;
    case Val::Load:
      return v->index ? firstImmediate(v->index) : std::nullopt;
    case Val::Binary:
    case Val::Neg:
      return firstImmediate(v->a);
    default:
      return std::nullopt;
    }
  }

  /// proto[index : size] (gen_load).
  Arith access(P::AccessContext *ctx) {
    Proto p = pname(ctx->pname());
    Arith index = arith(ctx->arith());
    uint32_t size = ctx->NUM() ? parseNumber(ctx->NUM()) : 1;
    if (size != 1 && size != 2 && size != 4)
      fail(ctx->NUM(), "data size must be 1, 2, or 4");
    PredP checks;
    ValP v;
    switch (p) {
    case Proto::Link:
      v = load(0, size, index.value);
      checks = index.checks;
      break;
    case Proto::IP:
    case Proto::ARP:
    case Proto::RARP:
    case Proto::ATALK:
    case Proto::DECNET:
    case Proto::SCA:
    case Proto::LAT:
    case Proto::MOPRC:
    case Proto::MOPDL:
    case Proto::IP6:
      v = load(gen.net(), size, index.value);
      checks = conj(index.checks, gen.abbreviation(p, ctx));
      break;
    case Proto::TCP:
    case Proto::UDP:
    case Proto::SCTP:
    case Proto::ICMP:
    case Proto::IGMP:
    case Proto::IGRP:
    case Proto::PIM:
    case Proto::VRRP:
    case Proto::CARP:
      // libpcap: IPv4, the index's checks, the protocol (over IPv4 or
      // IPv6), then not a later fragment.
      v = load(gen.net(), size, index.value, /*ipHeader=*/true, gen.net());
      checks = conj(gen.linktype(ETHERTYPE_IP, ctx),
                    conj(index.checks, conj(gen.abbreviation(p, ctx),
                                            gen.ipFirstFragment())));
      break;
    case Proto::ICMP6:
      v = load(gen.net() + 40, size, index.value);
      checks = conj(conj(index.checks, gen.linktype(ETHERTYPE_IPV6, ctx)),
                    gen.ip6Proto(58));
      break;
    case Proto::RADIO:
      fail(ctx->pname(), "radio information not present in capture");
    default:
      fail(ctx->pname(), "unsupported index operation");
    }
    return {v, checks};
  }

  PredP other(P::OtherContext *ctx) {
    auto lenRel = [](arith::CmpIPredicate rel, uint32_t n) {
      auto v = std::make_shared<Val>();
      v->kind = Val::WireLen;
      return makeRelation(rel, v, constant(n));
    };
    auto optNum = [](antlr4::tree::TerminalNode *n) {
      return n ? std::optional<uint32_t>(parseNumber(n)) : std::nullopt;
    };
    if (auto *l = dynamic_cast<P::LessContext *>(ctx))
      return lenRel(arith::CmpIPredicate::ule, parseNumber(l->NUM()));
    if (auto *g = dynamic_cast<P::GreaterContext *>(ctx))
      return lenRel(arith::CmpIPredicate::uge, parseNumber(g->NUM()));
    if (auto *c = dynamic_cast<P::CastContext *>(ctx))
      return c->BROADCAST() ? gen.broadcast(pname(c->pname()), ctx)
                            : gen.multicast(pname(c->pname()), ctx);
    if (auto *b = dynamic_cast<P::ByteOpContext *>(ctx))
      return byteOp(b);
    if (auto *v = dynamic_cast<P::VlanContext *>(ctx))
      return gen.vlan(optNum(v->NUM()), ctx);
    if (auto *m = dynamic_cast<P::MplsContext *>(ctx))
      return gen.mpls(optNum(m->NUM()), ctx);
    if (dynamic_cast<P::PppoedContext *>(ctx))
      return gen.linktype(ETHERTYPE_PPPOED, ctx);
    if (auto *s = dynamic_cast<P::PppoesContext *>(ctx)) {
      if (std::optional<uint32_t> n = optNum(s->NUM()); n && *n > 0xFFFF)
        fail(ctx, "PPPoE session number " + std::to_string(*n) +
                      " greater than maximum 65535");
      fail(ctx, "'pppoes' is not supported by netvm yet (the PPP header "
                "after it changes the link type)");
    }
    if (auto *g = dynamic_cast<P::GeneveContext *>(ctx)) {
      if (std::optional<uint32_t> n = optNum(g->NUM()); n && *n > 0xFFFFFF)
        fail(ctx, "Geneve VNI " + std::to_string(*n) +
                      " greater than maximum 16777215");
      fail(ctx, "'geneve' is not supported by netvm yet (it makes the "
                "offsets of later primitives variable)");
    }
    if (dynamic_cast<P::InboundContext *>(ctx) ||
        dynamic_cast<P::OutboundContext *>(ctx))
      fail(ctx, "inbound/outbound not supported on Ethernet when reading "
                "savefiles");
    if (dynamic_cast<P::IfindexContext *>(ctx))
      fail(ctx, "ifindex not supported on Ethernet when reading savefiles");
    if (auto *l = dynamic_cast<P::LlcContext *>(ctx))
      return llc(l);
    if (dynamic_cast<P::PfIfnameContext *>(ctx))
      fail(ctx, "ifname supported only on PF linktype");
    if (dynamic_cast<P::PfRulesetContext *>(ctx))
      fail(ctx, "ruleset supported only on PF linktype");
    if (dynamic_cast<P::PfRulenumContext *>(ctx))
      fail(ctx, "rnr supported only on PF linktype");
    if (dynamic_cast<P::PfSubrulenumContext *>(ctx))
      fail(ctx, "srnr supported only on PF linktype");
    if (auto *r = dynamic_cast<P::PfReasonContext *>(ctx)) {
      static const std::set<std::string> reasons = {
          "match", "bad-offset", "fragment", "short", "normalize",
          "memory", "bad-timestamp", "congestion", "ip-option",
          "proto-cksum", "state-mismatch", "state-insert", "state-limit",
          "src-limit", "synproxy"};
      if (r->name() && !reasons.count(llvm::StringRef(r->name()->getText())
                                          .lower()))
        fail(ctx, "unknown PF reason \"" + r->name()->getText() + "\"");
      fail(ctx, "reason supported only on PF linktype");
    }
    if (auto *a = dynamic_cast<P::PfActionContext *>(ctx)) {
      static const std::set<std::string> actions = {
          "pass", "accept", "drop", "block", "scrub", "noscrub", "nat",
          "nonat", "binat", "nobinat", "rdr", "nordr", "synproxy-drop"};
      if (!actions.count(llvm::StringRef(a->name()->getText()).lower()))
        fail(ctx, "unknown PF action \"" + a->name()->getText() + "\"");
      fail(ctx, "action supported only on PF linktype");
    }
    if (auto *t = dynamic_cast<P::WlanTypeContext *>(ctx))
      return wlanType(t);
    if (auto *s = dynamic_cast<P::WlanSubtypeContext *>(ctx)) {
      for (const auto &subtypes : wlanSubtypes())
        if (llvm::is_contained(subtypes, llvm::StringRef(s->WORD()->getText())
                                             .lower()))
          fail(ctx, "802.11 link-layer types supported only on 802.11");
      fail(ctx, "unknown 802.11 type name");
    }
    if (auto *d = dynamic_cast<P::WlanDirContext *>(ctx)) {
      if (d->WORD() && !llvm::is_contained({"nods", "tods", "fromds",
                                            "dstods"},
                                           llvm::StringRef(
                                               d->WORD()->getText())
                                               .lower()))
        fail(ctx, "unknown 802.11 direction");
      fail(ctx, "frame direction supported only with 802.11 headers");
    }
    if (dynamic_cast<P::AtmTypeContext *>(ctx)) {
      std::string word = ctx->getText();
      if (word == "oamf4ec" || word == "oamf4sc") // libpcap's spelling
        word = "oam4" + word.substr(5);
      fail(ctx, "'" + word + "' supported only on raw ATM");
    }
    if (auto *f = dynamic_cast<P::AtmFieldContext *>(ctx))
      fail(ctx, std::string("'") + (f->VPI() ? "vpi" : "vci") +
                    "' supported only on raw ATM");
    if (dynamic_cast<P::Mtp2TypeContext *>(ctx)) {
      std::string word = ctx->getText();
      if (word == "lsu")
        word = "lssu";
      bool hsl = word[0] == 'h';
      fail(ctx, "'" + word + "' supported only on MTP2" +
                    (hsl ? "_HSL" : ""));
    }
    auto *m = static_cast<P::Mtp3FieldContext *>(ctx);
    std::string word = m->getStart()->getText();
    if (word.size() == 4) // the high-speed variants have the same message
      word = word.substr(1);
    fail(ctx, "'" + word + "' supported only on SS7");
  }

  /// `byte N op M` (gen_byteop): a byte of the link-layer header.
  PredP byteOp(P::ByteOpContext *ctx) {
    uint32_t index = parseNumber(ctx->NUM(0)), value = parseNumber(ctx->NUM(1));
    P::ByteopContext *op = ctx->byteop();
    if (op->EQ())
      return cmp(index, 1, value);
    if (op->LT())
      return cmp(index, 1, value, 0xFFFFFFFFu, arith::CmpIPredicate::ult);
    if (op->GT())
      return cmp(index, 1, value, 0xFFFFFFFFu, arith::CmpIPredicate::ugt);
    // libpcap's code for '&' and '|' does not load the byte: it tests
    // whatever value the filter loaded last.
    fail(ctx, std::string("'byte N ") + (op->AMP() ? "&" : "|") +
                  " M' is not supported: libpcap's code for it tests the "
                  "last value the filter loaded, not byte N");
  }

  /// `llc [type]` (gen_llc, gen_llc_i/s/u, gen_llc_s/u_subtype).
  PredP llc(P::LlcContext *ctx) {
    if (!ctx->WORD() && !ctx->RNR())
      return gen.llc();
    std::string word = ctx->RNR() ? "rnr" : ctx->WORD()->getText();
    std::string lower = llvm::StringRef(word).lower();
    if (lower == "i") // the low bit of the control byte clear
      return conj(gen.llc(),
                  makeRelation(arith::CmpIPredicate::eq,
                               binary('&', load(gen.offLinkPayload + 2, 1),
                                      constant(1)),
                               constant(0)));
    if (lower == "s")
      return gen.llcControl(1, 0x03);
    if (lower == "u")
      return gen.llcControl(3, 0x03);
    std::optional<uint32_t> s = llvm::StringSwitch<std::optional<uint32_t>>(
                                    lower)
                                    .Case("rr", 0x01).Case("rnr", 0x05)
                                    .Case("rej", 0x09).Default(std::nullopt);
    if (s)
      return gen.llcControl(*s, 0x0F);
    std::optional<uint32_t> u =
        llvm::StringSwitch<std::optional<uint32_t>>(lower)
            .Case("ui", 0x03).Case("ua", 0x63).Case("disc", 0x43)
            .Case("dm", 0x0f).Case("sabme", 0x6f).Case("test", 0xe3)
            .Case("xid", 0xaf).Case("frmr", 0x87).Default(std::nullopt);
    if (!u)
      fail(ctx, "unknown LLC type name \"" + word + "\"");
    return gen.llcControl(*u, 0xEF);
  }

  /// `type T [subtype S]` of 802.11: libpcap checks the names, then
  /// refuses them on Ethernet.
  PredP wlanType(P::WlanTypeContext *ctx) {
    size_t at = ctx->pname() ? 2 : 1;
    auto *typeTok = static_cast<antlr4::tree::TerminalNode *>(ctx->children[at]);
    int type; // 0 management, 1 control, 2 data, 3 none
    if (typeTok->getSymbol()->getType() == P::NUM) {
      uint32_t v = parseNumber(typeTok);
      if (v & ~0x0Cu)
        fail(ctx, "invalid 802.11 type value " + hexByte(v));
      type = static_cast<int>(v >> 2);
    } else {
      std::string t = llvm::StringRef(typeTok->getText()).lower();
      if (!isWlanTypeName(t))
        fail(ctx, "unknown 802.11 type name \"" + typeTok->getText() + "\"");
      type = t == "data" ? 2 : (t == "mgt" || t == "management") ? 0 : 1;
    }
    if (ctx->SUBTYPE()) {
      auto *sub = static_cast<antlr4::tree::TerminalNode *>(ctx->children.back());
      if (sub->getSymbol()->getType() == P::NUM) {
        uint32_t v = parseNumber(sub);
        if (v & ~0xF0u)
          fail(ctx, "invalid 802.11 subtype value " + hexByte(v));
      } else if (type > 2) {
        fail(ctx, "unknown 802.11 type");
      } else if (!llvm::is_contained(wlanSubtypes()[type],
                                     llvm::StringRef(sub->getText()).lower())) {
        fail(ctx, "unknown 802.11 subtype name \"" + sub->getText() + "\"");
      }
    }
    fail(ctx, "802.11 link-layer types supported only on 802.11");
  }

  static std::string hexByte(uint32_t v) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%02x", v);
    return buf;
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Predicates to the netvm dialect
//===----------------------------------------------------------------------===//

namespace {

//===----------------------------------------------------------------------===//
// libpcap's optimizer, on a decision graph
//
// libpcap compiles with its optimizer on (tcpdump does), and that changes
// what a short packet does: a load the optimizer removes cannot fail. To
// give every packet libpcap's verdict, the predicate tree becomes a graph
// of tests (each with a true and a false successor, ending in accept or
// reject) on which the optimizer's transformations run: constants fold
// (x & 0 is 0, x + 0 is x), identical tests share one node, a test whose
// two successors are the same node goes, and edges are threaded as
// libpcap's opt_j/fold_edge do: when every path to an edge has taken a
// branch of the same test (or, on its true branch, an equality test of the
// same value with another constant), the edge jumps past the test.
//===----------------------------------------------------------------------===//

/// A structural key: equal keys, equal values (libpcap's value numbers).
std::string keyOf(const ValP &v) {
  switch (v->kind) {
  case Val::Const:
    return "#" + std::to_string(v->k);
  case Val::WireLen:
    return "len";
  case Val::Neg:
    return "-(" + keyOf(v->a) + ")";
  case Val::Chain:
    return std::string("chain") + (v->ipv6 ? "6@" : "4@") +
           std::to_string(v->k);
  case Val::Load:
    return "[" +
           (v->ipHeader ? "x" + std::to_string(v->ipHeaderAt) + "+"
                        : std::string()) +
           (v->index ? keyOf(v->index) + "+" : "") + std::to_string(v->k) +
           ":" + std::to_string(v->size) + "]";
  case Val::Binary:
    return "(" + keyOf(v->a) + v->op + keyOf(v->b) + ")";
  }
  return "?";
}

/// libpcap's opt_stmt on arithmetic: constants fold, and an operation with
/// a constant 0 is the identity (+ - | ^ << >>) or 0 (* &), which drops
/// the loads of the other operand.
ValP simplify(const ValP &v) {
  if (v->kind == Val::Neg) {
    ValP a = simplify(v->a);
    if (a->kind == Val::Const)
      return constant(0u - a->k);
    auto n = std::make_shared<Val>(*v);
    n->a = a;
    return n;
  }
  if (v->kind == Val::Load && v->index) {
    auto n = std::make_shared<Val>(*v);
    n->index = simplify(v->index);
    return n;
  }
  if (v->kind != Val::Binary)
    return v;
  ValP a = simplify(v->a), b = simplify(v->b);
  if (b->kind == Val::Const) {
    uint32_t k = b->k;
    if (a->kind == Val::Const) {
      uint32_t x = a->k;
      switch (v->op) {
      case '+': return constant(x + k);
      case '-': return constant(x - k);
      case '*': return constant(x * k);
      case '&': return constant(x & k);
      case '|': return constant(x | k);
      case '^': return constant(x ^ k);
      case '/': if (k) return constant(x / k); break;
      case '%': if (k) return constant(x % k); break;
      case '<': return constant(k < 32 ? x << k : 0);
      case '>': return constant(k < 32 ? x >> k : 0);
      }
    } else if (k == 0) {
      if (v->op == '+' || v->op == '-' || v->op == '|' || v->op == '^' ||
          v->op == '<' || v->op == '>')
        return a;
      if (v->op == '*' || v->op == '&')
        return constant(0);
    }
  }
  return binary(v->op, a, b);
}

/// A BPF-style test: A (jeq|jgt|jge|jset) B.
struct Test {
  enum Code { JEQ, JGT, JGE, JSET } code;
  ValP lhs, rhs;
  std::string aKey, rKey;
  bool rConst;
};

class Dag {
public:
  static constexpr int kAccept = 0, kReject = 1;

  Dag() {
    nodes.push_back({-1, -1, -1}); // accept
    nodes.push_back({-1, -1, -1}); // reject
  }

  /// False for libpcap's unoptimized code (expressions with protochain):
  /// values are not folded and every test stays, with its loads.
  bool optimizing = true;

  /// Nodes testing `p`, continuing at `t` or `f`.
  int compile(const PredP &p, int t, int f) {
    switch (p->kind) {
    case Pred::True:
      return t;
    case Pred::False:
      return f;
    case Pred::Not:
      return compile(p->a, f, t);
    case Pred::And:
      return compile(p->a, compile(p->b, t, f), f);
    case Pred::Or:
      return compile(p->a, t, compile(p->b, t, f));
    case Pred::Rel:
      break;
    }
    ValP a = optimizing ? simplify(p->lhs) : p->lhs;
    ValP b = optimizing ? simplify(p->rhs) : p->rhs;
    Test::Code code;
    bool swap = false;
    switch (p->rel) {
    case arith::CmpIPredicate::eq: code = Test::JEQ; break;
    case arith::CmpIPredicate::ne: code = Test::JEQ; swap = true; break;
    case arith::CmpIPredicate::ugt: code = Test::JGT; break;
    case arith::CmpIPredicate::ule: code = Test::JGT; swap = true; break;
    case arith::CmpIPredicate::uge: code = Test::JGE; break;
    default: code = Test::JGE; swap = true; break; // ult
    }
    if (swap)
      std::swap(t, f);
    // libpcap's peephole rule: "and #k; jeq #0" becomes "jset #k" with its
    // branches swapped.
    if (optimizing && code == Test::JEQ && b->kind == Val::Const &&
        b->k == 0 && a->kind == Val::Binary && a->op == '&' &&
        a->b->kind == Val::Const) {
      code = Test::JSET;
      b = a->b;
      a = a->a;
      std::swap(t, f);
    }
    // A test of two constants is decided now.
    if (a->kind == Val::Const && b->kind == Val::Const) {
      bool r = code == Test::JEQ   ? a->k == b->k
               : code == Test::JGT ? a->k > b->k
               : code == Test::JGE ? a->k >= b->k
                                   : (a->k & b->k) != 0;
      return r ? t : f;
    }
    Test test{code, a, b, keyOf(a), keyOf(b), b->kind == Val::Const};
    std::string key = std::to_string(code) + test.aKey + "?" + test.rKey;
    auto [it, inserted] = testIds.try_emplace(key, tests.size());
    if (inserted)
      tests.push_back(std::move(test));
    return node(it->second, t, f);
  }

  /// libpcap's optimizer loop; returns the new root.
  int optimize(int root) {
    for (unsigned round = 0; round < 256; ++round) {
      bool changed = false;
      root = thread(root, changed);
      // One pull-up at a time, each followed by a clean-up.
      for (unsigned pulls = 0; pulls < 256 && pullup(root); ++pulls) {
        bool ignored = false;
        root = thread(root, ignored);
        changed = true;
      }
      if (!changed)
        break;
    }
    return root;
  }

  struct Node {
    int test, jt, jf;
  };
  std::vector<Node> nodes;
  std::vector<Test> tests;

private:
  std::map<std::string, int> testIds;
  std::map<std::tuple<int, int, int>, int> unique;

  /// A (shared) node; none when both successors are the same.
  int node(int test, int t, int f) {
    if (t == f && optimizing)
      return t;
    auto [it, inserted] = unique.try_emplace({test, t, f}, nodes.size());
    if (inserted)
      nodes.push_back({test, t, f});
    return it->second;
  }

  /// What an edge out of `from` (its true branch if `sense`) says about
  /// `child`'s test: the successor it leads to, or -1.
  int fold(int child, int from, bool sense) {
    const Test &c = tests[nodes[child].test], &e = tests[nodes[from].test];
    if (c.code != e.code || c.rConst != e.rConst || c.aKey != e.aKey)
      return -1;
    if (c.rKey == e.rKey)
      return sense ? nodes[child].jt : nodes[child].jf;
    if (sense && c.code == Test::JEQ && c.rConst)
      return nodes[child].jf;
    return -1;
  }

  //--- or_pullup / and_pullup ----------------------------------------//

  /// Reachable nodes, their incoming edges (node, sense: 0 true, 1 false),
  /// heights above the leaves, and dominators.
  struct Shape {
    std::vector<int> order; // topological
    std::map<int, std::vector<std::pair<int, int>>> in;
    std::map<int, int> height;
    std::map<int, std::set<int>> dom;
  };
  Shape shape(int root) {
    Shape sh;
    std::vector<int> state(nodes.size(), 0);
    std::function<void(int)> visit = [&](int n) {
      if (n < 2 || state[n])
        return;
      state[n] = 1;
      visit(nodes[n].jt);
      visit(nodes[n].jf);
      int h = 0;
      for (int c : {nodes[n].jt, nodes[n].jf})
        h = std::max(h, c < 2 ? 1 : sh.height[c] + 1);
      sh.height[n] = h;
      sh.order.push_back(n);
    };
    visit(root);
    std::reverse(sh.order.begin(), sh.order.end());
    for (int n : sh.order)
      for (int sense = 0; sense < 2; ++sense) {
        int c = sense == 0 ? nodes[n].jt : nodes[n].jf;
        if (c >= 2)
          sh.in[c].push_back({n, sense});
      }
    for (int n : sh.order) {
      std::set<int> d;
      bool firstPred = true;
      for (auto [p, sense] : sh.in[n]) {
        (void)sense;
        if (firstPred) {
          d = sh.dom[p];
          firstPred = false;
        } else {
          std::set<int> both;
          std::set_intersection(d.begin(), d.end(), sh.dom[p].begin(),
                                sh.dom[p].end(),
                                std::inserter(both, both.begin()));
          d = std::move(both);
        }
      }
      d.insert(n);
      sh.dom[n] = std::move(d);
    }
    return sh;
  }

  int &slot(int n, bool jt) { return jt ? nodes[n].jt : nodes[n].jf; }

  /// libpcap's or_pullup (alongTrue = false) and and_pullup (true): in a
  /// chain of tests that share their other successor, a later test of the
  /// value the tests before `b` compare moves up next to them. Edits the
  /// graph in place; true if it did.
  bool pullOne(int b, const Shape &sh, bool alongTrue) {
    auto inIt = sh.in.find(b);
    if (inIt == sh.in.end() || inIt->second.empty())
      return false;
    const auto &in = inIt->second;
    const std::string &val = tests[nodes[in[0].first].test].aKey;
    for (auto [p, sense] : in) {
      (void)sense;
      if (tests[nodes[p].test].aKey != val)
        return false;
    }
    auto other = [&](int n) { return alongTrue ? nodes[n].jf : nodes[n].jt; };
    auto dominated = [&](int n) {
      auto it = sh.dom.find(n);
      return it != sh.dom.end() && it->second.count(b);
    };
    // diff: the slot holding the first test of another value.
    int diffNode = in[0].first;
    bool diffTrue = in[0].second == 0;
    bool atTop = true;
    for (;;) {
      int d = slot(diffNode, diffTrue);
      if (d < 2 || other(d) != other(b) || !dominated(d))
        return false;
      if (tests[nodes[d].test].aKey != val)
        break;
      diffNode = d;
      diffTrue = alongTrue;
      atTop = false;
    }
    int diff = slot(diffNode, diffTrue);
    // same: the slot holding a later test of the value.
    int sameNode = diff;
    for (;;) {
      int s = slot(sameNode, alongTrue);
      if (s < 2 || other(s) != other(b) || !dominated(s))
        return false;
      if (tests[nodes[s].test].aKey == val)
        break;
      sameNode = s;
    }
    int pull = slot(sameNode, alongTrue);
    slot(sameNode, alongTrue) = slot(pull, alongTrue);
    slot(pull, alongTrue) = diff;
    if (atTop) {
      for (auto [p, sense] : in)
        slot(p, sense == 0) = pull;
    } else {
      slot(diffNode, diffTrue) = pull;
    }
    return true;
  }

  bool pullup(int root) {
    Shape sh = shape(root);
    // Bottom up, as libpcap goes through its levels.
    std::vector<int> byHeight(sh.order.begin(), sh.order.end());
    std::stable_sort(byHeight.begin(), byHeight.end(), [&](int a, int c) {
      return sh.height[a] < sh.height[c];
    });
    for (int b : byHeight) {
      // Edits make node numbers stand for other graphs: copy on write.
      if (pullOne(b, sh, /*alongTrue=*/false) ||
          pullOne(b, sh, /*alongTrue=*/true)) {
        unique.clear();
        for (size_t n = 2; n < nodes.size(); ++n)
          unique.try_emplace({nodes[n].test, nodes[n].jt, nodes[n].jf}, n);
        return true;
      }
    }
    return false;
  }

  /// One round: edge dominators, threading of every edge, and a rebuild
  /// that drops tests with equal successors and shares equal nodes.
  int thread(int root, bool &changed) {
    // Reachable nodes in topological order (successors after).
    std::vector<int> order, state(nodes.size(), 0);
    std::function<void(int)> visit = [&](int n) {
      if (n < 2 || state[n])
        return;
      state[n] = 1;
      visit(nodes[n].jt);
      visit(nodes[n].jf);
      order.push_back(n);
    };
    visit(root);
    std::reverse(order.begin(), order.end());
    // Edge e = 2 * node + (sense ? 0 : 1); dominating edges of each node's
    // entry: the intersection over its incoming edges.
    std::map<int, std::set<int>> indom;
    std::map<int, bool> seen;
    std::vector<std::set<int>> edom(2 * nodes.size());
    for (int n : order) {
      std::set<int> &in = indom[n];
      for (int sense = 0; sense < 2; ++sense) {
        int e = 2 * n + sense;
        edom[e] = in;
        edom[e].insert(e);
        int succ = sense == 0 ? nodes[n].jt : nodes[n].jf;
        if (succ < 2)
          continue;
        if (!seen[succ]) {
          indom[succ] = edom[e];
          seen[succ] = true;
        } else {
          std::set<int> both;
          std::set_intersection(indom[succ].begin(), indom[succ].end(),
                                edom[e].begin(), edom[e].end(),
                                std::inserter(both, both.begin()));
          indom[succ] = std::move(both);
        }
      }
    }
    // Thread every edge.
    std::map<int, std::pair<int, int>> succs;
    for (int n : order) {
      int out[2] = {nodes[n].jt, nodes[n].jf};
      for (int sense = 0; sense < 2; ++sense) {
        int v = out[sense];
        for (bool again = true; again && v >= 2;) {
          again = false;
          for (int e : edom[2 * n + sense]) {
            int r = fold(v, e / 2, e % 2 == 0);
            if (r >= 0) {
              v = r;
              again = changed = true;
              break;
            }
          }
        }
        out[sense] = v;
      }
      succs[n] = {out[0], out[1]};
    }
    // Rebuild bottom-up.
    std::map<int, int> rebuilt;
    std::function<int(int)> rebuild = [&](int n) -> int {
      if (n < 2)
        return n;
      auto it = rebuilt.find(n);
      if (it != rebuilt.end())
        return it->second;
      auto [t, f] = succs.count(n) ? succs[n]
                                   : std::pair<int, int>{nodes[n].jt,
                                                         nodes[n].jf};
      int r = node(nodes[n].test, rebuild(t), rebuild(f));
      if (r != n)
        changed = true;
      rebuilt[n] = r;
      return r;
    };
    return rebuild(root);
  }
};

//===----------------------------------------------------------------------===//
// The graph to the netvm dialect
//===----------------------------------------------------------------------===//

class CodeGen {
public:
  CodeGen(OpBuilder &b, Location loc, Region &body, Dag &dag, Block *accept,
          Block *reject)
      : b(b), loc(loc), body(body), dag(dag), accept(accept),
        reject(reject) {}

  /// The block that runs node `n`.
  Block *blockOf(int n) {
    if (n == Dag::kAccept)
      return accept;
    if (n == Dag::kReject)
      return reject;
    auto it = blocks.find(n);
    if (it != blocks.end())
      return it->second;
    Block *block = newBlock();
    blocks[n] = block;
    pending.push_back(n);
    return block;
  }

  /// Emit node `root` into the current block, then every node it reaches.
  void emit(int root) {
    if (root < 2) {
      cf::BranchOp::create(b, loc, blockOf(root));
      return;
    }
    emitNode(root);
    while (!pending.empty()) {
      int n = pending.back();
      pending.pop_back();
      b.setInsertionPointToEnd(blocks[n]);
      emitNode(n);
    }
  }

  /// Compute (and discard) the operands of test `t`: their loads still
  /// reject a packet too short for them.
  void prologue(int t) {
    val(dag.tests[t].lhs);
    val(dag.tests[t].rhs);
  }

private:
  void emitNode(int n) {
    const Dag::Node &node = dag.nodes[n];
    const Test &t = dag.tests[node.test];
    Value lhs = t.lhs->kind == Val::Chain
                    ? chain(*t.lhs, t.rhs->k)
                    : val(t.lhs);
    Value rhs = val(t.rhs);
    Value c;
    if (t.code == Test::JSET) {
      c = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                arith::AndIOp::create(b, loc, lhs, rhs),
                                c32(0));
    } else {
      arith::CmpIPredicate rel = t.code == Test::JEQ ? arith::CmpIPredicate::eq
                                 : t.code == Test::JGT
                                     ? arith::CmpIPredicate::ugt
                                     : arith::CmpIPredicate::uge;
      c = arith::CmpIOp::create(b, loc, rel, lhs, rhs);
    }
    Block *yes = blockOf(node.jt), *no = blockOf(node.jf);
    cf::CondBranchOp::create(b, loc, c, yes, no);
  }

  Block *newBlock() {
    Block *block = new Block();
    body.push_back(block);
    return block;
  }
  Value c32(uint32_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int64_t>(v));
  }
  /// Continue only if `ok`; otherwise the filter rejects the packet.
  void require(Value ok) {
    Block *next = newBlock();
    cf::CondBranchOp::create(b, loc, ok, next, reject);
    b.setInsertionPointToEnd(next);
  }
  Value loadByte(uint32_t offset, Type type) {
    return LoadOp::create(b, loc, type, MemSpace::Packet, c32(offset),
                          /*in_bounds=*/false);
  }
  /// BPF's indirect load of `size` bytes at x + k: the sum must not
  /// overflow, and the bytes must be in the packet. Zero-extended to i32.
  Value loadIndexed(Value x, uint32_t k, unsigned size) {
    Value offset = arith::AddIOp::create(b, loc, x, c32(k));
    require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, offset,
                                  x));
    Value loaded = LoadOp::create(b, loc, b.getIntegerType(8 * size),
                                  MemSpace::Packet, offset,
                                  /*in_bounds=*/false);
    return size == 4 ? loaded
                     : arith::ExtUIOp::create(b, loc, b.getI32Type(), loaded)
                           .getResult();
  }

  /// libpcap's protochain loop (gen_protochain), block by block: A is the
  /// header type, X the offset of the header from the network header.
  /// IPv6 extension headers (hop-by-hop 0, destination options 60,
  /// routing 43, fragment 44) advance X by (length + 1) * 8; an AH header
  /// (51) sets X to (length + 2) * 4 (not added to X, as in libpcap). The
  /// loop ends at type v, at no next header (59) or at any other type.
  Value chain(const Val &v, uint32_t wanted) {
    Type i32 = b.getI32Type();
    uint32_t base = v.k;
    Value a0, x0;
    if (v.ipv6) {
      a0 = arith::ExtUIOp::create(b, loc, i32, loadByte(base + 6, b.getI8Type()));
      x0 = c32(40);
    } else {
      a0 = arith::ExtUIOp::create(b, loc, i32, loadByte(base + 9, b.getI8Type()));
      Value first = arith::ExtUIOp::create(b, loc, i32,
                                           loadByte(base, b.getI8Type()));
      x0 = arith::ShLIOp::create(
          b, loc, arith::AndIOp::create(b, loc, first, c32(0x0F)), c32(2));
    }
    auto blockWith = [&](unsigned args) {
      Block *block = newBlock();
      for (unsigned i = 0; i < args; ++i)
        block->addArgument(i32, loc);
      return block;
    };
    Block *again = blockWith(2), *end = blockWith(1), *ah = blockWith(2),
          *ahBody = blockWith(1);
    cf::BranchOp::create(b, loc, again, ValueRange{a0, x0});

    // again: the types that end the loop, then the ones that go on.
    b.setInsertionPointToEnd(again);
    Value a = again->getArgument(0), x = again->getArgument(1);
    auto is = [&](Value value, uint32_t k) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, value,
                                   c32(k));
    };
    auto test = [&](uint32_t k, Block *yes, ValueRange yesArgs) {
      Block *no = newBlock();
      cf::CondBranchOp::create(b, loc, is(a, k), yes, yesArgs, no,
                               ValueRange{});
      b.setInsertionPointToEnd(no);
    };
    test(wanted, end, a);
    test(59, end, a);
    if (v.ipv6) {
      Block *advance = blockWith(1);
      for (uint32_t ext : {0u, 60u, 43u, 44u})
        test(ext, advance, x);
      cf::BranchOp::create(b, loc, ah, ValueRange{a, x});
      // An extension header: its next header and length.
      b.setInsertionPointToEnd(advance);
      Value ax = advance->getArgument(0);
      Value next = loadIndexed(ax, base, 1);
      Value len = loadIndexed(ax, base + 1, 1);
      Value nx = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc,
                                arith::AddIOp::create(b, loc, len, c32(1)),
                                c32(8)),
          ax);
      cf::BranchOp::create(b, loc, again, ValueRange{next, nx});
    } else {
      cf::BranchOp::create(b, loc, ah, ValueRange{a, x});
    }
    // ahcheck: an AH header goes on, anything else ends the loop.
    b.setInsertionPointToEnd(ah);
    cf::CondBranchOp::create(b, loc, is(ah->getArgument(0), 51), ahBody,
                             ValueRange{ah->getArgument(1)}, end,
                             ValueRange{ah->getArgument(0)});
    b.setInsertionPointToEnd(ahBody);
    Value hx = ahBody->getArgument(0);
    Value next = loadIndexed(hx, base, 1);
    Value len = loadIndexed(arith::AddIOp::create(b, loc, hx, c32(1)), base, 1);
    Value nx = arith::MulIOp::create(
        b, loc, arith::AddIOp::create(b, loc, len, c32(2)), c32(4));
    cf::BranchOp::create(b, loc, again, ValueRange{next, nx});

    b.setInsertionPointToEnd(end);
    return end->getArgument(0);
  }
  Value val(const ValP &v) {
    Type i32 = b.getI32Type();
    switch (v->kind) {
    case Val::Const:
      return c32(v->k);
    case Val::WireLen:
      return WireLengthOp::create(b, loc, i32);
    case Val::Neg:
      return arith::SubIOp::create(b, loc, c32(0), val(v->a));
    case Val::Chain:
      llvm_unreachable("protochain values are compared by emitNode");
    case Val::Load: {
      // BPF computes the variable part (index, plus the IPv4 header length
      // for transport fields) with wrapping arithmetic, then checks that
      // adding the constant does not overflow.
      Value variable;
      if (v->index)
        variable = val(v->index);
      if (v->ipHeader) {
        Value first = arith::ExtUIOp::create(
            b, loc, i32, loadByte(v->ipHeaderAt, b.getI8Type()));
        Value x = arith::ShLIOp::create(
            b, loc, arith::AndIOp::create(b, loc, first, c32(0x0F)), c32(2));
        variable = variable ? arith::AddIOp::create(b, loc, variable, x)
                                  .getResult()
                            : x;
      }
      Value offset = c32(v->k);
      if (variable) {
        offset = arith::AddIOp::create(b, loc, variable, offset);
        if (v->index) // x alone (<= 60) cannot overflow
          require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                        offset, variable));
      }
      Type t = b.getIntegerType(8 * v->size);
      Value loaded = LoadOp::create(b, loc, t, MemSpace::Packet, offset,
                                    /*in_bounds=*/false);
      return v->size == 4 ? loaded
                          : arith::ExtUIOp::create(b, loc, i32, loaded)
                                .getResult();
    }
    case Val::Binary: {
      Value l = val(v->a), r = val(v->b);
      switch (v->op) {
      case '+': return arith::AddIOp::create(b, loc, l, r);
      case '-': return arith::SubIOp::create(b, loc, l, r);
      case '*': return arith::MulIOp::create(b, loc, l, r);
      case '&': return arith::AndIOp::create(b, loc, l, r);
      case '|': return arith::OrIOp::create(b, loc, l, r);
      case '^': return arith::XOrIOp::create(b, loc, l, r);
      case '/':
      case '%':
        // bpf_filter rejects the packet on a division by zero.
        require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r,
                                      c32(0)));
        if (v->op == '/')
          return arith::DivUIOp::create(b, loc, l, r);
        return arith::RemUIOp::create(b, loc, l, r);
      case '<':
      case '>': {
        // Shifts by 32 or more give 0, as in bpf_filter.
        Value big = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                          r, c32(32));
        Value safe = arith::AndIOp::create(b, loc, r, c32(31));
        Value shifted =
            v->op == '<'
                ? arith::ShLIOp::create(b, loc, l, safe).getResult()
                : arith::ShRUIOp::create(b, loc, l, safe).getResult();
        return arith::SelectOp::create(b, loc, big, c32(0), shifted);
      }
      }
      break;
    }
    }
    llvm_unreachable("unknown value");
  }

  OpBuilder &b;
  Location loc;
  Region &body;
  Dag &dag;
  Block *accept, *reject;
  std::map<int, Block *> blocks;
  std::vector<int> pending;
};


} // namespace

OwningOpRef<ModuleOp>
netvm::pcapfilter::compile(MLIRContext &context, llvm::StringRef expression,
                           const CompileOptions &options, std::string &error) {
  context.loadDialect<NetVMDialect, arith::ArithDialect,
                      cf::ControlFlowDialect>();
  // A file gets file:line:col in front of its messages.
  llvm::StringRef file = options.sourceName;
  if (file == "<expression>")
    file = "";
  filter::FilterParser<netvm_pcapfilter::PcapFilterLexer, P> parser(
      expression, kSyntaxWords);
  std::optional<FilterError> syntaxError;
  P::ProgramContext *tree = parser.parse(syntaxError);
  if (!tree) {
    error = filter::withCaret(expression, *syntaxError, file);
    return nullptr;
  }

  PredP predicate;
  bool optimizing = true;
  try {
    Generator gen;
    gen.netmask = options.netmask;
    Walker walker(gen);
    predicate = walker.program(tree);
    optimizing = !gen.noOptimize;
    if (optimizing && walker.optimizerError)
      throw *walker.optimizerError;
  } catch (const FilterError &e) {
    error = filter::withCaret(expression, e, file);
    return nullptr;
  }

  Location loc = FileLineColLoc::get(&context, options.sourceName, 1, 1);
  OpBuilder b(&context);
  filter::FilterApp app =
      filter::buildFilterApp(b, loc, options.appName, "match");
  Region &body = app.handler.getBody();
  Block *entry = &body.front(), *accept = app.accept, *reject = app.reject;
  b.setInsertionPointToEnd(entry);
  Dag dag;
  dag.optimizing = optimizing;
  int first = dag.compile(predicate, Dag::kAccept, Dag::kReject);
  int root = optimizing ? dag.optimize(first) : first;
  CodeGen codegen(b, loc, body, dag, accept, reject);
  // libpcap's opt_root: when the first test's two branches end up at the
  // same place, the test goes but its loads stay in front of the next one
  // (unless the whole filter became a constant).
  if (optimizing && first >= 2 && root >= 2 &&
      dag.nodes[root].test != dag.nodes[first].test)
    codegen.prologue(dag.nodes[first].test);
  codegen.emit(root);

  return filter::finishFilterApp(app, error);
}
