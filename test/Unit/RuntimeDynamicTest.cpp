//===- RuntimeDynamicTest.cpp - The dynamic allocation policy -------------===//
//
// netvm_dynamic_decide (runtime.h) is a pure function from what the
// controller observes of each dynamic stage to a new allocation: these
// tests feed it observations and check its decisions, the thresholds and
// their hysteresis, the dwell time and the pool's bounds; and the parser
// of the policy's settings.
//
//===----------------------------------------------------------------------===//

#include "netvm/runtime.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

constexpr uint64_t us = 1000; // ns

netvm_dynamic_policy policy() {
  netvm_dynamic_policy p{};
  p.queue_up = 100;
  p.queue_down = 10;
  p.delay_up_us = 500;
  p.delay_down_us = 50;
  p.dwell_us = 1000;
  netvm_dynamic_defaults(&p);
  return p;
}

netvm_dynamic_observation stage(uint32_t workers, uint64_t queue,
                                uint64_t oldest, uint64_t since = 5000 * us,
                                uint32_t max = 4) {
  netvm_dynamic_observation o{};
  o.workers = workers;
  o.max_workers = max;
  o.queue = queue;
  o.oldest_ns = oldest;
  o.since_change_ns = since;
  // Quiet (below both down thresholds) for as long as it has not changed.
  o.quiet_ns = queue <= 10 && oldest <= 50 * us ? since : 0;
  return o;
}

std::vector<uint32_t> decide(uint32_t pool,
                             const std::vector<netvm_dynamic_observation> &s,
                             uint32_t *changed = nullptr) {
  netvm_dynamic_policy p = policy();
  std::vector<uint32_t> targets(s.size(), 0);
  uint32_t n = netvm_dynamic_decide(
      &p, pool, s.data(), static_cast<uint32_t>(s.size()), targets.data());
  if (changed)
    *changed = n;
  return targets;
}

using V = std::vector<uint32_t>;

} // namespace

TEST(DynamicPolicy, DefaultsFillOnlyZeroFields) {
  netvm_dynamic_policy p{};
  p.queue_up = 7;
  netvm_dynamic_defaults(&p);
  EXPECT_EQ(p.queue_up, 7u);
  EXPECT_EQ(p.interval_us, 100u);
  EXPECT_EQ(p.queue_down, 16u);
  EXPECT_EQ(p.delay_up_us, 500u);
  EXPECT_EQ(p.delay_down_us, 50u);
  EXPECT_EQ(p.dwell_us, 2000u);
  EXPECT_EQ(p.workers, 0u);
}

TEST(DynamicPolicy, AddsOnQueueLengthOrDelayWhenWorkersAreFree) {
  uint32_t changed = 0;
  EXPECT_EQ(decide(4, {stage(1, 100, 0)}, &changed), V{2});
  EXPECT_EQ(changed, 1u);
  // The oldest message waited long enough, the queue is short.
  EXPECT_EQ(decide(4, {stage(1, 3, 600 * us)}), V{2});
  // One worker at a time.
  EXPECT_EQ(decide(4, {stage(1, 100000, 100000 * us)}), V{2});
}

TEST(DynamicPolicy, HysteresisKeepsTheAllocationBetweenThresholds) {
  uint32_t changed = 1;
  // Below the up thresholds, above the down ones: nothing changes.
  EXPECT_EQ(decide(4, {stage(2, 50, 100 * us)}, &changed), V{2});
  EXPECT_EQ(changed, 0u);
  EXPECT_EQ(decide(4, {stage(2, 5, 100 * us)}), V{2}); // delay not low
  EXPECT_EQ(decide(4, {stage(2, 50, 10 * us)}), V{2}); // queue not short
  // Below both down thresholds: one worker goes.
  EXPECT_EQ(decide(4, {stage(2, 10, 50 * us)}), V{1});
  EXPECT_EQ(decide(4, {stage(3, 0, 0)}), V{2});
}

