//===- ExecutorTest.cpp - The executor on the CPU backend, runtime world --===//
//
// Runs the hand-written plan of PlanTestUtil.h (a forward stage, a fused tail, a backward
// stage; M = 2) through the executor on pools of 1 to 4 CPU workers, in sync and async mode.
// The plan's "gradients" are not real (its backward copies values), but every byte the
// executor moves is deterministic, so the losses and the fp32 master weights must be identical
// for every pool size, must change from step to step (the optimizer ran), and async must
// differ from sync once the stale weights are used (step 2). The global norm of clipping is
// summed from the squares the gradient downloads make, which must give the bits of the host
// pass a backend without them falls back to. The end-to-end checks against the non-pipelined
// reference are the lit tests test/Tools/rp-run-*.test.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/ExecutorTestUtil.h"
#include "test/Unit/support/ForwardingBackend.h"
#include "test/Unit/support/PlanTestUtil.h"

#include "runtime/backends/cpu/CpuBackend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;

using rp::testing::RunResult;

RunResult train(const pb::Plan &plan, int devices, int64_t steps, double lr = 1e-2) {
  CpuBackend backend(devices);
  return rp::testing::trainTestPlan(plan, backend, steps, lr);
}

class ExecutorTest : public ::testing::TestWithParam<pb::UpdateMode> {};

TEST_P(ExecutorTest, ResultsDoNotDependOnThePoolSize) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const RunResult one = train(plan, 1, 4);
  ASSERT_EQ(one.losses.size(), 8u);
  for (float l : one.losses)
    EXPECT_TRUE(std::isfinite(l));
  // The optimizer ran: the last step's losses differ from a run with learning rate 0.
  const RunResult still = train(plan, 1, 4, 0.0);
  EXPECT_NE(std::memcmp(still.losses.data() + 6, one.losses.data() + 6, 2 * 4), 0);
  for (int devices = 2; devices <= 4; ++devices) {
    const RunResult n = train(plan, devices, 4);
    EXPECT_EQ(std::memcmp(n.losses.data(), one.losses.data(), one.losses.size() * 4), 0)
        << devices << " workers";
    EXPECT_EQ(n.master, one.master) << devices << " workers";
  }
}

TEST(ExecutorTest, AsyncComputesWithStaleWeights) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(pb::SYNC);
  const RunResult sync = train(plan, 2, 3);
  plan.mutable_config()->set_update(pb::ASYNC);
  const RunResult async = train(plan, 2, 3);
  // Step 0 computes with W_0 in both modes; step 1 uses W_1 (sync) or W_0 again (async).
  EXPECT_EQ(std::memcmp(sync.losses.data(), async.losses.data(), 2 * 4), 0);
  EXPECT_NE(std::memcmp(sync.losses.data() + 2, async.losses.data() + 2, 2 * 4), 0);
  EXPECT_NE(sync.master, async.master);
}

/// A CPU backend that records the squares scale each gradient download is asked for and,
/// with `dropSquares`, asks for none (a backend that cannot make them: the executor then
/// sums the norm on the host).
class SquaresWatch final : public rp::testing::ForwardingCpuBackend {
public:
  SquaresWatch(int devices, bool dropSquares)
      : ForwardingCpuBackend(devices), dropSquares_(dropSquares) {}
  void downloadGradients(int d, int64_t src, void *dst, int64_t bytes,
                         std::vector<GradientRange> ranges, GradientCheck *check,
                         std::string label) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      scales.push_back(check->squaresScale);
    }
    if (dropSquares_)
      check->squaresScale = 0;
    ForwardingCpuBackend::downloadGradients(d, src, dst, bytes, std::move(ranges), check,
                                            std::move(label));
  }
  std::vector<float> scales;

private:
  bool dropSquares_;
  std::mutex mutex_;
};

TEST_P(ExecutorTest, NormFromTheDownloadsEqualsTheHostPass) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(1e-3); // every step clips
  SquaresWatch fromDownloads(2, false), onHost(2, true);
  const RunResult a = rp::testing::trainTestPlan(plan, fromDownloads, 3);
  const RunResult b = rp::testing::trainTestPlan(plan, onHost, 3);
  // Every download squared its gradients at the step's gradScale (1 / M: no loss scale).
  ASSERT_FALSE(fromDownloads.scales.empty());
  for (float scale : fromDownloads.scales)
    EXPECT_EQ(scale, 0.5f);
  EXPECT_EQ(a.master, b.master);
  EXPECT_EQ(std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * 4), 0);
  // The clip changed the update: a run without clipping ends elsewhere.
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(0);
  SquaresWatch unclipped(2, false);
  EXPECT_NE(rp::testing::trainTestPlan(plan, unclipped, 3).master, a.master);
  for (float scale : unclipped.scales) // no norm: no squares
    EXPECT_EQ(scale, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Modes, ExecutorTest, ::testing::Values(pb::SYNC, pb::ASYNC),
                         [](const auto &info) {
                           return std::string(info.param == pb::SYNC ? "Sync" : "Async");
                         });

} // namespace
} // namespace rp::runtime
