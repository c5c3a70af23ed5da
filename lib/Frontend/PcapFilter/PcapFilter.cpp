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
#include "antlr4-runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <arpa/inet.h>
#include <netdb.h>

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

/// An error in the expression, at a character offset.
struct FilterError {
  size_t offset;
  std::string message;
};

[[noreturn]] void fail(antlr4::ParserRuleContext *at, const std::string &msg) {
  throw FilterError{at ? at->getStart()->getStartIndex() : 0, msg};
}
[[noreturn]] void fail(antlr4::tree::TerminalNode *at, const std::string &msg) {
  throw FilterError{at->getSymbol()->getStartIndex(), msg};
}

class ErrorListener : public antlr4::BaseErrorListener {
public:
  void syntaxError(antlr4::Recognizer *, antlr4::Token *offending, size_t,
                   size_t column, const std::string &msg,
                   std::exception_ptr) override {
    if (error)
      return;
    std::string text = msg;
    // ANTLR's wording, made plainer: "expecting {a, b, ...}" becomes a
    // short list, or a description when it would be long.
    llvm::StringRef m(msg);
    size_t at = m.find("expecting ");
    if (at != llvm::StringRef::npos) {
      llvm::StringRef expected = m.substr(at + 10).trim("{} ");
      llvm::SmallVector<llvm::StringRef> items;
      expected.split(items, ", ");
      bool comparisons = llvm::all_of(items, [](llvm::StringRef i) {
        return llvm::is_contained({"'>='", "'<='", "'!='", "'=='", "'>'",
                                   "'<'", "'='"},
                                  i);
      });
      std::string what =
          comparisons ? "a comparison (=, !=, <, <=, >, >=) after the value"
          : expected == "<EOF>" ? "the end of the expression"
          : items.size() > 6
              ? "an operand: an address, a number, a name, a protocol or '('"
              : "one of " + expected.str();
      bool atEnd = offending && offending->getType() == antlr4::Token::EOF;
      text = (atEnd ? "the expression ends too early: expected "
                    : "unexpected '" + offending->getText() +
                          "': expected ") +
             what;
    } else if (m.starts_with("no viable alternative at input")) {
      text = "this does not make a term here";
    }
    error = FilterError{offending ? offending->getStartIndex() : column,
                        "syntax error: " + text};
  }
  std::optional<FilterError> error;
};

//===----------------------------------------------------------------------===//
// Predicates: libpcap's blocks, as a tree
//===----------------------------------------------------------------------===//

struct Val;
using ValP = std::shared_ptr<Val>;
/// A 32-bit value.
struct Val {
  enum Kind { Const, Load, WireLen, Binary, Neg } kind = Const;
  uint32_t k = 0;     // Const: the value; Load: constant part of the offset
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
};

/// Protocol qualifiers (libpcap's Q_*).
enum class Proto {
  Default, Link, IP, IP6, ARP, RARP, TCP, UDP, ICMP, ICMP6, IGMP, SCTP, AH,
  ESP, PIM, VRRP, IGRP, CARP
};
enum class Dir { Default, Src, Dst, Or, And };
enum class Addr {
  Default, Host, Net, Port, PortRange, Proto, ProtoChain, Gateway, Broadcast,
  Multicast
};
/// The qualifiers a term leaves for a bare operand after it; `valid` is
/// false after terms that leave none (libpcap's qerr).
struct Qual {
  Proto proto = Proto::Default;
  Dir dir = Dir::Default;
  Addr addr = Addr::Default;
  bool valid = false;
};

const char *protoName(Proto p) {
  switch (p) {
  case Proto::Default: return "default";
  case Proto::Link: return "link";
  case Proto::IP: return "ip";
  case Proto::IP6: return "ip6";
  case Proto::ARP: return "arp";
  case Proto::RARP: return "rarp";
  case Proto::TCP: return "tcp";
  case Proto::UDP: return "udp";
  case Proto::ICMP: return "icmp";
  case Proto::ICMP6: return "icmp6";
  case Proto::IGMP: return "igmp";
  case Proto::SCTP: return "sctp";
  case Proto::AH: return "ah";
  case Proto::ESP: return "esp";
  case Proto::PIM: return "pim";
  case Proto::VRRP: return "vrrp";
  case Proto::IGRP: return "igrp";
  case Proto::CARP: return "carp";
  }
  return "?";
}

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
class Generator {
public:
  /// Where the link-layer type and the network-layer header are: libpcap's
  /// off_linktype and off_linkpl + off_nl, which `vlan` and `mpls` move
  /// for every primitive after them.
  uint32_t offLinkType = 12, offLinkPayload = 14, offNetwork = 0;
  unsigned labelDepth = 0; // MPLS labels seen
  uint32_t net() const { return offLinkPayload + offNetwork; }

