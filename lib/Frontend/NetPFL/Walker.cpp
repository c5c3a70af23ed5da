//===- Walker.cpp - The walk over a NetPFL parse tree ---------------------===//
//
// Resolves protocols and fields against the protocol database (unknown
// names get the nearest known ones) and builds the filter: a formula
// whose leaves are chains, small automata over the sequence of headers
// (`tcp`, `ip%2.src == A`, `tcp in ip*`), and the actions.
//
//===----------------------------------------------------------------------===//

#include "NetPFLInternal.h"

using namespace mlir;
using namespace netvm;

namespace netvm::netpfl::detail {

uint32_t parseNumber(antlr4::tree::TerminalNode *tok) {
  std::string spelling = tok->getText();
  StringRef text(spelling);
  uint64_t v;
  bool bad = text.starts_with_insensitive("0x")
                 ? text.drop_front(2).getAsInteger(16, v)
                 : text.getAsInteger(10, v);
  if (bad || v > UINT32_MAX)
    fail(posOf(tok), "number '" + text.str() + "' does not fit in 32 bits");
  return uint32_t(v);
}

void Walker::program(P::ProgramContext *ctx) {
  if (ctx->filter())
    out.formula = orExpr(ctx->filter()->orExpr());
  bool sawPort = false, sawExtract = false;
  for (P::FilterActionContext *a : ctx->filterAction()) {
    if (auto *rp = dynamic_cast<P::ReturnPacketContext *>(a)) {
      if (sawPort)
        fail(posOf(a), "the filter already has a 'returnpacket' action");
      sawPort = true;
      uint32_t port = parseNumber(rp->NUMBER());
      if (port == 0 || port > 255)
        fail(posOf(rp->NUMBER()), "output ports are numbered 1 to 255");
      out.port = port;
      continue;
    }
    auto *ef = static_cast<P::ExtractFieldsContext *>(a);
    if (sawExtract)
      fail(posOf(a), "the filter already has an 'extractfields' action");
    sawExtract = true;
    for (P::FieldItemContext *item : ef->fieldItem()) {
      if (item->MULTIFIELD())
        fail(posOf(item),
             "'" + item->getText() +
                 "' (every instance of a field) is not "
                 "supported; name one instance, e.g. '" +
                 StringRef(item->getText()).split('*').first.str() + "%2." +
                 StringRef(item->getText()).split('.').second.str() + "'");
      FieldRef ref = fieldRef(item->FIELD());
      for (const Extract &e : out.extracts)
        if (e.ref.proto == ref.proto && e.ref.index == ref.index &&
            e.ref.field == ref.field)
          fail(posOf(item), "'" + item->getText() + "' is already extracted");
      if (ref.index == 0)
        ref.index = 1; // the first instance
      out.extracts.push_back({ref});
    }
  }
}

Formula Walker::orExpr(P::OrExprContext *ctx) {
  auto kids = ctx->andExpr();
  if (kids.size() == 1)
    return andExpr(kids[0]);
  Formula f;
  f.kind = Formula::Or;
  for (auto *k : kids)
    f.kids.push_back(andExpr(k));
  return f;
}

Formula Walker::andExpr(P::AndExprContext *ctx) {
  auto kids = ctx->unaryExpr();
  if (kids.size() == 1)
    return unaryExpr(kids[0]);
  Formula f;
  f.kind = Formula::And;
  for (auto *k : kids)
    f.kids.push_back(unaryExpr(k));
  return f;
}

Formula Walker::unaryExpr(P::UnaryExprContext *ctx) {
  if (auto *n = dynamic_cast<P::NotExprContext *>(ctx)) {
    Formula f;
    f.kind = Formula::Not;
    f.kids.push_back(unaryExpr(n->unaryExpr()));
    return f;
  }
  if (auto *p = dynamic_cast<P::ParenExprContext *>(ctx))
    return orExpr(p->orExpr());
  auto *c = static_cast<P::ChainExprContext *>(ctx);
  Chain chain;
  Member target = member(c->operand());
  target.tunneled = c->TUNNELED() != nullptr;
  Element last;
  last.members.push_back(target);
  chain.elems.push_back(last);
  // 'a in b in c': c is the outermost header, so elements go in front.
  for (P::ChainLinkContext *link : c->chainLink()) {
    Element e = element(link->chainElement(), link->NOTIN() != nullptr);
    chain.elems.insert(chain.elems.begin(), std::move(e));
  }
  const Element &outer = chain.elems.front();
  if (chain.elems.size() > 1 && outer.kind == Element::Set &&
      outer.members.size() == 1 && outer.members[0].proto == &db.start() &&
      !outer.repeat)
    chain.anchored = true;
  Formula f;
  f.chain = out.chains.size();
  out.chains.push_back(std::move(chain));
  return f;
}

Element Walker::element(P::ChainElementContext *ctx, bool notin) {
  Element e;
  if (auto *any = dynamic_cast<P::AnyElementContext *>(ctx)) {
    if (notin)
      fail(posOf(ctx), "'notin any' matches nothing");
    e.kind = Element::Any;
    if (any->repeater())
      e.repeat = any->repeater()->getText()[0];
    return e;
  }
  auto *set = static_cast<P::SetElementContext *>(ctx);
  e.kind = notin ? Element::Complement : Element::Set;
  std::vector<P::OperandContext *> operands;
  if (auto *one = dynamic_cast<P::SingleProtoContext *>(set->protoSet()))
    operands.push_back(one->operand());
  else
    operands = static_cast<P::BraceSetContext *>(set->protoSet())->operand();
  if (set->repeater())
    e.repeat = set->repeater()->getText()[0];
  for (P::OperandContext *op : operands) {
    Member m = member(op);
    m.tunneled = set->TUNNELED() != nullptr;
    for (const Member &other : e.members)
      if (other.proto == m.proto)
        fail(posOf(op),
             "protocol '" + m.proto->name + "' appears twice in the same set");
    if (m.index && e.repeat)
      fail(posOf(op), "a header index and a repeater ('" +
                          std::string(1, e.repeat) +
                          "') cannot go on the same element");
    if (notin && (m.index || m.pred || m.tunneled))
      fail(posOf(op), "after 'notin' name protocols only (no index, "
                      "comparison or 'tunneled')");
    e.members.push_back(std::move(m));
  }
  return e;
}

const Protocol *Walker::protocol(StringRef name, size_t pos) {
  const Protocol *p = db.lookup(name);
  if (!p) {
    std::string hint = didYouMean(Database::nearest(name, db.protocolNames()));
    fail(pos, "unknown protocol '" + name.str() + "'" +
                  (hint.empty() ? "" : "; " + hint));
  }
  return p;
}

std::pair<const Protocol *, unsigned> Walker::instance(StringRef text,
                                                       size_t pos) {
  auto [name, idx] = text.split('%');
  const Protocol *p = protocol(name, pos);
  unsigned index = 0;
  if (!idx.empty()) {
    if (idx.getAsInteger(10, index) || index == 0 || index > 255)
      fail(pos + name.size() + 1,
           "header indexes count from 1 (ip%1 is the first IP header) up "
           "to 255");
  }
  return {p, index};
}

FieldRef Walker::fieldRef(antlr4::tree::TerminalNode *tok) {
  std::string spelling = tok->getText();
  StringRef text(spelling);
  size_t pos = posOf(tok);
  auto [inst, fieldName] = text.split('.');
  auto [proto, index] = instance(inst, pos);
  const FieldInfo *f = proto->field(fieldName);
  if (!f) {
    std::vector<std::string> names;
    for (const FieldInfo &fi : proto->fields)
      names.push_back(fi.name);
    std::string hint = didYouMean(Database::nearest(fieldName, names));
    fail(pos + inst.size() + 1, "protocol '" + proto->name +
                                    "' has no field '" + fieldName.str() + "'" +
                                    (hint.empty() ? "" : "; " + hint));
  }
  return FieldRef{proto, index, f, pos};
}

Member Walker::member(P::OperandContext *ctx) {
  if (auto *p = dynamic_cast<P::ProtocolContext *>(ctx)) {
    auto [proto, index] = instance(p->getText(), posOf(ctx));
    Member m;
    m.proto = proto;
    m.index = index;
    return m;
  }
  auto pred = std::make_shared<Pred>();
  pred->pos = posOf(ctx);
  if (auto *s = dynamic_cast<P::StringTestContext *>(ctx)) {
    pred->kind = s->MATCHES() ? Pred::Matches : Pred::Contains;
    pred->field = fieldRef(s->field()->FIELD());
    // A regular expression keeps its escapes for the regexp engine
    // (\d, \., \x00, ...); only \" stands for a quote.
    pred->pattern = unquote(s->STRING(), /*regexp=*/s->MATCHES());
    pred->pos = posOf(s->STRING()); // errors in the pattern point at it
    pred->caseSensitive = s->CASESENSITIVE() != nullptr;
    if (pred->pattern.empty())
      fail(posOf(s->STRING()), "the string is empty");
    Member m;
    m.proto = pred->field.proto;
    m.index = pred->field.index;
    m.pred = pred;
    return m;
  }
  auto *r = static_cast<P::RelationContext *>(ctx);
  pred->lhs = arith(r->arith(0));
  pred->rhs = arith(r->arith(1));
  std::string op = r->relop()->getText();
  pred->rel = op == "=="   ? arith::CmpIPredicate::eq
              : op == "!=" ? arith::CmpIPredicate::ne
              : op == "<"  ? arith::CmpIPredicate::ult
              : op == "<=" ? arith::CmpIPredicate::ule
              : op == ">"  ? arith::CmpIPredicate::ugt
                           : arith::CmpIPredicate::uge;
  // The header the comparison is about.
  std::optional<FieldRef> owner;
  std::function<void(const ArithP &)> visit = [&](const ArithP &a) {
    if (a->kind == Arith::Field || a->kind == Arith::Slice) {
      if (owner &&
          (owner->proto != a->ref.proto || owner->index != a->ref.index))
        fail(a->pos,
             "a comparison looks at one header: this names '" +
                 a->ref.proto->name +
                 (a->ref.index ? "%" + std::to_string(a->ref.index) : "") +
                 "' but the comparison already uses '" + owner->proto->name +
                 (owner->index ? "%" + std::to_string(owner->index) : "") +
                 "'");
      owner = a->ref;
    }
    if (a->a)
      visit(a->a);
    if (a->b)
      visit(a->b);
  };
  visit(pred->lhs);
  visit(pred->rhs);
  if (!owner)
    fail(posOf(ctx), "this comparison names no protocol field");
  checkWide(*pred);
  Member m;
  m.proto = owner->proto;
  m.index = owner->index;
  m.pred = pred;
  return m;
}

void Walker::checkWide(const Pred &p) {
  auto wide = [](const ArithP &a) {
    return a->kind == Arith::Bytes ||
           (a->kind == Arith::Field && a->ref.field->size > 4);
  };
  auto describe = [](const ArithP &a) -> std::string {
    if (a->kind == Arith::Bytes)
      return "a " + std::to_string(a->bytes.size()) + "-byte address";
    return "field '" + a->ref.proto->name + "." + a->ref.field->name + "' (" +
           std::to_string(a->ref.field->size) + " bytes)";
  };
  for (const ArithP *side : {&p.lhs, &p.rhs}) {
    std::function<void(const ArithP &, bool)> inner = [&](const ArithP &a,
                                                          bool top) {
      if (!top && wide(a))
        fail(a->pos, describe(a) + " cannot take part in arithmetic");
      if (a->kind == Arith::Field && a->ref.field->size == 0 &&
          a->ref.field->kind == Node::VariableField)
        fail(a->pos, "field '" + a->ref.proto->name + "." + a->ref.field->name +
                         "' has a variable length: test it with "
                         "'contains' or 'matches', or compare a slice");
      if (a->a)
        inner(a->a, false);
      if (a->b)
        inner(a->b, false);
    };
    inner(*side, true);
  }
  bool lw = wide(p.lhs), rw = wide(p.rhs);
  if (!lw && !rw)
    return;
  if (p.rel != arith::CmpIPredicate::eq && p.rel != arith::CmpIPredicate::ne)
    fail(p.pos, "addresses and fields wider than 4 bytes compare with == "
                "and != only");
  auto bytesOf = [](const ArithP &a) -> size_t {
    return a->kind == Arith::Bytes ? a->bytes.size() : a->ref.field->size;
  };
  if (!(lw && rw) || bytesOf(p.lhs) != bytesOf(p.rhs) ||
      (p.lhs->kind == Arith::Field) == (p.rhs->kind == Arith::Field))
    fail(p.pos, (lw ? describe(p.lhs) : describe(p.rhs)) +
                    " compares only with an address of the same size" +
                    ((lw && rw) ? " (here " + describe(p.rhs) + ")" : ""));
}

std::string Walker::unquote(antlr4::tree::TerminalNode *tok, bool regexp) {
  std::string text = tok->getText();
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    char c = text[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = text[++i];
    if (regexp) {
      if (e != '"')
        out += '\\';
      out += e;
      continue;
    }
    switch (e) {
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case '\\':
      out += '\\';
      break;
    case '"':
      out += '"';
      break;
    case 'x': {
      unsigned v;
      if (i + 2 >= text.size() - 1 ||
          StringRef(text).substr(i + 1, 2).getAsInteger(16, v))
        fail(posOf(tok) + i - 1, "'\\x' needs two hex digits");
      out += char(v);
      i += 2;
      break;
    }
    default:
      fail(posOf(tok) + i - 1, std::string("unknown escape '\\") + e +
                                   "' (known: \\n \\r \\t \\\\ \\\" \\xHH)");
    }
  }
  return out;
}

ArithP Walker::arith(P::ArithContext *ctx) {
  auto a = std::make_shared<Arith>();
  a->pos = posOf(ctx);
  if (auto *n = dynamic_cast<P::NumberContext *>(ctx)) {
    a->k = parseNumber(n->NUMBER());
    return a;
  }
  if (auto *ip = dynamic_cast<P::Ipv4Context *>(ctx)) {
    in_addr addr;
    if (inet_pton(AF_INET, ip->getText().c_str(), &addr) != 1)
      fail(a->pos, "bad IPv4 address '" + ip->getText() + "'");
    a->k = ntohl(addr.s_addr);
    return a;
  }
  if (auto *c = dynamic_cast<P::ColonAddressContext *>(ctx)) {
    std::string text = c->getText();
    a->kind = Arith::Bytes;
    llvm::SmallVector<StringRef> parts;
    StringRef(text).split(parts, ':');
    bool mac = parts.size() == 6 && llvm::all_of(parts, [](StringRef p) {
                 return !p.empty() && p.size() <= 2 &&
                        llvm::all_of(p, llvm::isHexDigit);
               });
    if (mac) {
      for (StringRef p : parts) {
        unsigned v;
        p.getAsInteger(16, v);
        a->bytes.push_back(v);
      }
      return a;
    }
    in6_addr addr;
    if (inet_pton(AF_INET6, text.c_str(), &addr) != 1)
      fail(a->pos, "'" + text +
                       "' is neither a MAC address "
                       "(00:11:22:33:44:55) nor an IPv6 address");
    a->bytes.assign(addr.s6_addr, addr.s6_addr + 16);
    return a;
  }
  if (auto *f = dynamic_cast<P::FieldValueContext *>(ctx)) {
    a->kind = Arith::Field;
    a->ref = fieldRef(f->field()->FIELD());
    return a;
  }
  if (auto *s = dynamic_cast<P::SliceContext *>(ctx)) {
    a->kind = Arith::Slice;
    auto [proto, index] = instance(
        (s->IDENT() ? s->IDENT() : s->PROTOINDEX())->getText(), a->pos);
    a->ref.proto = proto;
    a->ref.index = index;
    a->k = parseNumber(s->NUMBER(0));
    a->size = s->NUMBER(1) ? parseNumber(s->NUMBER(1)) : 1;
    if (a->size != 1 && a->size != 2 && a->size != 4)
      fail(posOf(s->NUMBER(1)), "a slice reads 1, 2 or 4 bytes");
    if (a->k > 0xffff)
      fail(posOf(s->NUMBER(0)), "slice offset beyond any packet");
    return a;
  }
  if (auto *p = dynamic_cast<P::ParenArithContext *>(ctx))
    return arith(p->arith());
  if (auto *nt = dynamic_cast<P::BitNotContext *>(ctx)) {
    a->kind = Arith::BitNot;
    a->a = arith(nt->arith());
    return a;
  }
  a->kind = Arith::Binary;
  P::ArithContext *l, *r;
  std::string op;
  if (auto *m = dynamic_cast<P::MulContext *>(ctx)) {
    l = m->arith(0), r = m->arith(1), op = "*";
  } else if (auto *ad = dynamic_cast<P::AddContext *>(ctx)) {
    l = ad->arith(0), r = ad->arith(1);
    op = ad->MINUS() ? "-" : "+";
  } else if (auto *sh = dynamic_cast<P::ShiftContext *>(ctx)) {
    l = sh->arith(0), r = sh->arith(1);
    op = sh->SHL() ? "<" : ">";
  } else {
    auto *bw = static_cast<P::BitwiseContext *>(ctx);
    l = bw->arith(0), r = bw->arith(1);
    op = bw->AMP() ? "&" : bw->PIPE() ? "|" : "^";
  }
  a->op = op[0];
  a->a = arith(l);
  a->b = arith(r);
  return a;
}

} // namespace netvm::netpfl::detail
