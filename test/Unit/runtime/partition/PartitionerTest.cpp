//===- PartitionerTest.cpp - RoundPipe and exact stage partitioners -------===//
//
// runtime/partition/{CostModel,Partitioner}.h on the RoundPipe artifact's measured profiles
// (pp-simulate/run.sh inputs: per-layer per-micro-batch times on one RTX 4090, 4 x 2048-token
// sequences per micro-batch) against the authors' plans (their pp-simulate/run.sh
// partitions), on small random profiles against brute force, and the error cases.
//
// Byte sizes are derived from the models' configurations in fp16 (full fine-tuning: trainable
// = param): Qwen3-1.7B block 50.3M params, LM head 151936 x 2048; Llama-3.1-8B block 218.1M
// params, LM head 128256 x 4096; activations 4 x 2048 x hidden x 2 bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/partition/Partitioner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>

using namespace rp::partition;
using rp::base::StatusCode;

namespace {

constexpr uint64_t kGiB = 1ull << 30;

/// `blocks` identical transformer blocks followed by the tail (LM head + loss).
Profile uniformProfile(int blocks, double fwd, double bwd, uint64_t blockBytes,
                       uint64_t actBytes, double tailFwd, double tailBwd, uint64_t tailBytes) {
  Profile p;
  for (int i = 0; i < blocks; ++i)
    p.layers.push_back(
        {"block_" + std::to_string(i), fwd, bwd, fwd, blockBytes, blockBytes, actBytes});
  p.layers.push_back({"tail", tailFwd, tailBwd, tailFwd, tailBytes, tailBytes, 4});
  return p;
}

Profile qwen3_1_7b() {
  return uniformProfile(28, 7.43, 15.83, 2ull * 50'335'744, 4ull * 2048 * 2048 * 2, 22.07, 43.71,
                        2ull * 151'936 * 2048);
}

Profile llama3_1_8b() {
  return uniformProfile(32, 18.50, 41.21, 2ull * 218'112'000, 4ull * 2048 * 4096 * 2, 37.23,
                        74.50, 2ull * 128'256 * 4096);
}

/// An RTX 4090 as in the artifact: PCIe 4.0 x16 at 32 GB/s per direction, 24 GiB.
TargetSpec rtx4090() {
  StatusOr<TargetSpec> t = makeTarget("rtx4090", 330, 1008, 32, 24 * kGiB);
  EXPECT_TRUE(t.ok());
  return *t;
}

CostModel makeModel(const Profile &p, int microBatches, double pcie = 32) {
  StatusOr<CostModel> m = CostModel::create(p, pcie, microBatches);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return std::move(m).value();
}

PartitionOptions options(int gpus, uint64_t limit) {
  PartitionOptions o;
  o.numGpus = gpus;
  o.modelMemoryLimitBytes = limit;
  return o;
}

std::vector<int> sizes(const std::vector<PlannedStage> &stages) {
  std::vector<int> s;
  for (const PlannedStage &st : stages)
    s.push_back(st.size());
  return s;
}

/// Every layer once in forward + tail and once in backward; forward ascending, backward
/// descending with the fused tail first; memory within the budget (validatePlan), and the
/// recorded per-stage costs are the cost model's.
void expectValid(const Plan &plan, const CostModel &model) {
  Status st = validatePlan(plan, model);
  EXPECT_TRUE(st.ok()) << st.toString();
  std::vector<int> fwdSeen(static_cast<size_t>(model.numLayers()), 0);
  std::vector<int> bwdSeen(static_cast<size_t>(model.numLayers()), 0);
  for (const PlannedStage &s : plan.forward)
    for (int i = s.begin; i < s.end; ++i)
      ++fwdSeen[static_cast<size_t>(i)];
  for (const PlannedStage &s : plan.backward)
    for (int i = s.begin; i < s.end; ++i)
      ++bwdSeen[static_cast<size_t>(i)];
  for (int i = 0; i < model.numLayers(); ++i) {
    bool inTail = i >= plan.backward[0].begin;
    EXPECT_EQ(fwdSeen[static_cast<size_t>(i)], inTail ? 0 : 1) << "layer " << i;
    EXPECT_EQ(bwdSeen[static_cast<size_t>(i)], 1) << "layer " << i;
  }
  for (size_t i = 1; i < plan.forward.size(); ++i)
    EXPECT_EQ(plan.forward[i].begin, plan.forward[i - 1].end);
  for (size_t i = 1; i < plan.backward.size(); ++i)
    EXPECT_EQ(plan.backward[i].end, plan.backward[i - 1].begin);
  for (const auto *stages : {&plan.forward, &plan.backward})
    for (const PlannedStage &s : *stages) {
      EXPECT_LE(s.cost.memoryBytes, plan.stageBudgetBytes);
      EXPECT_EQ(s.cost.memoryBytes, model.memoryBytes(s.kind, s.begin, s.end));
      EXPECT_DOUBLE_EQ(s.cost.timeMs, model.cost(s.kind, s.begin, s.end).timeMs);
    }
  EXPECT_EQ(plan.numStages, static_cast<int>(plan.forward.size() + plan.backward.size()));
}

/// a <= b up to rounding of sums of the same terms in another order.
void expectNoWorse(double a, double b) { EXPECT_LE(a, b * (1 + 1e-12)) << a << " vs " << b; }

struct Comparison {
  Plan authors, roundpipe, exact, exactCompute;
};

/// Plans one model with both algorithms and checks the design's claims against the authors'
/// plan.
Comparison compareWithAuthors(const char *label, const Profile &profile, int gpus,
                              int microBatches, const std::vector<int> &authorsFwd,
                              const std::vector<int> &authorsBwd) {
  CostModel model = makeModel(profile, microBatches);
  PartitionOptions opts = options(gpus, defaultModelMemoryLimit(rtx4090()));
  Comparison c;
  StatusOr<Plan> authors = planFromStageSizes(model, opts, authorsFwd, authorsBwd);
  StatusOr<Plan> rp = partitionRoundPipe(model, opts);
  StatusOr<Plan> exact = partitionExact(model, opts);
  PartitionOptions computeOnly = opts;
  computeOnly.includeTransfer = false;
  StatusOr<Plan> exactCompute = partitionExact(model, computeOnly);
  EXPECT_TRUE(authors.ok()) << authors.status().toString();
  EXPECT_TRUE(rp.ok()) << rp.status().toString();
  EXPECT_TRUE(exact.ok()) << exact.status().toString();
  EXPECT_TRUE(exactCompute.ok()) << exactCompute.status().toString();
  if (!authors.ok() || !rp.ok() || !exact.ok() || !exactCompute.ok())
    return c;
  c = {*authors, *rp, *exact, *exactCompute};
  EXPECT_EQ(c.authors.algorithm, PartitionAlgorithm::Fixed);
  expectValid(c.authors, model);
  expectValid(c.roundpipe, model);
  expectValid(c.exact, model);
  expectValid(c.exactCompute, model);

  // The RoundPipe partitioner is no worse than the authors' plan under its own cost function.
  expectNoWorse(computeObjective(c.roundpipe), computeObjective(c.authors));
  expectNoWorse(c.roundpipe.objective, computeObjective(c.authors));
  // The exact partitioner is no worse than the RoundPipe one under the transfer-aware cost
  // model (and than the authors'), and exact-compute no worse under compute only.
  expectNoWorse(transferObjective(c.exact), transferObjective(c.roundpipe));
  expectNoWorse(transferObjective(c.exact), transferObjective(c.authors));
  expectNoWorse(estimatedStepMs(c.exact, true), estimatedStepMs(c.roundpipe, true));
  expectNoWorse(computeObjective(c.exactCompute), computeObjective(c.roundpipe));
  EXPECT_DOUBLE_EQ(c.exact.objective, transferObjective(c.exact));

  std::printf("[%s] N=%d M=%d\n", label, gpus, microBatches);
  for (const Plan *p : {&c.authors, &c.roundpipe, &c.exact, &c.exactCompute})
    std::printf("  %s%s\n    compute objective %.2f ms, transfer-aware %.2f ms, step %.1f ms\n",
                p == &c.exactCompute ? "(compute only) " : "", formatPlan(*p).c_str(),
                computeObjective(*p), transferObjective(*p), estimatedStepMs(*p, true));
  return c;
}

} // namespace

// Stage costs: compute sums, the fused tail without recomputation, transfers, memory.
TEST(PartitionCostModelTest, StageCosts) {
  Profile p;
  // name, fwd, bwd, recompute, param, trainable, act
  p.layers.push_back({"a", 1, 2, 0.5, 3'200'000, 1'600'000, 320'000});
  p.layers.push_back({"b", 2, 4, 2, 6'400'000, 0, 640'000});
  p.layers.push_back({"tail", 3, 6, 3, 32'000'000, 32'000'000, 4});
  CostModel m = makeModel(p, /*microBatches=*/2, /*pcie=*/32); // 32e6 bytes per ms
  EXPECT_DOUBLE_EQ(m.computeMs(StageKind::Forward, 0, 2), 3);
  EXPECT_DOUBLE_EQ(m.computeMs(StageKind::Backward, 0, 2), 0.5 + 2 + 2 + 4);
  EXPECT_DOUBLE_EQ(m.computeMs(StageKind::FusedTail, 1, 3), 2 + 4 + 3 + 6);
  EXPECT_DOUBLE_EQ(m.layerBackwardMs(0), 2.5);
  EXPECT_DOUBLE_EQ(m.layerBackwardMs(2), 9); // the tail is never recomputed
  EXPECT_EQ(m.memoryBytes(StageKind::Forward, 0, 2), 9'600'000u);
  EXPECT_EQ(m.memoryBytes(StageKind::Backward, 0, 2), 11'200'000u);

  // Forward [1, 2): weights 6.4 MB / 32e6 B/ms / 2 = 0.1 ms; in hop(0) = 0.01 ms; out 0.02 ms.
  StageCost f = m.cost(StageKind::Forward, 1, 2);
  EXPECT_DOUBLE_EQ(f.h2dMs, 0.1 + 0.01);
  EXPECT_DOUBLE_EQ(f.d2hMs, 0.02);
  EXPECT_DOUBLE_EQ(f.timeMs, 2);
  // Backward [0, 2): weights 0.15 ms + output gradient hop(1) 0.02 ms in; gradients 0.025 ms
  // out (no input gradient for layer 0).
  StageCost b = m.cost(StageKind::Backward, 0, 2);
  EXPECT_DOUBLE_EQ(b.h2dMs, 0.15 + 0.02);
  EXPECT_DOUBLE_EQ(b.d2hMs, 0.025);
  // Fused tail [2, 3): weights 0.5 ms + hop(1) in; gradients 0.5 ms + hop(1) out.
  StageCost t = m.cost(StageKind::FusedTail, 2, 3);
  EXPECT_DOUBLE_EQ(t.h2dMs, 0.52);
  EXPECT_DOUBLE_EQ(t.d2hMs, 0.52);
  EXPECT_DOUBLE_EQ(t.timeMs, 9);

  // A measured comm_ms replaces act_bytes / pcie.
  p.commMs = 1.5;
  CostModel withComm = makeModel(p, 2);
  EXPECT_DOUBLE_EQ(withComm.cost(StageKind::Forward, 1, 2).h2dMs, 0.1 + 1.5);
  // Slow PCIe: the transfer dominates (H2D 3.2 MB of weights; D2H 0.32 MB of activation).
  p.commMs.reset();
  CostModel slow = makeModel(p, 1, /*pcie=*/0.001); // 1000 bytes per ms
  StageCost s = slow.cost(StageKind::Forward, 0, 1);
  EXPECT_DOUBLE_EQ(s.h2dMs, 3200);
  EXPECT_DOUBLE_EQ(s.d2hMs, 320);
  EXPECT_DOUBLE_EQ(s.timeMs, 3200);
}

// Qwen3-1.7B on 8 GPUs: 28 blocks + the LM-head tail, the authors' plan forward 7,7,7,7 and
// backward fused tail alone, then 3 x 8, 2, 2.
TEST(PartitionerTest, Qwen3_1_7B) {
  Comparison c = compareWithAuthors("Qwen3-1.7B", qwen3_1_7b(), 8, 10, {7, 7, 7, 7},
                                    {1, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2});
  // The library's planner: T = three backward blocks (69.78 ms), S = 4 + 1 + 10 = 15.
  EXPECT_EQ(c.roundpipe.numStages, 15);
  EXPECT_NEAR(c.roundpipe.stageTimeMs, 3 * (7.43 + 15.83), 1e-9);
  EXPECT_EQ(c.roundpipe.backward[0].size(), 1);
  EXPECT_EQ(sizes(c.roundpipe.forward), (std::vector<int>{1, 9, 9, 9}));
  EXPECT_NEAR(computeObjective(c.authors), 15 * 69.78, 1e-9);
}

// Llama-3.1-8B on 8 GPUs: the authors' plan forward 5,5,5,5,6,6 and backward fused tail, then
// 16 stages of 2.
TEST(PartitionerTest, Llama3_1_8B) {
  std::vector<int> bwd(17, 2);
  bwd[0] = 1;
  Comparison c =
      compareWithAuthors("Llama-3.1-8B", llama3_1_8b(), 8, 10, {5, 5, 5, 5, 6, 6}, bwd);
  EXPECT_EQ(c.roundpipe.numStages, 23);
  EXPECT_NEAR(c.roundpipe.stageTimeMs, 2 * (18.50 + 41.21), 1e-9);
  EXPECT_NEAR(computeObjective(c.authors), 23 * 2 * (18.50 + 41.21), 1e-9);
}

// A generous memory limit gives the same plans as 0.6 x 24 GiB on these profiles.
TEST(PartitionerTest, GenerousMemorySamePlans) {
  CostModel model = makeModel(qwen3_1_7b(), 10);
  StatusOr<Plan> a = partitionRoundPipe(model, options(8, defaultModelMemoryLimit(rtx4090())));
  StatusOr<Plan> b = partitionRoundPipe(model, options(8, 1024 * kGiB));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(formatPlan(*a), formatPlan(*b));
}

// A tight memory budget shapes the stages: each stage fits limit / 2, and the budget is
// honoured by both algorithms.
TEST(PartitionerTest, MemoryLimitShapesStages) {
  Profile p = qwen3_1_7b();
  CostModel model = makeModel(p, 10);
  uint64_t block = p.layers[0].paramBytes;       // ~96 MiB; backward needs 2x that per block
  uint64_t tail = 2 * p.layers.back().paramBytes; // ~1.16 GiB, the largest layer
  uint64_t limit = 2 * tail;                      // forward <= 12 blocks, backward <= 6
  for (PartitionAlgorithm alg : {PartitionAlgorithm::RoundPipe, PartitionAlgorithm::Exact}) {
    StatusOr<Plan> plan = partition(alg, model, options(8, limit));
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    expectValid(*plan, model);
    for (const PlannedStage &s : plan->forward)
      EXPECT_LE(static_cast<uint64_t>(s.size()), tail / block);
    for (size_t i = 1; i < plan->backward.size(); ++i)
      EXPECT_LE(static_cast<uint64_t>(plan->backward[i].size()), tail / (2 * block));
    EXPECT_FALSE(plan->memoryLimitRaised);
  }
}

// A stage's memory is its layers' params (+ gradients) plus the largest working set, as the
// plan check counts it; the greedy packs by that, not by the params alone. Here 20 blocks of
// 10 B params and a 400 B working set under a 500 B budget: at most 10 blocks per forward
// stage (10 x 10 + 400) and 5 per backward stage (5 x 20 + 400). Packing by params alone made
// a 20-block forward stage of 600 B, which the plan check refused ("produced an invalid plan").
TEST(PartitionerTest, WorkingSetCountsInStageMemory) {
  Profile p = uniformProfile(20, 1, 2, 10, 4, 30, 60, 10); // a slow tail: T packs 20 blocks
  for (LayerProfile &l : p.layers)
    l.workBytes = 400;
  CostModel model = makeModel(p, 4);
  for (PartitionAlgorithm alg : {PartitionAlgorithm::RoundPipe, PartitionAlgorithm::Exact}) {
    StatusOr<Plan> plan = partition(alg, model, options(2, 1000));
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    expectValid(*plan, model);
    for (const PlannedStage &s : plan->forward)
      EXPECT_LE(s.size(), 10) << formatPlan(*plan);
    for (size_t i = 1; i < plan->backward.size(); ++i)
      EXPECT_LE(plan->backward[i].size(), 5) << formatPlan(*plan);
  }
}

// Residuals (saved_bytes): a backward stage and the fused tail hold every layer's for two
// micro-batches at once (the executor's two activation sets), a forward stage none; with
// layer-grain recomputation a backward stage holds one layer's at a time (the largest).
TEST(PartitionerTest, CostModelCountsResidualsOfBackwardStages) {
  Profile p = uniformProfile(3, 1, 2, 10, 4, 3, 6, 20);
  p.layers[0].savedBytes = 100;
  p.layers[1].savedBytes = 300;
  // layers[2] has none: counts 0.
  p.layers[3].savedBytes = 1000;
  p.layers[1].workBytes = 50;
  CostModel model = makeModel(p, 4);
  EXPECT_EQ(model.memoryBytes(StageKind::Forward, 0, 3), 30u + 50u);
  EXPECT_EQ(model.residualBytes(StageKind::Forward, 0, 3), 0u);
  EXPECT_EQ(model.residualBytes(StageKind::Backward, 0, 3), 2u * 400u);
  EXPECT_EQ(model.memoryBytes(StageKind::Backward, 0, 3), 60u + 50u + 2u * 400u);
  EXPECT_EQ(model.memoryBytes(StageKind::Backward, 1, 2), 20u + 50u + 2u * 300u);
  EXPECT_EQ(model.memoryBytes(StageKind::FusedTail, 2, 4), 20u + 40u + 2u * 1000u);
  EXPECT_EQ(model.cost(StageKind::Backward, 0, 2).memoryBytes, 40u + 50u + 2u * 400u);

  StatusOr<CostModel> layerGrain =
      CostModel::create(p, 32, 4, ResidualLifetime::Layer);
  ASSERT_TRUE(layerGrain.ok()) << layerGrain.status().toString();
  EXPECT_EQ(layerGrain->residualLifetime(), ResidualLifetime::Layer);
  EXPECT_EQ(layerGrain->memoryBytes(StageKind::Backward, 0, 3), 60u + 50u + 2u * 300u);
  EXPECT_EQ(layerGrain->memoryBytes(StageKind::Forward, 0, 3), 30u + 50u);
  // The fused tail runs every saving forward before any backward, whatever the grain.
  EXPECT_EQ(layerGrain->memoryBytes(StageKind::FusedTail, 2, 4), 20u + 40u + 2u * 1000u);
}

// The partitioner packs backward stages by their residuals: 12 blocks of 10 B weights (20 B
// with gradients) and 100 B of residuals each, under a 1000 B per-stage budget (limit 2000):
// a backward stage holds 20 k + 2 x 100 k <= 1000, so at most 4 layers (the fused tail too:
// the tail is as large as a block); forward stages keep no residuals. Without saved_bytes,
// one stage takes more than 4 (the exact partitioner fuses all 13 layers in the tail).
TEST(PartitionerTest, ResidualsBoundBackwardStages) {
  Profile p = uniformProfile(12, 1, 2, 10, 4, 40, 80, 10); // a slow tail: T packs many blocks
  CostModel without = makeModel(p, 4);
  for (int i = 0; i < 12; ++i)
    p.layers[static_cast<size_t>(i)].savedBytes = 100;
  p.layers[12].savedBytes = 100;
  CostModel with = makeModel(p, 4);
  for (PartitionAlgorithm alg : {PartitionAlgorithm::RoundPipe, PartitionAlgorithm::Exact}) {
    StatusOr<Plan> before = partition(alg, without, options(2, 2000));
    ASSERT_TRUE(before.ok()) << before.status().toString();
    int largestBefore = 0;
    for (size_t i = 0; i < before->backward.size(); ++i)
      largestBefore = std::max(largestBefore, before->backward[i].size());
    EXPECT_GT(largestBefore, 4) << formatPlan(*before);

    StatusOr<Plan> plan = partition(alg, with, options(2, 2000));
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    expectValid(*plan, with);
    for (const PlannedStage &s : plan->backward) {
      EXPECT_LE(s.size(), 4) << formatPlan(*plan);
      EXPECT_LE(s.cost.memoryBytes, 1000u) << formatPlan(*plan);
    }
  }
}

// The library's greedy on a hand-checked profile: w_max = the tail (3 + 6 = 9), candidates in
// [9, 9.9]; at T = 9 the tail is alone, forward packs 3 blocks of 3 ms per stage from the end
// and backward packs 3 blocks of 3 ms per stage from layer 0.
TEST(PartitionerTest, RoundPipeHandChecked) {
  Profile p = uniformProfile(7, 1, 2, 10, 0, 3, 6, 10);
  CostModel model = makeModel(p, 4);
  StatusOr<Plan> plan = partitionRoundPipe(model, options(2, 1000));
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  expectValid(*plan, model);
  EXPECT_EQ(sizes(plan->forward), (std::vector<int>{7}));
  EXPECT_EQ(sizes(plan->backward), (std::vector<int>{1, 1, 3, 3}));
  EXPECT_EQ(plan->backward[1].begin, 6);
  EXPECT_DOUBLE_EQ(plan->stageTimeMs, 9);
  EXPECT_EQ(plan->numStages, 5);
  EXPECT_DOUBLE_EQ(plan->objective, 45);
  EXPECT_EQ(formatPlan(*plan),
            "roundpipe: forward 7 | backward tail(1) 1 3 3 (S=5, N=2, T=9.00 ms, "
            "objective=45.00 ms)");
}

// When PCIe dominates (a MoE-like profile: large weights, little compute per micro-batch) the
// exact partitioner, which counts transfers, beats the library's compute-only plan.
TEST(PartitionerTest, ExactWinsWhenTransfersDominate) {
  Profile p;
  for (int i = 0; i < 24; ++i)
    p.layers.push_back({"moe_" + std::to_string(i), 2.0, 4.0, 2.0, 4 * kGiB / 5,
                        4 * kGiB / 5, 32ull << 20});
  p.layers.push_back({"tail", 6.0, 12.0, 6.0, 1 * kGiB, 1 * kGiB, 4});
  CostModel model = makeModel(p, 4);
  PartitionOptions opts = options(8, 64 * kGiB);
  StatusOr<Plan> rp = partitionRoundPipe(model, opts);
  StatusOr<Plan> exact = partitionExact(model, opts);
  ASSERT_TRUE(rp.ok() && exact.ok());
  expectValid(*rp, model);
  expectValid(*exact, model);
  EXPECT_LT(transferObjective(*exact), 0.9 * transferObjective(*rp))
      << formatPlan(*rp) << "\n" << formatPlan(*exact);
}

// The exact partitioner is optimal: brute force over every plan of small random profiles.
TEST(PartitionerTest, ExactMatchesBruteForce) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> time(0.5, 10.0);
  std::uniform_int_distribution<uint64_t> bytes(1'000'000, 60'000'000);
  for (int trial = 0; trial < 60; ++trial) {
    int L = 2 + trial % 7; // 2..8 layers
    Profile p;
    for (int i = 0; i < L; ++i) {
      double f = time(rng);
      p.layers.push_back({"l" + std::to_string(i), f, time(rng) * 2, f, bytes(rng),
                          trial % 3 == 0 ? 0 : bytes(rng), bytes(rng) / 4});
    }
    if (trial % 2)
      p.commMs = time(rng) / 4;
    CostModel model = makeModel(p, 1 + trial % 5, /*pcie=*/8);
    uint64_t largest = 0;
    for (int i = 0; i < L; ++i)
      largest = std::max(largest, model.layerBackwardBytes(i));
    PartitionOptions opts = options(1 + trial % 6, 2 * largest + (trial % 4) * largest);
    opts.includeTransfer = trial % 5 != 0;

    // Brute force: every tail start and every composition of [0, t) for both directions.
    double best = std::numeric_limits<double>::infinity();
    uint64_t budget = opts.modelMemoryLimitBytes / 2;
    auto slowest = [&](StageKind kind, int t, unsigned cuts, double &out) {
      int b = 0;
      out = 0;
      for (int i = 1; i <= t; ++i) {
        if (i == t || (cuts >> (i - 1) & 1u)) {
          if (model.memoryBytes(kind, b, i) > budget)
            return -1;
          out = std::max(out, model.timeMs(kind, b, i, opts.includeTransfer));
          b = i;
        }
      }
      return t == 0 ? 0 : 1 + __builtin_popcount(cuts);
    };
    for (int t = 0; t < L; ++t) {
      if (model.memoryBytes(StageKind::FusedTail, t, L) > budget)
        continue;
      double tail = model.timeMs(StageKind::FusedTail, t, L, opts.includeTransfer);
      unsigned combos = t == 0 ? 1u : 1u << (t - 1);
      for (unsigned fc = 0; fc < combos; ++fc) {
        double fs;
        int fn = slowest(StageKind::Forward, t, fc, fs);
        if (fn < 0)
          continue;
        for (unsigned bc = 0; bc < combos; ++bc) {
          double bs;
          int bn = slowest(StageKind::Backward, t, bc, bs);
          if (bn < 0)
            continue;
          int S = 1 + fn + bn;
          best = std::min(best, std::max(S, opts.numGpus) * std::max({tail, fs, bs}));
        }
      }
    }
    StatusOr<Plan> exact = partitionExact(model, opts);
    ASSERT_TRUE(exact.ok()) << exact.status().toString();
    expectValid(*exact, model);
    EXPECT_NEAR(exact->objective, best, 1e-9 * best) << "trial " << trial;
    double evaluated = opts.includeTransfer ? transferObjective(*exact) : computeObjective(*exact);
    EXPECT_NEAR(evaluated, best, 1e-9 * best) << "trial " << trial;
    // And the library's planner is never better than optimal (compute-only objective).
    if (!opts.includeTransfer) {
      StatusOr<Plan> rp = partitionRoundPipe(model, opts);
      ASSERT_TRUE(rp.ok()) << rp.status().toString();
      expectValid(*rp, model);
      EXPECT_GE(computeObjective(*rp) * (1 + 1e-12), best) << "trial " << trial;
    }
  }
}

// A layer larger than half the limit: an error naming the layer, its size and the budget...
TEST(PartitionerTest, LayerLargerThanBudget) {
  Profile p = uniformProfile(2, 1, 2, 100, 0, 3, 6, 0);
  p.layers[1].paramBytes = 600 * (kGiB / 1000);  // 0.6 GiB
  p.layers[1].trainableBytes = 600 * (kGiB / 1000);
  CostModel model = makeModel(p, 2);
  for (PartitionAlgorithm alg : {PartitionAlgorithm::RoundPipe, PartitionAlgorithm::Exact}) {
    StatusOr<Plan> plan = partition(alg, model, options(4, 2 * kGiB));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(plan.status().message(), "layer 1 ('block_1') needs 1.2 GiB, more than the "
                                       "per-stage budget 1.0 GiB (half of 2.0 GiB)");
  }
  // ...or, as the library does, the limit raised to twice the layer with a warning.
  PartitionOptions raise = options(4, 2 * kGiB);
  raise.raiseMemoryLimit = true;
  StatusOr<Plan> plan = partitionRoundPipe(model, raise);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  expectValid(*plan, model);
  EXPECT_TRUE(plan->memoryLimitRaised);
  EXPECT_EQ(plan->modelMemoryLimitBytes, 2 * p.layers[1].paramBytes * 2);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_EQ(plan->warnings[0],
            "layer 1 ('block_1') needs 1.2 GiB, more than the per-stage budget 1.0 GiB (half of "
            "2.0 GiB); model memory limit raised to 2.4 GiB: the GPUs are more likely to run out "
            "of memory");
  StatusOr<Plan> exact = partitionExact(model, raise);
  ASSERT_TRUE(exact.ok()) << exact.status().toString();
  EXPECT_TRUE(exact->memoryLimitRaised);
}

// Bad options and inputs.
TEST(PartitionerTest, Errors) {
  CostModel model = makeModel(qwen3_1_7b(), 9);
  StatusOr<Plan> noGpus = partitionRoundPipe(model, options(0, kGiB * 16));
  ASSERT_FALSE(noGpus.ok());
  EXPECT_EQ(noGpus.status().message(), "partitioner: the number of GPUs must be at least 1, got 0");
  StatusOr<Plan> noGpusExact = partitionExact(model, options(0, kGiB * 16));
  ASSERT_FALSE(noGpusExact.ok());
  EXPECT_EQ(noGpusExact.status().message(), noGpus.status().message());

  StatusOr<Plan> noMemory = partitionExact(model, options(8, 0));
  ASSERT_FALSE(noMemory.ok());
  EXPECT_EQ(noMemory.status().message(), "partitioner: the model memory limit is 0 bytes");

  StatusOr<CostModel> empty = CostModel::create(Profile(), 32, 9);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(),
            "profile: no layers (a profile needs at least the tail layer)");
  StatusOr<CostModel> noMb = CostModel::create(qwen3_1_7b(), 32, 0);
  ASSERT_FALSE(noMb.ok());
  EXPECT_EQ(noMb.status().message(),
            "cost model: the number of micro-batches must be at least 1, got 0");

  CostModel zero = makeModel(uniformProfile(3, 0, 0, 1, 1, 0, 0, 1), 2);
  StatusOr<Plan> nothing = partitionRoundPipe(zero, options(2, 100));
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().message(), "partitioner: every layer has zero forward and backward "
                                        "time; there is nothing to balance");

  StatusOr<Plan> badSizes = planFromStageSizes(model, options(8, 16 * kGiB), {7, 7, 7}, {1, 28});
  ASSERT_FALSE(badSizes.ok());
  EXPECT_EQ(badSizes.status().message(),
            "plan: the stage sizes do not cover the 29 layers: fused tail 1, forward total 21, "
            "backward total 28 (both must equal 28)");

  EXPECT_EQ(parsePartitionAlgorithm("greedy").status().message(),
            "unknown partition algorithm 'greedy': expected roundpipe or exact");
  EXPECT_EQ(*parsePartitionAlgorithm("exact"), PartitionAlgorithm::Exact);
  EXPECT_FALSE(parsePartitionAlgorithm("fixed").ok());
  EXPECT_EQ(partition(PartitionAlgorithm::Fixed, model, options(8, 16 * kGiB)).status().message(),
            "partition: a fixed plan is built from stage sizes (planFromStageSizes), not by a "
            "partitioning algorithm");
}

// validatePlan rejects broken plans with messages naming the stage.
TEST(PartitionerTest, ValidateRejects) {
  CostModel model = makeModel(qwen3_1_7b(), 9);
  StatusOr<Plan> good =
      planFromStageSizes(model, options(8, 16 * kGiB), {7, 7, 7, 7}, {1, 14, 14});
  ASSERT_TRUE(good.ok()) << good.status().toString();
  Plan gap = *good;
  gap.forward[1].begin = 8;
  EXPECT_EQ(validatePlan(gap, model).message(),
            "plan: forward stage 1 [8, 14) must start at layer 7 and be non-empty");
  Plan shortBwd = *good;
  shortBwd.backward.pop_back();
  shortBwd.numStages--;
  EXPECT_EQ(validatePlan(shortBwd, model).message(),
            "plan: the backward stages stop at layer 14 instead of covering layer 0");
  Plan tight = *good;
  tight.stageBudgetBytes = 3 * kGiB / 2;
  EXPECT_EQ(validatePlan(tight, model).message(),
            "plan: backward stage 1 [14, 28) needs 2.6 GiB, more than the per-stage budget "
            "1.5 GiB");
}
