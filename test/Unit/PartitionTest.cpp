//===- PartitionTest.cpp - The partitioner on hand-made cost models -------===//
//
// The search of lib/Analysis/Partition.cpp on models whose best plans are
// known: a fat stateless NetPE is replicated, a stateful one is not, the
// NetPEs sharing written memory stay together, and the ME plans keep a
// receive and a transmit ME.
//
//===----------------------------------------------------------------------===//

#include "netvm/Analysis/Partition.h"

#include <gtest/gtest.h>

using namespace netvm::analysis;

namespace {

/// A chain of NetPEs with the given costs (ns, one run per packet), each
/// sending every packet to the next.
CostModel chain(std::vector<double> costs, unsigned cores = 64) {
  CostModel m;
  m.target = CostTarget::Native;
  m.unit = "ns";
  m.cores = cores;
  m.crossingCost = 0;
  m.packetOverhead = 0;
  for (size_t i = 0; i < costs.size(); ++i) {
    PECost c;
    c.name = "pe" + std::to_string(i);
    c.runsPerPacket = 1;
    c.cost = costs[i];
    m.pes.push_back(c);
    m.order.push_back(i);
    if (i) {
      EdgeCost e;
      e.from = i - 1;
      e.to = i;
      e.messagesPerPacket = 1;
      m.edges.push_back(e);
    }
  }
  return m;
}

std::vector<unsigned> workersOf(const Plan &p) {
  std::vector<unsigned> w;
  for (const PlanStage &s : p.stages)
    w.push_back(s.workers);
  return w;
}

TEST(Partition, OneWorkerIsOneStage) {
  CostModel m = chain({10, 20, 30});
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {1, 0}, p, error)) << error;
  ASSERT_EQ(p.stages.size(), 1u);
  EXPECT_EQ(p.stages[0].pes, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_NEAR(p.throughput, 1e9 / 60, 1);
}

TEST(Partition, StatelessApplicationIsReplicatedWhole) {
  // Without crossing costs, every plan of 4 workers reaches 4/60 per ns at
  // best; one replicated stage does it with the fewest stages.
  CostModel m = chain({10, 20, 30});
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  ASSERT_EQ(p.stages.size(), 1u);
  EXPECT_EQ(p.stages[0].workers, 4u);
  EXPECT_NEAR(p.throughput, 4e9 / 60, 1e3);
}

TEST(Partition, StatefulNetPEsGetTheirOwnStage) {
  // pe0 keeps state: it cannot be replicated, so it gets a stage of one
  // worker and the fat stateless pe1 the other three.
  CostModel m = chain({10, 60});
  m.pes[0].replicable = false;
  m.pes[0].notReplicable = "writes its data memory";
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(workersOf(p), (std::vector<unsigned>{1, 3}));
  EXPECT_NEAR(p.throughput, 1e9 / 20, 1e3);
  EXPECT_EQ(p.bottleneck, "stage 1 (pe1)");
}

TEST(Partition, FlowKeyedNetPEIsReplicatedAndItsKeyCostsTheDealer) {
  // pe1 keeps state a flow key partitions: its stage may be replicated
  // while it comes first, and the key function runs on pe0's thread.
  CostModel m = chain({10, 60});
  m.pes[1].replicable = false;
  m.pes[1].notReplicable = "writes its data memory";
  m.pes[1].flowKeyed = true;
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(workersOf(p), (std::vector<unsigned>{1, 3}));
  EXPECT_TRUE(p.stages[1].flowKeyed);
  EXPECT_NEAR(p.throughput, 1e9 / 20, 1e3);
  double stage0 = p.stages[0].cost;
  m.pes[1].keyCost = 5;
  evaluate(m, p);
  EXPECT_NEAR(p.stages[0].cost, stage0 + 5, 1e-9);
  // Not first in its stage (a NetPE of the stage would send to it without
  // the dealer): one worker, and the plan says why.
  CostModel one = chain({10, 60});
  one.pes[1] = m.pes[1];
  Plan whole;
  whole.target = CostTarget::Native;
  whole.stages.resize(1);
  whole.stages[0].pes = {0, 1};
  evaluate(one, whole);
  EXPECT_FALSE(whole.stages[0].replicable);
  EXPECT_NE(whole.stages[0].notReplicable.find("not the first NetPE"),
            std::string::npos)
      << whole.stages[0].notReplicable;
}

