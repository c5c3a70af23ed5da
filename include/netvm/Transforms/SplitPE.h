//===- SplitPE.h - Split a NetPE's push handler in two -----------*- C++
//-*-===//
//
// netvm-split-pe (NetVMPasses.td, docs/optimizer.md) as a function, for the
// partitioner's callers (docs/partitioning.md): one NetPE's push handler
// is cut at a legal block into two NetPEs connected by a new port, the
// values live across the cut carried in info memory.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TRANSFORMS_SPLITPE_H
#define NETVM_TRANSFORMS_SPLITPE_H

#include "netvm/Analysis/Partition.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <functional>

#include <string>

namespace netvm {
class ApplicationOp;

struct SplitOptions {
  /// The NetPE to split.
  std::string pe;
  /// The share of the handler's estimated cost to put before the cut.
  double fraction = 0.5;
  /// An explicit cut: before this block of the push handler (its index,
  /// 0 the entry); -1 chooses one.
  int block = -1;
  analysis::CostTarget target = analysis::CostTarget::Native;
  /// The most values the cut may carry.
  unsigned maxCarried = 8;
  /// Block counts of a run weigh the blocks instead of static estimates.
  const analysis::Profile *profile = nullptr;
};

struct SplitResult {
  /// The two NetPEs (the first keeps the original name) and the new port.
  std::string first, second, port;
  /// The cut block's index in the original push handler.
  unsigned block = 0;
  /// Values carried in info memory, at byte `infoOffset`.
  unsigned carried = 0, infoOffset = 0;
  /// Estimated cost of each half (the cost model's unit; per run, or over
  /// the profile's run).
  double firstCost = 0, secondCost = 0;
  /// The cut block (now the second handler's), the block that stores the
  /// carried values and sends, and the second handler's entry.
  mlir::Block *cut = nullptr, *storeBlock = nullptr, *loadBlock = nullptr;
};

/// Splits NetPE `options.pe` of `app`. On failure nothing changed and
/// `error` says why (no such NetPE, no legal cut, why an explicit cut is
/// not legal).
mlir::LogicalResult splitPE(ApplicationOp app, const SplitOptions &options,
                            SplitResult &result, std::string &error);

/// What the partitioner needs of the tool to weigh a split: the tool's
/// optimization of a loaded module (in place), and optionally its profile
/// of an optimized module.
struct SplitPlanner {
  std::function<mlir::LogicalResult(mlir::ModuleOp)> optimize;
  std::function<bool(mlir::ModuleOp, analysis::Profile &, std::string &)>
      profile;
};

/// The partitioner with splits (docs/partitioning.md): plans the
/// application of `optimized` like analysis::partition (with `profile`,
/// which may be null, calibrated). When the plan's bottleneck is a stage
/// that cannot be replicated and one NetPE takes most of it
/// (analysis::splitCandidate), that NetPE is split in copies of `loaded`
/// (the same application before optimization, where no packet-check
/// versioning has duplicated the blocks) at several fractions, each
/// optimized (and profiled, with a profile) and planned. The best split,
/// if it predicts at least 5% more throughput, replaces the application
/// of `optimized`; `profile`, `model` and `plan` are then the split
/// application's and `plan.split` says what was split and the gain.
/// Otherwise a note of `plan` says why not. `splitLoaded`, if not null,
/// gets the split application before optimization (null without a split).
bool partitionWithSplit(
    mlir::ModuleOp optimized, mlir::ModuleOp loaded,
    const SplitPlanner &planner, analysis::CostTarget target,
    const analysis::PartitionOptions &options, analysis::Profile *profile,
    analysis::CostModel &model, analysis::Plan &plan, std::string &error,
    mlir::OwningOpRef<mlir::ModuleOp> *splitLoaded = nullptr);

} // namespace netvm

#endif // NETVM_TRANSFORMS_SPLITPE_H
