//===- IntRangeOpts.cpp - Integer range rewrites, linear ------------------===//
//
// netvm-int-range-opts (NetVMPasses.td): MLIR's integer range rewrites
// (arith::populateIntRangeOptimizationsPatterns) with the analyses they
// read, applied by the greedy driver without region simplification.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace netvm {
#define GEN_PASS_DEF_NETVMINTRANGEOPTS
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// Keeps the solver's states from outliving the operations they describe
/// (the rewrites read ranges while the driver erases operations).
struct ForgetErased : RewriterBase::Listener {
  explicit ForgetErased(DataFlowSolver &solver) : solver(solver) {}
  void notifyOperationErased(Operation *op) override {
    solver.eraseState(solver.getProgramPointAfter(op));
    for (Value result : op->getResults())
      solver.eraseState(result);
  }
  DataFlowSolver &solver;
};

struct IntRangeOptsPass : netvm::impl::NetVMIntRangeOptsBase<IntRangeOptsPass> {
  void runOnOperation() override {
    Operation *op = getOperation();
    DataFlowSolver solver;
    // Integer ranges need the dead code and constant analyses beside them.
    solver.load<dataflow::DeadCodeAnalysis>();
    solver.load<dataflow::SparseConstantPropagation>();
    solver.load<dataflow::IntegerRangeAnalysis>();
    if (failed(solver.initializeAndRun(op)))
      return signalPassFailure();
    ForgetErased listener(solver);
    RewritePatternSet patterns(&getContext());
    arith::populateIntRangeOptimizationsPatterns(patterns, solver);
    GreedyRewriteConfig config;
    config.setListener(&listener);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(op, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
