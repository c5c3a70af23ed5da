//===- Partition.h - Pipeline stages and workers for an application -*- C++
//-*-===//
//
// The partitioner (docs/partitioning.md): from a CostModel and a number of
// workers (host threads, or microengines), a plan of pipeline stages -
// contiguous runs of the NetPEs' topological order - each on one or more
// workers (replicas, for stages whose state allows them), that maximises
// the predicted throughput. NetPEs that share written shared memory stay in
// one stage. The plan prints as text and as Graphviz DOT (netc
// -emit=partition, -emit=partition-dot) and converts to the inputs of the
// two back ends: the ME back end's Placement and the native runner's stage
// of every NetPE with replicas per stage.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ANALYSIS_PARTITION_H
#define NETVM_ANALYSIS_PARTITION_H

#include "netvm/Analysis/CostModel.h"
#include "netvm/Target/ME/AppLayout.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netvm {
class ApplicationOp;
} // namespace netvm

namespace netvm::analysis {

struct PlanStage {
  /// NetPE indices, in topological order.
  std::vector<unsigned> pes;
  unsigned workers = 1;
  /// Per input packet, in the model's unit: the handlers, the crossings
  /// into and out of the stage, and (ME) the memory latency its contexts
  /// wait for.
  double cost = 0, latency = 0;
  /// Packets per second this stage sustains with its workers.
  double rate = 0;
  bool replicable = true;
  std::string notReplicable;
  /// Replicable because its first NetPE's state is partitioned by a flow
  /// key (the others keep none): the dealer before it (host), or the
  /// receive MEs (ME, a plan of one stage), compute each packet's bucket,
  /// and its replicas share that NetPE's data memory.
  bool flowKeyed = false;
};

struct Plan {
  CostTarget target = CostTarget::Native;
  /// Workers asked for; on the MEs, `receiveWorkers` of them receive and
  /// one transmits, the others run stages.
  unsigned workers = 1, receiveWorkers = 0;
  std::vector<PlanStage> stages;
  /// ME: the receive and transmit MEs' rates.
  double receiveRate = 0, transmitRate = 0;
  /// The predicted throughput (packets per second) and what limits it.
  double throughput = 0;
  std::string bottleneck;
  /// Remarks: constraints that shaped the plan (shared memory, NetPEs that
  /// cannot be replicated).
  std::vector<std::string> notes;
  /// The split of a fat NetPE the plan made (netvm-split-pe), with its
  /// predicted gain; empty: none.
  std::string split;
};

struct PartitionOptions {
  unsigned workers = 1;
  /// ME: receive MEs (0: chosen by the model, 1-3).
  unsigned receiveWorkers = 0;
  /// Host: the cores of the machine planned for (CostModel::cores; 0:
  /// this machine's).
  unsigned cores = 0;
};

/// The best plan the model finds. Fails (with `error`) when the workers
/// cannot hold the application (MEs: fewer than 3).
bool partition(const CostModel &model, const PartitionOptions &options,
               Plan &plan, std::string &error);

/// The NetPE worth splitting in `plan` (netvm-split-pe): its stage limits
/// the throughput and cannot be replicated, and the NetPE cannot be
/// replicated and takes at least `minShare` of the stage's handler cost.
/// -1: none.
int splitCandidate(const CostModel &model, const Plan &plan,
                   double minShare = 0.5);

/// The throughput the model predicts for a given plan (its stages and
/// workers), filling every stage's cost and rate and the bottleneck.
void evaluate(const CostModel &model, Plan &plan);

/// Fits the model's remaining factor to a profile's measured time per
/// packet of the default layout (CostModel::stageScale), when the stage
/// limits it.
void calibrate(CostModel &model, const Profile &profile);

void printPlan(const CostModel &model, const Plan &plan, llvm::raw_ostream &os);
void printPlanDot(const CostModel &model, const Plan &plan,
                  llvm::raw_ostream &os);

/// The ME back end's input for a plan (target ME).
me::Placement toPlacement(const CostModel &model, const Plan &plan);
/// Marks every NetPE of `app` (the application the model was built on, or
/// a copy of it) with the stage the plan gives it (the integer attribute
/// `netvm.stage`, which netvm-inline-pes reads).
void annotateStages(ApplicationOp app, const CostModel &model,
                    const Plan &plan);
/// The ME placement of an application whose NetPEs carry `netvm.stage`
/// (after netvm-inline-pes merged some of them): the plan's receive MEs and
/// MEs per stage, the stages' surviving NetPEs.
me::Placement placementOfStages(ApplicationOp app, const Plan &plan);

/// The plan as the native runner's stage list (netvm_parse_stages,
/// netvm-run --stages): "a,b;c:2".
std::string toStageSpec(const CostModel &model, const Plan &plan);

/// The native runner's input: the stage of every NetPE (declaration
/// order) and the replicas of every stage.
void toStages(const CostModel &model, const Plan &plan,
              std::vector<uint32_t> &stageOfPE,
              std::vector<uint32_t> &replicasOfStage);

} // namespace netvm::analysis

#endif // NETVM_ANALYSIS_PARTITION_H
