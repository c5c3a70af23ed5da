//===- Simplify.cpp - Algebraic simplification and constant folding -------===//
//
// Front ends and the NetIL assembler write what the source says: masks of
// masks, zero-extensions masked again, shifts of shifts, multiplications
// by powers of two, comparisons of 8-bit values with 300. This pass folds
// constants through every operation's folder (arith's and netvm's) and
// applies the identities those folders do not know, using the bits an
// operand is known to have zero.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "netvm-simplify"

namespace netvm {
#define GEN_PASS_DEF_NETVMSIMPLIFY
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

std::optional<uint64_t> constantOf(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getZExtValue();
  return std::nullopt;
}

unsigned widthOf(Value v) { return v.getType().getIntOrFloatBitWidth(); }
uint64_t allOnes(unsigned width) {
  return width >= 64 ? ~0ull : (1ull << width) - 1;
}

Value constant(PatternRewriter &rw, Location loc, Type type, uint64_t v) {
  return arith::ConstantIntOp::create(rw, loc, type, static_cast<int64_t>(v));
}

/// The bits of `v` known to be zero (a small, local analysis).
uint64_t knownZero(Value v, unsigned depth = 0) {
  unsigned width = widthOf(v);
  uint64_t all = allOnes(width);
  if (std::optional<uint64_t> c = constantOf(v))
    return ~*c & all;
  if (depth > 6)
    return 0;
  Operation *def = v.getDefiningOp();
  if (!def)
    return 0;
  if (auto ext = dyn_cast<arith::ExtUIOp>(def))
    return (all & ~allOnes(widthOf(ext.getIn()))) |
           knownZero(ext.getIn(), depth + 1);
  if (auto andOp = dyn_cast<arith::AndIOp>(def))
    return knownZero(andOp.getLhs(), depth + 1) |
           knownZero(andOp.getRhs(), depth + 1);
  if (auto orOp = dyn_cast<arith::OrIOp>(def))
    return knownZero(orOp.getLhs(), depth + 1) &
           knownZero(orOp.getRhs(), depth + 1);
  if (auto shr = dyn_cast<arith::ShRUIOp>(def))
    if (std::optional<uint64_t> k = constantOf(shr.getRhs()); k && *k < width)
      return ((knownZero(shr.getLhs(), depth + 1) >> *k) | ~(all >> *k)) & all;
  if (auto shl = dyn_cast<arith::ShLIOp>(def))
    if (std::optional<uint64_t> k = constantOf(shl.getRhs()); k && *k < width)
      return ((knownZero(shl.getLhs(), depth + 1) << *k) | allOnes(*k)) & all;
  return 0;
}

/// (x & c1) & c2 -> x & (c1 & c2); zext(x : iN) & c, c covering the low N
/// bits -> zext(x); and a mask that keeps only known-zero bits -> 0.
struct SimplifyMask : public OpRewritePattern<arith::AndIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AndIOp op,
                                PatternRewriter &rw) const override {
    std::optional<uint64_t> c = constantOf(op.getRhs());
    if (!c)
      return failure();
    Value x = op.getLhs();
    uint64_t all = allOnes(widthOf(x));
    if (auto inner = x.getDefiningOp<arith::AndIOp>())
      if (std::optional<uint64_t> c1 = constantOf(inner.getRhs())) {
        rw.replaceOpWithNewOp<arith::AndIOp>(
            op, inner.getLhs(),
            constant(rw, op.getLoc(), op.getType(), *c & *c1));
        return success();
      }
    uint64_t zero = knownZero(x);
    // Every bit the mask clears is already zero: the mask does nothing.
    if ((~*c & all & ~zero) == 0) {
      rw.replaceOp(op, x);
      return success();
    }
    // The mask keeps only bits that are zero anyway.
    if ((*c & ~zero & all) == 0) {
      rw.replaceOp(op, constant(rw, op.getLoc(), op.getType(), 0));
      return success();
    }
    // Drop the bits of the mask that are known zero (a smaller constant),
    // unless that changes nothing.
    uint64_t trimmed = *c & ~zero & all;
    if (trimmed != *c) {
      rw.replaceOpWithNewOp<arith::AndIOp>(
          op, x, constant(rw, op.getLoc(), op.getType(), trimmed));
      return success();
    }
    return failure();
  }
};