  /// The same as cmp, at `offset` from the IPv4 payload (the transport
  /// header).
  PredP cmpTransport(uint32_t offset, unsigned size, uint32_t value,
                     arith::CmpIPredicate rel = arith::CmpIPredicate::eq) {
    return makeRelation(
        rel, load(net() + offset, size, nullptr, /*ipHeader=*/true, net()),
        constant(value));
  }

  PredP linktype(uint32_t type, antlr4::ParserRuleContext *at) {
    if (labelDepth > 0) {
      // Under MPLS labels: the bottom of the stack, then an IP version.
      if (type != ETHERTYPE_IP && type != ETHERTYPE_IPV6)
        fail(at, "unsupported protocol over mpls");
      PredP bottom = cmp(net() - 4 + 2, 1, 0x01, 0x01);
      return conj(bottom,
                  cmp(net(), 1, type == ETHERTYPE_IP ? 0x40 : 0x60, 0xF0));
    }
    if (type <= 1500)
      fail(at, "802.3 length/LLC protocol values (" + std::to_string(type) +
                   ") are not supported; only EtherTypes above 1500");
    return cmp(offLinkType, 2, type);
  }
  PredP ipProto(uint32_t v) { return cmp(net() + 9, 1, v); }
  PredP ip6Proto(uint32_t v) { return cmp(net() + 6, 1, v); }
  /// Not a fragment other than the first (libpcap's gen_ipfrag).
  PredP ipFirstFragment() { return cmp(net() + 6, 2, 0, 0x1FFF); }

  /// `vlan [id]`: a VLAN TPID, optionally the VLAN ID; later primitives
  /// look 4 bytes further.
  PredP vlan(std::optional<uint32_t> id, antlr4::ParserRuleContext *at) {
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
    ++labelDepth;
    return b;
  }

  /// gen_proto: ip/ip6 protocol `v` (for `proto` and the abbreviations).
  PredP proto(uint32_t v, Proto p, antlr4::ParserRuleContext *at) {
    switch (p) {
    case Proto::Default:
      return disj(proto(v, Proto::IP, at), proto(v, Proto::IP6, at));
    case Proto::Link:
      return linktype(v, at);
    case Proto::IP:
      if (v > 255)
        fail(at, "protocol number " + std::to_string(v) + " > 255");
      return conj(linktype(ETHERTYPE_IP, at), ipProto(v));
    case Proto::IP6: {
      if (v > 255)
        fail(at, "protocol number " + std::to_string(v) + " > 255");
      // The next header, or after a fragment header.
      PredP fragment = conj(ip6Proto(44), cmp(net() + 40, 1, v));
      return conj(linktype(ETHERTYPE_IPV6, at),
                  disj(ip6Proto(v), fragment));
    }
    default:
      fail(at, std::string("'") + protoName(p) +
                   " proto' is not supported");
    }
  }

  /// A protocol name alone (gen_proto_abbrev).
  PredP abbreviation(Proto p, antlr4::ParserRuleContext *at) {
    switch (p) {
    case Proto::TCP:
    case Proto::UDP:
    case Proto::SCTP:
    case Proto::AH:
    case Proto::ESP:
    case Proto::PIM:
      return proto(*ipProtocolOf(p), Proto::Default, at);
    case Proto::ICMP:
    case Proto::IGMP:
    case Proto::IGRP:
    case Proto::VRRP:
    case Proto::CARP:
      return proto(*ipProtocolOf(p), Proto::IP, at);
    case Proto::ICMP6:
      return proto(58, Proto::IP6, at);
    case Proto::IP:
      return linktype(ETHERTYPE_IP, at);
    case Proto::IP6:
      return linktype(ETHERTYPE_IPV6, at);
    case Proto::ARP:
      return linktype(ETHERTYPE_ARP, at);
    case Proto::RARP:
      return linktype(ETHERTYPE_REVARP, at);
    default:
      fail(at, std::string("'") + protoName(p) +
                   "' cannot be used as an abbreviation");
    }
  }