TEST(Partition, StatefulBottleneckIsReported) {
  CostModel m = chain({50, 10});
  m.pes[0].replicable = false;
  m.pes[0].notReplicable = "uses coprocessors";
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  EXPECT_EQ(p.bottleneck.rfind("stage 0", 0), 0u) << p.bottleneck;
  // Workers beyond what helps are not used.
  unsigned used = 0;
  for (const PlanStage &s : p.stages)
    used += s.workers;
  EXPECT_LE(used, 2u);
  bool said = false;
  for (const std::string &n : p.notes)
    said |= n.find("uses coprocessors") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Partition, SplitCandidateIsTheFatStatefulNetPE) {
  // pe1 takes 60% of the work and cannot be replicated: its stage limits
  // every plan, so it is the one to split.
  CostModel m = chain({20, 60, 20});
  m.pes[1].replicable = false;
  m.pes[1].notReplicable = "writes its data memory";
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  EXPECT_EQ(splitCandidate(m, p), 1);
  // Under half of its stage's cost: not worth a split.
  EXPECT_EQ(splitCandidate(m, p, 1.01), -1);
  // Replicable, it is replicated instead.
  m.pes[1].replicable = true;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  EXPECT_EQ(splitCandidate(m, p), -1);
  // A small stateful NetPE in a stage it does not dominate.
  CostModel small = chain({60, 10});
  small.pes[1].replicable = false;
  ASSERT_TRUE(partition(small, {1, 0}, p, error)) << error;
  EXPECT_EQ(splitCandidate(small, p), -1);
}

TEST(Partition, WrittenSharedMemoryKeepsNetPEsTogether) {
  CostModel m = chain({30, 30, 30, 30});
  for (unsigned i : {1u, 2u})
    m.pes[i].replicable = false;
  m.pes[1].writesShared = true;
  m.pes[2].readsShared = true;
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {4, 0}, p, error)) << error;
  std::vector<unsigned> stageOf(4);
  for (unsigned s = 0; s < p.stages.size(); ++s)
    for (unsigned pe : p.stages[s].pes)
      stageOf[pe] = s;
  EXPECT_EQ(stageOf[1], stageOf[2]);
  EXPECT_FALSE(p.notes.empty());
}

TEST(Partition, CoresBoundHostThreads) {
  // Four threads on two cores run at the speed of two.
  CostModel m = chain({40}, /*cores=*/2);
  Plan p;
  p.target = CostTarget::Native;
  p.stages.emplace_back();
  p.stages[0].pes = {0};
  p.stages[0].workers = 4;
  evaluate(m, p);
  EXPECT_NEAR(p.throughput, 2e9 / 40, 1e3);
}

TEST(Partition, MEPlansKeepReceiveAndTransmit) {
  CostModel m = chain({400});
  m.target = CostTarget::ME;
  m.unit = "cycles";
  m.contexts = 8;
  m.receiveIssue = 30;
  m.receiveLatency = 300;
  m.transmitIssue = 40;
  m.transmitLatency = 300;
  m.outputsPerPacket = 0.1;
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {8, 0}, p, error)) << error;
  EXPECT_GE(p.receiveWorkers, 1u);
  unsigned used = p.receiveWorkers + 1;
  for (const PlanStage &s : p.stages)
    used += s.workers;
  EXPECT_LE(used, 8u);
  // The stage (400 cycles a packet) is the limit: it gets every ME the
  // receive side does not need.
  EXPECT_EQ(p.stages[0].workers, 8u - 1 - p.receiveWorkers);
  netvm::me::Placement placement = toPlacement(m, p);
  ASSERT_EQ(placement.stages.size(), 1u);
  EXPECT_EQ(placement.stages[0].pes, (std::vector<std::string>{"pe0"}));
  EXPECT_EQ(placement.stages[0].mes, p.stages[0].workers);
  EXPECT_EQ(placement.receiveMEs, p.receiveWorkers);
  EXPECT_FALSE(partition(m, {2, 0}, p, error));
  EXPECT_NE(error.find("at least 3"), std::string::npos);
}

TEST(Partition, StagesForTheNativeRunner) {
  CostModel m = chain({10, 60});
  m.pes[0].replicable = false;
  Plan p;
  std::string error;
  ASSERT_TRUE(partition(m, {3, 0}, p, error)) << error;
  std::vector<uint32_t> stageOf, replicas;
  toStages(m, p, stageOf, replicas);
  EXPECT_EQ(stageOf, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(replicas, (std::vector<uint32_t>{1, 2}));
}

} // namespace
