//===- PcapFilterInternal.h - pcap-filter shared parts ----------*- C++ -*-===//
//
// The pcap-filter front end is split the way libpcap is: the walk over the
// parse tree (Walker.cpp, libpcap's grammar actions); the code generation
// of the primitives, by layer (LinkLayer.cpp, NetworkLayer.cpp,
// TransportLayer.cpp: gencode.c) and for names (Names.cpp: nametoaddr.c
// and gen_scode); the reproduction of the optimizer's effects
// (Optimizer.cpp: optimize.c); and the assembly of the application
// (PcapFilter.cpp). This private header holds what they share: the
// predicate tree, libpcap's constants and qualifiers, the generator, the
// walker and the decision graph.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_PCAPFILTER_PCAPFILTERINTERNAL_H
#define NETVM_LIB_FRONTEND_PCAPFILTER_PCAPFILTERINTERNAL_H

#include "FilterSupport.h"
#include "PcapFilterParser.h"
#include "antlr4-runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <arpa/inet.h>
#include <cstdio>
#include <netdb.h>
#include <netinet/ether.h>
#include <netinet/in.h>
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

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace netvm::pcapfilter::detail {

namespace arith = mlir::arith;
using P = netvm_pcapfilter::PcapFilterParser;
using filter::fail;
using filter::FilterError;

//===----------------------------------------------------------------------===//
// Predicates: libpcap's blocks, as a tree (Predicates.cpp)
//===----------------------------------------------------------------------===//

struct Val;
using ValP = std::shared_ptr<Val>;
struct Pred;
using PredP = std::shared_ptr<Pred>;
/// A 32-bit value.
struct Val {
  /// Chain: the header type libpcap's protochain loop ends at, from the
  /// network header at offset k (IPv6 if `ipv6`, else IPv4). Select: `a`
  /// if `cond` holds, else `b` (the offsets `geneve` leaves in libpcap's
  /// scratch registers, which depend on the branch that matched).
  enum Kind { Const, Load, WireLen, Binary, Neg, Chain, Select } kind = Const;
  uint32_t k = 0;        // Const: the value; Load: constant part of the offset
  bool ipv6 = false;     // Chain
  unsigned size = 0;     // Load: 1, 2 or 4 bytes
  bool ipHeader = false; // Load: add the IPv4 header length,
  uint32_t ipHeaderAt = 0; //   4*(p[ipHeaderIndex + ipHeaderAt] & 15)
  ValP ipHeaderIndex;      //   (the index may be null)
  ValP index;              // Load: variable part of the offset (may be null)
  char op = 0;             // Binary: + - * / % & | ^ < (shl) > (shr)
  ValP a, b;
  PredP cond; // Select
};

/// An offset into the packet: a constant part, and a variable part
/// computed from the packet (null when the offset is a constant). libpcap's
/// bpf_abs_offset: after `geneve` the headers that follow start at offsets
/// its code keeps in scratch registers.
struct Off {
  ValP var;
  uint32_t k = 0;
  Off(uint32_t k = 0) : k(k) {}
  Off(ValP var, uint32_t k) : var(std::move(var)), k(k) {}
  bool isVariable() const { return var != nullptr; }
  Off operator+(uint32_t d) const { return Off(var, k + d); }
  Off operator-(uint32_t d) const { return Off(var, k - d); }
  Off &operator+=(uint32_t d) {
    k += d;
    return *this;
  }
  /// The sum of two offsets (at most one of them variable).
  Off operator+(const Off &o) const;
};

/// A test: true/false, and/or/not with left-to-right short circuits, or a
/// comparison.
struct Pred {
  enum Kind { True, False, And, Or, Not, Rel } kind = True;
  PredP a, b;
  arith::CmpIPredicate rel = arith::CmpIPredicate::eq;
  ValP lhs, rhs;
};

ValP constant(uint32_t k);
/// `size` bytes at `offset`, plus `index`, plus the IPv4 header length at
/// `ipHeaderAt` if `ipHeader`.
ValP load(Off offset, unsigned size, ValP index = nullptr,
          bool ipHeader = false, Off ipHeaderAt = 0);
ValP binary(char op, ValP a, ValP b);
/// `a` if `cond` holds, else `b`.
ValP select(PredP cond, ValP a, ValP b);

/// A predicate node of `kind` over `a` and `b`.
PredP predicate(Pred::Kind kind, PredP a = nullptr, PredP b = nullptr);
PredP boolean(bool value);
PredP conj(PredP a, PredP b);
PredP disj(PredP a, PredP b);
PredP negate(PredP a);
PredP makeRelation(arith::CmpIPredicate rel, ValP lhs, ValP rhs);

//===----------------------------------------------------------------------===//
// libpcap's constants and qualifiers
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
  ETHERTYPE_PPPOES = 0x8864,
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
  // Linux cooked captures: the protocol field's values for 802.3 and 802.2
  // frames, and the packet type of a packet the host sent.
  LINUX_SLL_P_802_3 = 0x0001,
  LINUX_SLL_P_802_2 = 0x0004,
  LINUX_SLL_OUTGOING = 4,
  // PPP protocol numbers (ethertype_to_ppptype).
  PPP_IP = 0x0021,
  PPP_OSI = 0x0023,
  PPP_NS = 0x0025,
  PPP_DECNET = 0x0027,
  PPP_APPLE = 0x0029,
  PPP_IPX = 0x002b,
  PPP_BRPDU = 0x0031,
  PPP_IPV6 = 0x0057,
  PPP_MPLS_UCAST = 0x0281,
  ETHERTYPE_NS = 0x0600,
};

