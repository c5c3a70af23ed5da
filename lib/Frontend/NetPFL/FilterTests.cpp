//===- FilterTests.cpp - NetPFL's tests and verdict at each header --------===//
//
// What the filter asks of the headers the parse decodes: the chains'
// automata stepped at each header, comparisons and string searches on
// fields, `extractfields`, and the three-valued formula that decides the
// verdict as early as it can.
//
//===----------------------------------------------------------------------===//

#include "NetPFLInternal.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace netvm;

namespace netvm::netpfl::detail {

Value CodeGen::matches(const Member &m, const Protocol &p) {
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value r = yes;
  if (m.index)
    r = cmp(arith::CmpIPredicate::eq, countOf(p), c32(m.index));
  if (matchPattern(r, m_Zero()))
    return r;
  if (m.tunneled)
    r = andI1(r, isTrue(get(var("tunneled"))));
  if (m.pred)
    r = andI1(r, predicate(*m.pred));
  return r;
}

Value CodeGen::elementMatch(const Element &e, const Protocol &p) {
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
      if (m.proto == &p) {
        // Not the header of this index, whatever the packet.
        if (m.index && countIs(p, m.index) == false)
          return nullptr;
        return matches(m, p);
      }
    return nullptr;
  }
  return nullptr;
}

void CodeGen::groupFlags(const Formula &f) {
  std::optional<size_t> head;
  for (const Formula &k : f.kids) {
    if (f.kind == Formula::Or && k.kind == Formula::Leaf &&
        simpleChain(k.chain)) {
      if (!head)
        head = k.chain;
      flagOf[k.chain] = *head;
      continue;
    }
    groupFlags(k);
  }
}

/// Whether `k`, a kid of an `or`, is a simple chain whose group's flag an
/// earlier kid already brought in.
static bool sharedFlag(const Formula &k, llvm::ArrayRef<size_t> flagOf) {
  return k.kind == Formula::Leaf &&
         flagOf[k.chain] != static_cast<size_t>(k.chain);
}

std::pair<Value, Value> CodeGen::decided(const Formula &f) {
  Value one = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  switch (f.kind) {
  case Formula::Leaf: {
    Value yes = isTrue(get(flagVar(f.chain)));
    Value no = andI1(chainDead(f.chain), notI1(yes));
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
      // The shared flag is in `yes` already: such a chain adds that it
      // can no longer match (the `or` is false when the flag is clear
      // and every chain of the group is dead).
      if (!isAnd && sharedFlag(k, flagOf)) {
        no = andI1(no, chainDead(k.chain));
        continue;
      }
      auto [ky, kn] = decided(k);
      if (isAnd) {
        yes = andI1(yes, ky);
        no = orI1(no, kn);
      } else {
        yes = orI1(yes, ky);
        no = andI1(no, kn);
      }
    }
    return {yes, no};
  }
  }
  llvm_unreachable("unknown formula");
}

Value CodeGen::chainDead(size_t c) {
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
        dead = andI1(dead, cmp(arith::CmpIPredicate::uge, countOf(*m.proto),
                               c32(m.index)));
      }
    }
  }
  if (n == 1 && !chain.anchored)
    return dead;                            // no partial matches are kept
  uint32_t partial = ((1u << n) - 1) & ~1u; // states 1 .. n-1
  Value none = cmp(
      arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, loc, get(chainVar(c)), c32(partial)), c32(0));
  return andI1(dead, none);
}

