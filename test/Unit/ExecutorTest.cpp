//===- ExecutorTest.cpp - The executor on the CPU backend, runtime world --===//
//
// Runs the hand-written plan of PlanTestUtil.h (a forward stage, a fused tail, a backward
// stage; M = 2) through the executor on pools of 1 to 4 CPU workers, in sync and async mode.
// The plan's "gradients" are not real (its backward copies values), but every byte the
// executor moves is deterministic, so the losses and the fp32 master weights must be identical
// for every pool size, must change from step to step (the optimizer ran), and async must
// differ from sync once the stale weights are used (step 2). The end-to-end checks against
// the non-pipelined reference are the lit tests test/Tools/rp-run-*.test.
//
//===----------------------------------------------------------------------===//

#include "PlanTestUtil.h"

#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;

struct RunResult {
  std::vector<float> losses;
  std::vector<uint8_t> master;
};

RunResult train(const pb::Plan &plan, int devices, int64_t steps, double lr = 1e-2) {
  RunResult run;
  StatusOr<HostArena> arena = HostArena::create(plan);
  EXPECT_TRUE(arena.ok()) << arena.status().toString();
  HostArena &host = arena.value();
  for (int p = 0; p < plan.params_size(); ++p) {
    const pb::Param &param = plan.params(p);
    std::vector<float> value(static_cast<size_t>(host.paramElements(p)));
    for (size_t i = 0; i < value.size(); ++i)
      value[i] = 0.5f * std::sin(static_cast<float>(i + 7 * static_cast<size_t>(p)));
    std::memcpy(host.weights() + param.weight_offset(), value.data(), value.size() * 4);
    if (param.trainable())
      std::memcpy(host.master() + param.state_offset() / 4, value.data(), value.size() * 4);
  }
  CpuBackend backend(devices);
  ExecutorOptions options;
  options.lr = lr;
  Executor executor(host, backend, options);
  Status started = executor.start();
  EXPECT_TRUE(started.ok()) << started.toString();
  const int64_t M = plan.config().micro_batches();
  auto collect = [&](int64_t step) {
    StatusOr<std::vector<float>> l = executor.losses(step);
    ASSERT_TRUE(l.ok()) << l.status().toString();
    run.losses.insert(run.losses.end(), l.value().begin(), l.value().end());
  };
  for (int64_t k = 0; k < steps; ++k) {
    EXPECT_TRUE(executor.waitInputsWritable(k).ok());
    for (int64_t m = 0; m < M; ++m) {
      uint8_t *record = executor.record(k, m);
      float x[8];
      for (int i = 0; i < 8; ++i)
        x[i] = std::cos(static_cast<float>(i + 3 * m + 11 * k));
      int64_t labels[2] = {(k + m) % 8, (3 * k + m + 1) % 8};
      std::memcpy(record + plan.host_buffers(0).offset(), x, sizeof(x));
      std::memcpy(record + plan.host_buffers(1).offset(), labels, sizeof(labels));
    }
    EXPECT_TRUE(executor.dispatch(k, steps).ok());
    if (k > 0)
      collect(k - 1);
  }
  Status drained = executor.drain();
  EXPECT_TRUE(drained.ok()) << drained.toString();
  collect(steps - 1);
  const uint8_t *master = reinterpret_cast<const uint8_t *>(host.master());
  run.master.assign(master, master + plan.host_arena().state());
  return run;
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

INSTANTIATE_TEST_SUITE_P(Modes, ExecutorTest, ::testing::Values(pb::SYNC, pb::ASYNC),
                         [](const auto &info) {
                           return std::string(info.param == pb::SYNC ? "Sync" : "Async");
                         });

} // namespace
} // namespace rp::runtime
