//===- FormSwitches.cpp - A switch for a branch on set membership ---------===//
//
// `host a or host b or ...` ends, after netvm-merge-tests, as one branch on
// an `or` of many equality tests of the same loaded field against
// constants. LLVM handles a long `or` chain poorly: InstCombine and
// instruction selection take seconds on a few thousand of them, and the
// code tests them one by one. A `cf.switch` on the field says the same:
// LLVM lowers it to a binary search or a jump table, in time linear in the
// cases. This pass turns a conditional branch whose condition is a
// disjunction of `x == c` tests (or the negation of one: a conjunction of
// `x != c`) into switches, one per tested value, each falling through to
// the next. A disjunction that is a value (NetPFL or's the tests of a
// header into a flag) becomes the same switches to a block split off after
// it, which receives the value as an argument.
//
// The tests' operands are computed before the branch, so the switches,
// which only read them, need nothing moved; the comparisons and the `or`s
// die and the canonicalizer removes them. Tests of equal values (a field
// loaded again for each test, as netvm-merge-tests leaves them) go to one
// switch: the block's operations are value-numbered in one walk.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <map>

#define DEBUG_TYPE "netvm-form-switches"

namespace netvm {
#define GEN_PASS_DEF_NETVMFORMSWITCHES
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// `x == value`.
struct Membership {
  Value x;
  APInt value;
};

/// Value numbers within one block, in one walk: equal numbers for equal
/// pure operations on equal operands and for loads of one place with no
/// write between them (netvm-merge-tests leaves each test's load of the
/// field it compares; CSE finds them equal too, but in time quadratic in
/// the loads of the block, seconds for a 1,000-term `host` list).
class BlockNumbering {
public:
  explicit BlockNumbering(Block &block) {
    unsigned generation = 0;
    for (Operation &op : block) {
      if (!isMemoryEffectFree(&op) && !onlyReads(&op))
        ++generation;
      if (op.getNumResults() != 1 || op.getNumRegions() != 0)
        continue;
      bool pure = isPure(&op);
      if (!pure && !onlyReads(&op))
        continue;
      // Names, attribute dictionaries and types are uniqued: their
      // addresses identify them.
      Key key{reinterpret_cast<uintptr_t>(op.getName().getAsOpaquePointer()),
              reinterpret_cast<uintptr_t>(
                  op.getAttrDictionary().getAsOpaquePointer()),
              reinterpret_cast<uintptr_t>(
                  op.getResult(0).getType().getAsOpaquePointer()),
              pure ? 0 : uintptr_t(generation) + 1};
      for (Value operand : op.getOperands())
        key.push_back(number(operand));
      auto [it, inserted] = keys.try_emplace(std::move(key), next);
      if (inserted)
        ++next;
      numbers[op.getResult(0)] = it->second;
    }
  }

  /// The number of `v`: equal for values the block computes equally.
  unsigned number(Value v) {
    auto [it, inserted] = numbers.try_emplace(v, next);
    if (inserted)
      ++next;
    return it->second;
  }

private:
  static bool onlyReads(Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    return effects && effects.onlyHasEffect<MemoryEffects::Read>();
  }

  using Key = SmallVector<uintptr_t, 6>;
  llvm::DenseMap<Value, unsigned> numbers;
  std::map<Key, unsigned> keys;
  unsigned next = 0;
};

/// The tests of a condition that is a disjunction of `x == c`.
class Disjunction {
public:
  /// Does `v`, negated if `negate`, hold exactly when one of the tests
  /// does? Collects them in `tests`.
  bool collect(Value v, bool negate) {
    if (++visited > kMaxNodes)
      return false;
    Operation *op = v.getDefiningOp();
    if (!op)
      return false;
    if (auto x = dyn_cast<arith::XOrIOp>(op)) {
      if (matchPattern(x.getRhs(), m_One()))
        return collect(x.getLhs(), !negate);
      if (matchPattern(x.getLhs(), m_One()))
        return collect(x.getRhs(), !negate);
      return false;
    }
    // a | b, and !(a & b) = !a | !b.
    if (auto o = dyn_cast<arith::OrIOp>(op))
      return !negate && collect(o.getLhs(), false) &&
             collect(o.getRhs(), false);
    if (auto a = dyn_cast<arith::AndIOp>(op))
      return negate && collect(a.getLhs(), true) && collect(a.getRhs(), true);
    auto cmp = dyn_cast<arith::CmpIOp>(op);
    if (!cmp)
      return false;
    // x == c, and !(x != c).
    bool membership =
        (cmp.getPredicate() == arith::CmpIPredicate::eq && !negate) ||
        (cmp.getPredicate() == arith::CmpIPredicate::ne && negate);
    if (!membership)
      return false;
    APInt c;
    Value x = cmp.getLhs();
    if (!matchPattern(cmp.getRhs(), m_ConstantInt(&c))) {
      x = cmp.getRhs();
      if (!matchPattern(cmp.getLhs(), m_ConstantInt(&c)))
        return false;
    }
    auto type = dyn_cast<IntegerType>(x.getType());
    if (!type || type.getWidth() > 64)
      return false;
    tests.push_back({x, c});
    return true;
  }