/// The link types netvm compiles tcpdump expressions for (libpcap's DLT_
/// values on Linux, as pcap_datalink reports them; LINKTYPE_RAW, 101 in a
/// file, is DLT_RAW, 12). PPP is the link type inside `pppoes`.
enum LinkType : int {
  LINK_NULL = 0,
  LINK_EN10MB = 1,
  LINK_PPP = 9,
  LINK_RAW = 12,
  LINK_LOOP = 108,
  LINK_LINUX_SLL = 113,
  LINK_IPV4 = 228,
  LINK_IPV6 = 229,
  LINK_LINUX_SLL2 = 276,
};
/// libpcap's description of a link type
/// (pcap_datalink_val_to_description_or_dlt), as its messages name it.
std::string linkDescription(int link);

/// Protocol qualifiers (libpcap's Q_*).
enum class Proto {
  Default,
  Link,
  IP,
  IP6,
  ARP,
  RARP,
  TCP,
  UDP,
  ICMP,
  ICMP6,
  IGMP,
  SCTP,
  AH,
  ESP,
  PIM,
  VRRP,
  IGRP,
  CARP,
  ATALK,
  AARP,
  DECNET,
  LAT,
  SCA,
  MOPRC,
  MOPDL,
  ISO,
  ESIS,
  ISIS,
  ISIS_L1,
  ISIS_L2,
  ISIS_IIH,
  ISIS_LSP,
  ISIS_SNP,
  ISIS_CSNP,
  ISIS_PSNP,
  CLNP,
  STP,
  IPX,
  NETBEUI,
  RADIO
};
/// Direction qualifiers; Addr1 to TA are 802.11's.
enum class Dir {
  Default,
  Src,
  Dst,
  Or,
  And,
  Addr1,
  Addr2,
  Addr3,
  Addr4,
  RA,
  TA
};
enum class Addr {
  Default,
  Host,
  Net,
  Port,
  PortRange,
  Proto,
  ProtoChain,
  Gateway
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
const char *protoName(Proto p);

/// libpcap's message for an 802.11 direction qualifier used on another
/// address (`onMac`: on an Ethernet address), or on `what` (ports).
std::string
wlanDirError(Dir d, bool onMac,
             const char *what = "addresses other than 802.11 MAC addresses");
bool isWlanDir(Dir d);

/// The IP protocol number of a transport qualifier.
std::optional<uint32_t> ipProtocolOf(Proto p);

/// Compare `size` bytes at `offset` (masked) with `value`.
PredP cmp(Off offset, unsigned size, uint32_t value,
          uint32_t mask = 0xFFFFFFFFu,
          arith::CmpIPredicate rel = arith::CmpIPredicate::eq);
/// libpcap's gen_bcmp: `bytes` at `offset`, compared a word at a time
/// from the end (then a half word, then a byte).
PredP bytesEqual(Off offset, const std::vector<uint8_t> &bytes);

//===----------------------------------------------------------------------===//
// libpcap's code generation for Ethernet (gencode.c), as predicates: the
// link layer (LinkLayer.cpp), the network layer (NetworkLayer.cpp) and the
// transport layer (TransportLayer.cpp)
//===----------------------------------------------------------------------===//

class Generator {
public:
  /// Where the link-layer type and the network-layer header are: libpcap's
  /// off_linktype and off_linkpl + off_nl (off_nl_nosnap for 802.3 frames
  /// with an 802.2 header), which `vlan` and `mpls` move for every
  /// primitive after them.
  /// The link type the expression is compiled for (libpcap's linktype,
  /// which `pppoes` changes to PPP), and whether the savefile's byte order
  /// is the opposite of this machine's (DLT_NULL's family is in the
  /// capturing host's order).
  int link = LINK_EN10MB;
  bool swapped = false;
  /// Where the link-layer header starts (libpcap's off_linkhdr: 0, or
  /// inside the packet after `pppoes`); `link[...]` and `ether[...]` are
  /// relative to it. offLinkType is kNoLinkType where the link layer has
  /// no type field (raw IP).
  static constexpr uint32_t kNoLinkType = ~0u;
  Off offLinkHeader = 0;
  Off offLinkType = 12, offLinkPayload = 14;
  uint32_t offNetwork = 0, offNetworkNoSnap = 3;
  /// Set `link` and the offsets of its header (libpcap's init_linktype);
  /// false for a link type netvm does not compile expressions for.
  bool setLinkType(int dlt);
  bool isEthernet() const { return link == LINK_EN10MB; }
  unsigned labelDepth = 0; // MPLS labels seen
  /// The netmask `ip broadcast` needs (pcap_compile's netmask argument).
  std::optional<uint32_t> netmask;
  /// libpcap turns its optimizer off for expressions with `protochain`
  /// (whose loop it cannot analyze) or `geneve` (whose offsets it computes
  /// with a bare jump); set when one is generated.
  bool noOptimize = false;
  /// Whether the link layer is what `geneve` carries (libpcap's
  /// is_geneve), whose Ethernet header may be missing.
  bool geneveLink = false;
  /// gen_prevlinkhdr_check: the test Ethernet-address primitives start
  /// with (after `geneve`: that there is an Ethernet header), or null.
  PredP linkHeaderCheck();
  Off net() const { return offLinkPayload + offNetwork; }