bool CodeGen::stepChain(size_t c, const Protocol &p) {
  const Chain &chain = filter.chains[c];
  size_t n = chain.elems.size();
  bool relevantHere = false;
  for (const Element &e : chain.elems)
    if (e.kind != Element::Set ||
        llvm::any_of(e.members, [&](const Member &m) { return m.proto == &p; }))
      relevantHere = true;
  if (n == 1 && !chain.anchored) {
    // The common case: some header matches.
    if (!relevantHere)
      return false;
    Value m = elementMatch(chain.elems[0], p);
    if (!m || matchPattern(m, m_Zero()))
      return false;
    // Or'ed into the flag once per header (flushFlags), so the optimizer
    // sees one disjunction of the group's tests.
    Value &acc = pendingFlags[flagVar(c)];
    acc = acc ? orI1(acc, m) : m;
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
  set(flagVar(c), arith::OrIOp::create(b, loc, get(flagVar(c)), toI32(done)));
  return true;
}

void CodeGen::flushFlags() {
  for (auto [flag, acc] : pendingFlags)
    set(flag, arith::OrIOp::create(b, loc, get(flag), toI32(acc)));
  pendingFlags.clear();
}

uint32_t CodeGen::closure(const Chain &chain, uint32_t states) {
  for (size_t j = 0; j < chain.elems.size(); ++j)
    if ((states >> j) & 1)
      if (chain.elems[j].repeat == '?' || chain.elems[j].repeat == '*')
        states |= 1u << (j + 1);
  return states;
}

/// The sizes of the chunks fieldChunks reads a field of `size` bytes in.
static llvm::SmallVector<unsigned> chunkSizes(unsigned size) {
  llvm::SmallVector<unsigned> chunks;
  for (unsigned i = 0; i < size; i += chunks.back())
    chunks.push_back(std::min(4u, size - i));
  return chunks;
}

std::pair<Value, llvm::SmallVector<Value>>
CodeGen::fieldChunks(const FieldRef &ref, unsigned size) {
  llvm::SmallVector<unsigned> sizes = chunkSizes(size);
  std::string key = fieldVar("memo", ref.field->name) + "." +
                    std::to_string(size) + (fast ? ".fast" : ".checked");
  auto [it, first] = fieldMemo.try_emplace(key);
  llvm::SmallVector<Value> &slots = it->second;
  if (first) {
    for (size_t i = 0; i <= sizes.size(); ++i)
      slots.push_back(var(key + "." + std::to_string(i)));
    Value off;
    Value present = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    if (std::optional<uint32_t> rel = fastField(ref.field->name, size)) {
      off = arith::AddIOp::create(b, loc, get(var("base")), c32(*rel));
    } else {
      off = get(var(fieldVar("off", ref.field->name)));
      Value len = get(var(fieldVar("len", ref.field->name)));
      // A name declared with other sizes elsewhere in the header (ARP's
      // addresses): only the declaration of the size compared counts.
      present = andI1(cmp(arith::CmpIPredicate::ne, off, c32(kAbsent)),
                      andI1(cmp(arith::CmpIPredicate::eq, len, c32(size)),
                            inPacket(off, c32(size))));
    }
    Block *join = nullptr;
    for (Value slot : slots)
      set(slot, c32(0));
    if (!matchPattern(present, m_One())) {
      Block *load = newBlock();
      join = newBlock();
      cf::CondBranchOp::create(b, loc, present, load, join);
      startBlock(load);
    }
    set(slots[0], c32(1));
    unsigned at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Value where =
          at ? arith::AddIOp::create(b, loc, off, c32(at)).getResult() : off;
      set(slots[i + 1], loadBytes(where, sizes[i]));
      at += sizes[i];
    }
    if (join) {
      cf::BranchOp::create(b, loc, join);
      startBlock(join);
    }
  }
  llvm::SmallVector<Value> chunks;
  for (size_t i = 1; i < slots.size(); ++i)
    chunks.push_back(get(slots[i]));
  return {isTrue(get(slots[0])), chunks};
}

Value CodeGen::fieldRelation(const Pred &p) {
  if (p.kind != Pred::Relation)
    return {};
  bool fieldLeft = p.lhs->kind == Arith::Field;
  const Arith &f = fieldLeft ? *p.lhs : *p.rhs;
  const Arith &lit = fieldLeft ? *p.rhs : *p.lhs;
  if (f.kind != Arith::Field)
    return {};
  if (lit.kind == Arith::Const) {
    const FieldInfo &info = *f.ref.field;
    if (info.size < 1 || info.size > 4)
      return {};
    auto [present, chunks] = fieldChunks(f.ref, info.size);
    Value v = fieldValue(chunks[0], info.mask);
    Value k = c32(lit.k);
    Value test = cmp(p.rel, fieldLeft ? v : k, fieldLeft ? k : v);
    // An absent field reads as 0, which equals no other constant: the
    // test alone then says it (and `or`s of tests stay `or`s of
    // comparisons, which netvm-form-switches makes a switch of).
    if (p.rel == arith::CmpIPredicate::eq && lit.k != 0)
      return test;
    return andI1(present, test);
  }
  if (lit.kind == Arith::Bytes) {
    // An address: the parser allows only == and != with a field of its
    // size (Walker::checkWide).
    size_t n = lit.bytes.size();
    auto [present, chunks] = fieldChunks(f.ref, n);
    llvm::SmallVector<unsigned> sizes = chunkSizes(n);
    Value all = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    for (size_t i = 0, at = 0; i < sizes.size(); at += sizes[i++]) {
      uint32_t want = 0;
      for (unsigned k = 0; k < sizes[i]; ++k)
        want = want << 8 | lit.bytes[at + k];
      all = andI1(all, cmp(arith::CmpIPredicate::eq, chunks[i], c32(want)));
    }
    if (p.rel == arith::CmpIPredicate::ne)
      all = notI1(all);
    else if (llvm::any_of(lit.bytes, [](uint8_t x) { return x != 0; }))
      return all; // absent reads as zeros (above)
    return andI1(present, all);
  }
  return {};
}

