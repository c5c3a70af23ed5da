//===- Predicates.cpp - libpcap's blocks as a predicate tree --------------===//
//
// The predicate tree the generator builds (libpcap's blocks): values,
// comparisons and short-circuit and/or/not, with the helpers every
// primitive family uses: qualifier names and messages, and comparisons
// of packet bytes (gen_cmp, gen_bcmp).
//
//===----------------------------------------------------------------------===//

#include "PcapFilterInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::pcapfilter::detail {

ValP constant(uint32_t k) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Const;
  v->k = k;
  return v;
}
ValP load(Off offset, unsigned size, ValP index, bool ipHeader,
          Off ipHeaderAt) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Load;
  v->k = offset.k;
  v->size = size;
  // libpcap loads from a variable offset with X = the register, plus the
  // index of `proto[x]`.
  if (offset.var && index)
    v->index = binary('+', offset.var, std::move(index));
  else
    v->index = offset.var ? offset.var : std::move(index);
  v->ipHeader = ipHeader;
  v->ipHeaderAt = ipHeaderAt.k;
  v->ipHeaderIndex = ipHeaderAt.var;
  return v;
}
ValP select(PredP cond, ValP a, ValP b) {
  auto v = std::make_shared<Val>();
  v->kind = Val::Select;
  v->cond = std::move(cond);
  v->a = std::move(a);
  v->b = std::move(b);
  return v;
}
Off Off::operator+(const Off &o) const {
  if (var && o.var)
    return Off(binary('+', var, o.var), k + o.k);
  return Off(var ? var : o.var, k + o.k);
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
PredP predicate(Pred::Kind kind, PredP a, PredP b) {
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

/// The keyword of a protocol qualifier, as libpcap names it in messages.
const char *protoName(Proto p) {
  static const char *const names[] = {
      "default", "link", "ip",    "ip6",     "arp",   "rarp", "tcp",
      "udp",     "icmp", "icmp6", "igmp",    "sctp",  "ah",   "esp",
      "pim",     "vrrp", "igrp",  "carp",    "atalk", "aarp", "decnet",
      "lat",     "sca",  "moprc", "mopdl",   "iso",   "esis", "isis",
      "l1",      "l2",   "iih",   "lsp",     "snp",   "csnp", "psnp",
      "clnp",    "stp",  "ipx",   "netbeui", "radio"};
  return names[static_cast<int>(p)];
}

/// libpcap's message for an 802.11 direction qualifier used on another
/// address (`onMac`: on an Ethernet address), or on `what` (ports).
std::string wlanDirError(Dir d, bool onMac, const char *what) {
  static const char *const names[] = {"addr1", "addr2", "addr3",
                                      "addr4", "ra",    "ta"};
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
  case Proto::TCP:
    return 6;
  case Proto::UDP:
    return 17;
  case Proto::SCTP:
    return 132;
  case Proto::ICMP:
    return 1;
  case Proto::IGMP:
    return 2;
  case Proto::IGRP:
    return 9;
  case Proto::AH:
    return 51;
  case Proto::ESP:
    return 50;
  case Proto::PIM:
    return 103;
  case Proto::VRRP:
    return 112;
  case Proto::CARP:
    return 112;
  case Proto::ICMP6:
    return 58;
  default:
    return std::nullopt;
  }
}

/// Compare `size` bytes at `offset` (masked) with `value`.
PredP cmp(Off offset, unsigned size, uint32_t value, uint32_t mask,
          arith::CmpIPredicate rel) {
  ValP v = load(offset, size);
  if (mask != 0xFFFFFFFFu)
    v = binary('&', v, constant(mask));
  return makeRelation(rel, v, constant(value));
}
/// libpcap's gen_bcmp: `bytes` at `offset`, compared a word at a time
/// from the end (then a half word, then a byte).
PredP bytesEqual(Off offset, const std::vector<uint8_t> &bytes) {
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
} // namespace netvm::pcapfilter::detail