/// (x >> c1) >> c2 -> x >> (c1 + c2), and the same for <<; 0 when the
/// total reaches the width.
template <typename ShiftOp>
struct SimplifyShift : public OpRewritePattern<ShiftOp> {
  using OpRewritePattern<ShiftOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ShiftOp op,
                                PatternRewriter &rw) const override {
    std::optional<uint64_t> c2 = constantOf(op.getRhs());
    auto inner = op.getLhs().template getDefiningOp<ShiftOp>();
    if (!c2 || !inner)
      return failure();
    std::optional<uint64_t> c1 = constantOf(inner.getRhs());
    unsigned width = widthOf(op.getLhs());
    if (!c1 || *c1 >= width || *c2 >= width)
      return failure();
    if (*c1 + *c2 >= width) {
      rw.replaceOp(op, constant(rw, op.getLoc(), op.getType(), 0));
      return success();
    }
    rw.replaceOpWithNewOp<ShiftOp>(
        op, inner.getLhs(), constant(rw, op.getLoc(), op.getType(), *c1 + *c2));
    return success();
  }
};

/// x * 2^k -> x << k; x /u 2^k -> x >> k; x %u 2^k -> x & (2^k - 1).
template <typename Op> struct StrengthReduce : public OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rw) const override {
    Value x = op.getLhs();
    std::optional<uint64_t> c = constantOf(op.getRhs());
    if (!c && std::is_same_v<Op, arith::MulIOp>) {
      c = constantOf(op.getLhs());
      x = op.getRhs();
    }
    if (!c || *c < 2 || !llvm::isPowerOf2_64(*c))
      return failure();
    uint64_t k = llvm::Log2_64(*c);
    Location loc = op.getLoc();
    if constexpr (std::is_same_v<Op, arith::MulIOp>)
      rw.replaceOpWithNewOp<arith::ShLIOp>(op, x,
                                           constant(rw, loc, op.getType(), k));
    else if constexpr (std::is_same_v<Op, arith::DivUIOp>)
      rw.replaceOpWithNewOp<arith::ShRUIOp>(op, x,
                                            constant(rw, loc, op.getType(), k));
    else
      rw.replaceOpWithNewOp<arith::AndIOp>(
          op, x, constant(rw, loc, op.getType(), *c - 1));
    return success();
  }
};

/// Comparisons with a constant that the known-zero bits of the other
/// operand decide: (x & 0xf) == 0x10 is false, zext(i8) > 300 is false.
struct DecideCompare : public OpRewritePattern<arith::CmpIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CmpIOp op,
                                PatternRewriter &rw) const override {
    using P = arith::CmpIPredicate;
    Value x = op.getLhs();
    std::optional<uint64_t> c = constantOf(op.getRhs());
    P pred = op.getPredicate();
    if (!c || constantOf(x))
      return failure();
    uint64_t zero = knownZero(x);
    uint64_t max = ~zero & allOnes(widthOf(x)); // the largest x can be
    std::optional<bool> result;
    switch (pred) {
    case P::eq:
    case P::ne:
      if (*c & zero)
        result = pred == P::ne;
      break;
    case P::ult:
      if (*c > max)
        result = true;
      else if (*c == 0)
        result = false;
      break;
    case P::ule:
      if (*c >= max)
        result = true;
      break;
    case P::ugt:
      if (*c >= max)
        result = false;
      break;
    case P::uge:
      if (*c > max)
        result = false;
      else if (*c == 0)
        result = true;
      break;
    default:
      break;
    }
    if (!result)
      return failure();
    rw.replaceOpWithNewOp<arith::ConstantIntOp>(op, rw.getI1Type(), *result);
    return success();
  }
};

