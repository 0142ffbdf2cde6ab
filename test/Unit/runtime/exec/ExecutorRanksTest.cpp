//===- ExecutorRanksTest.cpp - The executor's data-parallel reduction -----===//
//
// Runs R executors of the hand-written plan of PlanTestUtil.h in R threads, joined by an
// in-process RankReducer (the contract of runtime/exec/RankReducer.h without MPI: sums in rank
// order, gathers rank-major), so the executor's side of data parallelism is tested on any
// machine; the MPI implementation is tested end to end by test/Tools/rp-run-mpi*.test.
//   - every rank ends with the same master weights and sees every rank's losses, rank-major;
//   - ranks fed the same micro-batches equal one process bit for bit (the sum is 2 g and the
//     gradient scale 1 / (2 M): exact powers of two);
//   - ranks fed different micro-batches differ from that, and repeat bit for bit;
//   - one rank equals a run without ranks;
//   - the communication thread (ExecutorOptions::commThread, the default) gives the same bits
//     as the reductions on the optimizer thread, with and without gradient clipping, also when
//     one rank's collectives are slow; every rank makes the same calls in the same order, all
//     from one thread;
//   - the overlap: with the communication thread, the second layer's reduction completes while
//     the optimizer thread is held in the first layer's AdamW; on the optimizer thread it cannot.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/ExecutorTestUtil.h"
#include "test/Unit/support/ForwardingBackend.h"
#include "test/Unit/support/PlanTestUtil.h"

#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/exec/RankReducer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;

using rp::testing::RunResult;

/// R ranks in one process: each collective waits for all R calls, then every rank reads the
/// result (a generation counter keeps consecutive collectives apart).
class ThreadRanks {
public:
  explicit ThreadRanks(int ranks) : inputs_(static_cast<size_t>(ranks)) {}

  class Rank final : public RankReducer {
  public:
    Rank(ThreadRanks &all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int ranks() const override { return static_cast<int>(all_.inputs_.size()); }
    /// Each call: (its kind, its count, the calling thread).
    struct Call {
      bool sum;
      int64_t count;
      std::thread::id thread;
    };
    std::vector<Call> calls;
    /// Sleeps before each sum (a slow link), to shift the threads' timing.
    std::chrono::microseconds delay{0};

    Status sumInRankOrder(float *data, int64_t count) override {
      calls.push_back({true, count, std::this_thread::get_id()});
      std::this_thread::sleep_for(delay);
      std::vector<float> sum = all_.exchange(rank_, data, count);
      for (int64_t i = 0; i < count; ++i) {
        float s = sum[static_cast<size_t>(i)];
        for (int q = 1; q < ranks(); ++q)
          s = s + sum[static_cast<size_t>(q * count + i)];
        data[i] = s;
      }
      return okStatus();
    }
    Status allGather(const float *data, int64_t count, float *out) override {
      calls.push_back({false, count, std::this_thread::get_id()});
      std::vector<float> all = all_.exchange(rank_, data, count);
      std::copy(all.begin(), all.end(), out);
      return okStatus();
    }

  private:
    ThreadRanks &all_;
    int rank_;
  };

private:
  /// Every rank's `count` floats, rank-major, once all ranks have called.
  std::vector<float> exchange(int rank, const float *data, int64_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t generation = generation_;
    inputs_[static_cast<size_t>(rank)].assign(data, data + count);
    if (++arrived_ == static_cast<int>(inputs_.size())) {
      result_.clear();
      for (const std::vector<float> &in : inputs_)
        result_.insert(result_.end(), in.begin(), in.end());
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
    return result_;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<float>> inputs_;
  std::vector<float> result_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

/// How trainRanks runs the ranks.
struct RankRun {
  bool commThread = true;            ///< ExecutorOptions::commThread
  std::chrono::microseconds slowRank1{0}; ///< rank 1's delay before each sum
  /// Out: each rank's calls on its RankReducer.
  std::vector<std::vector<ThreadRanks::Rank::Call>> *calls = nullptr;
};

/// R ranks of `plan`, `steps` steps; rank r feeds micro-batches offset by r * `offsetPerRank`.
std::vector<RunResult> trainRanks(const pb::Plan &plan, int ranks, int64_t steps,
                                  int64_t offsetPerRank, const RankRun &how = RankRun()) {
  ThreadRanks all(ranks);
  std::vector<RunResult> results(static_cast<size_t>(ranks));
  if (how.calls)
    how.calls->assign(static_cast<size_t>(ranks), {});
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadRanks::Rank rank(all, r);
      if (r == 1)
        rank.delay = how.slowRank1;
      CpuBackend backend(2);
      results[static_cast<size_t>(r)] = rp::testing::trainTestPlan(
          plan, backend, steps, 1e-2, &rank, r * offsetPerRank, how.commThread);
      if (how.calls)
        (*how.calls)[static_cast<size_t>(r)] = rank.calls;
    });
  for (std::thread &t : threads)
    t.join();
  return results;
}

RunResult trainAlone(const pb::Plan &plan, int64_t steps) {
  CpuBackend backend(2);
  return rp::testing::trainTestPlan(plan, backend, steps);
}

class ExecutorRanksTest : public ::testing::TestWithParam<pb::UpdateMode> {};

TEST_P(ExecutorRanksTest, RanksFedTheSameBatchesEqualOneProcess) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const RunResult alone = trainAlone(plan, 4);
  const std::vector<RunResult> ranks = trainRanks(plan, 2, 4, 0);
  const size_t M = static_cast<size_t>(plan.config().micro_batches());
  for (const RunResult &r : ranks) {
    EXPECT_EQ(r.master, alone.master);
    ASSERT_EQ(r.losses.size(), 2 * alone.losses.size()); // R * M per step
    for (size_t k = 0; k < 4; ++k)
      for (size_t q = 0; q < 2; ++q)
        for (size_t m = 0; m < M; ++m)
          EXPECT_EQ(r.losses[(k * 2 + q) * M + m], alone.losses[k * M + m]);
  }
}

TEST_P(ExecutorRanksTest, RanksFedDifferentBatchesAgreeAndRepeat) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const int64_t M = plan.config().micro_batches();
  const std::vector<RunResult> first = trainRanks(plan, 3, 4, M);
  const std::vector<RunResult> again = trainRanks(plan, 3, 4, M);
  const RunResult alone = trainAlone(plan, 4);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(first[static_cast<size_t>(r)].master, first[0].master) << "rank " << r;
    EXPECT_EQ(first[static_cast<size_t>(r)].losses, first[0].losses) << "rank " << r;
    EXPECT_EQ(again[static_cast<size_t>(r)].master, first[0].master) << "rank " << r;
  }
  EXPECT_NE(first[0].master, alone.master); // the other ranks' gradients were summed in
  // Step 1 (the initial weights): the gathered losses of rank r are those one process computes
  // for micro-batches r M .. r M + M - 1.
  for (int r = 0; r < 3; ++r) {
    CpuBackend backend(2);
    const RunResult solo = rp::testing::trainTestPlan(plan, backend, 1, 1e-2, nullptr, r * M);
    for (int64_t m = 0; m < M; ++m)
      EXPECT_EQ(first[0].losses[static_cast<size_t>(r * M + m)],
                solo.losses[static_cast<size_t>(m)])
          << "rank " << r << " micro-batch " << m;
  }
}