  /// The same as cmp, at `offset` from the IPv4 payload (the transport
  /// header).
  PredP cmpTransport(uint32_t offset, unsigned size, uint32_t value,
                     arith::CmpIPredicate rel = arith::CmpIPredicate::eq,
                     uint32_t mask = 0xFFFFFFFFu);

  /// An 802.3 frame: the type/length field is a length (<= 1500).
  PredP ieee8023();
  /// An 802.2 SNAP header with `orgcode` and `type` (gen_snap).
  PredP snap(uint32_t orgcode, uint32_t type);

  /// gen_linktype: a protocol of the link layer, an EtherType above 1500
  /// or an 802.2 LLC service access point, as the link type carries it
  /// (Ethernet: gen_ether_linktype; Linux cooked: gen_linux_sll_linktype;
  /// raw IP: the version; loopback: the address family; PPP: the PPP
  /// protocol number).
  PredP linktype(uint32_t type, antlr4::ParserRuleContext *at);
  /// gen_linux_sll_linktype: the protocol field of a Linux cooked capture,
  /// with 802.2 and 802.3 frames marked by pseudo-protocols.
  PredP sllLinktype(uint32_t type);
  /// `pppoes [id]` (gen_pppoes): a PPPoE session frame; later primitives
  /// look at the PPP packet inside it.
  PredP pppoes(std::optional<uint32_t> id, antlr4::ParserRuleContext *at);
  /// `geneve [vni]` (gen_geneve): a Geneve header on UDP port 6081 over
  /// IPv4 or IPv6; later primitives look at what it carries, an Ethernet
  /// frame or a network-layer packet, at offsets computed from the packet.
  PredP geneve(std::optional<uint32_t> vni, antlr4::ParserRuleContext *at);
  /// `inbound`/`outbound` (gen_inbound): the packet type of a Linux cooked
  /// capture; refused elsewhere, as libpcap does when reading savefiles.
  PredP direction(bool outbound, antlr4::ParserRuleContext *at);
  PredP ipProto(uint32_t v) { return cmp(net() + 9, 1, v); }
  PredP ip6Proto(uint32_t v) { return cmp(net() + 6, 1, v); }
  /// Not a fragment other than the first (libpcap's gen_ipfrag).
  PredP ipFirstFragment() { return cmp(net() + 6, 2, 0, 0x1FFF); }

