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
// The region simplifier removes a block argument one incoming edge at a
// time, and each edit of a switch's case operands costs time in its number
// of cases: a 9,000-case switch whose successors' arguments had become
// dead took 71 s. The arguments of blocks entered from large switches that
// are dead, or get one value on every edge, are removed first, each
// predecessor rebuilt once.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
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

/// Points the true (or false) edge of `op` at `to`, with no operands.
void redirectEdge(PatternRewriter &rw, cf::CondBranchOp op, bool onTrue,
                  Block *to) {
  if (onTrue)
    rw.replaceOpWithNewOp<cf::CondBranchOp>(op, op.getCondition(), to,
                                            ValueRange(), op.getFalseDest(),
                                            op.getFalseDestOperands());
  else
    rw.replaceOpWithNewOp<cf::CondBranchOp>(
        op, op.getCondition(), op.getTrueDest(), op.getTrueDestOperands(), to,
        ValueRange());
}

/// A block that only tests its one argument: `^b(%a): [%c = arith.cmpi
/// ne|eq, %a, 0;] cf.cond_br %c (or %a), ^t, ^f`, with no operands on its
/// edges. Returns its destinations, the true one first for a nonzero %a.
std::optional<std::pair<Block *, Block *>> flagTest(Block *b) {
  if (b->getNumArguments() != 1 || !b->getArgument(0).hasOneUse())
    return std::nullopt;
  auto br = dyn_cast<cf::CondBranchOp>(b->getTerminator());
  if (!br || br.getNumOperands() != 1 || br.getTrueDest() == b ||
      br.getFalseDest() == b)
    return std::nullopt;
  Value arg = b->getArgument(0);
  if (br.getCondition() == arg && &b->front() == br.getOperation())
    return std::make_pair(br.getTrueDest(), br.getFalseDest());
  auto cmp = br.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp->getBlock() != b || &b->front() != cmp.getOperation() ||
      cmp->getNextNode() != br.getOperation() || !cmp->hasOneUse() ||
      cmp.getLhs() != arg || !matchPattern(cmp.getRhs(), m_Zero()))
    return std::nullopt;
  if (cmp.getPredicate() == arith::CmpIPredicate::ne)
    return std::make_pair(br.getTrueDest(), br.getFalseDest());
  if (cmp.getPredicate() == arith::CmpIPredicate::eq)
    return std::make_pair(br.getFalseDest(), br.getTrueDest());
  return std::nullopt;
}

/// Jump threading through such a block: a jump to it with a constant goes
/// straight to the destination the constant decides; with the zero
/// extension of a condition, it becomes a branch on that condition.
/// (NetPFL's flags: a header's test result passed to the block that
/// decides the verdict.)
struct ThreadThroughFlagTest : public OpRewritePattern<cf::BranchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(cf::BranchOp op,
                                PatternRewriter &rw) const override {
    auto test = flagTest(op.getDest());
    if (!test || op.getNumOperands() != 1)
      return failure();
    auto [ifSet, ifClear] = *test;
    Value v = op.getOperand(0);
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c))) {
      rw.replaceOpWithNewOp<cf::BranchOp>(op, c.isZero() ? ifClear : ifSet);
      return success();
    }
    if (auto ext = v.getDefiningOp<arith::ExtUIOp>())
      if (ext.getIn().getType().isInteger(1)) {
        rw.replaceOpWithNewOp<cf::CondBranchOp>(op, ext.getIn(), ifSet,
                                                ifClear);
        return success();
      }
    return failure();
  }
};

/// The same for an edge of a conditional branch that passes a constant.
struct ThreadEdgeThroughFlagTest : public OpRewritePattern<cf::CondBranchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(cf::CondBranchOp op,
                                PatternRewriter &rw) const override {
    for (bool onTrue : {true, false}) {
      Block *dest = onTrue ? op.getTrueDest() : op.getFalseDest();
      OperandRange args =
          onTrue ? op.getTrueDestOperands() : op.getFalseDestOperands();
      auto test = flagTest(dest);
      APInt c;
      if (!test || args.size() != 1 ||
          !matchPattern(args[0], m_ConstantInt(&c)))
        continue;
      Block *to = c.isZero() ? test->second : test->first;
      redirectEdge(rw, op, onTrue, to);
      return success();
    }
    return failure();
  }
};