TEST_P(ExecutorRanksTest, OneRankIsARunWithoutRanks) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  const RunResult alone = trainAlone(plan, 3);
  const std::vector<RunResult> one = trainRanks(plan, 1, 3, 0);
  EXPECT_EQ(one[0].master, alone.master);
  EXPECT_EQ(one[0].losses, alone.losses);
}

TEST_P(ExecutorRanksTest, CommThreadEqualsReductionsOnTheOptimizerThread) {
  for (double clip : {1.0, 0.0}) { // the global norm waits for every sum; without, each layer's
    pb::Plan plan = rp::testing::makeValidPlan();
    plan.mutable_config()->set_update(GetParam());
    plan.mutable_config()->mutable_optimizer()->set_grad_clip(clip);
    const int64_t M = plan.config().micro_batches();
    RankRun onOptimizer;
    onOptimizer.commThread = false;
    const std::vector<RunResult> before = trainRanks(plan, 3, 5, M, onOptimizer);
    RankRun slow;
    slow.slowRank1 = std::chrono::microseconds(2000);
    for (const RankRun &how : {RankRun(), slow}) {
      const std::vector<RunResult> comm = trainRanks(plan, 3, 5, M, how);
      for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(comm[r].master, before[r].master) << "clip " << clip << " rank " << r;
        EXPECT_EQ(comm[r].losses, before[r].losses) << "clip " << clip << " rank " << r;
      }
    }
    EXPECT_EQ(before[0].master, before[2].master);
  }
}