TEST(DynamicPolicy, AMomentaryLullRemovesNothing) {
  netvm_dynamic_observation o = stage(2, 0, 0);
  o.quiet_ns = 999 * us; // quiet, but not for the whole dwell time
  EXPECT_EQ(decide(4, {o}), V{2});
  o.quiet_ns = 1000 * us;
  EXPECT_EQ(decide(4, {o}), V{1});
}

TEST(DynamicPolicy, DwellTimeDelaysChanges) {
  EXPECT_EQ(decide(4, {stage(1, 1000, 0, 999 * us)}), V{1});
  EXPECT_EQ(decide(4, {stage(1, 1000, 0, 1000 * us)}), V{2});
  EXPECT_EQ(decide(4, {stage(3, 0, 0, 10 * us)}), V{3});
}

TEST(DynamicPolicy, NeverBelowOneNorAboveTheStageOrThePool) {
  EXPECT_EQ(decide(4, {stage(1, 0, 0)}), V{1});
  EXPECT_EQ(decide(8, {stage(4, 1000, 0, 5000 * us, 4)}), V{4});
  // The pool is used up by a stage that is busy too: nobody gains.
  EXPECT_EQ(decide(4, {stage(2, 1000, 0), stage(2, 1000, 0)}), (V{2, 2}));
}

TEST(DynamicPolicy, BusyStageTakesAWorkerFromAQuietOne) {
  // Pool of 3, all in use: stage 1 is busy, stage 0 between thresholds
  // (not quiet enough to give one back on its own) lends one.
  EXPECT_EQ(decide(3, {stage(2, 50, 100 * us), stage(1, 500, 800 * us)}),
            (V{1, 2}));
  // A stage that changed recently keeps its workers.
  EXPECT_EQ(
      decide(3, {stage(2, 50, 100 * us, 10 * us), stage(1, 500, 800 * us)}),
      (V{2, 1}));
  // A quiet stage gives its worker back and the busy one takes it.
  EXPECT_EQ(decide(3, {stage(2, 0, 0), stage(1, 500, 800 * us)}), (V{1, 2}));
}

TEST(DynamicPolicy, TheLongestWaitGoesFirst) {
  // One free worker, two busy stages: the one whose oldest message waited
  // longer gets it.
  EXPECT_EQ(decide(3, {stage(1, 200, 600 * us), stage(1, 200, 900 * us)}),
            (V{1, 2}));
  EXPECT_EQ(decide(4, {stage(1, 200, 600 * us), stage(1, 200, 900 * us)}),
            (V{2, 2}));
}

TEST(DynamicPolicy, ParsesSettings) {
  netvm_dynamic_policy p{};
  char error[256] = {0};
  ASSERT_TRUE(netvm_parse_dynamic_policy(
      "workers=3,interval=20us,queue-up=64,queue-down=2,delay-up=1ms,"
      "delay-down=40,dwell=1s",
      &p, error, sizeof error))
      << error;
  EXPECT_EQ(p.workers, 3u);
  EXPECT_EQ(p.interval_us, 20u);
  EXPECT_EQ(p.queue_up, 64u);
  EXPECT_EQ(p.queue_down, 2u);
  EXPECT_EQ(p.delay_up_us, 1000u);
  EXPECT_EQ(p.delay_down_us, 40u);
  EXPECT_EQ(p.dwell_us, 1000000u);
  EXPECT_TRUE(netvm_parse_dynamic_policy("", &p, error, sizeof error));
  EXPECT_FALSE(netvm_parse_dynamic_policy("speed=3", &p, error, sizeof error));
  EXPECT_NE(std::strstr(error, "unknown setting 'speed'"), nullptr) << error;
  EXPECT_FALSE(netvm_parse_dynamic_policy("dwell=x", &p, error, sizeof error));
  EXPECT_NE(std::strstr(error, "'dwell' needs a number"), nullptr) << error;
  EXPECT_FALSE(netvm_parse_dynamic_policy("dwell=3h", &p, error, sizeof error));
}