  /// `vlan [id]`: a VLAN TPID, optionally the VLAN ID; later primitives
  /// look 4 bytes further.
  PredP vlan(std::optional<uint32_t> id, antlr4::ParserRuleContext *at);

  /// `mpls [label]`: an MPLS label stack entry; later primitives look
  /// past it.
  PredP mpls(std::optional<uint32_t> label, antlr4::ParserRuleContext *at);

  /// gen_proto: protocol `v` inside `p` (for `proto` and the
  /// abbreviations).
  PredP proto(uint32_t v, Proto p, Dir dir, antlr4::ParserRuleContext *at);

  /// A protocol name alone (gen_proto_abbrev).
  PredP abbreviation(Proto p, antlr4::ParserRuleContext *at);

  /// gen_hostop: the address at `srcOff`/`dstOff` (from the network header).
  PredP hostop(uint32_t addr, uint32_t mask, Dir dir, uint32_t srcOff,
               uint32_t dstOff, antlr4::ParserRuleContext *at);

  /// gen_dnhostop: a DECnet address in a long or short data header, with
  /// or without a padding byte.
  PredP dnhost(uint32_t addr, Dir dir, antlr4::ParserRuleContext *at);

  /// gen_host for IPv4 (and DECnet) addresses.
  PredP host(uint32_t addr, uint32_t mask, Proto p, Dir dir, const char *what,
             antlr4::ParserRuleContext *at);

  /// gen_host6: 16 bytes at 8 (source) or 24 (destination) of the IPv6
  /// header, a word at a time.
  PredP host6(const uint8_t addr[16], const uint8_t mask[16], Proto p, Dir dir,
              const char *what, antlr4::ParserRuleContext *at);

  /// gen_ehostop: an Ethernet address (source at 6, destination at 0),
  /// compared as libpcap's gen_bcmp does: the last four bytes, then the
  /// first two.
  PredP ehost(const uint8_t mac[6], Dir dir, antlr4::ParserRuleContext *at);

  /// `[ether] broadcast`, `ip broadcast` (gen_broadcast).
  PredP broadcast(Proto p, antlr4::ParserRuleContext *at);

  /// `[ether] multicast`, `ip multicast`, `ip6 multicast`
  /// (gen_multicast).
  PredP multicast(Proto p, antlr4::ParserRuleContext *at);

  /// `[ip|ip6] protochain v` (gen_protochain): a loop over the IPv6
  /// extension headers and AH headers to a header of type `v`.
  PredP protochain(uint32_t v, Proto p, antlr4::ParserRuleContext *at);

  /// `llc` and its frame types (gen_llc*): an 802.3 frame that is not
  /// raw IPX, and the control byte.
  PredP llc(antlr4::ParserRuleContext *at);
  PredP llcControl(uint32_t value, uint32_t mask,
                   antlr4::ParserRuleContext *at);

