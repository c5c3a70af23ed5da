//===- NetPFL.cpp - NetPFL filters to the netvm dialect -------------------===//
//
// Three steps:
//  1. ANTLR parses the filter (NetPFL.g4); the first syntax error becomes a
//     message with the filter and a caret.
//  2. A walk over the parse tree resolves protocol and field names against
//     the protocol database and builds a boolean formula whose leaves are
//     encapsulation patterns: `tcp.dport == 80` is "some TCP header has
//     dport 80", `tcp in ip in ipv6` is "an IPv6 header directly followed
//     by an IPv4 header directly followed by a TCP header", with NetBee's
//     sets, `any`, repeaters (* + ?), `notin`, header indexes and
//     `tunneled`. Every leaf is a small automaton over the header chain.
//  3. Code generation writes one push handler that parses the packet from
//     `startproto`, header after header, along the database's
//     encapsulation rules, and only towards protocols the filter needs. At
//     each header it decodes the fields it needs (NetPDL <format>), steps
//     the automata of the leaves, then follows <encapsulation>. When the
//     parse ends, the formula decides: send or drop. The generator keeps
//     its state (offsets, field positions, counters, automaton states) in
//     memref.alloca slots; mem2reg turns them into SSA values, so the
//     handler that comes out is plain netvm/arith/cf.
//
// Packet bounds: parsing never reads past the captured bytes; where a
// header's fields run past them, the header is still present but the
// fields that could not be decoded are absent, and a comparison that needs
// an absent field is false.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/NetPFL.h"

#include "NetVM/NetVMOps.h"
#include "netvm/ProtoDB/ProtoDB.h"

#include "NetPFLLexer.h"
#include "NetPFLParser.h"
#include "FilterSupport.h"
#include "antlr4-runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/MemorySlotInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/Mem2Reg.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/bit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <arpa/inet.h>
#include <hs/hs.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>

using namespace mlir;
using namespace netvm;
using namespace netvm::protodb;
using P = netvm_netpfl::NetPFLParser;
using llvm::StringRef;

namespace {

using filter::fail;
using filter::FilterError;
using filter::posOf;

/// NetPFL's words for ANTLR's syntax errors.
const filter::SyntaxWords kSyntaxWords{
    "filter", "a protocol, a field, a number, an address or '('",
    "this does not make a filter here (a protocol, a comparison such as "
    "'tcp.dport == 80', 'not', '(', 'in', 'and', 'or' or an action)",
    [](llvm::ArrayRef<StringRef> items) -> std::optional<std::string> {
      if (items.size() == 1 && items[0] == "STRING")
        return std::string("a string in double quotes");
      return std::nullopt;
    }};

//===----------------------------------------------------------------------===//
// The filter, resolved
//===----------------------------------------------------------------------===//

/// A field of one header instance (`ip.src`, `ip%2.src`).
struct FieldRef {
  const Protocol *proto = nullptr;
  unsigned index = 0; // 0: the instance being looked at
  const FieldInfo *field = nullptr;
  size_t pos = 0;
};

/// Arithmetic over the fields of one header and constants.
struct Arith {
  enum Kind { Const, Field, Slice, Bytes, BitNot, Binary } kind = Const;
  uint32_t k = 0;             // Const; Slice: offset in the header
  unsigned size = 0;          // Slice
  std::vector<uint8_t> bytes; // Bytes: a MAC or IPv6 address
  FieldRef ref;               // Field; Slice (proto, index)
  char op = 0;                // Binary: + - * < (shl) > (shr) & | ^
  std::shared_ptr<Arith> a, b;
  size_t pos = 0;
};
using ArithP = std::shared_ptr<Arith>;

/// A test on one header: a comparison or a string search.
struct Pred {
  enum Kind { Relation, Contains, Matches } kind = Relation;
  ArithP lhs, rhs;
  arith::CmpIPredicate rel = arith::CmpIPredicate::eq;
  FieldRef field;
  std::string pattern;
  bool caseSensitive = false;
  size_t pos = 0;
};

/// One header the pattern accepts: a protocol, optionally its n-th
/// instance, tunneled, or satisfying a test.
struct Member {
  const Protocol *proto = nullptr;
  unsigned index = 0;
  bool tunneled = false;
  std::shared_ptr<Pred> pred;
};

/// One position of an encapsulation pattern.
struct Element {
  enum Kind { Set, Complement, Any } kind = Set;
  std::vector<Member> members;
  char repeat = 0; // 0, '?', '*', '+'
};

/// A leaf of the formula: "the header chain has, somewhere (or from its
/// start when `anchored`), consecutive headers matching elems[0..n)".
struct Chain {
  std::vector<Element> elems;
  bool anchored = false;
};

struct Formula {
  enum Kind { Leaf, And, Or, Not } kind = Leaf;
  int chain = -1;
  std::vector<Formula> kids;
};

struct Extract {
  FieldRef ref;
};

struct Filter {
  std::optional<Formula> formula; // none: accept every packet
  std::vector<Chain> chains;
  std::optional<uint32_t> port;
  std::vector<Extract> extracts;
};

//===----------------------------------------------------------------------===//
// The parse tree to the filter
//===----------------------------------------------------------------------===//

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

class Walker {
public:
  Walker(const Database &db, Filter &out) : db(db), out(out) {}

  void program(P::ProgramContext *ctx) {
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
          fail(posOf(item), "'" + item->getText() +
                                "' (every instance of a field) is not "
                                "supported; name one instance, e.g. '" +
                                StringRef(item->getText()).split('*').first.str() +
                                "%2." +
                                StringRef(item->getText()).split('.').second.str() +
                                "'");
        FieldRef ref = fieldRef(item->FIELD());
        for (const Extract &e : out.extracts)
          if (e.ref.proto == ref.proto && e.ref.index == ref.index &&
              e.ref.field == ref.field)
            fail(posOf(item), "'" + item->getText() +
                                  "' is already extracted");
        if (ref.index == 0)
          ref.index = 1; // the first instance
        out.extracts.push_back({ref});
      }
    }
  }

