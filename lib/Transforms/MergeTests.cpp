//===- MergeTests.cpp - One branch for a chain of tests -------------------===//
//
// A filter is a chain of tests that each leave for the same block or go
// on: `if (!ip) reject; if (!tcp) reject; accept`. As branches, each test
// costs a prediction; a C compiler turns `ip && tcp` into one branch on the
// combined condition when the second test is cheap and cannot fault. This
// pass does the same on the netvm IR: when the block of the next test has
// no other predecessor and holds only operations that may run early
// without anyone noticing (pure operations, loads already proven in bounds),
// they move into the block before and the two branches become one.
//
// In-bounds loads stay in bounds when they move up: the check that proved
// them dominates their block, whose only predecessor is the block they move
// to, so it dominates that block too (or is in the moved block, which then
// is not merged: a check is not pure).
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "netvm-merge-tests"

namespace netvm {
#define GEN_PASS_DEF_NETVMMERGETESTS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// May `op` run before the branch that guards it?
bool speculatable(Operation *op) {
  if (auto load = dyn_cast<LoadOp>(op))
    return load.getInBounds() && load.getSpace() != MemSpace::Shared;
  return isPure(op) && op->getNumRegions() == 0;
}

struct MergeTestsPass
    : public netvm::impl::NetVMMergeTestsBase<MergeTestsPass> {
  using NetVMMergeTestsBase::NetVMMergeTestsBase;

  // One walk in block order, each block merging with the tests after it
  // while it can. A merge only grows the block it merges into and erases
  // the block it took, which makes no earlier merge possible that was
  // not, so this ends where restarting after each merge would, in time
  // linear in the blocks (10,000 `and not port N` took minutes).
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    for (Block &block : getOperation().getBody())
      blocks.push_back(&block);
    for (Block *block : blocks)
      if (!erased.contains(block))
        while (mergeAfter(*block)) {
        }
  }

  /// Blocks merged into the block before them.
  llvm::DenseSet<Block *> erased;

  /// Merge the test that follows `block`'s branch, if it may.
  bool mergeAfter(Block &pred) {
    auto first = dyn_cast<cf::CondBranchOp>(pred.getTerminator());
    if (!first)
      return false;
    for (bool nextOnTrue : {false, true}) {
      Block *next = nextOnTrue ? first.getTrueDest() : first.getFalseDest();
      Block *exit = nextOnTrue ? first.getFalseDest() : first.getTrueDest();
      if (next == exit || next == &pred ||
          next->getSinglePredecessor() != &pred ||
          next->getNumArguments() != 0 || !first.getTrueOperands().empty() ||
          !first.getFalseOperands().empty())
        continue;
      auto second = dyn_cast<cf::CondBranchOp>(next->getTerminator());
      if (!second)
        continue;
      bool exitOnTrue = second.getTrueDest() == exit;
      if (!exitOnTrue && second.getFalseDest() != exit)
        continue;
      if (!(exitOnTrue ? second.getTrueOperands() : second.getFalseOperands())
               .empty())
        continue;
      Block *onward = exitOnTrue ? second.getFalseDest() : second.getTrueDest();
      if (onward == next)
        continue;
      unsigned ops = next->getOperations().size() - 1;
      if (ops > maxOps)
        continue;
      if (!llvm::all_of(next->without_terminator(),
                        [](Operation &op) { return speculatable(&op); }))
        continue;

      // Move the operations up, then branch once: exit when either test
      // says so.
      OpBuilder b(first);
      Location loc = first.getLoc();
      pred.getOperations().splice(first->getIterator(), next->getOperations(),
                                  next->begin(), second->getIterator());
      Value one = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      auto exitWhen = [&](Value cond, bool onTrue) -> Value {
        return onTrue ? cond : arith::XOrIOp::create(b, loc, cond, one);
      };
      Value leave = arith::OrIOp::create(
          b, loc, exitWhen(first.getCondition(), !nextOnTrue),
          exitWhen(second.getCondition(), exitOnTrue));
      SmallVector<Value> onwardArgs(exitOnTrue ? second.getFalseOperands()
                                               : second.getTrueOperands());
      cf::CondBranchOp::create(b, loc, leave, exit, ValueRange{}, onward,
                               onwardArgs);
      first.erase();
      second.erase();
      erased.insert(next);
      next->erase();
      NETVM_BUMP(numMerged);
      return true;
    }
    return false;
  }
};

} // namespace
