//===- TransportLayer.cpp - pcap-filter transport-layer primitives --------===//
//
// gencode.c for the transport layer: `port` and `portrange` over TCP, UDP
// and SCTP, in IPv4 (first fragments only) and IPv6 (gen_port,
// gen_portrange and their atoms).
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

PredP Generator::cmpTransport(uint32_t offset, unsigned size, uint32_t value,
                              arith::CmpIPredicate rel, uint32_t mask) {
  ValP v = load(net() + offset, size, nullptr, /*ipHeader=*/true, net());
  if (mask != 0xFFFFFFFFu)
    v = binary('&', v, constant(mask));
  return makeRelation(rel, v, constant(value));
}

PredP Generator::portAtom(uint32_t off, uint32_t lo, uint32_t hi, bool ipv6) {
  auto at = [&](arith::CmpIPredicate rel, uint32_t v) {
    return ipv6 ? cmp(net() + 40 + off, 2, v, 0xFFFFFFFFu, rel)
                : cmpTransport(off, 2, v, rel);
  };
  if (lo == hi)
    return at(arith::CmpIPredicate::eq, lo);
  return conj(at(arith::CmpIPredicate::uge, lo),
              at(arith::CmpIPredicate::ule, hi));
}

PredP Generator::portDir(uint32_t lo, uint32_t hi, Dir dir, bool ipv6,
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

PredP Generator::portOp(uint32_t lo, uint32_t hi, uint32_t ipproto, Dir dir,
                        bool ipv6, antlr4::ParserRuleContext *at) {
  if (ipv6)
    return conj(ip6Proto(ipproto), portDir(lo, hi, dir, true, at));
  return conj(conj(ipProto(ipproto), ipFirstFragment()),
              portDir(lo, hi, dir, false, at));
}

PredP Generator::portFamily(uint32_t lo, uint32_t hi, Proto p, Dir dir,
                            bool ipv6, antlr4::ParserRuleContext *at) {
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

PredP Generator::port(uint32_t lo, uint32_t hi, Proto p, Dir dir,
                      antlr4::ParserRuleContext *at) {
  if (lo > hi)
    std::swap(lo, hi);
  return disj(portFamily(lo, hi, p, dir, false, at),
              portFamily(lo, hi, p, dir, true, at));
}

} // namespace netvm::pcapfilter::detail
