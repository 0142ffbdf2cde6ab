//===- ExecutorTestUtil.h - Training the test plan on a backend -*- C++ -*-===//
//
// trainTestPlan() runs the hand-written plan of PlanTestUtil.h (host buffer 0: the f32 input
// [8], buffer 1: the i64 labels [2]) for a few steps through the executor on any backend, with
// deterministic weights and inputs, and returns the losses and the fp32 master weights. The
// executor tests (CPU backend) and the CUDA backend tests use it.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_EXECUTORTESTUTIL_H
#define RP_TEST_UNIT_EXECUTORTESTUTIL_H

#include "runtime/exec/Backend.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace rp::testing {

struct RunResult {
  std::vector<float> losses;   ///< M per step, in step order
  std::vector<uint8_t> master; ///< the fp32 master weights' bytes after the last step
  /// The master weights as floats.
  std::vector<float> masterValues() const {
    std::vector<float> v(master.size() / 4);
    std::memcpy(v.data(), master.data(), v.size() * 4);
    return v;
  }
};

/// Trains `plan` for `steps` steps on `backend` (not yet prepared) with learning rate `lr`.
/// With `ranks` (a data-parallel rank: ExecutorOptions::ranks), micro-batch m of a step gets
/// the inputs of micro-batch m + `microBatchOffset`, and the losses are every rank's;
/// `commThread` is ExecutorOptions::commThread.
inline RunResult trainTestPlan(const rp::plan::Plan &plan, runtime::Backend &backend, int64_t steps,
                               double lr = 1e-2, runtime::RankReducer *ranks = nullptr,
                               int64_t microBatchOffset = 0, bool commThread = true) {
  using namespace rp::runtime;
  using namespace rp::base;
  RunResult run;
  StatusOr<HostArena> arena = HostArena::create(plan);
  EXPECT_TRUE(arena.ok()) << arena.status().toString();
  if (!arena.ok())
    return run;
  HostArena &host = arena.value();
  for (int p = 0; p < plan.params_size(); ++p) {
    const rp::plan::Param &param = plan.params(p);
    std::vector<float> value(static_cast<size_t>(host.paramElements(p)));
    for (size_t i = 0; i < value.size(); ++i)
      value[i] = 0.5f * std::sin(static_cast<float>(i + 7 * static_cast<size_t>(p)));
    std::memcpy(host.weights() + param.weight_offset(), value.data(), value.size() * 4);
    if (param.trainable())
      std::memcpy(host.master() + param.state_offset() / 4, value.data(), value.size() * 4);
  }
  ExecutorOptions options;
  options.schedule.lr = lr;
  options.ranks = ranks;
  options.commThread = commThread;
  Executor executor(host, backend, options);
  Status started = executor.start();
  EXPECT_TRUE(started.ok()) << started.toString();
  if (!started.ok())
    return run;
  const int64_t M = plan.config().micro_batches();
  auto collect = [&](int64_t step) {
    StatusOr<std::vector<float>> l = executor.losses(step);
    ASSERT_TRUE(l.ok()) << l.status().toString();
    run.losses.insert(run.losses.end(), l.value().begin(), l.value().end());
  };
  for (int64_t k = 0; k < steps; ++k) {
    EXPECT_TRUE(executor.waitInputsWritable(k).ok());
    for (int64_t local = 0; local < M; ++local) {
      uint8_t *record = executor.record(k, local);
      const int64_t m = local + microBatchOffset;
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

} // namespace rp::testing

#endif // RP_TEST_UNIT_EXECUTORTESTUTIL_H
