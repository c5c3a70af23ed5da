//===- LinkLayer.cpp - pcap-filter primitives of the link layer -----------===//
//
// gencode.c's link layer: the link types netvm compiles for and their
// offsets (init_linktype), the link-layer type (EtherTypes and 802.2
// LLC/SNAP on Ethernet, and what Linux cooked captures, raw IP, loopback
// and PPP carry instead), `vlan`, `mpls` and `pppoes` (which move the
// offsets of every later primitive), Ethernet addresses, `broadcast` and
// `multicast`, `llc`, and `inbound`/`outbound`.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

#include <pcap/pcap.h>

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

std::string linkDescription(int link) {
  // libpcap's own names, so a refusal reads as tcpdump's would (FDDI, not
  // a number) for every link type libpcap knows.
  return pcap_datalink_val_to_description_or_dlt(link);
}

bool Generator::setLinkType(int dlt) {
  // offLinkType, offLinkPayload, offNetwork, offNetworkNoSnap.
  uint32_t offsets[4];
  switch (dlt) {
  case LINK_EN10MB:
    offsets[0] = 12, offsets[1] = 14, offsets[2] = 0, offsets[3] = 3;
    break;
  case LINK_NULL:
  case LINK_LOOP:
    offsets[0] = 0, offsets[1] = 4, offsets[2] = 0, offsets[3] = 0;
    break;
  case LINK_RAW:
  case LINK_IPV4:
  case LINK_IPV6:
    offsets[0] = kNoLinkType, offsets[1] = 0, offsets[2] = 0, offsets[3] = 0;
    break;
  case LINK_LINUX_SLL:
    offsets[0] = 14, offsets[1] = 16, offsets[2] = 0, offsets[3] = 0;
    break;
  case LINK_LINUX_SLL2:
    offsets[0] = 0, offsets[1] = 20, offsets[2] = 0, offsets[3] = 0;
    break;
  default:
    return false;
  }
  link = dlt;
  offLinkHeader = 0;
  offLinkType = offsets[0];
  offLinkPayload = offsets[1];
  offNetwork = offsets[2];
  offNetworkNoSnap = offsets[3];
  return true;
}

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
  switch (link) {
  case LINK_EN10MB:
    break;
  case LINK_LINUX_SLL:
    return sllLinktype(type);
  case LINK_RAW:
    // No type field: the IP version.
    if (type == ETHERTYPE_IP)
      return cmp(offLinkHeader, 1, 0x40, 0xF0);
    if (type == ETHERTYPE_IPV6)
      return cmp(offLinkHeader, 1, 0x60, 0xF0);
    return boolean(false);
  case LINK_IPV4:
    return boolean(type == ETHERTYPE_IP);
  case LINK_IPV6:
    return boolean(type == ETHERTYPE_IPV6);
  case LINK_NULL:
  case LINK_LOOP: {
    // The address family in a word: BSD's numbers, all three of IPv6's
    // when reading a savefile. DLT_NULL's is in the capturing host's byte
    // order, which is this one's unless the file is swapped.
    auto family = [&](uint32_t af) {
      if (link == LINK_NULL) {
        if (swapped)
          af = __builtin_bswap32(af);
        af = htonl(af);
      }
      return cmp(offLinkHeader, 4, af);
    };
    if (type == ETHERTYPE_IP)
      return family(2);
    if (type == ETHERTYPE_IPV6)
      return disj(family(30), disj(family(24), family(28)));
    return boolean(false);
  }
  case LINK_PPP: {
    uint32_t ppp = type;
    switch (type) {
    case ETHERTYPE_IP:
      ppp = PPP_IP;
      break;
    case ETHERTYPE_IPV6:
      ppp = PPP_IPV6;
      break;
    case ETHERTYPE_DN:
      ppp = PPP_DECNET;
      break;
    case ETHERTYPE_ATALK:
      ppp = PPP_APPLE;
      break;
    case ETHERTYPE_NS:
      ppp = PPP_NS;
      break;
    case LLCSAP_ISONS:
      ppp = PPP_OSI;
      break;
    case LLCSAP_8021D:
      ppp = PPP_BRPDU;
      break;
    case LLCSAP_IPX:
      ppp = PPP_IPX;
      break;
    }
    return cmp(offLinkType, 2, ppp);
  }
  default:
    // Linux cooked v2, and any type with a type field: an EtherType.
    return cmp(offLinkType, 2, type);
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

PredP Generator::sllLinktype(uint32_t type) {
  PredP is8022 = cmp(offLinkType, 2, LINUX_SLL_P_802_2);
  switch (type) {
  case LLCSAP_ISONS:
  case LLCSAP_IP:
  case LLCSAP_NETBEUI:
    return conj(is8022, cmp(offLinkPayload, 2, type << 8 | type));
  case LLCSAP_IPX: {
    // Ethernet_II, Ethernet_802.3, or 802.2 with the IPX SAP or SNAP.
    PredP frames =
        disj(cmp(offLinkPayload, 1, LLCSAP_IPX), snap(0x000000, ETHERTYPE_IPX));
    frames = disj(cmp(offLinkType, 2, LINUX_SLL_P_802_3), conj(is8022, frames));
    return disj(cmp(offLinkType, 2, ETHERTYPE_IPX), frames);
  }
  case ETHERTYPE_ATALK:
  case ETHERTYPE_AARP: {
    PredP snapped =
        conj(is8022, type == ETHERTYPE_ATALK ? snap(0x080007, ETHERTYPE_ATALK)
                                             : snap(0x000000, ETHERTYPE_AARP));
    return disj(cmp(offLinkType, 2, type), snapped);
  }
  default:
    if (type <= ETHERMTU) // the DSAP
      return conj(is8022, cmp(offLinkPayload, 1, type));
    return cmp(offLinkType, 2, type);
  }
}

PredP Generator::vlan(std::optional<uint32_t> id,
                      antlr4::ParserRuleContext *at) {
  if (labelDepth > 0)
    fail(at, "no VLAN match after MPLS");
  if (!isEthernet())
    fail(at, "no VLAN support for " + linkDescription(link));
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
  PredP b;
  if (labelDepth > 0)
    b = negate(cmp(net() - 4 + 2, 1, 0x01, 0x01));
  else if (isEthernet())
    b = linktype(0x8847, at);
  else if (link == LINK_PPP)
    b = linktype(PPP_MPLS_UCAST, at);
  else
    fail(at, "no MPLS support for " + linkDescription(link));
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
  std::function<PredP(Dir)> op = [&](Dir d) -> PredP {
    if (d == Dir::And)
      return conj(op(Dir::Src), op(Dir::Dst));
    if (d == Dir::Default || d == Dir::Or)
      return disj(op(Dir::Src), op(Dir::Dst));
    return bytesEqual(offLinkHeader + (d == Dir::Src ? 6 : 0),
                      std::vector<uint8_t>(mac, mac + 6));
  };
  return conj(linkHeaderCheck(), op(dir));
}

PredP Generator::linkHeaderCheck() {
  // gen_geneve_ll_check: what Geneve carries has an Ethernet header when
  // the link-layer header and its payload start at different offsets.
  if (!geneveLink)
    return nullptr;
  return negate(makeRelation(arith::CmpIPredicate::eq, offLinkHeader.var,
                             offLinkPayload.var));
}

PredP Generator::pppoes(std::optional<uint32_t> id,
                        antlr4::ParserRuleContext *at) {
  PredP b = linktype(ETHERTYPE_PPPOES, at);
  if (id) {
    if (*id > 0xFFFF)
      fail(at, "PPPoE session number " + std::to_string(*id) +
                   " greater than maximum 65535");
    b = conj(b, cmp(offLinkPayload, 4, *id, 0xFFFF));
  }
  // The PPP packet after the 6-byte PPPoE header is the link layer now:
  // its protocol field, then the network layer.
  link = LINK_PPP;
  geneveLink = false;
  offLinkHeader = offLinkPayload + offNetwork + 6;
  offLinkType = offLinkHeader;
  offLinkPayload = offLinkHeader + 2;
  offNetwork = 0;
  offNetworkNoSnap = 0;
  return b;
}

PredP Generator::geneve(std::optional<uint32_t> vni,
                        antlr4::ParserRuleContext *at) {
  constexpr uint32_t kGenevePort = 6081, kTransparentEthernet = 0x6558;
  if (vni && *vni > 0xFFFFFF)
    fail(at, "Geneve VNI " + std::to_string(*vni) +
                 " greater than maximum 16777215");
  // gen_geneve_check: UDP to port 6081, version 0 (the top two bits of
  // the Geneve header), and the VNI in the top three bytes of its second
  // word; over IPv4, then over IPv6.
  auto check = [&](bool ipv6) {
    auto field = [&](uint32_t off, unsigned size, uint32_t v, uint32_t mask) {
      return ipv6 ? cmp(net() + 40 + off, size, v, mask)
                  : cmpTransport(off, size, v, arith::CmpIPredicate::eq, mask);
    };
    PredP b =
        portFamily(kGenevePort, kGenevePort, Proto::UDP, Dir::Dst, ipv6, at);
    b = conj(b, field(8, 1, 0, 0xC0));
    if (vni)
      b = conj(b, field(12, 4, *vni << 8, 0xFFFFFF00u));
    return b;
  };
  PredP b = disj(check(false), check(true));

  // gen_geneve_offsets, as values: where the Geneve header starts (past
  // the IPv4 header, or the 40 bytes of IPv6, and the UDP header), where
  // it ends (8 bytes and its options, counted in words in its first
  // byte), and its protocol type; libpcap keeps them in scratch registers
  // on the path where the check matched, netvm computes them from the
  // packet where they are used.
  Off n = net();
  auto plus = [](const ValP &var, uint32_t k) {
    return var ? binary('+', var, constant(k)) : constant(k);
  };
  ValP ipLength =
      binary('<', binary('&', load(n, 1), constant(0x0F)), constant(2));
  ValP start = select(linktype(ETHERTYPE_IP, at),
                      binary('+', ipLength, plus(n.var, n.k + 8)),
                      plus(n.var, n.k + 48));
  ValP options = binary(
      '*', binary('&', load(Off(start, 0), 1), constant(0x3F)), constant(4));
  ValP end = binary('+', binary('+', options, constant(8)), start);
  ValP type = load(Off(start, 2), 2);
  // The offsets' code loads the protocol type on the matching path, so a
  // packet too short for it is rejected there.
  b = conj(b, makeRelation(arith::CmpIPredicate::uge, type, constant(0)));

  // What follows is Ethernet (PUSH_LINKHDR): an Ethernet frame if the
  // protocol type says so, else a network-layer packet whose type is the
  // Geneve protocol type.
  PredP bridged = makeRelation(arith::CmpIPredicate::eq, type,
                               constant(kTransparentEthernet));
  link = LINK_EN10MB;
  offLinkHeader = Off(end, 0);
  offLinkType = Off(select(bridged, binary('+', end, constant(12)),
                           binary('+', start, constant(2))),
                    0);
  offLinkPayload = Off(select(bridged, binary('+', end, constant(14)), end), 0);
  offNetwork = 0;
  geneveLink = true;
  noOptimize = true;
  return b;
}

PredP Generator::direction(bool outbound, antlr4::ParserRuleContext *at) {
  PredP sent;
  if (link == LINK_LINUX_SLL)
    sent = cmp(offLinkHeader, 2, LINUX_SLL_OUTGOING);
  else if (link == LINK_LINUX_SLL2)
    sent = cmp(offLinkHeader + 10, 1, LINUX_SLL_OUTGOING);
  else
    fail(at, "inbound/outbound not supported on " + linkDescription(link) +
                 " when reading savefiles");
  return outbound ? sent : negate(sent);
}

PredP Generator::broadcast(Proto p, antlr4::ParserRuleContext *at) {
  static const uint8_t all[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  switch (p) {
  case Proto::Default:
  case Proto::Link:
    if (!isEthernet())
      fail(at, "not a broadcast link");
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
    if (!isEthernet())
      fail(at, "link-layer multicast filters supported only on "
               "ethernet/FDDI/token ring/ARCNET/802.11/ATM LANE/Fibre "
               "Channel");
    // ether[0] & 1 != 0
    return conj(linkHeaderCheck(),
                makeRelation(arith::CmpIPredicate::ne,
                             binary('&', load(offLinkHeader, 1), constant(1)),
                             constant(0)));
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

PredP Generator::llc(antlr4::ParserRuleContext *at) {
  if (!isEthernet())
    fail(at, "'llc' not supported for " + linkDescription(link));
  return conj(ieee8023(), negate(cmp(offLinkPayload, 2, 0xFFFF)));
}

PredP Generator::llcControl(uint32_t value, uint32_t mask,
                            antlr4::ParserRuleContext *at) {
  return conj(llc(at), cmp(offLinkPayload + 2, 1, value, mask));
}

} // namespace netvm::pcapfilter::detail