  /// gen_portatom / gen_portrangeatom on the IPv4 transport header.
  PredP portAtom(uint32_t off, uint32_t lo, uint32_t hi, bool ipv6);
  PredP portDir(uint32_t lo, uint32_t hi, Dir dir, bool ipv6,
                antlr4::ParserRuleContext *at);
  /// gen_portop(6): one transport protocol.
  PredP portOp(uint32_t lo, uint32_t hi, uint32_t ipproto, Dir dir, bool ipv6,
               antlr4::ParserRuleContext *at);
  /// gen_port(6) for `proto` (TCP, UDP, SCTP or all three).
  PredP portFamily(uint32_t lo, uint32_t hi, Proto p, Dir dir, bool ipv6,
                   antlr4::ParserRuleContext *at);
  /// `port`/`portrange` with a transport qualifier (Default for all
  /// three); the numbers are checked by the caller.
  PredP port(uint32_t lo, uint32_t hi, Proto p, Dir dir,
             antlr4::ParserRuleContext *at);
};

//===----------------------------------------------------------------------===//
// The parse tree, walked the way libpcap's grammar actions go (Walker.cpp;
// names in Names.cpp)
//===----------------------------------------------------------------------===//

/// Named numbers of libpcap's scanner (icmptype, tcp-syn, ...).
std::optional<uint32_t> namedConstant(llvm::StringRef name);

/// A number as libpcap's scanner reads it: decimal, 0x hexadecimal, or
/// octal with a leading 0.
uint32_t parseNumber(antlr4::tree::TerminalNode *tok);

/// A dotted IPv4 address or network of 1 to 4 parts, left-aligned like
/// libpcap's __pcap_atoin: the value and its number of bits.
std::pair<uint32_t, unsigned> parseDotted(antlr4::tree::TerminalNode *tok);

/// A name as the resolver functions of libpcap (nametoaddr.c) see it.
namespace names {

/// pcap_nametoport: a service's TCP and UDP ports; the protocol is TCP,
/// UDP, or -1 (both) when the name gives the same port for both.
bool port(const std::string &name, int &port, int &proto);
/// pcap_nametoportrange: "N-M", or two service names around the first '-'.
bool portRange(const std::string &name, int &lo, int &hi, int &proto);
/// pcap_nametoproto: /etc/protocols (getprotobyname_r).
std::optional<uint32_t> ipProtocol(const std::string &name);
/// pcap_nametoeproto, then pcap_nametollc: libpcap's own tables.
std::optional<uint32_t> etherProtocol(llvm::StringRef name);
/// pcap_nametonetaddr: /etc/networks (getnetbyname_r); 0 if unknown.
uint32_t network(const std::string &name);
/// pcap_nametoaddrinfo: the host's addresses (getaddrinfo, as libpcap
/// asks for them).
struct AddrInfo {
  struct addrinfo *list = nullptr;
  ~AddrInfo() {
    if (list)
      freeaddrinfo(list);
  }
};
bool host(const std::string &name, AddrInfo &out);

} // namespace names

class Walker {
public:
  explicit Walker(Generator &gen) : gen(gen) {}

  PredP program(P::ProgramContext *ctx);

  /// An error libpcap's optimizer would give (a division by a value that
  /// folds to 0), raised only if the optimizer runs.
  std::optional<FilterError> optimizerError;

private:
  Generator &gen;

  using Result = std::pair<PredP, Qual>;

  static bool isAnd(P::BoolopContext *op) { return op->AND() || op->ANDAND(); }

  Result expr(P::ExprContext *ctx, Qual before);

  Result term(P::TermContext *ctx, Qual before);

  Result rterm(P::RtermContext *ctx, Qual before);

  Proto pname(P::PnameContext *ctx);

  Qual head(P::HeadContext *ctx);

  /// An operand under qualifiers `q` (libpcap's nid/pnum rules).
  PredP id(P::IdContext *ctx, Qual q);

  /// The grammar's checks on a dotted IPv4 address.
  void rejectNonAddress(const Qual &q, antlr4::ParserRuleContext *at);

