//===- TokenWeightsTest.cpp - token-weighted losses and backward seeds ----===//
//
// runtime/train/TokenWeights.h: equal counts give seeds of exactly the scale (the arithmetic of
// unmasked runs), unequal counts weigh each micro-batch by its share of the trained labels, a
// micro-batch without trained labels (NaN loss) is skipped, a step without any gives zeros.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TokenWeights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rp::runtime {
namespace {

TEST(TokenWeightsTest, EqualCountsSeedExactlyTheScale) {
  EXPECT_EQ(lossSeeds({16, 16, 16}), (std::vector<float>{1.0f, 1.0f, 1.0f}));
  EXPECT_EQ(lossSeeds({7, 7}, 65536.0), (std::vector<float>{65536.0f, 65536.0f}));
  // The token-weighted loss of equal counts is the mean of the losses.
  EXPECT_DOUBLE_EQ(tokenWeightedLoss({1.0f, 2.0f, 4.5f}, {8, 8, 8}), 7.5 / 3);
}

TEST(TokenWeightsTest, UnequalCountsWeighByShare) {
  // M = 4, N = 13: seed_m = 4 * n_m / 13.
  const std::vector<float> seeds = lossSeeds({7, 1, 0, 5});
  ASSERT_EQ(seeds.size(), 4u);
  EXPECT_EQ(seeds[0], static_cast<float>(28.0 / 13));
  EXPECT_EQ(seeds[1], static_cast<float>(4.0 / 13));
  EXPECT_EQ(seeds[2], 0.0f);
  EXPECT_EQ(seeds[3], static_cast<float>(20.0 / 13));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The NaN loss of the micro-batch without trained labels is skipped.
  EXPECT_DOUBLE_EQ(tokenWeightedLoss({2.0f, 3.0f, nan, 1.0f}, {7, 1, 0, 5}),
                   (7 * 2.0 + 1 * 3.0 + 5 * 1.0) / 13);
}

TEST(TokenWeightsTest, StepWithoutTrainedLabels) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lossSeeds({0, 0}, 1024.0), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(tokenWeightedLoss({nan, nan}, {0, 0}), 0.0);
}

} // namespace
} // namespace rp::runtime