/// A flag widened and compared with 0 or 1 is the flag or its negation:
/// (zext(c) != 0) is c, (zext(c) == 0) is !c (NetPFL's per-term flags).
struct CompareFlag : public OpRewritePattern<arith::CmpIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CmpIOp op,
                                PatternRewriter &rw) const override {
    using P = arith::CmpIPredicate;
    auto ext = op.getLhs().getDefiningOp<arith::ExtUIOp>();
    std::optional<uint64_t> c = constantOf(op.getRhs());
    if (!ext || !ext.getIn().getType().isInteger(1) || !c || *c > 1 ||
        (op.getPredicate() != P::eq && op.getPredicate() != P::ne))
      return failure();
    bool same = (op.getPredicate() == P::ne) == (*c == 0);
    if (same) {
      rw.replaceOp(op, ext.getIn());
      return success();
    }
    rw.replaceOpWithNewOp<arith::XOrIOp>(
        op, ext.getIn(), arith::ConstantIntOp::create(rw, op.getLoc(), 1, 1));
    return success();
  }
};

/// An integer operation whose operands are constants or selects of
/// constants on one condition becomes a select of the two folded results:
/// (c ? 26 : -1) + 4 is c ? 30 : 3, (c ? 4 : 0) == 4 is c. (NetPFL's slow
/// copies of a header pick its fields' offsets by the length they found.)
struct FoldIntoSelect : public RewritePattern {
  FoldIntoSelect(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rw) const override {
    if (!isa<arith::AddIOp, arith::SubIOp, arith::AndIOp, arith::OrIOp,
             arith::XOrIOp, arith::CmpIOp>(op) ||
        op->getNumOperands() != 2)
      return failure();
    Value condition;
    SmallVector<Attribute> onTrue, onFalse;
    for (Value v : op->getOperands()) {
      Attribute c;
      if (matchPattern(v, m_Constant(&c))) {
        onTrue.push_back(c);
        onFalse.push_back(c);
        continue;
      }
      auto sel = v.getDefiningOp<arith::SelectOp>();
      Attribute t, f;
      if (!sel || !matchPattern(sel.getTrueValue(), m_Constant(&t)) ||
          !matchPattern(sel.getFalseValue(), m_Constant(&f)) ||
          (condition && condition != sel.getCondition()))
        return failure();
      condition = sel.getCondition();
      onTrue.push_back(t);
      onFalse.push_back(f);
    }
    if (!condition)
      return failure();
    SmallVector<OpFoldResult> t, f;
    if (failed(op->fold(onTrue, t)) || failed(op->fold(onFalse, f)) ||
        t.size() != 1 || f.size() != 1 || !isa<Attribute>(t[0]) ||
        !isa<Attribute>(f[0]))
      return failure();
    Type type = op->getResult(0).getType();
    Location loc = op->getLoc();
    Value a = arith::ConstantOp::create(rw, loc, type,
                                        cast<TypedAttr>(cast<Attribute>(t[0])));
    Value b = arith::ConstantOp::create(rw, loc, type,
                                        cast<TypedAttr>(cast<Attribute>(f[0])));
    rw.replaceOpWithNewOp<arith::SelectOp>(op, condition, a, b);
    return success();
  }
};

struct SimplifyPass : public netvm::impl::NetVMSimplifyBase<SimplifyPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<SimplifyMask, SimplifyShift<arith::ShRUIOp>,
                 SimplifyShift<arith::ShLIOp>, StrengthReduce<arith::MulIOp>,
                 StrengthReduce<arith::DivUIOp>, StrengthReduce<arith::RemUIOp>,
                 DecideCompare, CompareFlag, FoldIntoSelect>(context);
    for (RegisteredOperationName op : context->getRegisteredOperations())
      if (op.getDialectNamespace() == "arith")
        op.getCanonicalizationPatterns(patterns, context);
    CountingListener listener;
    GreedyRewriteConfig config;
    config.setListener(&listener);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    NETVM_BUMP(numMasks, listener.applied("SimplifyMask"));
    NETVM_BUMP(numShifts, listener.applied("SimplifyShift"));
    NETVM_BUMP(numStrength, listener.applied("StrengthReduce"));
    NETVM_BUMP(numCompares, listener.applied("DecideCompare") +
                                listener.applied("CompareFlag"));
    NETVM_BUMP(numErased, listener.erased);
  }
};

} // namespace
