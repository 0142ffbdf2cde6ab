//===- LossScalerTest.cpp - dynamic loss scaling's state machine ----------===//
//
// runtime/optim/LossScaler.h: backoff and reset on an overflow, growth after the interval of
// good steps, and the config checks.
//
//===----------------------------------------------------------------------===//

#include "runtime/optim/LossScaler.h"

#include <gtest/gtest.h>

#include <limits>

namespace rp::runtime {
namespace {

TEST(LossScalerTest, BacksOffAndGrows) {
  LossScaleConfig c;
  c.enabled = true;
  c.growthInterval = 3;
  LossScaleState s{65536.0, 0};
  s = nextLossScale(s, true, c);
  s = nextLossScale(s, true, c);
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_EQ(s.goodSteps, 2);
  s = nextLossScale(s, false, c); // an overflow: halve, restart the count
  EXPECT_EQ(s.scale, 32768.0);
  EXPECT_EQ(s.goodSteps, 0);
  for (int i = 0; i < 2; ++i)
    s = nextLossScale(s, true, c);
  EXPECT_EQ(s.scale, 32768.0);
  s = nextLossScale(s, true, c); // the third good step in a row doubles
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_EQ(s.goodSteps, 0);
}

TEST(LossScalerTest, DefaultsAreGradScalersButTheStart) {
  LossScaleConfig c;
  // 2^15, not GradScaler's 2^16: the largest power of two an fp16 seed holds.
  EXPECT_EQ(c.initScale, 32768.0);
  EXPECT_LE(c.initScale, 65504.0); // fp16's largest finite value
  EXPECT_EQ(c.growthInterval, 2000);
  EXPECT_EQ(c.growth, 2.0);
  EXPECT_EQ(c.backoff, 0.5);
  EXPECT_TRUE(checkLossScaleConfig(c).ok()); // disabled: nothing to check
}

TEST(LossScalerTest, RejectsBadConfigs) {
  LossScaleConfig c;
  c.enabled = true;
  EXPECT_TRUE(checkLossScaleConfig(c).ok());
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    LossScaleConfig b = c;
    b.initScale = bad;
    EXPECT_EQ(checkLossScaleConfig(b).code(), StatusCode::InvalidArgument) << bad;
  }
  LossScaleConfig g = c;
  g.growthInterval = 0;
  EXPECT_EQ(checkLossScaleConfig(g).code(), StatusCode::InvalidArgument);
  LossScaleConfig f = c;
  f.backoff = 1.0;
  EXPECT_EQ(checkLossScaleConfig(f).code(), StatusCode::InvalidArgument);
  f = c;
  f.growth = 1.0;
  EXPECT_EQ(checkLossScaleConfig(f).code(), StatusCode::InvalidArgument);
}

} // namespace
} // namespace rp::runtime
