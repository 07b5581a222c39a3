// The timer's host-side rules (no GPU): when the warm-up's rounds have settled, and medians.
#include "tuner/kernel_timer.h"

#include <gtest/gtest.h>

#include <vector>

namespace tilejit {
namespace {

bool settles(const std::vector<double>& medians, double tolerance, size_t* at = nullptr) {
  WarmupRounds rounds(tolerance);
  for (size_t i = 0; i < medians.size(); ++i)
    if (rounds.add(medians[i])) {
      if (at) *at = i;
      return true;
    }
  return false;
}

TEST(WarmupRounds, AClockRampSettlesOnlyWhenTwoRoundsAgree) {
  // An H100 back from idle: each round faster than the last until the boost clock holds.
  size_t at = 0;
  ASSERT_TRUE(settles({683, 149, 114, 41, 31.0, 30.4, 30.2}, 0.05, &at));
  EXPECT_EQ(at, 5u); // 30.4 is within 5% of 31.0; 31.0 was not within 5% of 41
}

TEST(WarmupRounds, NoiseWiderThanTheToleranceNeverSettles) {
  EXPECT_FALSE(settles({20, 22, 20, 22, 20, 22}, 0.05));
  EXPECT_TRUE(settles({20, 22, 20, 22}, 0.12));
}

TEST(WarmupRounds, TheFirstRoundAloneNeverSettles) {
  EXPECT_FALSE(settles({15}, 0.05));
  EXPECT_TRUE(settles({15, 15}, 0.05));
}

TEST(LooksDisturbed, OnlyASpreadPastTheLimit) {
  Timing t;
  t.p10_ms = 0.0425, t.median_ms = 0.158, t.p90_ms = 0.225; // seen on an H100
  EXPECT_TRUE(looks_disturbed(t, 1.5));
  t.p10_ms = 0.0418, t.median_ms = 0.0426, t.p90_ms = 0.0438; // the same call, steady
  EXPECT_FALSE(looks_disturbed(t, 1.5));
  t.p90_ms = 1.5 * t.p10_ms; // at the limit: not disturbed
  EXPECT_FALSE(looks_disturbed(t, 1.5));
}

TEST(MedianOf, OddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({7}), 7);
}

} // namespace
} // namespace tilejit