  /// gen_hostop: the address at `srcOff`/`dstOff` (from the network header).
  PredP hostop(uint32_t addr, uint32_t mask, Dir dir, uint32_t srcOff,
               uint32_t dstOff) {
    switch (dir) {
    case Dir::Src:
      return cmp(net() + srcOff, 4, addr, mask);
    case Dir::Dst:
      return cmp(net() + dstOff, 4, addr, mask);
    case Dir::And:
      return conj(hostop(addr, mask, Dir::Src, srcOff, dstOff),
                  hostop(addr, mask, Dir::Dst, srcOff, dstOff));
    case Dir::Default:
    case Dir::Or:
      return disj(hostop(addr, mask, Dir::Src, srcOff, dstOff),
                  hostop(addr, mask, Dir::Dst, srcOff, dstOff));
    }
    return boolean(false);
  }

  /// gen_host for IPv4 addresses.
  PredP host(uint32_t addr, uint32_t mask, Proto p, Dir dir, const char *what,
             antlr4::ParserRuleContext *at) {
    switch (p) {
    case Proto::Default: {
      if (labelDepth > 0) // only IPv4 under MPLS labels
        return host(addr, mask, Proto::IP, dir, what, at);
      PredP b = disj(host(addr, mask, Proto::IP, dir, what, at),
                     host(addr, mask, Proto::ARP, dir, what, at));
      return disj(b, host(addr, mask, Proto::RARP, dir, what, at));
    }
    case Proto::IP:
      return conj(linktype(ETHERTYPE_IP, at),
                  hostop(addr, mask, dir, 12, 16));
    case Proto::ARP:
      return conj(linktype(ETHERTYPE_ARP, at),
                  hostop(addr, mask, dir, 14, 24));
    case Proto::RARP:
      return conj(linktype(ETHERTYPE_REVARP, at),
                  hostop(addr, mask, dir, 14, 24));
    default:
      fail(at, std::string("'") + protoName(p) + "' modifier applied to " +
                   what);
    }
  }

