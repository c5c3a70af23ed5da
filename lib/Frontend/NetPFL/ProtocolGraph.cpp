//===- ProtocolGraph.cpp - NetPFL code along the protocol graph -----------===//
//
// One push handler that parses the packet from the database's
// `startproto`, header after header, along the encapsulation rules, and
// only towards headers that can still change the verdict: at each header
// it decodes the fields it needs (NetPDL <format>), steps the chains'
// automata (FilterTests.cpp), then follows <encapsulation>. The parse is
// specialised by parse state (exploreStates: header counts and automaton
// states known at compile time), and each header is versioned on one test
// that its fixed prefix was captured (docs/netpfl.md, "How the code is
// made"). Variables live in memref.alloca slots until promote() turns
// them into SSA values.
//
//===----------------------------------------------------------------------===//

#include "NetPFLInternal.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace netvm;

namespace netvm::netpfl::detail {

void CodeGen::run() {
  analyse();
  Block *entry = &body.front();
  finish = newBlock();

  b.setInsertionPointToEnd(entry);
  i32 = b.getI32Type();
  pktLen = PacketLengthOp::create(b, loc, i32);
  if (hopsCheck)
    set(var("hops"), c32(0));
  set(var("layers"), c32(0));
  flagOf.resize(filter.chains.size());
  for (size_t c = 0; c < filter.chains.size(); ++c)
    flagOf[c] = c;
  if (filter.formula)
    groupFlags(*filter.formula);
  for (size_t c = 0; c < filter.chains.size(); ++c) {
    if (!simpleChain(c))
      set(chainVar(c), c32(0));
    if (flagOf[c] == c)
      set(flagVar(c), c32(0));
  }
  if (!staticCounts)
    for (auto &[proto, needs] : needs_)
      if (needs.count)
        set(var("count." + proto->name), c32(0));
  for (size_t i = 0; i < filter.extracts.size(); ++i)
    StoreOp::create(b, loc, c32(0), MemSpace::Info,
                    c32(i * netpfl::kExtractedFieldSize));
  set(var("off"), c32(0));
  if (!regexps.empty())
    CoproExbufOp::create(b, loc, kRegexp);
  cf::BranchOp::create(b, loc, stateBlock(0));

  while (!pending.empty()) {
    unsigned id = pending.back();
    pending.pop_back();
    emitHeader(id);
  }

  b.setInsertionPointToEnd(finish);
  Value verdict =
      filter.formula
          ? formula(*filter.formula)
          : Value(arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  cf::CondBranchOp::create(b, loc, verdict, accept, reject);
}

LogicalResult CodeGen::promote(Operation *scope) {
  SmallVector<PromotableAllocationOpInterface> allocas;
  for (auto &[name, v] : vars)
    allocas.push_back(cast<PromotableAllocationOpInterface>(v.getDefiningOp()));
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

void CodeGen::analyse() {
  auto noteArith = [&](const ArithP &a, auto &self) -> void {
    if (!a)
      return;
    if (a->kind == Arith::Field)
      needs_[a->ref.proto].recorded.insert(a->ref.field->name);
    self(a->a, self);
    self(a->b, self);
  };
  auto noteIndex = [&](const Protocol *p, unsigned index) {
    ProtoNeeds &n = needs_[p];
    n.count = true;
    n.maxIndex = std::max(n.maxIndex, index);
  };
  for (const Chain &c : filter.chains)
    for (const Element &e : c.elems)
      for (const Member &m : e.members) {
        if (m.index)
          noteIndex(m.proto, m.index);
        if (m.tunneled)
          tunnels = true;
        if (!m.pred)
          continue;
        needs_[m.proto].tested = true;
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
    noteIndex(x.ref.proto, x.ref.index);
    needs_[x.ref.proto].recorded.insert(x.ref.field->name);
  }
  // Counts specialise the parse; past a few thousand states (deep header
  // indexes on several protocols) they stay run-time variables.
  // Specialising on counts pays when it prunes: when it makes more states
  // than twice the protocols a run-time count would parse (headers behind
  // tunnels that may still be the first of their protocol), the counts
  // are kept at run time instead.
  auto neededStates = [&] {
    return llvm::count_if(states, [](const State &s) { return s.needed; });
  };
  bool fits = exploreStates(kMaxStates);
  size_t specialised = fits ? neededStates() : SIZE_MAX;
  staticCounts = false;
  exploreStates(SIZE_MAX);
  size_t general = neededStates();
  if (specialised <= general) {
    staticCounts = true;
    exploreStates(kMaxStates);
  }
  for (const State &s : states) {
    if (!s.needed)
      continue;
    ProtoNeeds &n = needs_[s.proto];
    n.relevant = true;
    for (unsigned j : s.next)
      if (states[j].needed)
        n.encapsulation = true;
  }
  for (const auto &p : db.protocols()) {
    ProtoNeeds &n = needs_[p.get()];
    if (!n.relevant)
      continue;
    decideValues(*p, n);
    fixedPrefix(*p, n);
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

/// The protocols a <nextproto> of `nodes` names.
static void nextProtos(const Protocol &p, const std::vector<Node> &nodes,
                       llvm::SetVector<const Protocol *> &out) {
  for (const Node &x : nodes) {
    if (x.kind == Node::NextProto)
      out.insert(x.target);
    if (x.kind == Node::IncludeBlock)
      nextProtos(p, p.blocks.find(x.name)->second.children, out);
    nextProtos(p, x.children, out);
    nextProtos(p, x.otherwise, out);
    for (const Node::Case &c : x.cases)
      nextProtos(p, c.body, out);
  }
}

std::optional<uint32_t> CodeGen::knownValue(const Expr &e) const {
  switch (e.kind) {
  case Expr::Number:
    return e.value;
  case Expr::Field: {
    auto it = known.find(e.name);
    if (it != known.end() && it->second.size() == 1)
      return *it->second.begin();
    return std::nullopt;
  }
  case Expr::Unary: {
    std::optional<uint32_t> v = knownValue(*e.lhs);
    if (!v)
      return std::nullopt;
    return e.op == Expr::Not ? uint32_t(*v == 0) : ~*v;
  }
  case Expr::Binary:
    break;
  default:
    return std::nullopt;
  }
  std::optional<uint32_t> l = knownValue(*e.lhs), r = knownValue(*e.rhs);
  if (e.op == Expr::And && ((l && !*l) || (r && !*r)))
    return 0;
  if (e.op == Expr::Or && ((l && *l) || (r && *r)))
    return 1;
  if (!l || !r)
    return std::nullopt;
  switch (e.op) {
  case Expr::Add:
    return *l + *r;
  case Expr::Sub:
    return *l - *r;
  case Expr::Mul:
    return *l * *r;
  case Expr::BitAnd:
    return *l & *r;
  case Expr::BitOr:
    return *l | *r;
  case Expr::Eq:
    return uint32_t(*l == *r);
  case Expr::Ne:
    return uint32_t(*l != *r);
  case Expr::Lt:
    return uint32_t(*l < *r);
  case Expr::Le:
    return uint32_t(*l <= *r);
  case Expr::Gt:
    return uint32_t(*l > *r);
  case Expr::Ge:
    return uint32_t(*l >= *r);
  case Expr::And:
    return uint32_t(*l && *r);
  case Expr::Or:
    return uint32_t(*l || *r);
  default:
    return std::nullopt;
  }
}

std::optional<std::set<uint32_t>> CodeGen::switchValues(const Node &x) const {
  if (std::optional<uint32_t> v = knownValue(*x.expr))
    return std::set<uint32_t>{*v};
  if (x.expr->kind == Expr::Field) {
    auto it = known.find(x.expr->name);
    if (it != known.end())
      return it->second;
  }
  return std::nullopt;
}

void CodeGen::forKnownPaths(const Protocol &p, llvm::ArrayRef<Node> nodes,
                            llvm::SetVector<const Protocol *> &out) const {
  for (const Node &x : nodes) {
    switch (x.kind) {
    case Node::NextProto:
      out.insert(x.target);
      break;
    case Node::IncludeBlock:
      forKnownPaths(p, p.blocks.find(x.name)->second.children, out);
      break;
    case Node::If:
      if (std::optional<uint32_t> c = knownValue(*x.expr)) {
        forKnownPaths(p, *c ? x.children : x.otherwise, out);
        break;
      }
      forKnownPaths(p, x.children, out);
      forKnownPaths(p, x.otherwise, out);
      break;
    case Node::Switch: {
      std::optional<std::set<uint32_t>> allowed = switchValues(x);
      bool other = !allowed;
      if (allowed)
        for (uint32_t a : *allowed)
          if (llvm::none_of(x.cases, [&](const Node::Case &c) {
                return c.low <= a && a <= c.high;
              }))
            other = true;
      for (const Node::Case &c : x.cases) {
        if (allowed) {
          auto it = allowed->lower_bound(c.low);
          if (it == allowed->end() || *it > c.high)
            continue;
        }
        forKnownPaths(p, c.body, out);
        if (allowed && allowed->size() == 1)
          break;
      }
      if (other)
        forKnownPaths(p, x.otherwise, out);
      break;
    }
    default:
      forKnownPaths(p, x.children, out);
      forKnownPaths(p, x.otherwise, out);
      for (const Node::Case &c : x.cases)
        forKnownPaths(p, c.body, out);
    }
  }
}

bool CodeGen::exploreStates(size_t limit) {
  states.clear();
  stateIds.clear();
  countSlot.clear();
  std::vector<uint8_t> caps;
  if (staticCounts)
    for (const auto &p : db.protocols()) {
      auto it = needs_.find(p.get());
      if (it == needs_.end() || !it->second.count)
        continue;
      countSlot[p.get()] = caps.size();
      // Counts past the largest index used (or past the headers a packet
      // may have) all mean "behind every indexed header".
      caps.push_back(
          std::min<unsigned>(it->second.maxIndex + 1, netpfl::kMaxHeaders + 1));
    }
  size_t nChains = filter.chains.size();
  // Whether element `e` may match header `p` whose counts are `after`.
  auto mayMatch = [&](const Element &e, const Protocol *p,
                      const std::vector<uint8_t> &after) {
    switch (e.kind) {
    case Element::Any:
      return true;
    case Element::Complement:
      return llvm::none_of(e.members,
                           [&](const Member &m) { return m.proto == p; });
    case Element::Set:
      for (const Member &m : e.members) {
        if (m.proto != p)
          continue;
        auto slot = countSlot.find(p);
        return !m.index || slot == countSlot.end() ||
               after[slot->second] == m.index;
      }
      return false;
    }
    return true;
  };
  // The state of header `p` after a header whose counts and automaton
  // states are `before` and `mayBefore`. States that make the same code
  // (same protocol, counts and automaton states after the header) are one.
  auto enter = [&](const Protocol *p, const std::vector<uint8_t> &before,
                   const std::vector<uint32_t> &mayBefore,
                   std::vector<int8_t> facts) {
    std::vector<uint8_t> after = before;
    auto slot = countSlot.find(p);
    // Other protocols' counts only matter to their later headers, for
    // which "the largest index is behind" is all there is to know; this
    // header's count says whether it is that largest index itself.
    for (size_t i = 0; i < after.size(); ++i)
      after[i] = std::min<unsigned>(after[i], caps[i] - 1);
    if (slot != countSlot.end())
      after[slot->second] =
          std::min<unsigned>(before[slot->second] + 1, caps[slot->second]);
    std::vector<uint32_t> may(nChains, 0);
    bool live = false;
    for (size_t c = 0; c < nChains; ++c) {
      const Chain &chain = filter.chains[c];
      size_t n = chain.elems.size();
      if (!staticCounts) {
        // Counts at run time: only the protocols decide.
        live |= mayMatch(chain.elems.back(), p, after);
        may[c] = (1u << n) - 1;
        continue;
      }
      uint32_t old = mayBefore[c];
      if (!chain.anchored)
        old |= closure(chain, 1);
      else if (p == &db.start())
        old = closure(chain, 1);
      uint32_t next = 0;
      for (size_t j = 0; j < n; ++j) {
        const Element &e = chain.elems[j];
        uint32_t from = 1u << j;
        if (e.repeat == '*' || e.repeat == '+')
          from |= 1u << (j + 1);
        if ((old & from) && mayMatch(e, p, after))
          next |= closure(chain, 1u << (j + 1));
      }
      if (next & (1u << n))
        live = true; // the chain may match here
      may[c] = next & ((1u << n) - 1);
    }
    for (const Extract &x : filter.extracts)
      if (x.ref.proto == p &&
          (slot == countSlot.end() || after[slot->second] == x.ref.index))
        live = true;
    auto [it, fresh] =
        stateIds.try_emplace({p, after, may, facts}, unsigned(states.size()));
    if (fresh)
      states.push_back(
          State{p, std::move(after), std::move(may), std::move(facts), {}});
    states[it->second].live |= live;
    return it->second;
  };
  enter(&db.start(), std::vector<uint8_t>(caps.size(), 0),
        std::vector<uint32_t>(nChains, 0), std::vector<int8_t>(nChains, -1));
  for (size_t i = 0; i < states.size(); ++i) {
    if (states.size() > limit)
      return false;
    const Protocol *p = states[i].proto;
    llvm::SetVector<const Protocol *> targets;
    nextProtos(*p, p->format, targets);
    // Where the encapsulation can go once the early exits are behind
    // (emitHeader makes the same choices).
    curState = i;
    if (filter.formula && filter.extracts.empty())
      known = requiredValues(*filter.formula, *p).value_or(Known{});
    // When the way here has decided every term later headers could
    // change, the parse stops here and the flags decide.
    if (!filter.formula || !filter.extracts.empty() ||
        mayChange(*filter.formula))
      forKnownPaths(*p, p->encapsulation, targets);
    std::map<const Protocol *, std::vector<int8_t>> facts;
    if (filter.formula && filter.extracts.empty())
      facts = pathFacts(*p, {targets.begin(), targets.end()});
    else
      for (const Protocol *t : targets)
        facts[t] = states[i].facts;
    known.clear();
    std::vector<uint8_t> after = states[i].after;
    std::vector<uint32_t> may = states[i].may;
    for (const Protocol *t : targets) {
      unsigned j = enter(t, after, may, facts[t]);
      states[i].next.push_back(j);
    }
  }
  for (State &s : states)
    s.needed = s.live;
  for (bool changed = true; changed;) {
    changed = false;
    for (State &s : llvm::reverse(states))
      if (!s.needed &&
          llvm::any_of(s.next, [&](unsigned j) { return states[j].needed; }))
        s.needed = changed = true;
  }
  // The watchdog on the headers parsed is needed only where the needed
  // states can loop or go deeper than it allows.
  std::vector<int> depth(states.size(), -1); // -2: on the DFS path
  bool loops = false;
  std::function<int(unsigned)> longest = [&](unsigned i) -> int {
    if (depth[i] >= 0)
      return depth[i];
    if (depth[i] == -2) {
      loops = true;
      return 0;
    }
    depth[i] = -2;
    int d = 0;
    for (unsigned j : states[i].next)
      if (states[j].needed)
        d = std::max(d, longest(j));
    return depth[i] = d + 1;
  };
  hopsCheck =
      !states[0].needed || longest(0) > int(netpfl::kMaxHeaders) || loops;
  if (!states[0].needed)
    hopsCheck = false;
  return true;
}

Value CodeGen::countOf(const Protocol &p) {
  auto slot = countSlot.find(&p);
  if (slot != countSlot.end())
    return c32(states[curState].after[slot->second]);
  return get(var("count." + p.name));
}

std::optional<bool> CodeGen::countIs(const Protocol &p, unsigned index) {
  auto slot = countSlot.find(&p);
  if (slot == countSlot.end())
    return std::nullopt;
  return states[curState].after[slot->second] == index;
}

void CodeGen::fixedPrefix(const Protocol &p, ProtoNeeds &n) {
  // Whether `nodes` are fixed and bit fields only, and their size.
  std::function<bool(llvm::ArrayRef<Node>, uint32_t &)> fixed =
      [&](llvm::ArrayRef<Node> nodes, uint32_t &size) {
        for (const Node &x : nodes) {
          switch (x.kind) {
          case Node::FixedField:
            size += x.size;
            break;
          case Node::BitField:
            if (x.last)
              size += x.size;
            break;
          case Node::Block:
            if (!fixed(x.children, size))
              return false;
            break;
          case Node::IncludeBlock:
            if (!fixed(p.blocks.find(x.name)->second.children, size))
              return false;
            break;
          default:
            return false;
          }
        }
        return true;
      };
  std::function<void(llvm::ArrayRef<Node>, uint32_t &)> note =
      [&](llvm::ArrayRef<Node> nodes, uint32_t &at) {
        for (const Node &x : nodes) {
          if (x.kind == Node::Block) {
            note(x.children, at);
            continue;
          }
          if (x.kind == Node::IncludeBlock) {
            note(p.blocks.find(x.name)->second.children, at);
            continue;
          }
          n.prefixFields.try_emplace(x.name, at, x.size);
          for (const Node &sub : x.children)
            n.prefixFields.try_emplace(sub.name, at, sub.size);
          if (x.kind == Node::FixedField || x.last)
            at += x.size;
        }
      };
  n.prefixLen = 0;
  n.prefixNodes = 0;
  for (const Node &x : p.format) {
    uint32_t size = 0;
    if (!fixed(llvm::ArrayRef<Node>(x), size))
      break;
    ++n.prefixNodes;
  }
  uint32_t at = 0;
  note(llvm::ArrayRef(p.format).take_front(n.prefixNodes), at);
  n.prefixLen = at;
}

std::optional<uint32_t> CodeGen::fastField(StringRef name, uint32_t size) {
  if (!fast)
    return std::nullopt;
  const ProtoNeeds &n = needs_[proto];
  auto it = n.prefixFields.find(name);
  if (it == n.prefixFields.end() || it->second.second != size ||
      it->second.first + size > n.prefixLen)
    return std::nullopt;
  return it->second.first;
}

void CodeGen::decideValues(const Protocol &p, ProtoNeeds &n) {
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

bool CodeGen::parsesFormat(const Protocol &p, const ProtoNeeds &n) {
  return !p.format.empty() && (n.encapsulation || !n.recorded.empty());
}

Block *CodeGen::newBlock() {
  Block *block = new Block();
  body.push_back(block);
  return block;
}

Value CodeGen::c32(uint32_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                      static_cast<int64_t>(v));
}

Value CodeGen::var(const std::string &name) {
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

Value CodeGen::get(Value slot) {
  return memref::LoadOp::create(b, loc, slot, ValueRange{});
}

void CodeGen::set(Value slot, Value v) {
  memref::StoreOp::create(b, loc, v, slot, ValueRange{});
}

std::string CodeGen::fieldVar(const std::string &kind,
                              const std::string &name) {
  return proto->name + "." + kind + "." + name;
}

Value CodeGen::cmp(arith::CmpIPredicate p, Value l, Value r) {
  return b.createOrFold<arith::CmpIOp>(loc, p, l, r);
}

Value CodeGen::andI1(Value l, Value r) {
  return b.createOrFold<arith::AndIOp>(loc, l, r);
}

Value CodeGen::orI1(Value l, Value r) {
  return b.createOrFold<arith::OrIOp>(loc, l, r);
}

Value CodeGen::notI1(Value v) {
  return b.createOrFold<arith::XOrIOp>(
      loc, v, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
}

Value CodeGen::isTrue(Value v) {
  return cmp(arith::CmpIPredicate::ne, v, c32(0));
}

void CodeGen::require(Value ok, Block *otherwise) {
  if (matchPattern(ok, m_One()))
    return;
  Block *next = newBlock();
  cf::CondBranchOp::create(b, loc, ok, next, otherwise);
  startBlock(next);
}

Value CodeGen::inPacket(Value offset, Value size) {
  Value end = arith::AddIOp::create(b, loc, offset, size);
  Value noWrap = cmp(arith::CmpIPredicate::uge, end, offset);
  Value fits = cmp(arith::CmpIPredicate::ule, end, pktLen);
  return arith::AndIOp::create(b, loc, noWrap, fits);
}

Value CodeGen::loadBytes(Value offset, unsigned size) {
  auto load = [&](Value at, unsigned bytes) -> Value {
    Value v = LoadOp::create(b, loc, b.getIntegerType(8 * bytes),
                             MemSpace::Packet, at, /*in_bounds=*/true);
    return bytes == 4 ? v : toI32(v);
  };
  if (size != 3)
    return load(offset, size);
  Value hi = load(offset, 2);
  Value lo = load(arith::AddIOp::create(b, loc, offset, c32(2)), 1);
  return arith::OrIOp::create(b, loc, arith::ShLIOp::create(b, loc, hi, c32(8)),
                              lo);
}

Value CodeGen::checkedLoad(Value offset, unsigned size, Block *otherwise) {
  require(inPacket(offset, c32(size)), otherwise);
  return loadBytes(offset, size);
}

Value CodeGen::fieldValue(Value raw, uint32_t mask) {
  if (!mask)
    return raw;
  Value v = arith::AndIOp::create(b, loc, raw, c32(mask));
  unsigned shift = llvm::countr_zero(mask);
  return shift ? arith::ShRUIOp::create(b, loc, v, c32(shift)).getResult() : v;
}

Block *CodeGen::headerBlock(const Protocol *p) {
  const State &s = states[curState];
  for (unsigned j : s.next)
    if (states[j].proto == p)
      return stateBlock(j);
  llvm_unreachable("a <nextproto> the state graph does not know");
}

Block *CodeGen::stateBlock(unsigned id) {
  if (!states[id].needed)
    return finish;
  auto it = headers.find(id);
  if (it != headers.end())
    return it->second;
  Block *block = newBlock();
  headers[id] = block;
  pending.push_back(id);
  return block;
}

void CodeGen::emitHeader(unsigned id) {
  curState = id;
  const Protocol &p = *states[id].proto;
  proto = &p;
  ProtoNeeds &n = needs_[&p];
  startBlock(headers[id]);
  if (hopsCheck) {
    // A bound on the headers one packet can make us visit.
    Value hops = arith::AddIOp::create(b, loc, get(var("hops")), c32(1));
    set(var("hops"), hops);
    require(cmp(arith::CmpIPredicate::ule, hops, c32(netpfl::kMaxHeaders)),
            finish);
  }
  Value base = get(var("off"));
  if (n.count && !staticCounts)
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

  // Per-header versioning: one test that the fixed prefix of the format
  // was captured; under it, the prefix decodes and the tests read its
  // fields without further checks. Otherwise each field is checked as the
  // format decodes it.
  fast = false;
  Value fastOk;
  // (Not when the parse walks every header with run-time counts: then
  // the copies cost more code than the checks they save.)
  if (parsesFormat(p, n) && n.prefixLen && staticCounts)
    fastOk = inPacket(base, c32(n.prefixLen));
  Block *tests = newBlock();
  auto prefix = llvm::ArrayRef(p.format).take_front(n.prefixNodes);
  auto rest = llvm::ArrayRef(p.format).drop_front(n.prefixNodes);
  // When every field the tests read lies in the fixed prefix, the tests
  // and the early exit come before the rest of the format, which then
  // decodes only for packets the formula still needs, knowing the values
  // the formula requires (IPv6's extension headers, for a next header the
  // filter requires to be TCP, end at once).
  // (Only where it pays: when the rest declares again a field whose value
  // the formula requires.)
  bool testsFirst = parsesFormat(p, n) && !rest.empty() && n.tested &&
                    staticCounts && filter.formula && filter.extracts.empty() &&
                    llvm::all_of(n.recorded, [&](const auto &r) {
                      return n.prefixFields.count(r.getKey());
                    });
  if (testsFirst) {
    std::optional<Known> required = requiredValues(*filter.formula, p);
    testsFirst = required && llvm::any_of(*required, [&](const auto &r) {
                   return !declaredOnce(p, r.first);
                 });
  }
  std::optional<uint32_t> restStatic;
  if (parsesFormat(p, n)) {
    // A field the packet is too short for ends the parse after this
    // header's tests.
    Block *stop = newBlock();
    stopTarget = stop;
    if (fastOk) {
      Block *fastPath = newBlock(), *slowPath = newBlock(), *join = newBlock();
      cf::CondBranchOp::create(b, loc, fastOk, fastPath, slowPath);
      for (bool mode : {true, false}) {
        startBlock(mode ? fastPath : slowPath);
        fast = mode;
        staticCur = 0;
        for (const Node &x : prefix)
          emitNode(x);
        cf::BranchOp::create(b, loc, join);
      }
      fast = false;
      startBlock(join);
    } else {
      staticCur = 0;
      for (const Node &x : prefix)
        emitNode(x);
    }
    if (testsFirst)
      restStatic = staticCur;
    else
      for (const Node &x : rest)
        emitNode(x);
    cf::BranchOp::create(b, loc, tests);
    startBlock(stop);
    set(var("stop"), c32(1));
    cf::BranchOp::create(b, loc, tests);
  } else {
    cf::BranchOp::create(b, loc, tests);
  }
  staticCur.reset();

  startBlock(tests);
  bool stepped = false;
  auto stepAll = [&] {
    stepped = false;
    fieldMemo.clear();
    for (size_t c = 0; c < filter.chains.size(); ++c)
      stepped |= stepChain(c, p);
    flushFlags();
  };
  if (fastOk && n.tested) {
    // The tests twice: reading the prefix unchecked, and checked.
    Block *fastTests = newBlock(), *slowTests = newBlock(), *join = newBlock();
    cf::CondBranchOp::create(b, loc, fastOk, fastTests, slowTests);
    for (bool mode : {true, false}) {
      startBlock(mode ? fastTests : slowTests);
      fast = mode;
      stepAll();
      cf::BranchOp::create(b, loc, join);
    }
    fast = false;
    startBlock(join);
  } else {
    stepAll();
  }
  extractFields(p);
  // Tests only ever become true; when that decides the formula whatever
  // the rest of the packet holds, stop here.
  bool exits = stepped && filter.formula && filter.extracts.empty();
  if (exits) {
    auto [yes, no] = decided(*filter.formula);
    require(notI1(yes), accept);
    require(notI1(no), reject);
    // Past the exit, the terms the formula requires that can no longer
    // change are true: say so, for the tests and the verdict after.
    for (size_t c : requiredTrue(*filter.formula))
      set(flagVar(c), c32(1));
  }
  bool encapsulation = llvm::any_of(
      states[curState].next, [&](unsigned j) { return states[j].needed; });
  if (!encapsulation) {
    cf::BranchOp::create(b, loc, finish);
    return;
  }
  if (testsFirst) {
    // The rest of the format, unless the prefix was cut short; past the
    // early exit the values the formula requires hold.
    Block *restBlock = newBlock(), *cut = newBlock(), *after = newBlock();
    cf::CondBranchOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, get(var("stop")), c32(0)),
        restBlock, after);
    startBlock(restBlock);
    stopTarget = cut;
    staticCur = restStatic;
    if (exits)
      known = requiredValues(*filter.formula, p).value_or(Known{});
    for (const Node &x : rest)
      emitNode(x);
    known.clear();
    staticCur.reset();
    cf::BranchOp::create(b, loc, after);
    startBlock(cut);
    set(var("stop"), c32(1));
    cf::BranchOp::create(b, loc, after);
    startBlock(after);
  }
  require(cmp(arith::CmpIPredicate::eq, get(var("stop")), c32(0)), finish);
  stopTarget = finish;
  // Past the early exit, the formula holds the values some fields of this
  // header must have; the encapsulation goes only where they lead.
  if (exits)
    known = requiredValues(*filter.formula, p).value_or(Known{});
  emitSequence(p.encapsulation);
  known.clear();
  cf::BranchOp::create(b, loc, finish); // no <nextproto> reached
}

std::optional<CodeGen::Known> CodeGen::requiredValues(const Formula &f,
                                                      const Protocol &p) {
  switch (f.kind) {
  case Formula::Leaf:
    // A test `p%K.field == N` on this very header (the K-th): its flag
    // cannot change after it, so past the early exit it is true.
    if (auto eq = relationOn(f.chain, p);
        eq && eq->equal &&
        (declaredOnce(p, eq->field) || keepsValue(p, eq->field, eq->value)))
      return Known{{eq->field, {eq->value}}};
    return std::nullopt;
  case Formula::Not:
    return std::nullopt;
  case Formula::And: {
    std::optional<Known> all;
    for (const Formula &kid : f.kids) {
      std::optional<Known> r = requiredValues(kid, p);
      if (!r)
        continue;
      if (!all) {
        all = std::move(r);
        continue;
      }
      for (auto &[name, values] : *r) {
        auto it = all->find(name);
        if (it == all->end()) {
          all->emplace(name, values);
          continue;
        }
        std::set<uint32_t> both;
        for (uint32_t v : values)
          if (it->second.count(v))
            both.insert(v);
        it->second = std::move(both);
      }
    }
    return all;
  }
  case Formula::Or: {
    std::optional<Known> any;
    for (const Formula &kid : f.kids) {
      // An alternative the way here has made false requires nothing.
      if (factValue(kid) == false)
        continue;
      std::optional<Known> r = requiredValues(kid, p);
      if (!r)
        return std::nullopt;
      if (!any) {
        any = std::move(r);
        continue;
      }
      Known merged;
      for (auto &[name, values] : *any) {
        auto it = r->find(name);
        if (it == r->end())
          continue;
        std::set<uint32_t> either = values;
        either.insert(it->second.begin(), it->second.end());
        merged.emplace(name, std::move(either));
      }
      any = std::move(merged);
    }
    if (any && any->empty())
      return std::nullopt;
    return any;
  }
  }
  return std::nullopt;
}

std::optional<CodeGen::Relation> CodeGen::relationOn(size_t c,
                                                     const Protocol &p) {
  const Chain &chain = filter.chains[c];
  if (chain.elems.size() != 1 || chain.anchored)
    return std::nullopt;
  const Element &e = chain.elems[0];
  if (e.kind != Element::Set || e.repeat || e.members.size() != 1)
    return std::nullopt;
  const Member &m = e.members[0];
  if (m.proto != &p || !m.index || countIs(p, m.index) != true || m.tunneled ||
      !m.pred || m.pred->kind != Pred::Relation ||
      (m.pred->rel != arith::CmpIPredicate::eq &&
       m.pred->rel != arith::CmpIPredicate::ne))
    return std::nullopt;
  const Arith *field = m.pred->lhs.get(), *k = m.pred->rhs.get();
  if (field->kind != Arith::Field)
    std::swap(field, k);
  if (field->kind != Arith::Field || k->kind != Arith::Const ||
      field->ref.field->size == 0 || field->ref.field->size > 4)
    return std::nullopt;
  return Relation{field->ref.field->name, k->k,
                  m.pred->rel == arith::CmpIPredicate::eq};
}

bool CodeGen::chainFinal(size_t c) const {
  const Chain &chain = filter.chains[c];
  if (chain.anchored || chain.elems.size() != 1 ||
      chain.elems[0].kind != Element::Set)
    return false;
  for (const Member &m : chain.elems[0].members) {
    auto slot = countSlot.find(m.proto);
    if (!m.index || slot == countSlot.end() ||
        states[curState].after[slot->second] < m.index)
      return false;
  }
  return true;
}

bool CodeGen::mayChange(const Formula &f) const {
  if (factValue(f))
    return false;
  switch (f.kind) {
  case Formula::Leaf:
    return !chainFinal(f.chain);
  case Formula::Not:
    return mayChange(f.kids[0]);
  case Formula::And:
  case Formula::Or:
    return llvm::any_of(f.kids,
                        [&](const Formula &kid) { return mayChange(kid); });
  }
  return true;
}

std::optional<bool> CodeGen::factValue(const Formula &f) const {
  switch (f.kind) {
  case Formula::Leaf: {
    if (curState >= states.size())
      return std::nullopt;
    const std::vector<int8_t> &facts = states[curState].facts;
    if (size_t(f.chain) >= facts.size() || facts[f.chain] < 0)
      return std::nullopt;
    return facts[f.chain] == 1;
  }
  case Formula::Not:
    if (std::optional<bool> v = factValue(f.kids[0]))
      return !*v;
    return std::nullopt;
  case Formula::And:
  case Formula::Or: {
    // An `and` is false when a term is, true when all are; an `or` the
    // other way round.
    bool isAnd = f.kind == Formula::And, all = true;
    for (const Formula &kid : f.kids) {
      std::optional<bool> v = factValue(kid);
      if (v && *v != isAnd)
        return !isAnd;
      all &= v.has_value();
    }
    if (all)
      return isAnd;
    return std::nullopt;
  }
  }
  return std::nullopt;
}

std::map<const Protocol *, std::vector<int8_t>>
CodeGen::pathFacts(const Protocol &p,
                   const std::set<const Protocol *> &targets) {
  const std::vector<int8_t> &inherited = states[curState].facts;
  std::map<const Protocol *, std::vector<int8_t>> out;
  for (const Protocol *t : targets)
    out[t] = inherited;
  for (size_t c = 0; c < filter.chains.size(); ++c) {
    // The switch reads the field's last declaration, the test its first.
    std::optional<Relation> eq = relationOn(c, p);
    if (!eq || !declaredOnce(p, eq->field))
      continue;
    // The values of the field on the ways to each target (std::nullopt:
    // any), walking the encapsulation as forKnownPaths does.
    using Values = std::optional<std::set<uint32_t>>;
    std::map<const Protocol *, Values> values;
    std::function<void(llvm::ArrayRef<Node>, const Values &)> walk =
        [&](llvm::ArrayRef<Node> nodes, const Values &cur) {
          for (const Node &x : nodes) {
            switch (x.kind) {
            case Node::NextProto: {
              auto [it, fresh] = values.try_emplace(x.target, cur);
              if (!fresh && it->second) {
                if (cur)
                  it->second->insert(cur->begin(), cur->end());
                else
                  it->second.reset();
              }
              break;
            }
            case Node::IncludeBlock:
              walk(p.blocks.find(x.name)->second.children, cur);
              break;
            case Node::If:
              if (std::optional<uint32_t> k = knownValue(*x.expr)) {
                walk(*k ? x.children : x.otherwise, cur);
                break;
              }
              walk(x.children, cur);
              walk(x.otherwise, cur);
              break;
            case Node::Switch: {
              std::optional<std::set<uint32_t>> allowed = switchValues(x);
              bool onField =
                  x.expr->kind == Expr::Field && x.expr->name == eq->field;
              std::set<uint32_t> inCases;
              for (const Node::Case &k : x.cases) {
                Values here = cur;
                if (onField) {
                  std::set<uint32_t> range;
                  if (allowed) {
                    for (uint32_t a : *allowed)
                      if (k.low <= a && a <= k.high)
                        range.insert(a);
                  } else if (k.low == k.high) {
                    range.insert(k.low);
                  }
                  if (allowed && range.empty())
                    continue; // not a way the formula allows
                  inCases.insert(range.begin(), range.end());
                  here = range.empty() ? Values() : Values(range);
                } else if (allowed) {
                  auto it = allowed->lower_bound(k.low);
                  if (it == allowed->end() || *it > k.high)
                    continue;
                }
                walk(k.body, here);
                if (allowed && allowed->size() == 1)
                  break;
              }
              Values other = cur;
              if (onField) {
                other.reset();
                if (allowed) {
                  std::set<uint32_t> rest;
                  for (uint32_t a : *allowed)
                    if (llvm::none_of(x.cases, [&](const Node::Case &k) {
                          return k.low <= a && a <= k.high;
                        }))
                      rest.insert(a);
                  other = rest;
                }
              }
              walk(x.otherwise, other);
              break;
            }
            default:
              walk(x.children, cur);
              walk(x.otherwise, cur);
              for (const Node::Case &k : x.cases)
                walk(k.body, cur);
            }
          }
        };
    walk(p.encapsulation, std::nullopt);
    for (auto &[t, facts] : out) {
      auto it = values.find(t);
      if (it == values.end() || !it->second || it->second->empty())
        continue;
      const std::set<uint32_t> &v = *it->second;
      if (v.size() == 1 && *v.begin() == eq->value)
        facts[c] = eq->equal;
      else if (!v.count(eq->value))
        facts[c] = !eq->equal;
    }
  }
  return out;
}

std::set<size_t> CodeGen::requiredTrue(const Formula &f) {
  switch (f.kind) {
  case Formula::Leaf: {
    const Chain &chain = filter.chains[f.chain];
    if (chain.anchored || chain.elems.size() != 1 ||
        chain.elems[0].kind != Element::Set || chain.elems[0].repeat)
      return {};
    for (const Member &m : chain.elems[0].members) {
      auto slot = countSlot.find(m.proto);
      if (!m.index || slot == countSlot.end() ||
          states[curState].after[slot->second] < m.index)
        return {};
    }
    return {size_t(f.chain)};
  }
  case Formula::Not:
    return {};
  case Formula::And: {
    std::set<size_t> all;
    for (const Formula &kid : f.kids) {
      std::set<size_t> r = requiredTrue(kid);
      all.insert(r.begin(), r.end());
    }
    return all;
  }
  case Formula::Or: {
    std::optional<std::set<size_t>> common;
    for (const Formula &kid : f.kids) {
      std::set<size_t> r = requiredTrue(kid);
      if (!common) {
        common = std::move(r);
        continue;
      }
      std::set<size_t> both;
      for (size_t c : r)
        if (common->count(c))
          both.insert(c);
      common = std::move(both);
    }
    return common.value_or(std::set<size_t>{});
  }
  }
  return {};
}

bool CodeGen::declaredOnce(const Protocol &p, StringRef name) {
  unsigned count = 0;
  std::function<void(const std::vector<Node> &, unsigned)> walk =
      [&](const std::vector<Node> &nodes, unsigned weight) {
        for (const Node &x : nodes) {
          if (x.isField() && x.name == name)
            count += weight;
          if (x.kind == Node::IncludeBlock)
            walk(p.blocks.find(x.name)->second.children, weight);
          unsigned inner = x.kind == Node::Loop ? 2 : weight;
          walk(x.children, inner);
          walk(x.otherwise, inner);
          for (const Node::Case &c : x.cases)
            walk(c.body, inner);
        }
      };
  walk(p.format, 1);
  return count == 1;
}

bool CodeGen::keepsValue(const Protocol &p, StringRef name, uint32_t value) {
  std::function<bool(llvm::ArrayRef<Node>)> declares =
      [&](llvm::ArrayRef<Node> nodes) {
        return llvm::any_of(nodes, [&](const Node &x) {
          if (x.isField() && x.name == name)
            return true;
          if (x.kind == Node::IncludeBlock &&
              declares(p.blocks.find(x.name)->second.children))
            return true;
          return declares(x.children) || declares(x.otherwise) ||
                 llvm::any_of(x.cases, [&](const Node::Case &c) {
                   return declares(c.body);
                 });
        });
      };
  // The first declaration at the top of the format, then only loops that
  // leave at once when the field holds `value`: a switch on it whose
  // default (no case holds `value`) breaks.
  auto first = llvm::find_if(
      p.format, [&](const Node &x) { return x.isField() && x.name == name; });
  if (first == p.format.end() || declares(first->children))
    return false;
  for (const Node &x : llvm::make_range(std::next(first), p.format.end())) {
    if (!declares(llvm::ArrayRef<Node>(x)))
      continue;
    if (x.kind != Node::Loop || x.loopKind != Node::WhileLoop ||
        x.children.empty())
      return false;
    const Node &sw = x.children.front();
    if (sw.kind != Node::Switch || !sw.hasDefault || !sw.expr ||
        sw.expr->kind != Expr::Field || sw.expr->name != name ||
        llvm::any_of(sw.cases,
                     [&](const Node::Case &c) {
                       return c.low <= value && value <= c.high;
                     }) ||
        sw.otherwise.empty() || sw.otherwise.front().kind != Node::LoopCtrl ||
        !sw.otherwise.front().isBreak)
      return false;
  }
  return true;
}

void CodeGen::emitSequence(const std::vector<Node> &nodes) {
  for (const Node &x : nodes)
    emitNode(x);
}

void CodeGen::decoded(const Node &x, Value at, Value size, unsigned loadSize) {
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
      throw FilterError{0,
                        "protocol database: '" + proto->name + "." + x.name +
                            "' is read with buf2int but is not a field of 1 "
                            "to 4 bytes (" +
                            x.loc.str() + ")",
                        {{x.loc.file, x.loc.line, x.loc.column,
                          "the field '" + x.name + "' is declared here"}}};
    // In the fast copy the fixed prefix is known to be captured.
    bool known =
        fast && staticCur && *staticCur + loadSize <= needs_[proto].prefixLen;
    set(var(fieldVar("val", x.name)),
        fieldValue(known ? loadBytes(at, loadSize)
                         : checkedLoad(at, loadSize, stopTarget),
                   x.mask));
  }
}

void CodeGen::emitNode(const Node &x) {
  ProtoNeeds &n = needs_[proto];
  Value curSlot = var("cur");
  switch (x.kind) {
  case Node::FixedField: {
    Value at = get(curSlot);
    decoded(x, at, c32(x.size), x.size);
    for (const Node &sub : x.children)
      decoded(sub, at, c32(sub.size), sub.size);
    set(curSlot, arith::AddIOp::create(b, loc, at, c32(x.size)));
    if (staticCur)
      *staticCur += x.size;
    return;
  }
  case Node::BitField: {
    Value at = get(curSlot);
    decoded(x, at, c32(x.size), x.size);
    if (x.last) {
      set(curSlot, arith::AddIOp::create(b, loc, at, c32(x.size)));
      if (staticCur)
        *staticCur += x.size;
    }
    return;
  }
  case Node::VariableField: {
    Value size = expr(*x.expr);
    Value at = get(curSlot);
    decoded(x, at, size, 0);
    set(curSlot, arith::AddIOp::create(b, loc, at, size));
    staticCur.reset();
    return;
  }
  case Node::PaddingField: {
    staticCur.reset();
    Value at = get(curSlot);
    Value rel = arith::SubIOp::create(b, loc, at, get(var("base")));
    Value rem = arith::RemUIOp::create(b, loc, rel, c32(x.size));
    Value pad = arith::RemUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, c32(x.size), rem), c32(x.size));
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
    staticCur.reset();
    if (std::optional<uint32_t> k = knownValue(*x.expr)) {
      // Known (a value the formula requires): one side only.
      emitSequence(*k ? x.children : x.otherwise);
      return;
    }
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
    staticCur.reset();
    Value v = expr(*x.expr);
    // The values the formula still allows, when it restricts them.
    std::optional<std::set<uint32_t>> allowedValues = switchValues(x);
    const std::set<uint32_t> *allowed =
        allowedValues ? &*allowedValues : nullptr;
    auto possible = [&](uint32_t low, uint32_t high) {
      if (!allowed)
        return true;
      auto it = allowed->lower_bound(low);
      return it != allowed->end() && *it <= high;
    };
    bool otherValues = !allowed || llvm::any_of(*allowed, [&](uint32_t a) {
      return llvm::none_of(x.cases, [&](const Node::Case &c) {
        return c.low <= a && a <= c.high;
      });
    });
    Block *join = newBlock();
    for (const Node::Case &c : x.cases) {
      if (!possible(c.low, c.high))
        continue;
      if (allowed && allowed->size() == 1) {
        // The value is known and falls in this case.
        emitSequence(c.body);
        cf::BranchOp::create(b, loc, join);
        startBlock(join);
        return;
      }
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
    if (x.hasDefault && otherValues)
      emitSequence(x.otherwise);
    cf::BranchOp::create(b, loc, join);
    startBlock(join);
    return;
  }
  case Node::Loop:
    staticCur.reset();
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

void CodeGen::emitLoop(const Node &x, ProtoNeeds &n) {
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
    Value more =
        cmp(arith::CmpIPredicate::ult, get(curSlot), get(var(endName)));
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
  cf::BranchOp::create(b, loc,
                       x.loopKind == Node::DoWhileLoop ? bodyBlock : head);
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

void CodeGen::loopBody(const Node &x, Block *head, Block *exit) {
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
  cf::CondBranchOp::create(b, loc, arith::AndIOp::create(b, loc, moved, inside),
                           head, exit);
}

Value CodeGen::expr(const Expr &e) {
  switch (e.kind) {
  case Expr::Number:
    return c32(e.value);
  case Expr::Field: {
    auto it = known.find(e.name);
    if (it != known.end() && it->second.size() == 1)
      return c32(*it->second.begin());
    return get(var(fieldVar("val", e.name)));
  }
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
  case Expr::Add:
    return arith::AddIOp::create(b, loc, l, r);
  case Expr::Sub:
    return arith::SubIOp::create(b, loc, l, r);
  case Expr::Mul:
    return arith::MulIOp::create(b, loc, l, r);
  case Expr::Div:
  case Expr::Mod:
    // A database dividing by zero cannot decode this packet further.
    require(cmp(arith::CmpIPredicate::ne, r, c32(0)), stopTarget);
    if (e.op == Expr::Div)
      return arith::DivUIOp::create(b, loc, l, r);
    return arith::RemUIOp::create(b, loc, l, r);
  case Expr::BitAnd:
    return arith::AndIOp::create(b, loc, l, r);
  case Expr::BitOr:
    return arith::OrIOp::create(b, loc, l, r);
  case Expr::Eq:
    return toI32(cmp(arith::CmpIPredicate::eq, l, r));
  case Expr::Ne:
    return toI32(cmp(arith::CmpIPredicate::ne, l, r));
  case Expr::Lt:
    return toI32(cmp(arith::CmpIPredicate::ult, l, r));
  case Expr::Le:
    return toI32(cmp(arith::CmpIPredicate::ule, l, r));
  case Expr::Gt:
    return toI32(cmp(arith::CmpIPredicate::ugt, l, r));
  case Expr::Ge:
    return toI32(cmp(arith::CmpIPredicate::uge, l, r));
  default:
    break;
  }
  llvm_unreachable("unknown NetPDL operator");
}

} // namespace netvm::netpfl::detail