  SmallVector<Membership> tests;

private:
  /// A bound on the walk (the condition is a tree as the merge builds it,
  /// but nothing stops a DAG).
  static constexpr unsigned kMaxNodes = 1u << 16;
  unsigned visited = 0;
};

struct FormSwitchesPass
    : public netvm::impl::NetVMFormSwitchesBase<FormSwitchesPass> {
  using NetVMFormSwitchesBase::NetVMFormSwitchesBase;

  void runOnOperation() override {
    SmallVector<cf::CondBranchOp> branches;
    getOperation().walk([&](cf::CondBranchOp br) { branches.push_back(br); });
    for (cf::CondBranchOp br : branches)
      form(br);
    // Then disjunctions that are values (or'ed into a flag, selected,
    // passed to a block): the largest ones, whose users are not `or`s,
    // `and`s or negations themselves.
    SmallVector<Operation *> roots;
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::OrIOp, arith::AndIOp>(op) ||
          !op->getResult(0).getType().isInteger(1) || op->use_empty())
        return;
      if (llvm::none_of(op->getUsers(), [](Operation *user) {
            return isa<arith::OrIOp, arith::AndIOp, arith::XOrIOp>(user);
          }))
        roots.push_back(op);
    });
    for (Operation *root : roots)
      formValue(root);
  }

  /// The tested values of `d` and their constants (by value number, in
  /// the order they first appear; a value compared twice with one
  /// constant is one case).
  static SmallVector<std::pair<Value, SmallVector<APInt>>>
  casesOf(const Disjunction &d, Block &block) {
    BlockNumbering numbering(block);
    llvm::MapVector<unsigned, std::pair<Value, SmallVector<APInt>>> cases;
    llvm::DenseSet<std::pair<unsigned, uint64_t>> seen;
    for (const Membership &m : d.tests) {
      unsigned n = numbering.number(m.x);
      if (!seen.insert({n, m.value.getZExtValue()}).second)
        continue;
      auto &entry = cases[n];
      if (!entry.first)
        entry.first = m.x;
      entry.second.push_back(m.value);
    }
    SmallVector<std::pair<Value, SmallVector<APInt>>> result;
    for (auto &entry : cases.takeVector())
      result.push_back(std::move(entry.second));
    return result;
  }

  /// Switches at the end of `at`, one per tested value, each falling
  /// through to the next: a match goes to `match`, the last default to
  /// `otherwise`.
  void
  emitSwitches(OpBuilder &b, Location loc, Block *at,
               MutableArrayRef<std::pair<Value, SmallVector<APInt>>> entries,
               Block *match, ValueRange matchArgs, Block *otherwise,
               ValueRange otherArgs) {
    Region *region = at->getParent();
    for (size_t i = 0; i < entries.size(); ++i) {
      auto &[x, values] = entries[i];
      // Not matched: the next value's switch, or the other successor.
      Block *next = otherwise;
      ValueRange nextArgs = otherArgs;
      if (i + 1 < entries.size()) {
        next = b.createBlock(region, std::next(at->getIterator()));
        nextArgs = {};
      }
      b.setInsertionPointToEnd(at);
      SmallVector<Block *> dests(values.size(), match);
      SmallVector<ValueRange> operands(values.size(), matchArgs);
      cf::SwitchOp::create(b, loc, x, next, nextArgs, values, dests, operands);
      NETVM_BUMP(numCases, values.size());
      at = next;
    }
  }

  /// A disjunction computed as a value becomes switches to a block that
  /// receives it as an argument: the block is split after the value.
  void formValue(Operation *root) {
    if (root->use_empty())
      return; // a branch on it became switches above
    Disjunction d;
    bool negate = false;
    if (!d.collect(root->getResult(0), /*negate=*/false)) {
      d = Disjunction();
      negate = true;
      if (!d.collect(root->getResult(0), /*negate=*/true))
        return;
    }
    if (d.tests.size() < minCases)
      return;
    Block *at = root->getBlock();
    auto entries = casesOf(d, *at);
    Block *rest = at->splitBlock(std::next(root->getIterator()));
    Value result =
        rest->addArgument(root->getResult(0).getType(), root->getLoc());
    root->getResult(0).replaceAllUsesWith(result);
    OpBuilder b(root->getContext());
    b.setInsertionPointToEnd(at);
    Location loc = root->getLoc();
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    // A negated disjunction (a conjunction of `!=`) is false on a match.
    emitSwitches(b, loc, at, entries, rest, negate ? no : yes, rest,
                 negate ? yes : no);
    NETVM_BUMP(numSwitches);
  }

  void form(cf::CondBranchOp br) {
    if (br.getTrueDest() == br.getFalseDest())
      return;
    // A disjunction sends its matches to the true successor; a negated
    // one (a conjunction of `!=`) to the false one.
    Disjunction d;
    bool toTrue = true;
    if (!d.collect(br.getCondition(), /*negate=*/false)) {
      d = Disjunction();
      toTrue = false;
      if (!d.collect(br.getCondition(), /*negate=*/true))
        return;
    }
    if (d.tests.size() < minCases)
      return;

    auto entries = casesOf(d, *br->getBlock());
    Block *match = toTrue ? br.getTrueDest() : br.getFalseDest();
    Block *otherwise = toTrue ? br.getFalseDest() : br.getTrueDest();
    SmallVector<Value> matchArgs(toTrue ? br.getTrueOperands()
                                        : br.getFalseOperands());
    SmallVector<Value> otherArgs(toTrue ? br.getFalseOperands()
                                        : br.getTrueOperands());
    OpBuilder b(br);
    emitSwitches(b, br.getLoc(), br->getBlock(), entries, match, matchArgs,
                 otherwise, otherArgs);
    br.erase();
    NETVM_BUMP(numSwitches);
  }
};

} // namespace
