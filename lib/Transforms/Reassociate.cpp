//===- Reassociate.cpp - Let the constants of offset chains fold ----------===//
//
// NetIL computes offsets a step at a time (paper Fig. 5: `r0 = r0 + 14;
// r0 = r0 + 20`), and so does generated parsing code (the header start,
// then a field inside it). Chains of an associative and commutative
// operation are rewritten so that their constants meet and fold, and so
// that constants end up on the outside of a chain: offsets that differ only
// in their constant then share the variable part, which CSE merges and the
// bounds-check passes compare.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <tuple>

#define DEBUG_TYPE "netvm-reassociate"

namespace netvm {
#define GEN_PASS_DEF_NETVMREASSOCIATE
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

/// How many constants met and how many moved out.
struct Counts {
  uint64_t folded = 0, hoisted = 0;
};

/// op(op(x, c1), c2) -> op(x, op(c1, c2)), the inner constant folded;
/// op(op(x, c), y) -> op(op(x, y), c) when the inner result has no other
/// use, which moves the constant outwards.
template <typename Op> struct ReassociateChain : public OpRewritePattern<Op> {
  ReassociateChain(MLIRContext *context, Counts &counts)
      : OpRewritePattern<Op>(context, /*benefit=*/2), counts(counts) {}
  Counts &counts;

  /// The inner operation of a chain: `v` computed by Op with a constant.
  static Op innerOf(Value v) {
    auto inner = v.getDefiningOp<Op>();
    if (inner && (isConstant(inner.getRhs()) || isConstant(inner.getLhs())))
      return inner;
    return {};
  }
  /// Its variable and constant operands.
  static std::pair<Value, Value> split(Op inner) {
    if (isConstant(inner.getRhs()))
      return {inner.getLhs(), inner.getRhs()};
    return {inner.getRhs(), inner.getLhs()};
  }

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rw) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    if (isConstant(lhs) && !isConstant(rhs))
      std::swap(lhs, rhs);
    if (isConstant(rhs)) {
      Op inner = innerOf(lhs);
      if (!inner)
        return failure();
      // Not a structured binding: the lambda below captures x (C++20).
      Value x, c1;
      std::tie(x, c1) = split(inner);
      if (isConstant(x))
        return failure();
      Value folded = Op::create(rw, op.getLoc(), c1, rhs);
      rw.modifyOpInPlace(op, [&] {
        op->setOperand(0, x);
        op->setOperand(1, folded);
      });
      ++counts.folded;
      return success();
    }
    // Neither operand is a constant: hoist the constant of a single-use
    // inner chain.
    for (int side = 0; side < 2; ++side) {
      Value a = side ? rhs : lhs, other = side ? lhs : rhs;
      Op inner = innerOf(a);
      if (!inner || !inner->hasOneUse())
        continue;
      auto [x, c] = split(inner);
      if (isConstant(x))
        continue;
      Value combined = Op::create(rw, op.getLoc(), x, other);
      rw.replaceOpWithNewOp<Op>(op, combined, c);
      ++counts.hoisted;
      return success();
    }
    return failure();
  }
};

/// x - c -> x + (-c): subtractions of constants join addition chains.
struct SubConstantAsAdd : public OpRewritePattern<arith::SubIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SubIOp op,
                                PatternRewriter &rw) const override {
    APInt c;
    if (!matchPattern(op.getRhs(), m_ConstantInt(&c)) ||
        isConstant(op.getLhs()))
      return failure();
    Value negated = arith::ConstantOp::create(
        rw, op.getLoc(), rw.getIntegerAttr(op.getType(), -c));
    rw.replaceOpWithNewOp<arith::AddIOp>(op, op.getLhs(), negated);
    return success();
  }
};

struct ReassociatePass
    : public netvm::impl::NetVMReassociateBase<ReassociatePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    Counts counts;
    patterns
        .add<ReassociateChain<arith::AddIOp>, ReassociateChain<arith::OrIOp>,
             ReassociateChain<arith::XOrIOp>, ReassociateChain<arith::MulIOp>,
             ReassociateChain<arith::AndIOp>>(context, counts);
    patterns.add<SubConstantAsAdd>(context);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    NETVM_BUMP(numFolded, counts.folded);
    NETVM_BUMP(numHoisted, counts.hoisted);
  }
};

} // namespace
