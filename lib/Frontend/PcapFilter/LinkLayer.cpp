//===- LinkLayer.cpp - pcap-filter primitives of the link layer -----------===//
//
// gencode.c for Ethernet links: the link type (EtherTypes and 802.2
// LLC/SNAP), `vlan` and `mpls` (which move the offsets of every later
// primitive), Ethernet addresses, `broadcast` and `multicast`, and `llc`.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

PredP Generator::ieee8023() {
  return negate(
      cmp(offLinkType, 2, ETHERMTU, 0xFFFFFFFFu, arith::CmpIPredicate::ugt));
}

PredP Generator::snap(uint32_t orgcode, uint32_t type) {
  return bytesEqual(offLinkPayload,
                    {LLCSAP_SNAP, LLCSAP_SNAP, 0x03, uint8_t(orgcode >> 16),
                     uint8_t(orgcode >> 8), uint8_t(orgcode),
                     uint8_t(type >> 8), uint8_t(type)});
}

PredP Generator::linktype(uint32_t type, antlr4::ParserRuleContext *at) {
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
    return disj(cmp(offLinkType, 2, ETHERTYPE_IPX), conj(ieee8023(), frames));
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

PredP Generator::vlan(std::optional<uint32_t> id,
                      antlr4::ParserRuleContext *at) {
  if (labelDepth > 0)
    fail(at, "no VLAN match after MPLS");
  PredP b = disj(disj(linktype(0x8100, at), linktype(0x88a8, at)),
                 linktype(0x9100, at));
  if (id) {
    if (*id > 0x0FFF)
      fail(at,
           "VLAN tag " + std::to_string(*id) + " greater than maximum 4095");
    b = conj(b, cmp(net(), 2, *id, 0x0FFF));
  }
  offLinkPayload += 4;
  offLinkType += 4;
  return b;
}

PredP Generator::mpls(std::optional<uint32_t> label,
                      antlr4::ParserRuleContext *at) {
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

PredP Generator::ehost(const uint8_t mac[6], Dir dir,
                       antlr4::ParserRuleContext *at) {
  if (isWlanDir(dir))
    fail(at, wlanDirError(dir, true));
  if (dir == Dir::And)
    return conj(ehost(mac, Dir::Src, at), ehost(mac, Dir::Dst, at));
  if (dir == Dir::Default || dir == Dir::Or)
    return disj(ehost(mac, Dir::Src, at), ehost(mac, Dir::Dst, at));
  return bytesEqual(dir == Dir::Src ? 6 : 0,
                    std::vector<uint8_t>(mac, mac + 6));
}

PredP Generator::broadcast(Proto p, antlr4::ParserRuleContext *at) {
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

PredP Generator::multicast(Proto p, antlr4::ParserRuleContext *at) {
  switch (p) {
  case Proto::Default:
  case Proto::Link:
    // ether[0] & 1 != 0
    return makeRelation(arith::CmpIPredicate::ne,
                        binary('&', load(0, 1), constant(1)), constant(0));
  case Proto::IP:
    return conj(linktype(ETHERTYPE_IP, at), cmp(net() + 16, 1, 224, 0xFFFFFFFFu,
                                                arith::CmpIPredicate::uge));
  case Proto::IP6:
    return conj(linktype(ETHERTYPE_IPV6, at), cmp(net() + 24, 1, 255));
  default:
    fail(at, "link-layer multicast filters supported only on "
             "ethernet/FDDI/token ring/ARCNET/802.11/ATM LANE/Fibre "
             "Channel");
  }
}

PredP Generator::llc() {
  return conj(ieee8023(), negate(cmp(offLinkPayload, 2, 0xFFFF)));
}

PredP Generator::llcControl(uint32_t value, uint32_t mask) {
  return conj(llc(), cmp(offLinkPayload + 2, 1, value, mask));
}

} // namespace netvm::pcapfilter::detail
