//===- ProtocolGraph.cpp - NetPFL code along the protocol graph -----------===//
//
// One push handler that parses the packet from the database's
// `startproto`, header after header, along the encapsulation rules, and
// only towards protocols the filter needs: at each header it decodes the
// fields it needs (NetPDL <format>), steps the chains' automata
// (FilterTests.cpp), then follows <encapsulation>. Variables live in
// memref.alloca slots until promote() turns them into SSA values.
//
//===----------------------------------------------------------------------===//

#include "NetPFLInternal.h"

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
  return arith::CmpIOp::create(b, loc, p, l, r);
}

Value CodeGen::isTrue(Value v) {
  return cmp(arith::CmpIPredicate::ne, v, c32(0));
}

void CodeGen::require(Value ok, Block *otherwise) {
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

void CodeGen::emitHeader(const Protocol &p) {
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
    require(
        arith::XOrIOp::create(
            b, loc, no, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
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
    set(var(fieldVar("val", x.name)),
        fieldValue(checkedLoad(at, loadSize, stopTarget), x.mask));
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
