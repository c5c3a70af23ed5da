//===- AllocationTest.cpp - The ME allocation policy ----------------------===//
//
// decideReplicas (runtime/include/netvm/emu/Allocation.h) on observations
// whose answers are known: a backlog adds replicas at once, an idle stage
// gives them back one at a time after the dwell, the band between the
// thresholds changes nothing (hysteresis), and the bounds hold.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Allocation.h"

#include <gtest/gtest.h>

using namespace netvm::me;

namespace {

AllocationPolicy policy() {
  AllocationPolicy p;
  p.minReplicas = 1;
  p.maxReplicas = 6;
  p.addAbove = 4;
  p.removeBelow = 0.5;
  p.addDwell = 0;
  p.removeDwell = 10000;
  return p;
}

TEST(Allocation, BacklogAddsAtOnce) {
  // 20 packets waiting on one replica: 20 / 4 + 1 = 6 replicas.
  EXPECT_EQ(decideReplicas(policy(), 1, 20, 0), 6u);
  // 9 waiting on 2: 4.5 each, above 4: 9 / 4 + 1 = 3.
  EXPECT_EQ(decideReplicas(policy(), 2, 9, 0), 3u);
  // Never beyond the maximum.
  EXPECT_EQ(decideReplicas(policy(), 5, 500, 0), 6u);
  EXPECT_EQ(decideReplicas(policy(), 6, 500, 0), 6u);
}

TEST(Allocation, IdleRemovesOneAfterTheDwell) {
  EXPECT_EQ(decideReplicas(policy(), 4, 0, 9999), 4u);
  EXPECT_EQ(decideReplicas(policy(), 4, 0, 10000), 3u);
  EXPECT_EQ(decideReplicas(policy(), 1, 0, 1u << 30), 1u);
}

TEST(Allocation, HysteresisBand) {
  // Between 0.5 and 4 packets per replica: no change, however long.
  for (double waiting : {2.0, 4.0, 8.0, 16.0})
    EXPECT_EQ(decideReplicas(policy(), 4, waiting, 1u << 30), 4u) << waiting;
}

TEST(Allocation, AddDwell) {
  AllocationPolicy p = policy();
  p.addDwell = 500;
  EXPECT_EQ(decideReplicas(p, 1, 100, 499), 1u);
  EXPECT_EQ(decideReplicas(p, 1, 100, 500), 6u);
}

TEST(Allocation, CountOutsideTheBoundsIsClamped) {
  AllocationPolicy p = policy();
  p.minReplicas = 2;
  EXPECT_EQ(decideReplicas(p, 0, 1, 0), 2u);
  EXPECT_EQ(decideReplicas(p, 9, 12, 0), 6u);
}

} // namespace
