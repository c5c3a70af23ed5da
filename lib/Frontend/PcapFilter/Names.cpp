//===- Names.cpp - Names in pcap-filter expressions -----------------------===//
//
// What libpcap's nametoaddr.c and gen_scode do with a name: hosts,
// networks, services and protocols through the C library's resolvers
// (so /etc/hosts, /etc/services, /etc/protocols, /etc/networks and
// /etc/ethers as tcpdump sees them), and libpcap's own tables of
// EtherType and LLC names.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

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
        found = ntohs(reinterpret_cast<sockaddr_in6 *>(ai->ai_addr)->sin6_port);
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
  if (getprotobyname_r(name.c_str(), &entry, buffer, sizeof buffer, &found) !=
          0 ||
      !found)
    return std::nullopt;
  return static_cast<uint32_t>(found->p_proto);
}

/// pcap_nametoeproto, then pcap_nametollc: libpcap's own tables.
std::optional<uint32_t> etherProtocol(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<uint32_t>>(name)
      .Case("aarp", ETHERTYPE_AARP)
      .Case("arp", ETHERTYPE_ARP)
      .Case("atalk", ETHERTYPE_ATALK)
      .Case("decnet", ETHERTYPE_DN)
      .Case("ip", ETHERTYPE_IP)
      .Case("ip6", ETHERTYPE_IPV6)
      .Case("lat", ETHERTYPE_LAT)
      .Case("loopback", ETHERTYPE_LOOPBACK)
      .Case("mopdl", ETHERTYPE_MOPDL)
      .Case("moprc", ETHERTYPE_MOPRC)
      .Case("rarp", ETHERTYPE_REVARP)
      .Case("sca", ETHERTYPE_SCA)
      .Case("iso", LLCSAP_ISONS)
      .Case("stp", LLCSAP_8021D)
      .Case("ipx", LLCSAP_IPX)
      .Case("netbeui", LLCSAP_NETBEUI)
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

bool host(const std::string &name, AddrInfo &out) {
  struct addrinfo hints = {};
  hints.ai_family = PF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  return getaddrinfo(name.c_str(), nullptr, &hints, &out.list) == 0;
}

} // namespace names

PredP Walker::scode(P::NamedContext *ctx, const Qual &q) {
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
    return ports(port, port, transportOf(wanted, proto, "port", name, ctx), q,
                 ctx);
  }
  case Addr::PortRange: {
    int wanted = portProtocol(q, ctx), lo, hi, proto;
    if (!names::portRange(name, lo, hi, proto))
      fail(ctx, "unknown port in range '" + name + "'");
    return ports(lo, hi, transportOf(wanted, proto, "port in range", name, ctx),
                 q, ctx);
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

int Walker::transportOf(int wanted, int found, const char *what,
                        const std::string &name,
                        antlr4::ParserRuleContext *at) {
  if (wanted < 0)
    return found;
  if (found >= 0 && found != wanted)
    fail(at, std::string(what) + " '" + name + "' is " +
                 (found == IPPROTO_TCP   ? "tcp"
                  : found == IPPROTO_UDP ? "udp"
                                         : "sctp"));
  return wanted;
}

uint32_t Walker::protocolNumber(const std::string &name, const Qual &q,
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

PredP Walker::hostName(const std::string &name, const Qual &q,
                       antlr4::ParserRuleContext *at) {
  if (q.proto == Proto::Link) {
    if (!gen.isEthernet())
      fail(at, "only ethernet/FDDI/token ring/802.11/ATM LANE/Fibre Channel "
               "supports link-level host name");
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
      one = gen.host(ntohl(sin->sin_addr.s_addr), 0xFFFFFFFFu, q.proto, q.dir,
                     what, at);
    } else if (ai->ai_family == AF_INET6) {
      if (q.proto == Proto::IP)
        continue;
      auto *sin6 = reinterpret_cast<sockaddr_in6 *>(ai->ai_addr);
      one = gen.host6(sin6->sin6_addr.s6_addr, all, q.proto, q.dir, what, at);
    } else {
      continue;
    }
    b = b ? disj(b, one) : one;
  }
  if (!b)
    fail(at, "unknown host '" + name + "'" +
                 (q.proto == Proto::Default ? ""
                                            : " for specified address family"));
  return b;
}

} // namespace netvm::pcapfilter::detail