  /// gen_port / gen_portrange for a port qualifier: `ipproto` is the
  /// transport the number or name stands for (-1: all).
  PredP ports(int lo, int hi, int ipproto, const Qual &q,
              antlr4::ParserRuleContext *at);
  /// The transport a `port` or `portrange` qualifier names (-1: all).
  int portProtocol(const Qual &q, antlr4::ParserRuleContext *at);

  /// gen_ncode: a number, or a dotted address (`dotted`).
  PredP ncode(antlr4::tree::TerminalNode *dotted, uint32_t v, const Qual &q,
              antlr4::ParserRuleContext *at);

  /// gen_mcode: a network with a mask.
  PredP mcode(uint32_t v, uint32_t mask, const Qual &q,
              antlr4::ParserRuleContext *at);

  /// gen_mcode6: an IPv6 address or network.
  PredP mcode6(const std::string &text, uint32_t len, const Qual &q,
               antlr4::ParserRuleContext *at);

  /// gen_ecode: an Ethernet address.
  PredP ecode(const std::string &text, const Qual &q,
              antlr4::ParserRuleContext *at);

  /// gen_scode: a name (a host, network, port or protocol name).
  PredP scode(P::NamedContext *ctx, const Qual &q);

  /// The transport a port name stands for under a `wanted` qualifier
  /// (-1: none), as gen_scode checks it.
  int transportOf(int wanted, int found, const char *what,
                  const std::string &name, antlr4::ParserRuleContext *at);

  /// lookup_proto: a protocol name for `proto` or `protochain`.
  uint32_t protocolNumber(const std::string &name, const Qual &q,
                          antlr4::ParserRuleContext *at);

  /// A host name: an Ethernet host from /etc/ethers for `ether`, otherwise
  /// its IPv4 and IPv6 addresses, or'ed in the resolver's order.
  PredP hostName(const std::string &name, const Qual &q,
                 antlr4::ParserRuleContext *at);

  //--- Relations and arithmetic (gen_relation, gen_load, gen_arth) -------//

  /// An arithmetic value and the protocol checks its accessors need.
  struct Arith {
    ValP value;
    PredP checks;
  };

  PredP relation(P::RelationContext *ctx);

  Arith arith(P::ArithContext *ctx);

  /// The constant the first instruction libpcap generates for `v` loads,
  /// if it loads one: an index comes before the load it feeds, a left
  /// operand before the right one.
  static std::optional<uint32_t> firstImmediate(const ValP &v);

  /// proto[index : size] (gen_load).
  Arith access(P::AccessContext *ctx);

  PredP other(P::OtherContext *ctx);

  /// `byte N op M` (gen_byteop): a byte of the link-layer header.
  PredP byteOp(P::ByteOpContext *ctx);

  /// `llc [type]` (gen_llc, gen_llc_i/s/u, gen_llc_s/u_subtype).
  PredP llc(P::LlcContext *ctx);

  /// `type T [subtype S]` of 802.11: libpcap checks the names, then
  /// refuses them on Ethernet.
  PredP wlanType(P::WlanTypeContext *ctx);

  static std::string hexByte(uint32_t v);
};

//===----------------------------------------------------------------------===//
// libpcap's optimizer, on a decision graph (Optimizer.cpp)
//===----------------------------------------------------------------------===//

/// A structural key: equal keys, equal values (libpcap's value numbers).
std::string keyOf(const ValP &v);

/// libpcap's opt_stmt on arithmetic: constants fold, and an operation with
/// a constant 0 is the identity (+ - | ^ << >>) or 0 (* &), which drops
/// the loads of the other operand.
ValP simplify(const ValP &v);

/// A BPF-style test: A (jeq|jgt|jge|jset) B.
struct Test {
  enum Code { JEQ, JGT, JGE, JSET } code;
  ValP lhs, rhs;
  std::string aKey, rKey;
  bool rConst;
  /// aKey interned: equal ids, equal keys.
  int aId = -1;
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
  int compile(const PredP &p, int t, int f);
  /// The test of the last comparison compile() met (-1: decided at
  /// compile time). compile() takes an and/or's left side last, so after
  /// the whole predicate this is its leftmost comparison, libpcap's root
  /// block, even when its two branches met and no node tests it.
  int lastTest = -1;

