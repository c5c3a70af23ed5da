//===- NetworkLayer.cpp - pcap-filter primitives of the network layer -----===//
//
// gencode.c for the network layer: `proto` and the protocol
// abbreviations (gen_proto, gen_proto_abbrev), IPv4, IPv6, ARP and DECnet
// hosts and networks (gen_host, gen_host6, gen_dnhostop), and
// `protochain`.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

PredP Generator::proto(uint32_t v, Proto p, Dir dir,
                       antlr4::ParserRuleContext *at) {
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
    return conj(linktype(ETHERTYPE_IPV6, at), disj(ip6Proto(v), fragment));
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
    fail(at,
         std::string(protoName(p)) + " does not encapsulate another protocol");
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

PredP Generator::abbreviation(Proto p, antlr4::ParserRuleContext *at) {
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
  case Proto::IP:
    return linktype(ETHERTYPE_IP, at);
  case Proto::IP6:
    return linktype(ETHERTYPE_IPV6, at);
  case Proto::ARP:
    return linktype(ETHERTYPE_ARP, at);
  case Proto::RARP:
    return linktype(ETHERTYPE_REVARP, at);
  case Proto::ATALK:
    return linktype(ETHERTYPE_ATALK, at);
  case Proto::AARP:
    return linktype(ETHERTYPE_AARP, at);
  case Proto::DECNET:
    return linktype(ETHERTYPE_DN, at);
  case Proto::SCA:
    return linktype(ETHERTYPE_SCA, at);
  case Proto::LAT:
    return linktype(ETHERTYPE_LAT, at);
  case Proto::MOPDL:
    return linktype(ETHERTYPE_MOPDL, at);
  case Proto::MOPRC:
    return linktype(ETHERTYPE_MOPRC, at);
  case Proto::ISO:
    return linktype(LLCSAP_ISONS, at);
  case Proto::ESIS:
    return proto(ISO9542_ESIS, Proto::ISO, Dir::Default, at);
  case Proto::ISIS:
    return proto(ISO10589_ISIS, Proto::ISO, Dir::Default, at);
  case Proto::CLNP:
    return proto(ISO8473_CLNP, Proto::ISO, Dir::Default, at);
  // IS-IS PDU types: LAN hellos 15 (L1) and 16 (L2), point-to-point
  // hello 17, LSPs 18 and 20, CSNPs 24 and 25, PSNPs 26 and 27.
  case Proto::ISIS_L1:
    return isis({15, 17, 18, 24, 26});
  case Proto::ISIS_L2:
    return isis({16, 17, 20, 25, 27});
  case Proto::ISIS_IIH:
    return isis({15, 16, 17});
  case Proto::ISIS_LSP:
    return isis({18, 20});
  case Proto::ISIS_SNP:
    return isis({24, 25, 26, 27});
  case Proto::ISIS_CSNP:
    return isis({24, 25});
  case Proto::ISIS_PSNP:
    return isis({26, 27});
  case Proto::STP:
    return linktype(LLCSAP_8021D, at);
  case Proto::IPX:
    return linktype(LLCSAP_IPX, at);
  case Proto::NETBEUI:
    return linktype(LLCSAP_NETBEUI, at);
  case Proto::Link:
    fail(at, "link layer applied in wrong context");
  case Proto::RADIO:
    fail(at, "'radio' is not a valid protocol type");
  case Proto::Default:
    break;
  }
  llvm_unreachable("no protocol");
}

PredP Generator::hostop(uint32_t addr, uint32_t mask, Dir dir, uint32_t srcOff,
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

PredP Generator::dnhost(uint32_t addr, Dir dir, antlr4::ParserRuleContext *at) {
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
  Off base = net() + 2;
  PredP b = conj(cmp(base, 2, ntohs(0x0681), ntohs(0x07FF)),
                 cmp(base + 1 + longOff, 2, a));
  b = disj(conj(cmp(base, 1, 0x06, 0x07), cmp(base + longOff, 2, a)), b);
  b = disj(conj(cmp(base, 2, ntohs(0x0281), ntohs(0x07FF)),
                cmp(base + 1 + shortOff, 2, a)),
           b);
  b = disj(conj(cmp(base, 1, 0x02, 0x07), cmp(base + shortOff, 2, a)), b);
  return conj(linktype(ETHERTYPE_DN, at), b);
}

PredP Generator::host(uint32_t addr, uint32_t mask, Proto p, Dir dir,
                      const char *what, antlr4::ParserRuleContext *at) {
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
    fail(at, std::string("'") + protoName(p) + "' modifier applied to " + what);
  }
}

PredP Generator::host6(const uint8_t addr[16], const uint8_t mask[16], Proto p,
                       Dir dir, const char *what,
                       antlr4::ParserRuleContext *at) {
  if (p == Proto::Link)
    fail(at, std::string("link-layer modifier applied to ip6 ") + what);
  if (p != Proto::Default && p != Proto::IP6)
    fail(at,
         std::string("'") + protoName(p) + "' modifier applied to ip6 " + what);
  std::function<PredP(Dir)> op = [&](Dir d) -> PredP {
    if (d == Dir::And)
      return conj(op(Dir::Src), op(Dir::Dst));
    if (d == Dir::Default || d == Dir::Or)
      return disj(op(Dir::Src), op(Dir::Dst));
    if (isWlanDir(d))
      fail(at, wlanDirError(d, false));
    Off base = net() + (d == Dir::Src ? 8 : 24);
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

PredP Generator::protochain(uint32_t v, Proto p,
                            antlr4::ParserRuleContext *at) {
  if (p == Proto::Default)
    return disj(protochain(v, Proto::IP, at), protochain(v, Proto::IP6, at));
  if (p != Proto::IP && p != Proto::IP6)
    fail(at, "bad protocol applied for 'protochain'");
  // libpcap's loop starts at a constant offset.
  if (net().isVariable())
    fail(at, "'protochain' not supported with variable length headers");
  noOptimize = true;
  bool ipv6 = p == Proto::IP6;
  PredP type = linktype(ipv6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP, at);
  auto chain = std::make_shared<Val>();
  chain->kind = Val::Chain;
  chain->k = net().k;
  chain->ipv6 = ipv6;
  return conj(type, makeRelation(arith::CmpIPredicate::eq, chain, constant(v)));
}

} // namespace netvm::pcapfilter::detail