  /// gen_host6: 16 bytes at 8 (source) or 24 (destination) of the IPv6
  /// header, a word at a time.
  PredP host6(const uint8_t addr[16], const uint8_t mask[16], Proto p,
              Dir dir, antlr4::ParserRuleContext *at) {
    if (p != Proto::Default && p != Proto::IP6)
      fail(at, std::string("'") + protoName(p) +
                   "' modifier applied to an IPv6 address");
    std::function<PredP(Dir)> op = [&](Dir d) -> PredP {
      if (d == Dir::And)
        return conj(op(Dir::Src), op(Dir::Dst));
      if (d == Dir::Default || d == Dir::Or)
        return disj(op(Dir::Src), op(Dir::Dst));
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
  PredP ehost(const uint8_t mac[6], Dir dir) {
    if (dir == Dir::And)
      return conj(ehost(mac, Dir::Src), ehost(mac, Dir::Dst));
    if (dir == Dir::Default || dir == Dir::Or)
      return disj(ehost(mac, Dir::Src), ehost(mac, Dir::Dst));
    uint32_t off = dir == Dir::Src ? 6 : 0;
    uint32_t tail = uint32_t(mac[2]) << 24 | uint32_t(mac[3]) << 16 |
                    uint32_t(mac[4]) << 8 | mac[5];
    uint32_t head = uint32_t(mac[0]) << 8 | mac[1];
    return conj(cmp(off + 2, 4, tail), cmp(off, 2, head));
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
  PredP portDir(uint32_t lo, uint32_t hi, Dir dir, bool ipv6) {
    switch (dir) {
    case Dir::Src:
      return portAtom(0, lo, hi, ipv6);
    case Dir::Dst:
      return portAtom(2, lo, hi, ipv6);
    case Dir::And:
      return conj(portAtom(0, lo, hi, ipv6), portAtom(2, lo, hi, ipv6));
    default:
      return disj(portAtom(0, lo, hi, ipv6), portAtom(2, lo, hi, ipv6));
    }
  }
  /// gen_portop(6): one transport protocol.
  PredP portOp(uint32_t lo, uint32_t hi, uint32_t ipproto, Dir dir,
               bool ipv6) {
    if (ipv6)
      return conj(ip6Proto(ipproto), portDir(lo, hi, dir, true));
    return conj(conj(ipProto(ipproto), ipFirstFragment()),
                portDir(lo, hi, dir, false));
  }
  /// gen_port(6) for `proto` (TCP, UDP, SCTP or all three).
  PredP portFamily(uint32_t lo, uint32_t hi, Proto p, Dir dir, bool ipv6,
                   antlr4::ParserRuleContext *at) {
    PredP b;
    if (p == Proto::Default) {
      // libpcap: (tcp or udp), then sctp or that.
      PredP tcpUdp = disj(portOp(lo, hi, 6, dir, ipv6),
                          portOp(lo, hi, 17, dir, ipv6));
      b = disj(portOp(lo, hi, 132, dir, ipv6), tcpUdp);
    } else {
      b = portOp(lo, hi, *ipProtocolOf(p), dir, ipv6);
    }
    return conj(linktype(ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP, at), b);
  }
  PredP port(uint32_t lo, uint32_t hi, Proto p, Dir dir, bool range,
             antlr4::ParserRuleContext *at) {
    if (p != Proto::Default && p != Proto::TCP && p != Proto::UDP &&
        p != Proto::SCTP)
      fail(at, std::string("illegal qualifier of '") +
                   (range ? "portrange" : "port") + "'");
    if (lo > 65535 || hi > 65535)
      fail(at, "illegal port number " + std::to_string(std::max(lo, hi)) +
                   " > 65535");
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
      fail(tok, "'" + text + "' is not a valid IPv4 address");
    v = v << 8 | n;
  }
  return {v, static_cast<unsigned>(8 * parts.size())};
}

ValP simplify(const ValP &v);

class Walker {
public:
  explicit Walker(Generator &gen) : gen(gen) {}

  PredP program(P::ProgramContext *ctx) {
    if (!ctx->expr())
      return boolean(true); // the empty expression accepts everything
    return expr(ctx->expr(), Qual()).first;
  }

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
    return llvm::StringSwitch<Proto>(ctx->getText())
        .Cases("link", "ether", Proto::Link)
        .Case("ip", Proto::IP).Case("ip6", Proto::IP6)
        .Case("arp", Proto::ARP).Case("rarp", Proto::RARP)
        .Case("tcp", Proto::TCP).Case("udp", Proto::UDP)
        .Case("icmp", Proto::ICMP).Case("icmp6", Proto::ICMP6)
        .Case("igmp", Proto::IGMP).Case("sctp", Proto::SCTP)
        .Case("ah", Proto::AH).Case("esp", Proto::ESP)
        .Case("pim", Proto::PIM).Case("vrrp", Proto::VRRP)
        .Case("igrp", Proto::IGRP).Case("carp", Proto::CARP)
        .Default(Proto::Default);
  }

  Qual head(P::HeadContext *ctx) {
    Qual q;
    q.valid = true;
    auto proto = [&](P::PnameContext *p) {
      if (p)
        q.proto = pname(p);
    };
    auto dqual = [&](P::DqualContext *d) {
      if (!d)
        return;
      bool src = d->SRC() != nullptr, dst = d->DST() != nullptr;
      if (src && dst)
        q.dir = d->AND() ? Dir::And : Dir::Or;
      else
        q.dir = src ? Dir::Src : Dir::Dst;
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
      proto(h->pname());
      dqual(h->dqual());
      aqual(h->aqual());
    } else if (auto *h = dynamic_cast<P::HeadAddressContext *>(ctx)) {
      proto(h->pname());
      aqual(h->aqual());
    } else if (auto *h = dynamic_cast<P::HeadProtoContext *>(ctx)) {
      proto(h->pname());
      q.addr = Addr::Proto;
    } else if (dynamic_cast<P::HeadProtochainContext *>(ctx)) {
      fail(ctx, "'protochain' is not supported");
    } else if (auto *h = dynamic_cast<P::HeadCastContext *>(ctx)) {
      fail(ctx, "'broadcast' and 'multicast' are not supported");
      (void)h;
    } else {
      fail(ctx, "'gateway' is not supported (it needs host name lookups)");
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
      return ncode(nullptr, parseNumber(n->NUM()), 32, q, ctx);
    if (auto *n = dynamic_cast<P::Ipv4Context *>(ctx)) {
      rejectNonAddress(q, "IPv4 address", ctx);
      auto [v, bits] = parseDotted(n->HID());
      return ncode(n->HID(), v, bits, q, ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv4PrefixContext *>(ctx)) {
      rejectNonAddress(q, "IPv4 address and prefix length", ctx);
      auto [v, bits] = parseDotted(n->HID());
      uint32_t len = parseNumber(n->NUM());
      if (len > 32)
        fail(n->NUM(), "mask length must be <= 32");
      uint32_t mask = len == 0 ? 0 : 0xFFFFFFFFu << (32 - len);
      return mcode(v << (32 - bits), mask, q, n->getText(), ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv4MaskContext *>(ctx)) {
      rejectNonAddress(q, "IPv4 address and netmask", ctx);
      auto [v, bits] = parseDotted(n->HID(0));
      auto [m, mbits] = parseDotted(n->HID(1));
      return mcode(v << (32 - bits), m << (32 - mbits), q, n->getText(), ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv6Context *>(ctx)) {
      rejectNonAddress(q, "IPv6 address", ctx);
      return mcode6(n->HID6()->getText(), 128, q, ctx);
    }
    if (auto *n = dynamic_cast<P::Ipv6PrefixContext *>(ctx)) {
      rejectNonAddress(q, "IPv6 address and prefix length", ctx);
      uint32_t len = parseNumber(n->NUM());
      if (len > 128)
        fail(n->NUM(), "mask length must be <= 128");
      return mcode6(n->HID6()->getText(), len, q, ctx);
    }
    if (auto *n = dynamic_cast<P::MacContext *>(ctx))
      return ecode(n->EID()->getText(), q, ctx);
    if (auto *n = dynamic_cast<P::NumRangeContext *>(ctx)) {
      if (q.addr != Addr::PortRange)
        fail(ctx, "'" + ctx->getText() +
                      "' is a port range: use it with 'portrange'");
      return gen.port(parseNumber(n->NUM(0)), parseNumber(n->NUM(1)),
                      q.proto, q.dir, /*range=*/true, ctx);
    }
    return scode(static_cast<P::NamedContext *>(ctx), q);
  }

  void rejectNonAddress(const Qual &q, const std::string &what,
                        antlr4::ParserRuleContext *at) {
    const char *qual = q.addr == Addr::Port        ? "port"
                       : q.addr == Addr::PortRange ? "portrange"
                       : q.addr == Addr::Proto     ? "proto"
                                                   : nullptr;
    if (qual)
      fail(at, std::string("'") + qual + "' qualifier applied to " + what);
  }

  /// gen_ncode: a number (or dotted address of `bits` bits).
  PredP ncode(antlr4::tree::TerminalNode *dotted, uint32_t v, unsigned bits,
              const Qual &q, antlr4::ParserRuleContext *at) {
    switch (q.addr) {
    case Addr::Default:
    case Addr::Host:
    case Addr::Net: {
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
      return gen.host(v, mask, q.proto, q.dir,
                      q.addr == Addr::Net ? "net" : "host", at);
    }
    case Addr::Port:
      return gen.port(v, v, q.proto, q.dir, false, at);
    case Addr::PortRange:
      return gen.port(v, v, q.proto, q.dir, true, at);
    case Addr::Proto:
      if (q.dir != Dir::Default)
        fail(at, "'src'/'dst' do not apply to 'proto'");
      return gen.proto(v, q.proto, at);
    default:
      fail(at, "unsupported qualifier for '" + at->getText() + "'");
    }
  }

  /// gen_mcode: a network with a mask.
  PredP mcode(uint32_t v, uint32_t mask, const Qual &q,
              const std::string &text, antlr4::ParserRuleContext *at) {
    if (v & ~mask)
      fail(at, "non-network bits set in \"" + text + "\"");
    if (q.addr != Addr::Net && q.addr != Addr::Default)
      fail(at, "mask syntax for networks only");
    return gen.host(v, mask, q.proto, q.dir, "net", at);
  }

  PredP mcode6(const std::string &text, uint32_t len, const Qual &q,
               antlr4::ParserRuleContext *at) {
    uint8_t addr[16], mask[16] = {0};
    if (inet_pton(AF_INET6, text.c_str(), addr) != 1)
      fail(at, "'" + text + "' is not a valid IPv6 address");
    for (uint32_t i = 0; i < 16; ++i)
      mask[i] = len >= 8 * (i + 1) ? 0xFF
                : len <= 8 * i     ? 0
                                   : uint8_t(0xFF << (8 - (len - 8 * i)));
    for (unsigned i = 0; i < 16; ++i)
      if (addr[i] & ~mask[i])
        fail(at, "non-network bits set in \"" + at->getText() + "\"");
    if (q.addr != Addr::Default && q.addr != Addr::Host &&
        q.addr != Addr::Net)
      fail(at, "an IPv6 address needs 'host' or 'net'");
    if (len < 128 && q.addr == Addr::Host)
      fail(at, "mask syntax for networks only");
    return gen.host6(addr, mask, q.proto, q.dir, at);
  }

  /// gen_ecode: an Ethernet address.
  PredP ecode(const std::string &text, const Qual &q,
              antlr4::ParserRuleContext *at) {
    if ((q.addr != Addr::Host && q.addr != Addr::Default) ||
        q.proto != Proto::Link)
      fail(at, "ethernet address used in non-ether expression");
    uint8_t mac[6];
    std::string hex;
    for (char c : text)
      if (llvm::isHexDigit(c))
        hex += c;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(text).split(parts, text.find(':') != std::string::npos
                                           ? ':'
                                       : text.find('-') != std::string::npos
                                           ? '-'
                                           : '.');
    if (parts.size() == 6) {
      for (unsigned i = 0; i < 6; ++i)
        mac[i] = static_cast<uint8_t>(llvm::hexFromNibbles(
            parts[i].size() == 2 ? parts[i][0] : '0', parts[i].back()));
    } else {
      for (unsigned i = 0; i < 6; ++i)
        mac[i] = static_cast<uint8_t>(
            llvm::hexFromNibbles(hex[2 * i], hex[2 * i + 1]));
    }
    return gen.ehost(mac, q.dir);
  }

  /// gen_scode: a name (a named constant, a port or protocol name).
  PredP scode(P::NamedContext *ctx, const Qual &q) {
    std::string name = ctx->name()->getText();
    if (std::optional<uint32_t> k = namedConstant(name))
      return ncode(nullptr, *k, 32, q, ctx);
    if (q.addr == Addr::Port || q.addr == Addr::PortRange) {
      const char *transport = q.proto == Proto::UDP ? "udp" : "tcp";
      struct servent *s = getservbyname(name.c_str(), transport);
      if (!s && q.proto == Proto::Default)
        s = getservbyname(name.c_str(), "udp");
      if (!s)
        fail(ctx, "unknown port '" + name + "'");
      uint32_t port = ntohs(static_cast<uint16_t>(s->s_port));
      return gen.port(port, port, q.proto, q.dir,
                      q.addr == Addr::PortRange, ctx);
    }
    if (q.addr == Addr::Proto) {
      uint32_t v;
      if (q.proto == Proto::Link) {
        std::optional<uint32_t> type =
            llvm::StringSwitch<std::optional<uint32_t>>(name)
                .Case("ip", ETHERTYPE_IP).Case("ip6", ETHERTYPE_IPV6)
                .Case("arp", ETHERTYPE_ARP).Case("rarp", ETHERTYPE_REVARP)
                .Default(std::nullopt);
        if (!type)
          fail(ctx, "unknown ether proto '" + name + "'");
        v = *type;
      } else {
        struct protoent *p = getprotobyname(name.c_str());
        std::optional<uint32_t> known =
            llvm::StringSwitch<std::optional<uint32_t>>(name)
                .Case("icmp", 1).Case("igmp", 2).Case("tcp", 6)
                .Case("udp", 17).Case("icmp6", 58).Case("sctp", 132)
                .Case("ah", 51).Case("esp", 50).Case("pim", 103)
                .Case("vrrp", 112).Case("igrp", 9)
                .Default(std::nullopt);
        if (known)
          v = *known;
        else if (p)
          v = static_cast<uint32_t>(p->p_proto);
        else
          fail(ctx, "unknown ip proto '" + name + "'");
      }
      return gen.proto(v, q.proto, ctx);
    }
    fail(ctx, "'" + name +
                  "' looks like a host or network name; netvm does not look "
                  "names up: write the address");
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
    // libpcap: the checks of the right operand, then of the left one, then
    // the comparison.
    PredP b = conj(a0.checks, makeRelation(rel, a0.value, a1.value));
    return conj(a1.checks, b);
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
        fail(ctx, "unknown name '" + c->WORD()->getText() +
                      "' in an arithmetic expression");
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
      // libpcap refuses a divisor that folds to 0.
      ValP divisor = simplify(a1.value);
      if ((op == '/' || op == '%') && divisor->kind == Val::Const &&
          divisor->k == 0)
        fail(r, op == '/' ? "division by zero" : "modulus by zero");
      if ((op == '<' || op == '>') && a1.value->kind == Val::Const &&
          a1.value->k > 31)
        fail(r, "shift by more than 31 bits");
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
      break;
    case Proto::IP:
    case Proto::ARP:
    case Proto::RARP:
    case Proto::IP6:
      checks = gen.abbreviation(p, ctx);
      v = load(gen.net(), size, index.value);
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
      v = load(gen.net(), size, index.value, /*ipHeader=*/true, gen.net());
      checks = conj(conj(gen.linktype(ETHERTYPE_IP, ctx),
                         gen.ipProto(*ipProtocolOf(p))),
                    gen.ipFirstFragment());
      break;
    case Proto::ICMP6:
      v = load(gen.net() + 40, size, index.value);
      checks = conj(gen.linktype(ETHERTYPE_IPV6, ctx), gen.ip6Proto(58));
      break;
    default:
      fail(ctx->pname(), std::string("'") + protoName(p) +
                             "' does not support the index operation");
    }
    return {v, conj(index.checks, checks)};
  }

  PredP other(P::OtherContext *ctx) {
    auto lenRel = [](arith::CmpIPredicate rel, uint32_t n) {
      auto v = std::make_shared<Val>();
      v->kind = Val::WireLen;
      return makeRelation(rel, v, constant(n));
    };
    if (auto *l = dynamic_cast<P::LessContext *>(ctx))
      return lenRel(arith::CmpIPredicate::ule, parseNumber(l->NUM()));
    if (auto *g = dynamic_cast<P::GreaterContext *>(ctx))
      return lenRel(arith::CmpIPredicate::uge, parseNumber(g->NUM()));
    if (auto *v = dynamic_cast<P::VlanContext *>(ctx))
      return gen.vlan(v->NUM() ? std::optional<uint32_t>(parseNumber(v->NUM()))
                               : std::nullopt,
                      ctx);
    if (auto *m = dynamic_cast<P::MplsContext *>(ctx))
      return gen.mpls(m->NUM() ? std::optional<uint32_t>(parseNumber(m->NUM()))
                               : std::nullopt,
                      ctx);
    fail(ctx, "'inbound' and 'outbound' need a live capture's direction, "
              "which packets from files do not have");
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

/// A BPF-style test: A (jeq|jgt|jge) B.
struct Test {
  enum Code { JEQ, JGT, JGE } code;
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
    ValP a = simplify(p->lhs), b = simplify(p->rhs);
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
    // A test of two constants is decided now.
    if (a->kind == Val::Const && b->kind == Val::Const) {
      bool r = code == Test::JEQ   ? a->k == b->k
               : code == Test::JGT ? a->k > b->k
                                   : a->k >= b->k;
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
    if (t == f)
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
    Value lhs = val(t.lhs), rhs = val(t.rhs);
    arith::CmpIPredicate rel = t.code == Test::JEQ   ? arith::CmpIPredicate::eq
                               : t.code == Test::JGT ? arith::CmpIPredicate::ugt
                                                     : arith::CmpIPredicate::uge;
    Value c = arith::CmpIOp::create(b, loc, rel, lhs, rhs);
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
  Value val(const ValP &v) {
    Type i32 = b.getI32Type();
    switch (v->kind) {
    case Val::Const:
      return c32(v->k);
    case Val::WireLen:
      return WireLengthOp::create(b, loc, i32);
    case Val::Neg:
      return arith::SubIOp::create(b, loc, c32(0), val(v->a));
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

std::string withCaret(llvm::StringRef expression, const FilterError &e) {
  std::string out = e.message + "\n  " + expression.str() + "\n  ";
  out += std::string(std::min(e.offset, expression.size()), ' ');
  out += "^";
  return out;
}

} // namespace

OwningOpRef<ModuleOp>
netvm::pcapfilter::compile(MLIRContext &context, llvm::StringRef expression,
                           const CompileOptions &options, std::string &error) {
  context.loadDialect<NetVMDialect, arith::ArithDialect,
                      cf::ControlFlowDialect>();
  std::string text = expression.str();
  antlr4::ANTLRInputStream input(text);
  netvm_pcapfilter::PcapFilterLexer lexer(&input);
  ErrorListener listener;
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);
  antlr4::CommonTokenStream tokens(&lexer);
  P parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  P::ProgramContext *tree = parser.program();
  // Lexical errors first: they come first in the text.
  for (antlr4::Token *t : tokens.getTokens())
    if (t->getType() == P::ERROR_CHAR) {
      error = withCaret(expression,
                        FilterError{t->getStartIndex(),
                                    "syntax error: unexpected character '" +
                                        t->getText() + "'"});
      return nullptr;
    }
  if (listener.error) {
    error = withCaret(expression, *listener.error);
    return nullptr;
  }

  PredP predicate;
  try {
    Generator gen;
    Walker walker(gen);
    predicate = walker.program(tree);
  } catch (const FilterError &e) {
    error = withCaret(expression, e);
    return nullptr;
  }

  Location loc = FileLineColLoc::get(&context, options.sourceName, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b(&context);
  b.setInsertionPointToEnd(module->getBody());
  auto app = ApplicationOp::create(b, loc, options.appName);
  b.setInsertionPointToEnd(app.getBodyBlock());
  SourceOp::create(b, loc, "in");
  SinkOp::create(b, loc, "match");
  auto pe = PEOp::create(b, loc, "filter");
  b.setInsertionPointToEnd(pe.getBodyBlock());
  PortOp::create(b, loc, "in", PortKind::PushInput);
  PortOp::create(b, loc, "match", PortKind::PushOutput);
  auto handler = HandlerOp::create(b, loc, HandlerKind::Push);
  Region &body = handler.getBody();
  Block *entry = &body.front();
  Block *accept = new Block(), *reject = new Block();
  body.push_back(accept);
  body.push_back(reject);
  b.setInsertionPointToEnd(accept);
  SendOp::create(b, loc, "match");
  b.setInsertionPointToEnd(reject);
  DropOp::create(b, loc);
  b.setInsertionPointToEnd(entry);
  Dag dag;
  int first = dag.compile(predicate, Dag::kAccept, Dag::kReject);
  int root = dag.optimize(first);
  CodeGen codegen(b, loc, body, dag, accept, reject);
  // libpcap's opt_root: when the first test's two branches end up at the
  // same place, the test goes but its loads stay in front of the next one
  // (unless the whole filter became a constant).
  if (first >= 2 && root >= 2 &&
      dag.nodes[root].test != dag.nodes[first].test)
    codegen.prologue(dag.nodes[first].test);
  codegen.emit(root);

  b.setInsertionPointToEnd(app.getBodyBlock());
  auto ref = [&](StringRef peName, StringRef port) {
    return SymbolRefAttr::get(&context, peName,
                              {FlatSymbolRefAttr::get(&context, port)});
  };
  ConnectOp::create(b, loc, FlatSymbolRefAttr::get(&context, "in"),
                    ref("filter", "in"));
  ConnectOp::create(b, loc, ref("filter", "match"),
                    FlatSymbolRefAttr::get(&context, "match"));
  if (failed(verify(*module))) {
    error = "internal error: the generated code does not verify";
    return nullptr;
  }
  return module;
}
