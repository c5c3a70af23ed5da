//===- Walker.cpp - The walk over a pcap-filter parse tree ----------------===//
//
// What libpcap's grammar actions do: the qualifiers of each term (a bare
// operand after 'and'/'or' inherits those of the term before it), the
// operands (numbers, addresses, names), relations and arithmetic
// (gen_relation, gen_load, gen_arth), and the other primitives, handed
// to the generator in the order libpcap evaluates them. libpcap's
// messages for what it refuses on Ethernet are reproduced here.
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

/// Named numbers of libpcap's scanner (icmptype, tcp-syn, ...).
std::optional<uint32_t> namedConstant(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<uint32_t>>(name)
      .Case("icmptype", 0)
      .Case("icmpcode", 1)
      .Case("icmp-echoreply", 0)
      .Case("icmp-unreach", 3)
      .Case("icmp-sourcequench", 4)
      .Case("icmp-redirect", 5)
      .Case("icmp-echo", 8)
      .Case("icmp-routeradvert", 9)
      .Case("icmp-routersolicit", 10)
      .Case("icmp-timxceed", 11)
      .Case("icmp-paramprob", 12)
      .Case("icmp-tstamp", 13)
      .Case("icmp-tstampreply", 14)
      .Case("icmp-ireq", 15)
      .Case("icmp-ireqreply", 16)
      .Case("icmp-maskreq", 17)
      .Case("icmp-maskreply", 18)
      .Case("icmp6type", 0)
      .Case("icmp6code", 1)
      .Case("icmp6-destinationunreach", 1)
      .Case("icmp6-packettoobig", 2)
      .Case("icmp6-timeexceeded", 3)
      .Case("icmp6-parameterproblem", 4)
      .Case("icmp6-echo", 128)
      .Case("icmp6-echoreply", 129)
      .Case("icmp6-multicastlistenerquery", 130)
      .Case("icmp6-multicastlistenerreportv1", 131)
      .Case("icmp6-multicastlistenerdone", 132)
      .Case("icmp6-routersolicit", 133)
      .Case("icmp6-routeradvert", 134)
      .Case("icmp6-neighborsolicit", 135)
      .Case("icmp6-neighboradvert", 136)
      .Case("icmp6-redirect", 137)
      .Case("icmp6-routerrenum", 138)
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
      .Case("tcpflags", 13)
      .Case("tcp-fin", 0x01)
      .Case("tcp-syn", 0x02)
      .Case("tcp-rst", 0x04)
      .Case("tcp-push", 0x08)
      .Case("tcp-ack", 0x10)
      .Case("tcp-urg", 0x20)
      .Case("tcp-ece", 0x40)
      .Case("tcp-cwr", 0x80)
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

/// An 802.11 frame type or subtype name of libpcap's grammar, for the
/// error it gives on Ethernet.
bool isWlanTypeName(llvm::StringRef name) {
  return llvm::is_contained({"data", "mgt", "management", "ctl", "control"},
                            name.lower());
}
/// The subtype names of each 802.11 type (management, control, data).
const std::vector<std::vector<llvm::StringRef>> &wlanSubtypes() {
  static const std::vector<std::vector<llvm::StringRef>> names = {
      {"assocreq",   "assoc-req",      "assocresp",   "assoc-resp",
       "reassocreq", "reassoc-req",    "reassocresp", "reassoc-resp",
       "probereq",   "probe-req",      "proberesp",   "probe-resp",
       "beacon",     "atim",           "disassoc",    "disassociation",
       "auth",       "authentication", "deauth",      "deauthentication"},
      {"ps-poll", "rts", "cts", "ack", "cf-end", "cf-end-ack"},
      {"data", "data-cf-ack", "data-cf-poll", "data-cf-ack-poll", "null",
       "cf-ack", "cf-poll", "cf-ack-poll", "qos-data", "qos-data-cf-ack",
       "qos-data-cf-poll", "qos-data-cf-ack-poll", "qos", "qos-cf-poll",
       "qos-cf-ack-poll"}};
  return names;
}

PredP Walker::program(P::ProgramContext *ctx) {
  if (!ctx->expr())
    return boolean(true); // the empty expression accepts everything
  return expr(ctx->expr(), Qual()).first;
}

Walker::Result Walker::expr(P::ExprContext *ctx, Qual before) {
  if (auto *t = dynamic_cast<P::TermExprContext *>(ctx))
    return term(t->term(), before);
  auto *b = static_cast<P::BinaryExprContext *>(ctx);
  auto [lhs, lq] = expr(b->expr(), before);
  Result rhs = b->operand()->term() ? term(b->operand()->term(), lq)
                                    : Result{id(b->operand()->id(), lq), lq};
  PredP p = isAnd(b->boolop()) ? conj(lhs, rhs.first) : disj(lhs, rhs.first);
  return {p, rhs.second};
}

Walker::Result Walker::term(P::TermContext *ctx, Qual before) {
  if (auto *n = dynamic_cast<P::NotTermContext *>(ctx)) {
    auto [p, q] = term(n->term(), before);
    return {negate(p), q};
  }
  return rterm(static_cast<P::PlainTermContext *>(ctx)->rterm(), before);
}

Walker::Result Walker::rterm(P::RtermContext *ctx, Qual before) {
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
  return {other(static_cast<P::OtherPrimitiveContext *>(ctx)->other()), Qual()};
}

Proto Walker::pname(P::PnameContext *ctx) {
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

Qual Walker::head(P::HeadContext *ctx) {
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
    q.addr = a->HOST()   ? Addr::Host
             : a->NET()  ? Addr::Net
             : a->PORT() ? Addr::Port
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

PredP Walker::id(P::IdContext *ctx, Qual q) {
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
      fail(ctx, "non-network bits set in \"" + n->HID(0)->getText() + " mask " +
                    n->HID(1)->getText() + "\"");
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

void Walker::rejectNonAddress(const Qual &q, antlr4::ParserRuleContext *at) {
  const char *qual = q.addr == Addr::Port         ? "port"
                     : q.addr == Addr::PortRange  ? "portrange"
                     : q.addr == Addr::Proto      ? "proto"
                     : q.addr == Addr::ProtoChain ? "protochain"
                                                  : nullptr;
  if (qual)
    fail(at, std::string("'") + qual + "' modifier applied to ip host");
}

PredP Walker::ports(int lo, int hi, int ipproto, const Qual &q,
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
  Proto p = ipproto == IPPROTO_TCP    ? Proto::TCP
            : ipproto == IPPROTO_UDP  ? Proto::UDP
            : ipproto == IPPROTO_SCTP ? Proto::SCTP
                                      : Proto::Default;
  return gen.port(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi), p,
                  q.dir, at);
}

int Walker::portProtocol(const Qual &q, antlr4::ParserRuleContext *at) {
  switch (q.proto) {
  case Proto::TCP:
    return IPPROTO_TCP;
  case Proto::UDP:
    return IPPROTO_UDP;
  case Proto::SCTP:
    return IPPROTO_SCTP;
  case Proto::Default:
    return -1;
  default:
    fail(at, std::string("illegal qualifier of '") +
                 (q.addr == Addr::Port ? "port" : "portrange") + "'");
  }
}

PredP Walker::ncode(antlr4::tree::TerminalNode *dotted, uint32_t v,
                    const Qual &q, antlr4::ParserRuleContext *at) {
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

PredP Walker::mcode(uint32_t v, uint32_t mask, const Qual &q,
                    antlr4::ParserRuleContext *at) {
  if (q.addr != Addr::Net)
    fail(at, "Mask syntax for networks only");
  return gen.host(v, mask, q.proto, q.dir, "net", at);
}

PredP Walker::mcode6(const std::string &text, uint32_t len, const Qual &q,
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
      fail(at, "non-network bits set in \"" + text + "/" + std::to_string(len) +
                   "\"");
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

PredP Walker::ecode(const std::string &text, const Qual &q,
                    antlr4::ParserRuleContext *at) {
  if ((q.addr != Addr::Host && q.addr != Addr::Default) ||
      q.proto != Proto::Link)
    fail(at, "ethernet address used in non-ether expression");
  if (!gen.isEthernet())
    fail(at, "ethernet addresses supported only on ethernet/FDDI/token "
             "ring/802.11/ATM LANE/Fibre Channel");
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

PredP Walker::relation(P::RelationContext *ctx) {
  Arith a0 = arith(ctx->arith(0)), a1 = arith(ctx->arith(1));
  P::RelopContext *op = ctx->relop();
  arith::CmpIPredicate rel = op->GT()   ? arith::CmpIPredicate::ugt
                             : op->GE() ? arith::CmpIPredicate::uge
                             : op->LT() ? arith::CmpIPredicate::ult
                             : op->LE() ? arith::CmpIPredicate::ule
                             : op->NE() ? arith::CmpIPredicate::ne
                                        : arith::CmpIPredicate::eq;
  // libpcap: the checks of the left operand, then of the right one, then
  // the comparison.
  return conj(conj(a0.checks, a1.checks),
              makeRelation(rel, a0.value, a1.value));
}

Walker::Arith Walker::arith(P::ArithContext *ctx) {
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
               b->STAR()    ? '*'
               : b->SLASH() ? '/'
                            : '%');
  if (auto *b = dynamic_cast<P::AddSubContext *>(ctx))
    return bin(b->arith(0), b->arith(1), b->PLUS() ? '+' : '-');
  if (auto *b = dynamic_cast<P::ShiftContext *>(ctx))
    return bin(b->arith(0), b->arith(1), b->SHL() ? '<' : '>');
  if (auto *b = dynamic_cast<P::BitAndContext *>(ctx))
    return bin(b->arith(0), b->arith(1), '&');
  auto *b = static_cast<P::BitOrContext *>(ctx);
  return bin(b->arith(0), b->arith(1), b->PIPE() ? '|' : '^');
}

std::optional<uint32_t> Walker::firstImmediate(const ValP &v) {
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

Walker::Arith Walker::access(P::AccessContext *ctx) {
  Proto p = pname(ctx->pname());
  Arith index = arith(ctx->arith());
  uint32_t size = ctx->NUM() ? parseNumber(ctx->NUM()) : 1;
  if (size != 1 && size != 2 && size != 4)
    fail(ctx->NUM(), "data size must be 1, 2, or 4");
  PredP checks;
  ValP v;
  switch (p) {
  case Proto::Link:
    v = load(gen.offLinkHeader, size, index.value);
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
                  conj(index.checks,
                       conj(gen.abbreviation(p, ctx), gen.ipFirstFragment())));
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

PredP Walker::other(P::OtherContext *ctx) {
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
  if (auto *s = dynamic_cast<P::PppoesContext *>(ctx))
    return gen.pppoes(optNum(s->NUM()), ctx);
  if (auto *g = dynamic_cast<P::GeneveContext *>(ctx))
    return gen.geneve(optNum(g->NUM()), ctx);
  if (dynamic_cast<P::InboundContext *>(ctx))
    return gen.direction(/*outbound=*/false, ctx);
  if (dynamic_cast<P::OutboundContext *>(ctx))
    return gen.direction(/*outbound=*/true, ctx);
  if (auto *i = dynamic_cast<P::IfindexContext *>(ctx)) {
    // The interface index of a Linux cooked v2 header.
    if (gen.link != LINK_LINUX_SLL2)
      fail(ctx, "ifindex not supported on " + linkDescription(gen.link) +
                    " when reading savefiles");
    return cmp(gen.offLinkHeader + 4, 4, parseNumber(i->NUM()));
  }
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
        "match",       "bad-offset",  "fragment",       "short",
        "normalize",   "memory",      "bad-timestamp",  "congestion",
        "ip-option",   "proto-cksum", "state-mismatch", "state-insert",
        "state-limit", "src-limit",   "synproxy"};
    if (r->name() &&
        !reasons.count(llvm::StringRef(r->name()->getText()).lower()))
      fail(ctx, "unknown PF reason \"" + r->name()->getText() + "\"");
    fail(ctx, "reason supported only on PF linktype");
  }
  if (auto *a = dynamic_cast<P::PfActionContext *>(ctx)) {
    static const std::set<std::string> actions = {
        "pass",  "accept", "drop",    "block", "scrub", "noscrub",      "nat",
        "nonat", "binat",  "nobinat", "rdr",   "nordr", "synproxy-drop"};
    if (!actions.count(llvm::StringRef(a->name()->getText()).lower()))
      fail(ctx, "unknown PF action \"" + a->name()->getText() + "\"");
    fail(ctx, "action supported only on PF linktype");
  }
  if (auto *t = dynamic_cast<P::WlanTypeContext *>(ctx))
    return wlanType(t);
  if (auto *s = dynamic_cast<P::WlanSubtypeContext *>(ctx)) {
    for (const auto &subtypes : wlanSubtypes())
      if (llvm::is_contained(subtypes,
                             llvm::StringRef(s->WORD()->getText()).lower()))
        fail(ctx, "802.11 link-layer types supported only on 802.11");
    fail(ctx, "unknown 802.11 type name");
  }
  if (auto *d = dynamic_cast<P::WlanDirContext *>(ctx)) {
    if (d->WORD() &&
        !llvm::is_contained({"nods", "tods", "fromds", "dstods"},
                            llvm::StringRef(d->WORD()->getText()).lower()))
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
    fail(ctx, "'" + word + "' supported only on MTP2" + (hsl ? "_HSL" : ""));
  }
  auto *m = static_cast<P::Mtp3FieldContext *>(ctx);
  std::string word = m->getStart()->getText();
  if (word.size() == 4) // the high-speed variants have the same message
    word = word.substr(1);
  fail(ctx, "'" + word + "' supported only on SS7");
}

PredP Walker::byteOp(P::ByteOpContext *ctx) {
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

PredP Walker::llc(P::LlcContext *ctx) {
  if (!ctx->WORD() && !ctx->RNR())
    return gen.llc(ctx);
  std::string word = ctx->RNR() ? "rnr" : ctx->WORD()->getText();
  std::string lower = llvm::StringRef(word).lower();
  if (lower == "i") // the low bit of the control byte clear
    return conj(
        gen.llc(ctx),
        makeRelation(arith::CmpIPredicate::eq,
                     binary('&', load(gen.offLinkPayload + 2, 1), constant(1)),
                     constant(0)));
  if (lower == "s")
    return gen.llcControl(1, 0x03, ctx);
  if (lower == "u")
    return gen.llcControl(3, 0x03, ctx);
  std::optional<uint32_t> s = llvm::StringSwitch<std::optional<uint32_t>>(lower)
                                  .Case("rr", 0x01)
                                  .Case("rnr", 0x05)
                                  .Case("rej", 0x09)
                                  .Default(std::nullopt);
  if (s)
    return gen.llcControl(*s, 0x0F, ctx);
  std::optional<uint32_t> u = llvm::StringSwitch<std::optional<uint32_t>>(lower)
                                  .Case("ui", 0x03)
                                  .Case("ua", 0x63)
                                  .Case("disc", 0x43)
                                  .Case("dm", 0x0f)
                                  .Case("sabme", 0x6f)
                                  .Case("test", 0xe3)
                                  .Case("xid", 0xaf)
                                  .Case("frmr", 0x87)
                                  .Default(std::nullopt);
  if (!u)
    fail(ctx, "unknown LLC type name \"" + word + "\"");
  return gen.llcControl(*u, 0xEF, ctx);
}

PredP Walker::wlanType(P::WlanTypeContext *ctx) {
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

std::string Walker::hexByte(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

} // namespace netvm::pcapfilter::detail
