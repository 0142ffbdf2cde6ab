//===- Partitioner.h - RoundPipe stage partitioning -------------*- C++ -*-===//
//
// Splits a model's layers into forward stages, a fused tail stage and backward stages for the
// RoundPipe schedule (arXiv 2604.27085 §4; docs/ARCHITECTURE.md, "The partitioner").
//
// A plan, for L layers (layer L-1 is the tail: LM head + loss):
//
//   forward   F_0 .. F_{f-1}: [0, t) in ascending contiguous ranges (empty when t = 0)
//   backward  B_0 = the fused tail [t, L), then B_1 .. B_{b-1}: [0, t) in descending ranges,
//             B_{b-1} starting at layer 0
//   S = f + b stages; jobs are dispatched F_0..F_{f-1}, B_0..B_{b-1}, round-robin on N GPUs.
//
// Objective (the library's ModelExecutePlan.auto): minimise max(S, N) * T, T the slowest stage
// time per micro-batch: max(S, N) stage slots of T each is the per-iteration GPU-time bound of the
// round-robin schedule (docs/ARCHITECTURE.md), i.e. step time ~ M * max(S, N) * T / N.
// Constraint: every stage's GPU memory <= the model memory limit / 2 (the other half holds the
// prefetched next stage).
//
// Two algorithms:
//
//  - RoundPipe: the library's planner, reproduced step for step (ITcarrot/RoundPipe
//    roundpipe/scheduler.py, ModelExecutePlan.auto, run_type "fused"). Compute times only:
//    forward work fwd_ms, backward work recompute_ms + bwd_ms, fused-tail work fwd_ms + bwd_ms
//    (the library charges recompute + bwd inside the fused tail too; the same number unless a
//    profile gives recompute_ms; the tail layer itself is fwd + bwd in both).
//      w_max = the largest per-layer forward or backward work
//      candidates T = every contiguous-run sum of the forward or backward works with
//                     w_max <= T <= upperThreshold * w_max (running sums, as the library)
//      for T ascending: fused tail from the last layer down while sum <= T and memory fits;
//                       forward greedy from t-1 down to 0; backward greedy from 0 up to t-1;
//                       cost = max(S, N) * T; keep the first strict minimum.
//    O(C * L), C <= 2 L k candidates, k the longest run under upperThreshold * w_max.
//
//  - Exact: minimises max(S, N) * T exactly over all contiguous partitions, with T the slowest
//    stage time *including transfers* (CostModel::cost().timeMs; compute only when
//    includeTransfer is false), rpc's addition to the library. The optimal T is the time of
//    some stage, so the candidates are the times of every memory-feasible stage (forward,
//    backward and fused-tail ranges), taken in ascending order. For each candidate T two prefix
//    DPs give, for every tail start t, the fewest forward and backward stages covering [0, t)
//    with every stage time <= T and memory <= budget (ties: the smaller slowest stage), then
//    S(t) = 1 + F(t) + B(t) and the objective max(S, N) * (actual slowest stage). The loop stops
//    once N * T reaches the best objective found (no later candidate can beat it).
//    Complexity: O(C * L * k) time, O(L) memory per candidate, C <= 3 L k candidates, k the most
//    layers a stage may hold; worst case O(L^4) (L = 100: about 1e8 cheap steps), in practice
//    the early stop keeps it far lower. The DP is needed rather than greedy because a stage's
//    transfer time is not monotone in its range (boundary activations differ by layer).
//
// Errors (InvalidArgument): zero GPUs, an empty profile (CostModel), a zero memory limit, all
// layer times zero, and a layer larger than the per-stage budget (unless raiseMemoryLimit):
//   "layer 17 ('block_16') needs 1.2 GiB, more than the per-stage budget 1.0 GiB (half of
//    2.0 GiB)"
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PARTITION_PARTITIONER_H
#define RP_RUNTIME_PARTITION_PARTITIONER_H

#include "runtime/partition/CostModel.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rp::partition {

/// Which partitioner.
enum class PartitionAlgorithm {
  RoundPipe, ///< The library's candidate enumeration + greedy packing (compute times).
  Exact,     ///< Exact DP over contiguous stages, transfer time included.
  Fixed,     ///< Not an algorithm: a plan given by its stage sizes (planFromStageSizes).
};

/// "roundpipe", "exact", "fixed".
const char *partitionAlgorithmName(PartitionAlgorithm algorithm);
/// Parses "roundpipe" or "exact". Errors: InvalidArgument naming the text and both names.
StatusOr<PartitionAlgorithm> parsePartitionAlgorithm(std::string_view name);