TEST_P(ExecutorRanksTest, EveryRankCallsInTheSameOrderFromOneThread) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(0);
  const int64_t M = plan.config().micro_batches();
  const int64_t steps = 3;
  std::vector<std::vector<ThreadRanks::Rank::Call>> comm, onOptimizer;
  RankRun how;
  how.calls = &comm;
  trainRanks(plan, 2, steps, M, how);
  how.commThread = false;
  how.calls = &onOptimizer;
  trainRanks(plan, 2, steps, M, how);
  // Per step: the loss gather (M floats), one sum per optimizer step with gradients, and the
  // gather of the step's non-finite flags (1 float per rank). The flags need the step's last
  // gradient download: the communication thread gathers them just before the first layer that
  // reads it (the layers before are reduced while the backward runs); the optimizer thread
  // before its first AdamW, right after the losses.
  int lastGradStage = -1;
  for (int s = 0; s < plan.stages_size(); ++s)
    if (plan.stages(s).grad_bytes() > 0)
      lastGradStage = s;
  size_t flagsAt = 1;
  for (const pb::OptimizerStep &os : plan.optimizer_steps()) {
    bool reads = os.grads_stage() == lastGradStage;
    for (int s : os.shared_grads_stages())
      reads |= s == lastGradStage;
    if (reads)
      break;
    ++flagsAt;
  }
  const size_t perStep = comm[0].size() / steps;
  ASSERT_EQ(comm[0].size(), perStep * steps);
  ASSERT_EQ(perStep, 2 + static_cast<size_t>(plan.optimizer_steps_size()));
  for (const auto *mode : {&comm, &onOptimizer}) {
    const size_t flags = mode == &comm ? flagsAt : 1;
    for (const auto &calls : *mode) {
      ASSERT_EQ(calls.size(), comm[0].size());
      for (size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(calls[i].sum, (*mode)[0][i].sum) << "call " << i; // every rank alike
        EXPECT_EQ(calls[i].count, (*mode)[0][i].count) << "call " << i;
        const size_t at = i % perStep;
        EXPECT_EQ(calls[i].sum, at != 0 && at != flags) << "call " << i;
        if (at == 0)
          EXPECT_EQ(calls[i].count, M) << "call " << i;
        if (at == flags)
          EXPECT_EQ(calls[i].count, 1) << "call " << i;
        EXPECT_EQ(calls[i].thread, calls[0].thread) << "call " << i; // one thread per rank
      }
    }
  }
  // The sums themselves come in the same order and sizes in both modes.
  for (size_t i = 0, j = 0; i < comm[0].size(); ++i) {
    if (!comm[0][i].sum)
      continue;
    while (!onOptimizer[0][j].sum)
      ++j;
    EXPECT_EQ(comm[0][i].count, onOptimizer[0][j++].count) << "sum " << i;
  }
}

/// A CPU backend whose optimizer thread, having run the AdamW of (step 0, `layer`), waits (up
/// to `timeout`, in Backend::hostWork) until reductionDone(); `overlapped` says whether it came.
class AdamWWatch final : public rp::testing::ForwardingCpuBackend {
public:
  AdamWWatch(int layer, std::chrono::milliseconds timeout)
      : ForwardingCpuBackend(2), layer_(layer), timeout_(timeout) {}
  /// The reduction the AdamW waits for has completed.
  void reductionDone() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reduced_ = true;
    }
    cv_.notify_all();
  }
  bool overlapped = false;

  void hostWork(HostTask task, int64_t step, int layer) override {
    if (task != HostTask::AdamW || step != 0 || layer != layer_)
      return;
    std::unique_lock<std::mutex> lock(mutex_);
    overlapped = cv_.wait_for(lock, timeout_, [&] { return reduced_; });
  }

private:
  int layer_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool reduced_ = false;
};

/// A rank that tells `watch` when its second sum (step 0's second optimizer step) is done.
class WatchedRank final : public RankReducer {
public:
  WatchedRank(ThreadRanks::Rank &inner, AdamWWatch &watch) : inner_(inner), watch_(watch) {}
  int rank() const override { return inner_.rank(); }
  int ranks() const override { return inner_.ranks(); }
  Status sumInRankOrder(float *data, int64_t count) override {
    Status status = inner_.sumInRankOrder(data, count);
    if (++sums_ == 2)
      watch_.reductionDone();
    return status;
  }
  Status allGather(const float *data, int64_t count, float *out) override {
    return inner_.allGather(data, count, out);
  }

private:
  ThreadRanks::Rank &inner_;
  AdamWWatch &watch_;
  int sums_ = 0;
};

TEST_P(ExecutorRanksTest, ReductionOverlapsThePreviousAdamW) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(GetParam());
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(0); // no norm waits for every sum
  ASSERT_GE(plan.optimizer_steps_size(), 2);
  const int firstLayer = plan.optimizer_steps(0).layer();
  for (bool commThread : {true, false}) {
    // The communication thread reduces the second layer while the optimizer thread is still
    // in the first layer's AdamW (a generous timeout, left as soon as the sum is done); the
    // optimizer thread itself cannot (a short one: it only reduces after the AdamW).
    AdamWWatch backend0(firstLayer, std::chrono::milliseconds(commThread ? 20000 : 300));
    AdamWWatch backend1(firstLayer, std::chrono::milliseconds(commThread ? 20000 : 300));
    AdamWWatch *backends[2] = {&backend0, &backend1};
    ThreadRanks all(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        ThreadRanks::Rank inner(all, r);
        WatchedRank rank(inner, *backends[r]);
        rp::testing::trainTestPlan(plan, *backends[r], 2, 1e-2, &rank, r, commThread);
      });
    for (std::thread &t : threads)
      t.join();
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(backends[r]->overlapped, commThread) << "rank " << r << " commThread "
                                                     << commThread;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ExecutorRanksTest, ::testing::Values(pb::SYNC, pb::ASYNC),
                         [](const auto &info) {
                           return std::string(info.param == pb::SYNC ? "Sync" : "Async");
                         });

} // namespace
} // namespace rp::runtime