Value CodeGen::predicate(const Pred &p) {
  if (Value v = fieldRelation(p))
    return v;
  Value result = var("pred");
  set(result, c32(0));
  Block *done = newBlock();
  if (p.kind == Pred::Relation) {
    Value l = arithValue(*p.lhs, done), r = arithValue(*p.rhs, done);
    set(result, toI32(cmp(p.rel, l, r)));
  } else {
    set(result, toI32(stringTest(p, done)));
  }
  cf::BranchOp::create(b, loc, done);
  startBlock(done);
  return isTrue(get(result));
}

std::pair<Value, Value> CodeGen::fieldPosition(const FieldRef &ref,
                                               Block *absent) {
  Value off = get(var(fieldVar("off", ref.field->name)));
  require(cmp(arith::CmpIPredicate::ne, off, c32(kAbsent)), absent);
  return {off, get(var(fieldVar("len", ref.field->name)))};
}

Value CodeGen::arithValue(const Arith &a, Block *absent) {
  switch (a.kind) {
  case Arith::Const:
    return c32(a.k);
  case Arith::Field: {
    const FieldInfo &f = *a.ref.field;
    if (std::optional<uint32_t> rel = fastField(f.name, f.size)) {
      Value at = arith::AddIOp::create(b, loc, get(var("base")), c32(*rel));
      return fieldValue(loadBytes(at, f.size), f.mask);
    }
    auto [off, len] = fieldPosition(a.ref, absent);
    // A name declared with other sizes elsewhere in the header (ARP's
    // addresses): only the declaration of the size compared counts.
    require(cmp(arith::CmpIPredicate::eq, len, c32(f.size)), absent);
    return fieldValue(checkedLoad(off, f.size, absent), f.mask);
  }
  case Arith::Slice: {
    Value at = arith::AddIOp::create(b, loc, get(var("base")), c32(a.k));
    if (fast && uint64_t(a.k) + a.size <= needs_[proto].prefixLen)
      return loadBytes(at, a.size);
    return checkedLoad(at, a.size, absent);
  }
  case Arith::BitNot:
    return arith::XOrIOp::create(b, loc, arithValue(*a.a, absent),
                                 c32(0xFFFFFFFF));
  case Arith::Binary:
    break;
  case Arith::Bytes:
    llvm_unreachable("addresses are compared by fieldRelation");
  }
  Value l = arithValue(*a.a, absent), r = arithValue(*a.b, absent);
  if (Value v = filter::emitBinary(b, loc, a.op, l, r))
    return v;
  llvm_unreachable("unknown operator");
}

Value CodeGen::stringTest(const Pred &p, Block *absent) {
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
    cf::CondBranchOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, v, c32(want)), next, advance);
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

void CodeGen::extractFields(const Protocol &p) {
  for (size_t i = 0; i < filter.extracts.size(); ++i) {
    const FieldRef &ref = filter.extracts[i].ref;
    if (ref.proto != &p)
      continue;
    if (countIs(p, ref.index) == false)
      continue;
    Block *store = newBlock(), *skip = newBlock();
    Value off = get(var(fieldVar("off", ref.field->name)));
    Value len = get(var(fieldVar("len", ref.field->name)));
    // Only a field the capture holds entirely counts as extracted.
    Value here =
        andI1(cmp(arith::CmpIPredicate::eq, countOf(p), c32(ref.index)),
              andI1(cmp(arith::CmpIPredicate::ne, off, c32(kAbsent)),
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

Value CodeGen::formula(const Formula &f) {
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
      if (f.kind == Formula::Or && sharedFlag(f.kids[i], flagOf))
        continue;
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

} // namespace netvm::netpfl::detail