/// Whether a block reachable from `from` without passing through `stop`
/// uses an argument of `stop`.
bool usesArgumentsBelow(Block *from, Block *stop) {
  SmallVector<Block *> work{from};
  llvm::SmallPtrSet<Block *, 16> seen{stop, from};
  while (!work.empty()) {
    Block *b = work.pop_back_val();
    for (Operation &op : *b)
      for (Value v : op.getOperands())
        if (auto arg = dyn_cast<BlockArgument>(v);
            arg && arg.getOwner() == stop)
          return true;
    for (Block *s : b->getSuccessors())
      if (seen.insert(s).second)
        work.push_back(s);
  }
  return false;
}

/// A branch on %c to a block that only branches on %c again goes straight
/// to the second branch's destination on that side (NetPFL's header
/// versions: the fast and the slow copy join, then the same length test
/// picks the tests to run). The destination must not use the joined
/// block's arguments.
struct ThreadRepeatedCondition : public OpRewritePattern<cf::CondBranchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(cf::CondBranchOp op,
                                PatternRewriter &rw) const override {
    for (bool onTrue : {true, false}) {
      Block *join = onTrue ? op.getTrueDest() : op.getFalseDest();
      auto again = dyn_cast<cf::CondBranchOp>(&join->front());
      if (join == op->getBlock() || !again ||
          again.getCondition() != op.getCondition() ||
          again.getNumOperands() != 1)
        continue;
      Block *to = onTrue ? again.getTrueDest() : again.getFalseDest();
      if (to == join || usesArgumentsBelow(to, join))
        continue;
      redirectEdge(rw, op, onTrue, to);
      return success();
    }
    return failure();
  }
};

/// Switches with at least this many cases have their successors' arguments
/// pruned by pruneSwitchArguments before the region simplifier runs.
constexpr unsigned kManyCases = 64;

/// The operands a switch passes on each of its edges, by successor index
/// (0: the default), read from the flat operand list in one pass: the
/// switch's own accessors take time in the number of cases per edge.
SmallVector<OperandRange> edgeOperands(cf::SwitchOp sw) {
  SmallVector<OperandRange> edges;
  edges.push_back(sw.getDefaultOperands());
  // The flag, the default's operands, then every case's, in case order.
  OperandRange all = sw->getOperands();
  unsigned at = 1 + sw.getDefaultOperands().size();
  for (int32_t size : sw.getCaseOperandSegments()) {
    edges.push_back(all.slice(at, size));
    at += size;
  }
  return edges;
}

/// Removes the arguments of blocks entered from switches of many cases
/// that are unused or get the same value (defined outside the block) on
/// every incoming edge, replacing their uses by that value.
void pruneSwitchArguments(Region &region) {
  // Every edge into each block with arguments: (terminator, successor).
  DenseMap<Block *, SmallVector<std::pair<Operation *, unsigned>>> edgesInto;
  DenseMap<Operation *, SmallVector<OperandRange>> switchEdges;
  SetVector<Block *> targets;
  for (Block &block : region) {
    Operation *t = block.getTerminator();
    auto sw = dyn_cast<cf::SwitchOp>(t);
    if (sw && sw.getCaseDestinations().size() >= kManyCases) {
      switchEdges[t] = edgeOperands(sw);
      for (Block *successor : t->getSuccessors())
        if (successor->getNumArguments())
          targets.insert(successor);
    }
  }
  if (targets.empty())
    return;
  for (Block &block : region) {
    Operation *t = block.getTerminator();
    for (unsigned i = 0; i < t->getNumSuccessors(); ++i)
      if (targets.contains(t->getSuccessor(i)))
        edgesInto[t->getSuccessor(i)].push_back({t, i});
  }
  auto incoming = [&](Operation *t, unsigned index, unsigned arg) -> Value {
    if (auto it = switchEdges.find(t); it != switchEdges.end())
      return it->second[index][arg];
    auto branch = cast<BranchOpInterface>(t);
    SuccessorOperands operands = branch.getSuccessorOperands(index);
    return arg < operands.getProducedOperandCount() ? Value() : operands[arg];
  };

  // What goes, per block; switches are rebuilt once with what stays.
  DenseMap<Block *, BitVector> removed;
  for (Block *block : targets) {
    auto &edges = edgesInto[block];
    if (llvm::any_of(edges, [](auto edge) {
          return !isa<BranchOpInterface>(edge.first);
        }))
      continue;
    BitVector gone(block->getNumArguments());
    for (BlockArgument arg : block->getArguments()) {
      Value same;
      bool uniform = true;
      for (auto [t, index] : edges) {
        Value v = incoming(t, index, arg.getArgNumber());
        if (!v || (same && v != same)) {
          uniform = false;
          break;
        }
        same = v;
      }
      if (uniform && same && same.getParentBlock() != block)
        arg.replaceAllUsesWith(same);
      if (arg.use_empty())
        gone.set(arg.getArgNumber());
    }
    if (gone.any())
      removed[block] = std::move(gone);
  }
  if (removed.empty())
    return;

  OpBuilder b(region.getContext());
  for (auto &[t, edges] : switchEdges) {
    auto sw = cast<cf::SwitchOp>(t);
    auto keep = [&](Block *dest, OperandRange operands) {
      SmallVector<Value> kept;
      auto it = removed.find(dest);
      for (auto [i, v] : llvm::enumerate(operands))
        if (it == removed.end() || !it->second.test(i))
          kept.push_back(v);
      return kept;
    };
    SmallVector<Value> defaultOperands =
        keep(sw.getDefaultDestination(), edges[0]);
    SmallVector<SmallVector<Value>> caseOperands;
    for (auto [i, dest] : llvm::enumerate(sw.getCaseDestinations()))
      caseOperands.push_back(keep(dest, edges[i + 1]));
    SmallVector<ValueRange> ranges(caseOperands.begin(), caseOperands.end());
    SmallVector<Block *> dests(sw.getCaseDestinations());
    b.setInsertionPoint(sw);
    cf::SwitchOp::create(b, sw.getLoc(), sw.getFlag(),
                         sw.getDefaultDestination(), defaultOperands,
                         sw.getCaseValuesAttr(), dests, ranges);
    sw.erase();
  }
  for (auto &[block, gone] : removed) {
    for (auto [t, index] : edgesInto[block]) {
      if (switchEdges.count(t))
        continue;
      SuccessorOperands operands =
          cast<BranchOpInterface>(t).getSuccessorOperands(index);
      for (int i = gone.size() - 1; i >= 0; --i)
        if (gone.test(i))
          operands.erase(i);
    }
    block->eraseArguments(gone);
  }
}

