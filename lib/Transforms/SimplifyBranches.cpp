//===- SimplifyBranches.cpp - Branch, jump and switch simplification ------===//
//
// Generated filters test the same condition on several paths and jump
// through chains of blocks; NetIL programs jump to jumps and switch on
// values an earlier test already decided. A condition decided by a
// dominating branch is replaced by its value, then the control-flow
// patterns of the `cf` dialect fold constant branches and switches, thread
// jumps through blocks that only jump, trim switches, and the region
// simplifier removes unreachable blocks and merges straight-line ones.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "netvm-simplify-branches"

namespace netvm {
#define GEN_PASS_DEF_NETVMSIMPLIFYBRANCHES
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// What the pass changes, counted by shape.
struct Shape {
  unsigned conditional = 0, blocks = 0, cases = 0;
  static Shape of(HandlerOp handler) {
    Shape s;
    for (Block &block : handler.getBody()) {
      ++s.blocks;
      Operation *t = block.getTerminator();
      if (isa<cf::CondBranchOp>(t))
        ++s.conditional;
      // A switch counts as one conditional branch per case.
      if (auto sw = dyn_cast<cf::SwitchOp>(t)) {
        s.conditional += sw.getCaseDestinations().size();
        s.cases += sw.getCaseDestinations().size();
      }
    }
    return s;
  }
};

/// Counts branches whose targets were rewritten in place (jump threading).
struct ThreadCounter : public RewriterBase::Listener {
  void notifyOperationModified(Operation *op) override {
    if (isa<cf::BranchOp, cf::CondBranchOp, cf::SwitchOp>(op))
      ++threaded;
  }
  uint64_t threaded = 0;
};

/// A switch with one case left is a test: flag == value.
struct SingleCaseSwitch : public OpRewritePattern<cf::SwitchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(cf::SwitchOp op,
                                PatternRewriter &rw) const override {
    if (!op.getCaseValues() || op.getCaseDestinations().size() != 1)
      return failure();
    APInt value = *op.getCaseValues()->getValues<APInt>().begin();
    Location loc = op.getLoc();
    Value expected = arith::ConstantOp::create(
        rw, loc, rw.getIntegerAttr(op.getFlag().getType(), value));
    Value is = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                     op.getFlag(), expected);
    rw.replaceOpWithNewOp<cf::CondBranchOp>(
        op, is, op.getCaseDestinations()[0], op.getCaseOperands(0),
        op.getDefaultDestination(), op.getDefaultOperands());
    return success();
  }
};

struct SimplifyBranchesPass
    : public netvm::impl::NetVMSimplifyBranchesBase<SimplifyBranchesPass> {
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    MLIRContext *context = &getContext();
    Shape before = Shape::of(handler);

    propagateKnownConditions(handler);

    RewritePatternSet patterns(context);
    cf::BranchOp::getCanonicalizationPatterns(patterns, context);
    cf::CondBranchOp::getCanonicalizationPatterns(patterns, context);
    cf::SwitchOp::getCanonicalizationPatterns(patterns, context);
    arith::SelectOp::getCanonicalizationPatterns(patterns, context);
    patterns.add<SingleCaseSwitch>(context);
    ThreadCounter counter;
    GreedyRewriteConfig config;
    config.setListener(&counter);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Normal);
    if (failed(applyPatternsGreedily(handler, std::move(patterns), config)))
      return signalPassFailure();

    Shape after = Shape::of(handler);
    NETVM_BUMP(numConstant, before.conditional > after.conditional
                                ? before.conditional - after.conditional
                                : 0);
    NETVM_BUMP(numBlocks,
               before.blocks > after.blocks ? before.blocks - after.blocks : 0);
    NETVM_BUMP(numSwitches,
               before.cases > after.cases ? before.cases - after.cases : 0);
    NETVM_BUMP(numThreaded, counter.threaded);
  }

  /// Below the true edge of `cf.cond_br %c` (a successor whose only
  /// predecessor is that branch), %c is true; below the false edge, false.
  /// Below a switch case taken only from the switch, the flag equals the
  /// case value. Uses in the blocks those edges dominate get the constant.
  void propagateKnownConditions(HandlerOp handler) {
    DominanceInfo dominance(handler);
    OpBuilder b(handler.getContext());
    auto replaceBelow = [&](Value v, Block *edge, Attribute value) {
      if (!edge->getSinglePredecessor())
        return;
      Value known;
      v.replaceUsesWithIf(
          [&]() -> Value {
            b.setInsertionPointToStart(edge);
            known = arith::ConstantOp::create(b, v.getLoc(),
                                              cast<TypedAttr>(value));
            return known;
          }(),
          [&](OpOperand &use) {
            Block *user = use.getOwner()->getBlock();
            return use.getOwner() != known.getDefiningOp() &&
                   dominance.dominates(edge, user);
          });
      if (known.use_empty())
        known.getDefiningOp()->erase();
    };
    SmallVector<Operation *> terminators;
    for (Block &block : handler.getBody())
      terminators.push_back(block.getTerminator());
    for (Operation *t : terminators) {
      if (auto br = dyn_cast<cf::CondBranchOp>(t)) {
        if (br.getTrueDest() == br.getFalseDest() ||
            matchPattern(br.getCondition(), m_Constant()))
          continue;
        Type i1 = br.getCondition().getType();
        replaceBelow(br.getCondition(), br.getTrueDest(),
                     IntegerAttr::get(i1, 1));
        replaceBelow(br.getCondition(), br.getFalseDest(),
                     IntegerAttr::get(i1, 0));
      } else if (auto sw = dyn_cast<cf::SwitchOp>(t)) {
        if (!sw.getCaseValues() || matchPattern(sw.getFlag(), m_Constant()))
          continue;
        Type type = sw.getFlag().getType();
        for (auto [value, dest] :
             llvm::zip(sw.getCaseValues()->getValues<APInt>(),
                       sw.getCaseDestinations()))
          if (dest != sw.getDefaultDestination())
            replaceBelow(sw.getFlag(), dest, IntegerAttr::get(type, value));
      }
    }
  }
};

} // namespace