  /// libpcap's optimizer loop; returns the new root.
  int optimize(int root);

  /// Set when optimize stopped early: its pull-ups move one test at a
  /// time, about 2 N^2 of them for N alternatives of two fields
  /// (`host A or host B ...`), each a walk of the whole graph. Past a
  /// budget of walked nodes (about 100 such alternatives, a few seconds)
  /// the graph is left as it is: the verdicts of packets long enough for
  /// every field are libpcap's, those of shorter ones may not be.
  bool exhausted = false;
  static constexpr uint64_t kWorkBudget = 30'000'000;

  struct Node {
    int test, jt, jf;
  };
  std::vector<Node> nodes;
  std::vector<Test> tests;

private:
  std::map<std::string, int> testIds;
  std::map<std::string, int> aIds;
  /// Every node by its (test, jt, jf), the lowest number first: node()
  /// shares the lowest, as libpcap shares equal blocks. Pull-ups edit
  /// nodes in place and keep it up to date (setSlot).
  llvm::DenseMap<std::tuple<int, int, int>, llvm::SmallVector<int, 1>> unique;

  /// A (shared) node; none when both successors are the same.
  int node(int test, int t, int f);

  /// What an edge out of `from` (its true branch if `sense`) says about
  /// `child`'s test: the successor it leads to, or -1.
  int fold(int child, int from, bool sense);

  //--- Reachable nodes, numbered in topological order -----------------//

  /// The nodes reachable from `root` in reverse postorder (a depth-first
  /// walk, true successor first, without recursion); local[n] is n's
  /// position there while stamp[n] == generation.
  void reach(int root);
  std::vector<int> order;
  std::vector<int> local;
  std::vector<unsigned> stamp;
  unsigned generation = 0;
  bool reached(int n) const {
    return n >= 2 && static_cast<size_t>(n) < stamp.size() &&
           stamp[n] == generation;
  }

  //--- or_pullup / and_pullup ----------------------------------------//

  /// For the nodes of `order` (by position): their incoming edges (node,
  /// sense: 0 true, 1 false) in order, heights above the leaves, and
  /// immediate dominators (-1 for the root).
  struct Shape {
    std::vector<int> inStart;
    std::vector<std::pair<int, int>> inEdges;
    std::vector<int> height;
    std::vector<int> idom;
    /// Entry and exit times in a walk of the dominator tree.
    std::vector<int> enter, exit;
  };
  Shape sh;
  /// Nodes walked so far (reach).
  uint64_t work = 0;
  void shape(int root);
  /// True if `b` dominates `n` (both reachable).
  bool dominates(int b, int n) const;

  int &slot(int n, bool jt) { return jt ? nodes[n].jt : nodes[n].jf; }
  /// Sets a successor of `n`, keeping `unique` up to date.
  void setSlot(int n, bool jt, int to);

  /// libpcap's or_pullup (alongTrue = false) and and_pullup (true): in a
  /// chain of tests that share their other successor, a later test of the
  /// value the tests before `b` compare moves up next to them. Edits the
  /// graph in place; true if it did.
  bool pullOne(int b, bool alongTrue);

  bool pullup(int root);

  //--- Threading -----------------------------------------------------//

  /// One round: edge dominators, threading of every edge, and a rebuild
  /// that drops tests with equal successors and shares equal nodes.
  int thread(int root, bool &changed);
  /// For the walk of the edge-dominator tree: the lowest edge (2 * node +
  /// sense) dominating the current one, per test and, for true edges of
  /// equality tests with constants, per compared value.
  std::vector<std::vector<int>> lowestByTest, lowestTrueByValue;
};

} // namespace netvm::pcapfilter::detail

#endif // NETVM_LIB_FRONTEND_PCAPFILTER_PCAPFILTERINTERNAL_H