struct SimplifyBranchesPass
    : public netvm::impl::NetVMSimplifyBranchesBase<SimplifyBranchesPass> {
  void runOnOperation() override {
    HandlerOp handler = getOperation();
    MLIRContext *context = &getContext();
    Shape before = Shape::of(handler);

    propagateKnownConditions(handler);
    pruneSwitchArguments(handler.getBody());

    RewritePatternSet patterns(context);
    cf::BranchOp::getCanonicalizationPatterns(patterns, context);
    cf::CondBranchOp::getCanonicalizationPatterns(patterns, context);
    cf::SwitchOp::getCanonicalizationPatterns(patterns, context);
    arith::SelectOp::getCanonicalizationPatterns(patterns, context);
    patterns.add<SingleCaseSwitch, ThreadThroughFlagTest,
                 ThreadEdgeThroughFlagTest, ThreadRepeatedCondition>(context);
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
      auto below = [&](OpOperand &use) {
        return dominance.dominates(edge, use.getOwner()->getBlock());
      };
      // A select on the condition takes its known side below the edge.
      if (auto flag = dyn_cast<IntegerAttr>(value);
          flag && v.getType().isInteger(1))
        for (Operation *user : llvm::make_early_inc_range(v.getUsers()))
          if (auto sel = dyn_cast<arith::SelectOp>(user);
              sel && sel.getCondition() == v)
            sel.getResult().replaceUsesWithIf(flag.getValue().isOne()
                                                  ? sel.getTrueValue()
                                                  : sel.getFalseValue(),
                                              below);
      // The inverse compare of the same operands is known too.
      if (auto cmp = v.getDefiningOp<arith::CmpIOp>()) {
        auto inverse = arith::invertPredicate(cmp.getPredicate());
        auto flag = cast<IntegerAttr>(value);
        Value negated;
        for (Operation *user : cmp.getLhs().getUsers()) {
          auto other = dyn_cast<arith::CmpIOp>(user);
          if (!other || other == cmp || other.getPredicate() != inverse ||
              other.getLhs() != cmp.getLhs() || other.getRhs() != cmp.getRhs())
            continue;
          if (!negated) {
            b.setInsertionPointToStart(edge);
            negated = arith::ConstantOp::create(
                b, v.getLoc(),
                IntegerAttr::get(flag.getType(), flag.getValue().isZero()));
          }
          other.getResult().replaceUsesWithIf(negated, below);
        }
        if (negated && negated.use_empty())
          negated.getDefiningOp()->erase();
      }
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