private:
  const Database &db;
  Filter &out;

  Formula orExpr(P::OrExprContext *ctx) {
    auto kids = ctx->andExpr();
    if (kids.size() == 1)
      return andExpr(kids[0]);
    Formula f;
    f.kind = Formula::Or;
    for (auto *k : kids)
      f.kids.push_back(andExpr(k));
    return f;
  }
  Formula andExpr(P::AndExprContext *ctx) {
    auto kids = ctx->unaryExpr();
    if (kids.size() == 1)
      return unaryExpr(kids[0]);
    Formula f;
    f.kind = Formula::And;
    for (auto *k : kids)
      f.kids.push_back(unaryExpr(k));
    return f;
  }
  Formula unaryExpr(P::UnaryExprContext *ctx) {
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

  Element element(P::ChainElementContext *ctx, bool notin) {
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
          fail(posOf(op), "protocol '" + m.proto->name +
                              "' appears twice in the same set");
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

  const Protocol *protocol(StringRef name, size_t pos) {
    const Protocol *p = db.lookup(name);
    if (!p) {
      std::string hint =
          didYouMean(Database::nearest(name, db.protocolNames()));
      fail(pos, "unknown protocol '" + name.str() + "'" +
                    (hint.empty() ? "" : "; " + hint));
    }
    return p;
  }

  /// `name` or `name%N`.
  std::pair<const Protocol *, unsigned> instance(StringRef text, size_t pos) {
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

  FieldRef fieldRef(antlr4::tree::TerminalNode *tok) {
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
      fail(pos + inst.size() + 1,
           "protocol '" + proto->name + "' has no field '" + fieldName.str() +
               "'" + (hint.empty() ? "" : "; " + hint));
    }
    return FieldRef{proto, index, f, pos};
  }

  Member member(P::OperandContext *ctx) {
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
    pred->rel = op == "==" ? arith::CmpIPredicate::eq
                : op == "!=" ? arith::CmpIPredicate::ne
                : op == "<"  ? arith::CmpIPredicate::ult
                : op == "<=" ? arith::CmpIPredicate::ule
                : op == ">"  ? arith::CmpIPredicate::ugt
                             : arith::CmpIPredicate::uge;
    // The header the comparison is about.
    std::optional<FieldRef> owner;
    std::function<void(const ArithP &)> visit = [&](const ArithP &a) {
      if (a->kind == Arith::Field || a->kind == Arith::Slice) {
        if (owner && (owner->proto != a->ref.proto ||
                      owner->index != a->ref.index))
          fail(a->pos, "a comparison looks at one header: this names '" +
                           a->ref.proto->name +
                           (a->ref.index ? "%" + std::to_string(a->ref.index)
                                         : "") +
                           "' but the comparison already uses '" +
                           owner->proto->name +
                           (owner->index ? "%" + std::to_string(owner->index)
                                         : "") +
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

  /// Fields wider than 4 bytes compare only for (in)equality with an
  /// address of the same size.
  void checkWide(const Pred &p) {
    auto wide = [](const ArithP &a) {
      return a->kind == Arith::Bytes ||
             (a->kind == Arith::Field && a->ref.field->size > 4);
    };
    auto describe = [](const ArithP &a) -> std::string {
      if (a->kind == Arith::Bytes)
        return "a " + std::to_string(a->bytes.size()) + "-byte address";
      return "field '" + a->ref.proto->name + "." + a->ref.field->name +
             "' (" + std::to_string(a->ref.field->size) + " bytes)";
    };
    for (const ArithP *side : {&p.lhs, &p.rhs}) {
      std::function<void(const ArithP &, bool)> inner =
          [&](const ArithP &a, bool top) {
            if (!top && wide(a))
              fail(a->pos, describe(a) + " cannot take part in arithmetic");
            if (a->kind == Arith::Field && a->ref.field->size == 0 &&
                a->ref.field->kind == Node::VariableField)
              fail(a->pos, "field '" + a->ref.proto->name + "." +
                               a->ref.field->name +
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

  std::string unquote(antlr4::tree::TerminalNode *tok, bool regexp = false) {
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
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
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
        fail(posOf(tok) + i - 1,
             std::string("unknown escape '\\") + e +
                 "' (known: \\n \\r \\t \\\\ \\\" \\xHH)");
      }
    }
    return out;
  }

  ArithP arith(P::ArithContext *ctx) {
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
        fail(a->pos, "'" + text + "' is neither a MAC address "
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
};

//===----------------------------------------------------------------------===//
// Code generation
//===----------------------------------------------------------------------===//

constexpr uint32_t kAbsent = 0xFFFFFFFF;
constexpr llvm::StringLiteral kRegexp = "regexp";

/// The regexp coprocessor's initialisation data for `patterns`
/// (docs/netil.md, 7.1): little-endian counts and lengths, flag "i"
/// (case-insensitive) unless the filter says casesensitive.
std::vector<int8_t> regexpInitData(llvm::ArrayRef<const Pred *> patterns) {
  std::vector<int8_t> out;
  auto u16 = [&](size_t v) {
    out.push_back(int8_t(v & 0xff));
    out.push_back(int8_t(v >> 8));
  };
  auto bytes = [&](StringRef s) { out.insert(out.end(), s.begin(), s.end()); };
  u16(patterns.size());
  for (const Pred *p : patterns) {
    StringRef flags = p->caseSensitive ? "" : "i";
    u16(flags.size());
    bytes(flags);
    u16(p->pattern.size());
    bytes(p->pattern);
  }
  return out;
}

/// What the filter needs from one protocol.
struct ProtoNeeds {
  bool relevant = false;      // parsed at all
  bool encapsulation = false; // some successor is relevant
  bool count = false;         // header index used
  llvm::StringSet<> recorded; // fields whose position the filter reads
  llvm::StringSet<> values;   // fields whose value NetPDL expressions read
  std::set<const Node *> skipped; // size loops decoded as one jump
};

class CodeGen {
public:
  CodeGen(OpBuilder &b, Location loc, Region &body, const Database &db,
          const Filter &filter, Block *accept, Block *reject)
      : b(b), loc(loc), body(body), db(db), filter(filter), accept(accept),
        reject(reject) {}

  void run() {
    analyse();
    Block *entry = &body.front();
    finish = newBlock();

    b.setInsertionPointToEnd(entry);
    i32 = b.getI32Type();
    pktLen = PacketLengthOp::create(b, loc, i32);
    set(var("hops"), c32(0));
    set(var("layers"), c32(0));
    for (size_t c = 0; c < filter.chains.size(); ++c) {
      set(chainVar(c), c32(0));
      set(flagVar(c), c32(0));
    }
    for (auto &[proto, needs] : needs_)
      if (needs.count)
        set(var("count." + proto->name), c32(0));
    for (size_t i = 0; i < filter.extracts.size(); ++i)
      StoreOp::create(b, loc, c32(0), MemSpace::Info,
                      c32(i * netpfl::kExtractedFieldSize));
    set(var("off"), c32(0));
    if (!regexps.empty())
      CoproExbufOp::create(b, loc, kRegexp);
    cf::BranchOp::create(b, loc, headerBlock(&db.start()));

    while (!pending.empty()) {
      const Protocol *p = pending.back();
      pending.pop_back();
      emitHeader(*p);
    }

    b.setInsertionPointToEnd(finish);
    Value verdict = filter.formula ? formula(*filter.formula)
                                   : Value(arith::ConstantIntOp::create(
                                         b, loc, b.getI1Type(), 1));
    cf::CondBranchOp::create(b, loc, verdict, accept, reject);
  }

  /// The `matches` patterns, in the order of the regexp coprocessor.
  llvm::ArrayRef<const Pred *> regexpPatterns() const { return regexps; }

  /// Promote the generator's variables to SSA values.
  LogicalResult promote(Operation *scope) {
    SmallVector<PromotableAllocationOpInterface> allocas;
    for (auto &[name, v] : vars)
      allocas.push_back(
          cast<PromotableAllocationOpInterface>(v.getDefiningOp()));
    // Code after a branch (a <nextproto>, a <loopctrl>) went into blocks
    // nothing reaches: drop them first, so that no value of theirs is
    // left undefined.
    IRRewriter rewriter(scope->getContext());
    (void)eraseUnreachableBlocks(rewriter, scope->getRegions());
    DominanceInfo dominance(scope);
    OpBuilder builder(scope->getContext());
    DataLayout layout = DataLayout::closest(scope);
    (void)tryToPromoteMemorySlots(allocas, builder, layout, dominance);
    bool left = false;
    scope->walk([&](Operation *op) {
      if (isa<memref::MemRefDialect>(op->getDialect()) ||
          op->getName().getStringRef() == "ub.poison")
        left = true;
    });
    return failure(left);
  }

private:
  OpBuilder &b;
  Location loc;
  Region &body;
  const Database &db;
  const Filter &filter;
  Block *accept, *reject, *finish = nullptr;
  Type i32;
  Value pktLen;
  std::map<std::string, Value> vars;
  std::map<const Protocol *, ProtoNeeds> needs_;
  std::map<const Protocol *, Block *> headers;
  std::vector<const Pred *> regexps; // pattern K of the regexp coprocessor
  std::vector<const Protocol *> pending;
  llvm::DenseMap<const Protocol *, unsigned> layerBit;
  bool tunnels = false;

  // Per header being emitted.
  const Protocol *proto = nullptr;
  Block *stopTarget = nullptr; // where a failed decode goes
  struct LoopTargets {
    Block *next, *exit;
  };
  std::vector<LoopTargets> loops;

  //===--------------------------------------------------------------------===//
  // What to parse
  //===--------------------------------------------------------------------===//

  void analyse() {
    llvm::SetVector<const Protocol *> wanted;
    auto noteArith = [&](const ArithP &a, auto &self) -> void {
      if (!a)
        return;
      if (a->kind == Arith::Field)
        needs_[a->ref.proto].recorded.insert(a->ref.field->name);
      self(a->a, self);
      self(a->b, self);
    };
    for (const Chain &c : filter.chains)
      for (const Element &e : c.elems)
        for (const Member &m : e.members) {
          if (e.kind == Element::Set)
            wanted.insert(m.proto);
          if (m.index)
            needs_[m.proto].count = true;
          if (m.tunneled)
            tunnels = true;
          if (!m.pred)
            continue;
          if (m.pred->kind == Pred::Relation) {
            noteArith(m.pred->lhs, noteArith);
            noteArith(m.pred->rhs, noteArith);
          } else {
            needs_[m.proto].recorded.insert(m.pred->field.field->name);
            if (m.pred->kind == Pred::Matches)
              regexps.push_back(m.pred.get());
          }
        }
    for (const Extract &x : filter.extracts) {
      wanted.insert(x.ref.proto);
      needs_[x.ref.proto].count = true;
      needs_[x.ref.proto].recorded.insert(x.ref.field->name);
    }
    // Relevant: can reach a wanted protocol.
    bool changed = true;
    for (const Protocol *p : wanted)
      needs_[p].relevant = true;
    while (changed) {
      changed = false;
      for (const auto &p : db.protocols()) {
        ProtoNeeds &n = needs_[p.get()];
        if (n.relevant)
          continue;
        for (const Protocol *s : p->successors)
          if (needs_[s].relevant) {
            n.relevant = changed = true;
            break;
          }
      }
    }
    needs_[&db.start()].relevant = true;
    for (const auto &p : db.protocols()) {
      ProtoNeeds &n = needs_[p.get()];
      for (const Protocol *s : p->successors)
        if (needs_[s].relevant)
          n.encapsulation = true;
      if (n.relevant)
        decideValues(*p, n);
    }
    if (tunnels) {
      // One bit per distinct layer.
      llvm::DenseMap<int, unsigned> bits;
      for (const auto &p : db.protocols()) {
        auto it = bits.try_emplace(p->layer, bits.size()).first;
        layerBit[p.get()] = it->second % 32;
      }
    }
  }

  /// Which field values the parse must read, and which size loops it can
  /// jump over: a loop whose fields nothing reads ends where its size
  /// says, so it is one addition.
  void decideValues(const Protocol &p, ProtoNeeds &n) {
    std::function<void(const Expr &)> refs = [&](const Expr &e) {
      if (e.kind == Expr::Field)
        n.values.insert(e.name);
      if (e.lhs)
        refs(*e.lhs);
      if (e.rhs)
        refs(*e.rhs);
    };
    std::function<bool(const std::vector<Node> &)> defines =
        [&](const std::vector<Node> &nodes) {
          for (const Node &x : nodes) {
            if (x.isField() &&
                (n.values.contains(x.name) || n.recorded.contains(x.name)))
              return true;
            if (x.kind == Node::IncludeBlock &&
                defines(p.blocks.find(x.name)->second.children))
              return true;
            if (defines(x.children) || defines(x.otherwise))
              return true;
            for (const Node::Case &c : x.cases)
              if (defines(c.body))
                return true;
          }
          return false;
        };
    std::function<void(const std::vector<Node> &)> walk =
        [&](const std::vector<Node> &nodes) {
          for (const Node &x : nodes) {
            if (x.expr)
              refs(*x.expr);
            if (n.skipped.count(&x))
              continue;
            if (x.kind == Node::IncludeBlock)
              walk(p.blocks.find(x.name)->second.children);
            walk(x.children);
            walk(x.otherwise);
            for (const Node::Case &c : x.cases)
              walk(c.body);
          }
        };
    std::function<void(const std::vector<Node> &)> sizeLoops =
        [&](const std::vector<Node> &nodes) {
          for (const Node &x : nodes) {
            if (x.kind == Node::Loop && x.loopKind == Node::SizeLoop)
              n.skipped.insert(&x);
            if (x.kind == Node::IncludeBlock)
              sizeLoops(p.blocks.find(x.name)->second.children);
            sizeLoops(x.children);
            sizeLoops(x.otherwise);
            for (const Node::Case &c : x.cases)
              sizeLoops(c.body);
          }
        };
    if (!parsesFormat(p, n))
      return;
    sizeLoops(p.format);
    for (;;) {
      n.values.clear();
      if (n.encapsulation)
        walk(p.encapsulation);
      walk(p.format);
      bool changed = false;
      for (auto it = n.skipped.begin(); it != n.skipped.end();) {
        if (defines((*it)->children)) {
          it = n.skipped.erase(it);
          changed = true;
        } else {
          ++it;
        }
      }
      if (!changed)
        return;
    }
  }

  static bool parsesFormat(const Protocol &p, const ProtoNeeds &n) {
    return !p.format.empty() && (n.encapsulation || !n.recorded.empty());
  }

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  Block *newBlock() {
    Block *block = new Block();
    body.push_back(block);
    return block;
  }
  void startBlock(Block *block) { b.setInsertionPointToEnd(block); }
  Value c32(uint32_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                        static_cast<int64_t>(v));
  }
  Value var(const std::string &name) {
    auto it = vars.find(name);
    if (it != vars.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body.front());
    Value slot =
        memref::AllocaOp::create(b, loc, MemRefType::get({}, b.getI32Type()));
    vars[name] = slot;
    return slot;
  }
  Value get(Value slot) {
    return memref::LoadOp::create(b, loc, slot, ValueRange{});
  }
  void set(Value slot, Value v) {
    memref::StoreOp::create(b, loc, v, slot, ValueRange{});
  }
  Value chainVar(size_t c) { return var("chain." + std::to_string(c)); }
  Value flagVar(size_t c) { return var("flag." + std::to_string(c)); }
  std::string fieldVar(const std::string &kind, const std::string &name) {
    return proto->name + "." + kind + "." + name;
  }
  Value cmp(arith::CmpIPredicate p, Value l, Value r) {
    return arith::CmpIOp::create(b, loc, p, l, r);
  }
  Value toI32(Value bit) { return arith::ExtUIOp::create(b, loc, i32, bit); }
  Value isTrue(Value v) {
    return cmp(arith::CmpIPredicate::ne, v, c32(0));
  }

  /// Continue only if `ok`, else go to `otherwise`.
  void require(Value ok, Block *otherwise) {
    Block *next = newBlock();
    cf::CondBranchOp::create(b, loc, ok, next, otherwise);
    startBlock(next);
  }
  /// Whether [offset, offset + size) lies inside the captured packet.
  Value inPacket(Value offset, Value size) {
    Value end = arith::AddIOp::create(b, loc, offset, size);
    Value noWrap = cmp(arith::CmpIPredicate::uge, end, offset);
    Value fits = cmp(arith::CmpIPredicate::ule, end, pktLen);
    return arith::AndIOp::create(b, loc, noWrap, fits);
  }
  /// Big-endian value of 1 to 4 bytes at `offset`, already checked.
  Value loadBytes(Value offset, unsigned size) {
    auto load = [&](Value at, unsigned bytes) -> Value {
      Value v = LoadOp::create(b, loc, b.getIntegerType(8 * bytes),
                               MemSpace::Packet, at, /*in_bounds=*/true);
      return bytes == 4 ? v : toI32(v);
    };
    if (size != 3)
      return load(offset, size);
    Value hi = load(offset, 2);
    Value lo = load(arith::AddIOp::create(b, loc, offset, c32(2)), 1);
    return arith::OrIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, hi, c32(8)), lo);
  }
  /// Load after a bounds check that goes to `otherwise` when it fails.
  Value checkedLoad(Value offset, unsigned size, Block *otherwise) {
    require(inPacket(offset, c32(size)), otherwise);
    return loadBytes(offset, size);
  }
  Value fieldValue(Value raw, uint32_t mask) {
    if (!mask)
      return raw;
    Value v = arith::AndIOp::create(b, loc, raw, c32(mask));
    unsigned shift = llvm::countr_zero(mask);
    return shift ? arith::ShRUIOp::create(b, loc, v, c32(shift)).getResult()
                 : v;
  }

  //===--------------------------------------------------------------------===//
  // Headers
  //===--------------------------------------------------------------------===//

  Block *headerBlock(const Protocol *p) {
    if (!needs_[p].relevant)
      return finish;
    auto it = headers.find(p);
    if (it != headers.end())
      return it->second;
    Block *block = newBlock();
    headers[p] = block;
    pending.push_back(p);
    return block;
  }

  void emitHeader(const Protocol &p) {
    proto = &p;
    ProtoNeeds &n = needs_[&p];
    startBlock(headers[&p]);
    // A bound on the headers one packet can make us visit.
    Value hops = arith::AddIOp::create(b, loc, get(var("hops")), c32(1));
    set(var("hops"), hops);
    require(cmp(arith::CmpIPredicate::ule, hops, c32(netpfl::kMaxHeaders)),
            finish);
    Value base = get(var("off"));
    if (n.count)
      set(var("count." + p.name),
          arith::AddIOp::create(b, loc, get(var("count." + p.name)), c32(1)));
    set(var("tunneled"), c32(0));
    if (tunnels) {
      Value layers = get(var("layers"));
      Value bit = c32(1u << layerBit[&p]);
      set(var("tunneled"),
          toI32(isTrue(arith::AndIOp::create(b, loc, layers, bit))));
      set(var("layers"), arith::OrIOp::create(b, loc, layers, bit));
    }
    set(var("base"), base);
    set(var("cur"), base);
    set(var("stop"), c32(0));
    for (auto &r : n.recorded) {
      set(var(fieldVar("off", r.getKey().str())), c32(kAbsent));
      set(var(fieldVar("len", r.getKey().str())), c32(0));
    }
    for (auto &v : n.values)
      set(var(fieldVar("val", v.getKey().str())), c32(0));

    Block *tests = newBlock();
    if (parsesFormat(p, n)) {
      // A field the packet is too short for ends the parse after this
      // header's tests.
      Block *stop = newBlock();
      stopTarget = stop;
      emitSequence(p.format);
      cf::BranchOp::create(b, loc, tests);
      startBlock(stop);
      set(var("stop"), c32(1));
      cf::BranchOp::create(b, loc, tests);
    } else {
      cf::BranchOp::create(b, loc, tests);
    }

    startBlock(tests);
    bool stepped = false;
    for (size_t c = 0; c < filter.chains.size(); ++c)
      stepped |= stepChain(c, p);
    extractFields(p);
    // Tests only ever become true; when that decides the formula whatever
    // the rest of the packet holds, stop here.
    if (stepped && filter.formula && filter.extracts.empty()) {
      auto [yes, no] = decided(*filter.formula);
      require(arith::XOrIOp::create(
                  b, loc, yes,
                  arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
              accept);
      require(arith::XOrIOp::create(
                  b, loc, no,
                  arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
              reject);
    }
    if (!n.encapsulation) {
      cf::BranchOp::create(b, loc, finish);
      return;
    }
    require(cmp(arith::CmpIPredicate::eq, get(var("stop")), c32(0)), finish);
    stopTarget = finish;
    emitSequence(p.encapsulation);
    cf::BranchOp::create(b, loc, finish); // no <nextproto> reached
  }

  //===--------------------------------------------------------------------===//
  // <format> and <encapsulation>
  //===--------------------------------------------------------------------===//

  void emitSequence(const std::vector<Node> &nodes) {
    for (const Node &x : nodes)
      emitNode(x);
  }

  /// Note a decoded field: its position if the filter reads it, its value
  /// if a NetPDL expression does.
  void decoded(const Node &x, Value at, Value size, unsigned loadSize) {
    ProtoNeeds &n = needs_[proto];
    if (n.recorded.contains(x.name)) {
      Value offSlot = var(fieldVar("off", x.name));
      Value lenSlot = var(fieldVar("len", x.name));
      Value first = cmp(arith::CmpIPredicate::eq, get(offSlot), c32(kAbsent));
      set(lenSlot, arith::SelectOp::create(b, loc, first, size, get(lenSlot)));
      set(offSlot, arith::SelectOp::create(b, loc, first, at, get(offSlot)));
    }
    if (n.values.contains(x.name)) {
      if (!loadSize || loadSize > 4)
        fail(size_t(0), "protocol database: '" + proto->name + "." + x.name +
                    "' is read with buf2int but is not a field of 1 to 4 "
                    "bytes (" + x.loc.str() + ")");
      set(var(fieldVar("val", x.name)),
          fieldValue(checkedLoad(at, loadSize, stopTarget), x.mask));
    }
  }

  void emitNode(const Node &x) {
    ProtoNeeds &n = needs_[proto];
    Value curSlot = var("cur");
    switch (x.kind) {
    case Node::FixedField: {
      Value at = get(curSlot);
      decoded(x, at, c32(x.size), x.size);
      for (const Node &sub : x.children)
        decoded(sub, at, c32(sub.size), sub.size);
      set(curSlot, arith::AddIOp::create(b, loc, at, c32(x.size)));
      return;
    }
    case Node::BitField: {
      Value at = get(curSlot);
      decoded(x, at, c32(x.size), x.size);
      if (x.last)
        set(curSlot, arith::AddIOp::create(b, loc, at, c32(x.size)));
      return;
    }
    case Node::VariableField: {
      Value size = expr(*x.expr);
      Value at = get(curSlot);
      decoded(x, at, size, 0);
      set(curSlot, arith::AddIOp::create(b, loc, at, size));
      return;
    }
    case Node::PaddingField: {
      Value at = get(curSlot);
      Value rel = arith::SubIOp::create(b, loc, at, get(var("base")));
      Value rem = arith::RemUIOp::create(b, loc, rel, c32(x.size));
      Value pad = arith::RemUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, c32(x.size), rem),
          c32(x.size));
      set(curSlot, arith::AddIOp::create(b, loc, at, pad));
      return;
    }
    case Node::Block:
      emitSequence(x.children);
      return;
    case Node::IncludeBlock:
      emitSequence(proto->blocks.find(x.name)->second.children);
      return;
    case Node::If: {
      Value c = isTrue(expr(*x.expr));
      Block *yes = newBlock(), *no = newBlock(), *join = newBlock();
      cf::CondBranchOp::create(b, loc, c, yes, no);
      startBlock(yes);
      emitSequence(x.children);
      cf::BranchOp::create(b, loc, join);
      startBlock(no);
      emitSequence(x.otherwise);
      cf::BranchOp::create(b, loc, join);
      startBlock(join);
      return;
    }
    case Node::Switch: {
      Value v = expr(*x.expr);
      Block *join = newBlock();
      for (const Node::Case &c : x.cases) {
        Value hit =
            c.low == c.high
                ? cmp(arith::CmpIPredicate::eq, v, c32(c.low))
                : arith::AndIOp::create(
                      b, loc, cmp(arith::CmpIPredicate::uge, v, c32(c.low)),
                      cmp(arith::CmpIPredicate::ule, v, c32(c.high)));
        Block *body = newBlock(), *next = newBlock();
        cf::CondBranchOp::create(b, loc, hit, body, next);
        startBlock(body);
        emitSequence(c.body);
        cf::BranchOp::create(b, loc, join);
        startBlock(next);
      }
      if (x.hasDefault)
        emitSequence(x.otherwise);
      cf::BranchOp::create(b, loc, join);
      startBlock(join);
      return;
    }
    case Node::Loop:
      emitLoop(x, n);
      return;
    case Node::LoopCtrl: {
      const LoopTargets &t = loops.back();
      cf::BranchOp::create(b, loc, x.isBreak ? t.exit : t.next);
      startBlock(newBlock()); // unreachable rest of the sequence
      return;
    }
    case Node::NextProto: {
      Block *target = headerBlock(x.target);
      if (target != finish)
        set(var("off"), get(curSlot));
      cf::BranchOp::create(b, loc, target);
      startBlock(newBlock());
      return;
    }
    }
  }

  void emitLoop(const Node &x, ProtoNeeds &n) {
    Value curSlot = var("cur");
    if (x.loopKind == Node::SizeLoop) {
      Value end = arith::AddIOp::create(b, loc, get(curSlot), expr(*x.expr));
      if (n.skipped.count(&x)) {
        set(curSlot, end);
        return;
      }
      std::string endName = "loopend." + std::to_string(loops.size());
      set(var(endName), end);
      Block *head = newBlock(), *bodyBlock = newBlock(), *exit = newBlock();
      cf::BranchOp::create(b, loc, head);
      startBlock(head);
      Value more = cmp(arith::CmpIPredicate::ult, get(curSlot),
                       get(var(endName)));
      cf::CondBranchOp::create(b, loc, more, bodyBlock, exit);
      startBlock(bodyBlock);
      loopBody(x, head, exit);
      startBlock(exit);
      // The loop's size decides where the header goes on.
      set(curSlot, get(var(endName)));
      return;
    }
    std::string countName = "loopcount." + std::to_string(loops.size());
    if (x.loopKind == Node::TimesLoop)
      set(var(countName), expr(*x.expr));
    Block *head = newBlock(), *bodyBlock = newBlock(), *exit = newBlock();
    cf::BranchOp::create(b, loc, x.loopKind == Node::DoWhileLoop ? bodyBlock
                                                                 : head);
    startBlock(head);
    Value more;
    if (x.loopKind == Node::TimesLoop) {
      Value left = get(var(countName));
      more = cmp(arith::CmpIPredicate::ne, left, c32(0));
      set(var(countName), arith::SubIOp::create(b, loc, left, c32(1)));
    } else {
      more = isTrue(expr(*x.expr));
    }
    cf::CondBranchOp::create(b, loc, more, bodyBlock, exit);
    startBlock(bodyBlock);
    loopBody(x, head, exit);
    startBlock(exit);
  }

  /// The body of a loop, which must move forward in the packet at every
  /// iteration (so that no database makes a loop that never ends): an
  /// iteration that does not ends the loop, and so does one that leaves
  /// the packet.
  void loopBody(const Node &x, Block *head, Block *exit) {
    Value curSlot = var("cur");
    std::string startName = "loopstart." + std::to_string(loops.size());
    set(var(startName), get(curSlot));
    Block *next = newBlock();
    loops.push_back({next, exit});
    emitSequence(x.children);
    loops.pop_back();
    cf::BranchOp::create(b, loc, next);
    startBlock(next);
    Value cur = get(curSlot);
    Value moved = cmp(arith::CmpIPredicate::ugt, cur, get(var(startName)));
    Value inside = cmp(arith::CmpIPredicate::ult, cur, pktLen);
    cf::CondBranchOp::create(b, loc, arith::AndIOp::create(b, loc, moved,
                                                           inside),
                             head, exit);
  }

  /// A NetPDL expression of the header being decoded, as an i32.
  Value expr(const Expr &e) {
    switch (e.kind) {
    case Expr::Number:
      return c32(e.value);
    case Expr::Field:
      return get(var(fieldVar("val", e.name)));
    case Expr::PacketSlice: {
      Value at = expr(*e.lhs);
      return checkedLoad(at, e.value, stopTarget);
    }
    case Expr::CurrentOffset:
      return get(var("cur"));
    case Expr::ProtoOffset:
      return get(var("base"));
    case Expr::PacketLength:
      return pktLen;
    case Expr::Unary: {
      Value v = expr(*e.lhs);
      if (e.op == Expr::Not)
        return toI32(cmp(arith::CmpIPredicate::eq, v, c32(0)));
      return arith::XOrIOp::create(b, loc, v, c32(0xFFFFFFFF));
    }
    case Expr::Binary:
      break;
    }
    if (e.op == Expr::And || e.op == Expr::Or) {
      // Short-circuit: the right side may read the packet.
      std::string name = "logic." + std::to_string(logicDepth++);
      Value slot = var(name);
      Value l = isTrue(expr(*e.lhs));
      set(slot, toI32(l));
      Block *right = newBlock(), *join = newBlock();
      if (e.op == Expr::And)
        cf::CondBranchOp::create(b, loc, l, right, join);
      else
        cf::CondBranchOp::create(b, loc, l, join, right);
      startBlock(right);
      set(slot, toI32(isTrue(expr(*e.rhs))));
      cf::BranchOp::create(b, loc, join);
      startBlock(join);
      --logicDepth;
      return get(slot);
    }
    Value l = expr(*e.lhs), r = expr(*e.rhs);
    switch (e.op) {
    case Expr::Add: return arith::AddIOp::create(b, loc, l, r);
    case Expr::Sub: return arith::SubIOp::create(b, loc, l, r);
    case Expr::Mul: return arith::MulIOp::create(b, loc, l, r);
    case Expr::Div:
    case Expr::Mod:
      // A database dividing by zero cannot decode this packet further.
      require(cmp(arith::CmpIPredicate::ne, r, c32(0)), stopTarget);
      if (e.op == Expr::Div)
        return arith::DivUIOp::create(b, loc, l, r);
      return arith::RemUIOp::create(b, loc, l, r);
    case Expr::BitAnd: return arith::AndIOp::create(b, loc, l, r);
    case Expr::BitOr: return arith::OrIOp::create(b, loc, l, r);
    case Expr::Eq: return toI32(cmp(arith::CmpIPredicate::eq, l, r));
    case Expr::Ne: return toI32(cmp(arith::CmpIPredicate::ne, l, r));
    case Expr::Lt: return toI32(cmp(arith::CmpIPredicate::ult, l, r));
    case Expr::Le: return toI32(cmp(arith::CmpIPredicate::ule, l, r));
    case Expr::Gt: return toI32(cmp(arith::CmpIPredicate::ugt, l, r));
    case Expr::Ge: return toI32(cmp(arith::CmpIPredicate::uge, l, r));
    default: break;
    }
    llvm_unreachable("unknown NetPDL operator");
  }
  unsigned logicDepth = 0;

  //===--------------------------------------------------------------------===//
  // The filter's tests, at each header
  //===--------------------------------------------------------------------===//

  /// Whether header `p` (the one just decoded) matches `m`, as an i1.
  Value matches(const Member &m, const Protocol &p) {
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    Value r = yes;
    if (m.index)
      r = cmp(arith::CmpIPredicate::eq, get(var("count." + p.name)),
              c32(m.index));
    if (m.tunneled)
      r = arith::AndIOp::create(b, loc, r, isTrue(get(var("tunneled"))));
    if (m.pred)
      r = arith::AndIOp::create(b, loc, r, predicate(*m.pred));
    return r;
  }

  /// Whether header `p` matches element `e` (i1), or null when it cannot.
  Value elementMatch(const Element &e, const Protocol &p) {
    switch (e.kind) {
    case Element::Any:
      return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    case Element::Complement:
      for (const Member &m : e.members)
        if (m.proto == &p)
          return nullptr;
      return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    case Element::Set:
      for (const Member &m : e.members)
        if (m.proto == &p)
          return matches(m, p);
      return nullptr;
    }
    return nullptr;
  }

  /// Whether the formula is already true, and already false, given that
  /// the tests true so far stay true and the others may still become
  /// true (Kleene's three-valued logic).
  std::pair<Value, Value> decided(const Formula &f) {
    Value one = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    switch (f.kind) {
    case Formula::Leaf: {
      Value yes = isTrue(get(flagVar(f.chain)));
      Value no = arith::AndIOp::create(
          b, loc, chainDead(f.chain),
          arith::XOrIOp::create(b, loc, yes, one));
      return {yes, no};
    }
    case Formula::Not: {
      auto [yes, no] = decided(f.kids[0]);
      return {no, yes};
    }
    case Formula::And:
    case Formula::Or: {
      bool isAnd = f.kind == Formula::And;
      Value yes = isAnd ? one : zero, no = isAnd ? zero : one;
      for (const Formula &k : f.kids) {
        auto [ky, kn] = decided(k);
        if (isAnd) {
          yes = arith::AndIOp::create(b, loc, yes, ky);
          no = arith::OrIOp::create(b, loc, no, kn);
        } else {
          yes = arith::OrIOp::create(b, loc, yes, ky);
          no = arith::AndIOp::create(b, loc, no, kn);
        }
      }
      return {yes, no};
    }
    }
    llvm_unreachable("unknown formula");
  }

  /// Whether chain `c` can no longer become true (i1): nothing is partly
  /// matched, and no header still to come can start a match, because
  /// every element a match may start with names header instances that
  /// are already behind (`ethernet%1` after the first Ethernet header).
  /// Chains that may start at any later header are never dead.
  Value chainDead(size_t c) {
    const Chain &chain = filter.chains[c];
    size_t n = chain.elems.size();
    Value never = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    Value dead = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    // Anchored chains start at the first header only, which is behind.
    if (!chain.anchored) {
      uint32_t starts = closure(chain, 1);
      for (size_t j = 0; j < n; ++j) {
        if (!((starts >> j) & 1))
          continue;
        const Element &e = chain.elems[j];
        if (e.kind != Element::Set)
          return never;
        for (const Member &m : e.members) {
          if (!m.index)
            return never;
          dead = arith::AndIOp::create(
              b, loc, dead,
              cmp(arith::CmpIPredicate::uge,
                  get(var("count." + m.proto->name)), c32(m.index)));
        }
      }
    }
    if (n == 1 && !chain.anchored)
      return dead; // no partial matches are kept
    uint32_t partial = ((1u << n) - 1) & ~1u; // states 1 .. n-1
    Value none = cmp(arith::CmpIPredicate::eq,
                     arith::AndIOp::create(b, loc, get(chainVar(c)),
                                           c32(partial)),
                     c32(0));
    return arith::AndIOp::create(b, loc, dead, none);
  }

  /// Step the automaton of chain `c` over header `p` (false when `p`
  /// cannot change it). State bit j: the last headers matched elements
  /// [0, j).
  bool stepChain(size_t c, const Protocol &p) {
    const Chain &chain = filter.chains[c];
    size_t n = chain.elems.size();
    bool relevantHere = false;
    for (const Element &e : chain.elems)
      if (e.kind != Element::Set ||
          llvm::any_of(e.members,
                       [&](const Member &m) { return m.proto == &p; }))
        relevantHere = true;
    if (n == 1 && !chain.anchored) {
      // The common case: some header matches.
      if (!relevantHere)
        return false;
      Value m = elementMatch(chain.elems[0], p);
      set(flagVar(c), arith::OrIOp::create(b, loc, get(flagVar(c)),
                                           toI32(m)));
      return true;
    }
    Value old = get(chainVar(c));
    if (!chain.anchored)
      old = arith::OrIOp::create(b, loc, old, c32(closure(chain, 1)));
    else if (&p == &db.start())
      old = c32(closure(chain, 1));
    Value next = c32(0);
    for (size_t j = 0; j < n; ++j) {
      const Element &e = chain.elems[j];
      Value m = elementMatch(e, p);
      if (!m)
        continue;
      // From state j (elements before j matched) to j+1; a repeated
      // element also stays in j+1.
      uint32_t from = 1u << j;
      if (e.repeat == '*' || e.repeat == '+')
        from |= 1u << (j + 1);
      Value active = isTrue(arith::AndIOp::create(b, loc, old, c32(from)));
      Value step = arith::AndIOp::create(b, loc, active, m);
      Value bit = arith::SelectOp::create(
          b, loc, step, c32(closure(chain, 1u << (j + 1))), c32(0));
      next = arith::OrIOp::create(b, loc, next, bit);
    }
    set(chainVar(c), next);
    Value done = isTrue(arith::AndIOp::create(b, loc, next, c32(1u << n)));
    set(flagVar(c),
        arith::OrIOp::create(b, loc, get(flagVar(c)), toI32(done)));
    return true;
  }

  /// States reachable from `states` by skipping optional elements.
  static uint32_t closure(const Chain &chain, uint32_t states) {
    for (size_t j = 0; j < chain.elems.size(); ++j)
      if ((states >> j) & 1)
        if (chain.elems[j].repeat == '?' || chain.elems[j].repeat == '*')
          states |= 1u << (j + 1);
    return states;
  }

  /// A test on the header just decoded, as an i1: false when a field it
  /// needs is absent or beyond the captured bytes.
  Value predicate(const Pred &p) {
    Value result = var("pred");
    set(result, c32(0));
    Block *done = newBlock();
    if (p.kind == Pred::Relation) {
      if (p.lhs->kind == Arith::Bytes || p.rhs->kind == Arith::Bytes) {
        const Arith &f = p.lhs->kind == Arith::Field ? *p.lhs : *p.rhs;
        const Arith &lit = p.lhs->kind == Arith::Bytes ? *p.lhs : *p.rhs;
        Value eq = wideEqual(f, lit.bytes, done);
        if (p.rel == arith::CmpIPredicate::ne)
          eq = arith::XOrIOp::create(
              b, loc, eq, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
        set(result, toI32(eq));
      } else {
        Value l = arithValue(*p.lhs, done), r = arithValue(*p.rhs, done);
        set(result, toI32(cmp(p.rel, l, r)));
      }
    } else {
      set(result, toI32(stringTest(p, done)));
    }
    cf::BranchOp::create(b, loc, done);
    startBlock(done);
    return isTrue(get(result));
  }

  /// Offset and length of a recorded field; goes to `absent` when the
  /// header had no such field.
  std::pair<Value, Value> fieldPosition(const FieldRef &ref, Block *absent) {
    Value off = get(var(fieldVar("off", ref.field->name)));
    require(cmp(arith::CmpIPredicate::ne, off, c32(kAbsent)), absent);
    return {off, get(var(fieldVar("len", ref.field->name)))};
  }

  Value arithValue(const Arith &a, Block *absent) {
    switch (a.kind) {
    case Arith::Const:
      return c32(a.k);
    case Arith::Field: {
      auto [off, len] = fieldPosition(a.ref, absent);
      const FieldInfo &f = *a.ref.field;
      // A name declared with other sizes elsewhere in the header (ARP's
      // addresses): only the declaration of the size compared counts.
      require(cmp(arith::CmpIPredicate::eq, len, c32(f.size)), absent);
      return fieldValue(checkedLoad(off, f.size, absent), f.mask);
    }
    case Arith::Slice: {
      Value at = arith::AddIOp::create(b, loc, get(var("base")), c32(a.k));
      return checkedLoad(at, a.size, absent);
    }
    case Arith::BitNot:
      return arith::XOrIOp::create(b, loc, arithValue(*a.a, absent),
                                   c32(0xFFFFFFFF));
    case Arith::Binary:
      break;
    case Arith::Bytes:
      llvm_unreachable("addresses are compared by wideEqual");
    }
    Value l = arithValue(*a.a, absent), r = arithValue(*a.b, absent);
    switch (a.op) {
    case '+': return arith::AddIOp::create(b, loc, l, r);
    case '-': return arith::SubIOp::create(b, loc, l, r);
    case '*': return arith::MulIOp::create(b, loc, l, r);
    case '&': return arith::AndIOp::create(b, loc, l, r);
    case '|': return arith::OrIOp::create(b, loc, l, r);
    case '^': return arith::XOrIOp::create(b, loc, l, r);
    case '<':
    case '>': {
      // Shifts by 32 or more give 0.
      Value big = cmp(arith::CmpIPredicate::uge, r, c32(32));
      Value safe = arith::AndIOp::create(b, loc, r, c32(31));
      Value shifted =
          a.op == '<' ? arith::ShLIOp::create(b, loc, l, safe).getResult()
                      : arith::ShRUIOp::create(b, loc, l, safe).getResult();
      return arith::SelectOp::create(b, loc, big, c32(0), shifted);
    }
    }
    llvm_unreachable("unknown operator");
  }

  /// A field of 6 or 16 bytes against an address, as an i1.
  Value wideEqual(const Arith &f, const std::vector<uint8_t> &bytes,
                  Block *absent) {
    auto [off, len] = fieldPosition(f.ref, absent);
    require(cmp(arith::CmpIPredicate::eq, len, c32(bytes.size())), absent);
    require(inPacket(off, c32(bytes.size())), absent);
    Value all = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    for (size_t i = 0; i < bytes.size();) {
      unsigned chunk = bytes.size() - i >= 4 ? 4 : 2;
      uint32_t want = 0;
      for (unsigned k = 0; k < chunk; ++k)
        want = want << 8 | bytes[i + k];
      Value at = arith::AddIOp::create(b, loc, off, c32(i));
      Value got = loadBytes(at, chunk);
      all = arith::AndIOp::create(b, loc, all,
                                  cmp(arith::CmpIPredicate::eq, got,
                                      c32(want)));
      i += chunk;
    }
    return all;
  }

  /// `field contains "text"`: a search over the captured part of the
  /// field, case-insensitive (ASCII) unless `casesensitive`.
  Value stringTest(const Pred &p, Block *absent) {
    auto [off, len] = fieldPosition(p.field, absent);
    // Search the part of the field that was captured.
    Value avail = arith::SelectOp::create(
        b, loc, cmp(arith::CmpIPredicate::ule, off, pktLen),
        arith::SubIOp::create(b, loc, pktLen, off), c32(0));
    Value span = arith::MinUIOp::create(b, loc, len, avail);
    if (p.kind == Pred::Matches) {
      // The regexp coprocessor's range test (docs/netil.md, 7.1): pattern
      // K in R0, the range in R1 and R2, operation 4, the answer in R0.
      auto it = llvm::find(regexps, &p);
      uint32_t k = it - regexps.begin();
      CoproWriteOp::create(b, loc, kRegexp, 0, c32(k));
      CoproWriteOp::create(b, loc, kRegexp, 1, off);
      CoproWriteOp::create(b, loc, kRegexp, 2, span);
      CoproInvokeOp::create(b, loc, kRegexp, 4);
      return isTrue(CoproReadOp::create(b, loc, i32, kRegexp, 0));
    }
    uint32_t n = p.pattern.size();
    require(cmp(arith::CmpIPredicate::uge, span, c32(n)), absent);
    // Candidate starts: off .. off + span - n.
    Value last = arith::AddIOp::create(
        b, loc, off, arith::SubIOp::create(b, loc, span, c32(n)));
    Value pos = var("search.pos");
    set(pos, off);
    Block *head = newBlock(), *found = newBlock(), *advance = newBlock();
    cf::BranchOp::create(b, loc, head);
    startBlock(head);
    Value at = get(pos);
    for (uint32_t k = 0; k < n; ++k) {
      Value byte = LoadOp::create(
          b, loc, b.getI8Type(), MemSpace::Packet,
          k ? arith::AddIOp::create(b, loc, at, c32(k)).getResult() : at,
          /*in_bounds=*/true);
      Value v = toI32(byte);
      unsigned char want = p.pattern[k];
      if (!p.caseSensitive && llvm::isAlpha(want)) {
        v = arith::OrIOp::create(b, loc, v, c32(0x20));
        want = llvm::toLower(want);
      }
      Block *next = newBlock();
      cf::CondBranchOp::create(b, loc,
                               cmp(arith::CmpIPredicate::eq, v, c32(want)),
                               next, advance);
      startBlock(next);
    }
    cf::BranchOp::create(b, loc, found);
    startBlock(advance);
    Value again = cmp(arith::CmpIPredicate::ult, at, last);
    set(pos, arith::AddIOp::create(b, loc, at, c32(1)));
    cf::CondBranchOp::create(b, loc, again, head, absent);
    startBlock(found);
    return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  }

  void extractFields(const Protocol &p) {
    for (size_t i = 0; i < filter.extracts.size(); ++i) {
      const FieldRef &ref = filter.extracts[i].ref;
      if (ref.proto != &p)
        continue;
      Block *store = newBlock(), *skip = newBlock();
      Value off = get(var(fieldVar("off", ref.field->name)));
      Value len = get(var(fieldVar("len", ref.field->name)));
      // Only a field the capture holds entirely counts as extracted.
      Value here = arith::AndIOp::create(
          b, loc,
          cmp(arith::CmpIPredicate::eq, get(var("count." + p.name)),
              c32(ref.index)),
          arith::AndIOp::create(
              b, loc, cmp(arith::CmpIPredicate::ne, off, c32(kAbsent)),
              inPacket(off, len)));
      cf::CondBranchOp::create(b, loc, here, store, skip);
      startBlock(store);
      Value word = arith::OrIOp::create(
          b, loc, arith::ShLIOp::create(b, loc, off, c32(16)),
          arith::AndIOp::create(b, loc, len, c32(0xFFFF)));
      StoreOp::create(b, loc, word, MemSpace::Info,
                      c32(i * netpfl::kExtractedFieldSize));
      cf::BranchOp::create(b, loc, skip);
      startBlock(skip);
    }
  }

  Value formula(const Formula &f) {
    switch (f.kind) {
    case Formula::Leaf:
      return isTrue(get(flagVar(f.chain)));
    case Formula::Not:
      return arith::XOrIOp::create(
          b, loc, formula(f.kids[0]),
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    case Formula::And:
    case Formula::Or: {
      Value acc = formula(f.kids[0]);
      for (size_t i = 1; i < f.kids.size(); ++i) {
        Value k = formula(f.kids[i]);
        acc = f.kind == Formula::And
                  ? arith::AndIOp::create(b, loc, acc, k).getResult()
                  : arith::OrIOp::create(b, loc, acc, k).getResult();
      }
      return acc;
    }
    }
    llvm_unreachable("unknown formula");
  }
};

/// `matches` runs on the regexp coprocessor: the NetPE declares it with
/// the patterns as initialisation data and initialises it in its init
/// handler. Each pattern is checked here with the engine that will run it,
/// so that a bad one is an error at its position, not an exception on
/// every packet.
void addRegexpCoprocessor(OpBuilder &b, Location loc, filter::FilterApp &app,
                          llvm::ArrayRef<const Pred *> patterns) {
  for (const Pred *p : patterns) {
    if (p->pattern.size() > 0xFFFF)
      fail(p->pos, "the regular expression is longer than 65535 bytes");
    if (StringRef(p->pattern).contains('\0'))
      fail(p->pos, "a regular expression cannot hold a NUL byte; write "
                   "\\x00 to match one");
    hs_expr_info_t *info = nullptr;
    hs_compile_error_t *compileError = nullptr;
    unsigned flags = HS_FLAG_ALLOWEMPTY |
                     (p->caseSensitive ? 0u : unsigned(HS_FLAG_CASELESS));
    if (hs_expression_info(p->pattern.c_str(), flags, &info, &compileError) !=
        HS_SUCCESS) {
      std::string why = compileError ? compileError->message : "invalid";
      hs_free_compile_error(compileError);
      fail(p->pos, "bad regular expression: " + why);
    }
    free(info);
  }
  app.pe.setCoprocessorsAttr(b.getStrArrayAttr({kRegexp}));
  app.pe.setInitdataAttr(b.getDenseI8ArrayAttr(regexpInitData(patterns)));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(app.handler);
  auto init = HandlerOp::create(b, loc, HandlerKind::Init);
  b.setInsertionPointToEnd(&init.getBody().front());
  CoproInitOp::create(b, loc, b.getI32Type(), kRegexp, 0);
  RetOp::create(b, loc);
}

} // namespace

OwningOpRef<ModuleOp> netvm::netpfl::compile(MLIRContext &context,
                                             StringRef filterText,
                                             const Database &db,
                                             const CompileOptions &options,
                                             std::string &error) {
  context.loadDialect<NetVMDialect, arith::ArithDialect,
                      cf::ControlFlowDialect, memref::MemRefDialect>();
  filter::FilterParser<netvm_netpfl::NetPFLLexer, P> parser(filterText,
                                                            kSyntaxWords);
  std::optional<FilterError> syntaxError;
  P::ProgramContext *tree = parser.parse(syntaxError);
  if (!tree) {
    error = filter::withCaret(filterText, *syntaxError, options.fileName);
    return nullptr;
  }

  Filter filter;
  Location loc = FileLineColLoc::get(
      &context, options.fileName.empty() ? "<filter>" : options.fileName, 1,
      1);
  OpBuilder b(&context);
  filter::FilterApp app;
  try {
    Walker(db, filter).program(tree);
    std::string out =
        filter.port ? "port" + std::to_string(*filter.port) : "match";
    app = filter::buildFilterApp(b, loc, options.appName, out);
    if (!filter.extracts.empty())
      app.pe.setInfoSize(filter.extracts.size() * kExtractedFieldSize);
    CodeGen gen(b, loc, app.handler.getBody(), db, filter, app.accept,
                app.reject);
    gen.run();
    if (!gen.regexpPatterns().empty())
      addRegexpCoprocessor(b, loc, app, gen.regexpPatterns());
    if (failed(gen.promote(app.handler))) {
      error = "internal error: the filter's variables did not become SSA "
              "values";
      return nullptr;
    }
  } catch (const FilterError &e) {
    error = filter::withCaret(filterText, e, options.fileName);
    return nullptr;
  }
  return filter::finishFilterApp(app, error);
}