/// Knobs of the partitioners.
struct PartitionOptions {
  /// N, the GPU pool size; the objective counts at least N stage slots (min_stages). >= 1.
  int numGpus = 0;
  /// The model memory limit, bytes; each stage may use half of it. The library's default is
  /// 0.6 x the smallest GPU's memory (defaultModelMemoryLimit).
  uint64_t modelMemoryLimitBytes = 0;
  /// RoundPipe only: candidates T lie in [w_max, upperThreshold * w_max] (library: 1.1).
  double upperThreshold = 1.1;
  /// When a layer needs more than half the limit: false = error; true = the library's
  /// behaviour, raise the limit to 2x the largest layer and record a warning in the plan.
  bool raiseMemoryLimit = false;
  /// Exact only: stage times include PCIe transfers (true) or are compute only (false).
  bool includeTransfer = true;
};

/// The library's default model memory limit: floor(fraction * target.memoryBytes).
uint64_t defaultModelMemoryLimit(const TargetSpec &target, double fraction = 0.6);

/// One stage of a plan.
struct PlannedStage {
  StageKind kind = StageKind::Forward;
  int begin = 0; ///< First layer.
  int end = 0;   ///< One past the last layer.
  StageCost cost; ///< Estimated per-micro-batch cost (CostModel::cost).
  int size() const { return end - begin; }
};

/// A partition of the model into stages (see the file comment for the layout).
struct Plan {
  PartitionAlgorithm algorithm = PartitionAlgorithm::RoundPipe;
  std::vector<PlannedStage> forward;  ///< Ascending, covering [0, t).
  std::vector<PlannedStage> backward; ///< backward[0] = fused tail [t, L); then descending.
  int numGpus = 0;                    ///< N.
  int numMicroBatches = 0;            ///< M of the cost model.
  int numStages = 0;                  ///< S = forward.size() + backward.size().
  /// T, ms per micro-batch: RoundPipe: the chosen candidate (a bound on every stage's compute
  /// time, as in the library); Exact: the slowest stage's time (with transfers if included).
  double stageTimeMs = 0;
  double objective = 0;               ///< max(S, N) * stageTimeMs, ms.
  uint64_t modelMemoryLimitBytes = 0; ///< After any raise.
  uint64_t stageBudgetBytes = 0;      ///< modelMemoryLimitBytes / 2.
  bool memoryLimitRaised = false;     ///< raiseMemoryLimit took effect.
  std::vector<std::string> warnings;
};

/// The library's planner (see the file comment). Errors as listed there.
StatusOr<Plan> partitionRoundPipe(const CostModel &model, const PartitionOptions &options);
/// The exact planner (see the file comment). Errors as listed there.
StatusOr<Plan> partitionExact(const CostModel &model, const PartitionOptions &options);
/// Dispatches to one of the two (Fixed is an InvalidArgument error: it needs stage sizes).
StatusOr<Plan> partition(PartitionAlgorithm algorithm, const CostModel &model,
                         const PartitionOptions &options);

/// Builds a plan from stage sizes, e.g. a hand-written or published plan: `forwardSizes`
/// ascending from layer 0; `backwardSizes` in dispatch order, the fused tail first, then
/// descending to layer 0. algorithm = Fixed; stageTimeMs is the slowest stage's compute time and
/// objective = computeObjective. Errors
/// (InvalidArgument): sizes that are not positive or do not cover the layers; plus
/// validatePlan's.
StatusOr<Plan> planFromStageSizes(const CostModel &model, const PartitionOptions &options,
                                  const std::vector<int> &forwardSizes,
                                  const std::vector<int> &backwardSizes);

/// Checks a plan against the model: the forward stages cover [0, t) ascending and contiguous,
/// backward[0] is the fused tail [t, L), the rest cover [0, t) descending and contiguous, no
/// stage is empty, every stage's memory <= stageBudgetBytes, S matches. Errors:
/// InvalidArgument naming the stage and what is wrong (the partitioners turn it into Internal).
Status validatePlan(const Plan &plan, const CostModel &model);

/// The slowest stage's compute time, ms per micro-batch.
double maxStageComputeMs(const Plan &plan);
/// The slowest stage's time with transfers, ms per micro-batch.
double maxStageTimeMs(const Plan &plan);
/// The RoundPipe cost function of a plan: max(S, N) * maxStageComputeMs.
double computeObjective(const Plan &plan);
/// The transfer-aware cost function: max(S, N) * maxStageTimeMs.
double transferObjective(const Plan &plan);
/// Estimated step time of the round-robin schedule, ms: M * max(S, N) * T / N with T the
/// slowest stage (with or without transfers). An estimate in the library's model: it ignores
/// pipeline fill/drain, which the asynchronous optimizer overlaps with the next iteration.
double estimatedStepMs(const Plan &plan, bool withTransfer);

/// "forward [0,7) [7,14) | backward [28,29)* [25,28) ... (S=15, T=69.78 ms, obj=1046.7 ms)".
std::string formatPlan(const Plan &plan);

} // namespace rp::partition

#endif // RP_RUNTIME_PARTITION_PARTITIONER_H
