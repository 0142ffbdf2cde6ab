//===- Partitioner.cpp - RoundPipe stage partitioning ---------------------===//

#include "runtime/partition/Partitioner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace rp::partition {

using base::internal;
using base::invalidArgument;

const char *partitionAlgorithmName(PartitionAlgorithm algorithm) {
  switch (algorithm) {
  case PartitionAlgorithm::RoundPipe:
    return "roundpipe";
  case PartitionAlgorithm::Exact:
    return "exact";
  case PartitionAlgorithm::Fixed:
    return "fixed";
  }
  return "<invalid partition algorithm>";
}

StatusOr<PartitionAlgorithm> parsePartitionAlgorithm(std::string_view name) {
  if (name == "roundpipe")
    return PartitionAlgorithm::RoundPipe;
  if (name == "exact")
    return PartitionAlgorithm::Exact;
  return invalidArgument("unknown partition algorithm '" + std::string(name) +
                         "': expected roundpipe or exact");
}

uint64_t defaultModelMemoryLimit(const TargetSpec &target, double fraction) {
  return static_cast<uint64_t>(std::floor(fraction * static_cast<double>(target.memoryBytes)));
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A stage of `bytes` fits the per-stage budget limit / 2 (for integers, bytes <= limit / 2 in
/// real numbers is bytes <= floor(limit / 2)).
bool fits(uint64_t bytes, uint64_t limit) { return bytes <= limit / 2; }

std::string formatMs(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f ms", ms);
  return buf;
}

/// The checks shared by both partitioners; fills the memory fields of `plan`.
Status prepare(const CostModel &model, const PartitionOptions &options, Plan &plan) {
  if (options.numGpus < 1)
    return invalidArgument("partitioner: the number of GPUs must be at least 1, got " +
                           std::to_string(options.numGpus));
  if (model.numLayers() < 1)
    return invalidArgument("partitioner: the profile has no layers");
  if (options.modelMemoryLimitBytes == 0)
    return invalidArgument("partitioner: the model memory limit is 0 bytes");
  if (!std::isfinite(options.upperThreshold) || options.upperThreshold < 1.0)
    return invalidArgument("partitioner: the upper threshold must be >= 1, got " +
                           std::to_string(options.upperThreshold));
  double wMax = 0;
  int largest = 0;
  uint64_t largestBytes = 0;
  for (int i = 0; i < model.numLayers(); ++i) {
    wMax = std::max({wMax, model.layerForwardMs(i), model.layerBackwardMs(i)});
    // A layer alone in a backward stage: params, gradients and its working set.
    const uint64_t bytes = model.memoryBytes(StageKind::Backward, i, i + 1);
    if (bytes > largestBytes) {
      largestBytes = bytes;
      largest = i;
    }
  }
  if (!(wMax > 0))
    return invalidArgument("partitioner: every layer has zero forward and backward time; "
                           "there is nothing to balance");
  plan.numGpus = options.numGpus;
  plan.numMicroBatches = model.numMicroBatches();
  plan.modelMemoryLimitBytes = options.modelMemoryLimitBytes;
  if (!fits(largestBytes, options.modelMemoryLimitBytes)) {
    std::string what = "layer " + std::to_string(largest) + " ('" + model.layer(largest).name +
                       "') needs " + formatBytes(largestBytes) +
                       ", more than the per-stage budget " +
                       formatBytes(options.modelMemoryLimitBytes / 2) + " (half of " +
                       formatBytes(options.modelMemoryLimitBytes) + ")";
    if (!options.raiseMemoryLimit)
      return invalidArgument(what);
    plan.modelMemoryLimitBytes = 2 * largestBytes;
    plan.memoryLimitRaised = true;
    plan.warnings.push_back(what + "; model memory limit raised to " +
                            formatBytes(plan.modelMemoryLimitBytes) +
                            ": the GPUs are more likely to run out of memory");
  }
  plan.stageBudgetBytes = plan.modelMemoryLimitBytes / 2;
  return Status();
}

PlannedStage makeStage(const CostModel &model, StageKind kind, int begin, int end) {
  PlannedStage s;
  s.kind = kind;
  s.begin = begin;
  s.end = end;
  s.cost = model.cost(kind, begin, end);
  return s;
}

Status finish(Plan &plan, const CostModel &model) {
  plan.numStages = static_cast<int>(plan.forward.size() + plan.backward.size());
  Status st = validatePlan(plan, model);
  if (!st.ok())
    return internal(std::string(partitionAlgorithmName(plan.algorithm)) +
                    " partitioner produced an invalid plan: " + st.message());
  return Status();
}

} // namespace

//===----------------------------------------------------------------------===//
// RoundPipe (the library's ModelExecutePlan.auto, run_type "fused", one model)
//===----------------------------------------------------------------------===//

StatusOr<Plan> partitionRoundPipe(const CostModel &model, const PartitionOptions &options) {
  Plan plan;
  plan.algorithm = PartitionAlgorithm::RoundPipe;
  RP_RETURN_IF_ERROR(prepare(model, options, plan));
  const int L = model.numLayers();
  const uint64_t limit = plan.modelMemoryLimitBytes;

  double wMax = 0;
  for (int i = 0; i < L; ++i)
    wMax = std::max({wMax, model.layerForwardMs(i), model.layerBackwardMs(i)});

  // Candidates: running sums of contiguous runs of forward or backward works.
  std::vector<double> candidates;
  const double upper = wMax * options.upperThreshold;
  for (int pass = 0; pass < 2; ++pass) {
    for (int start = 0; start < L; ++start) {
      double sum = 0;
      for (int end = start; end < L; ++end) {
        sum += pass == 0 ? model.layerForwardMs(end) : model.layerBackwardMs(end);
        if (sum > upper)
          break;
        if (sum >= wMax)
          candidates.push_back(sum);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());

  double minCost = kInf;
  int bestTail = L - 1;
  std::vector<std::pair<int, int>> bestFwd, bestBwd;
  double bestT = 0;
  for (double T : candidates) {
    // Fused tail: from the last layer down while the sum and the memory fit.
    int layerEnd = L;
    double fusedSum = 0;
    uint64_t fusedSize = 0;
    for (int i = L - 1; i >= 0; --i) {
      // The stage's memory as the plan check counts it: params (+ gradients) of its layers
      // and the largest layer's working set.
      if (fusedSum + model.layerFusedMs(i) > T ||
          !fits(model.memoryBytes(StageKind::FusedTail, i, L), limit))
        break;
      fusedSum += model.layerFusedMs(i);
      layerEnd = i;
    }
    // The tail layer always runs in the fused stage, even when it alone exceeds T (it cannot:
    // T >= w_max >= its work; and its memory fits after prepare()).
    if (layerEnd == L)
      layerEnd = L - 1;

    // Forward: greedy from layerEnd - 1 down to 0; stages collected in descending order.
    std::vector<std::pair<int, int>> fwd; // [begin, end), descending
    {
      double sum = kInf;
      bool open = false;
      for (int i = layerEnd - 1; i >= 0; --i) {
        if (!open || sum + model.layerForwardMs(i) > T ||
            !fits(model.memoryBytes(StageKind::Forward, i, fwd.back().second), limit)) {
          fwd.push_back({i, i + 1});
          sum = 0;
          open = true;
        }
        fwd.back().first = i;
        sum += model.layerForwardMs(i);
      }
    }
    // Backward: greedy from 0 up to layerEnd - 1; stages collected in ascending order.
    std::vector<std::pair<int, int>> bwd;
    {
      double sum = 0;
      bool open = false;
      for (int i = 0; i < layerEnd; ++i) {
        if (!open || sum + model.layerBackwardMs(i) > T ||
            !fits(model.memoryBytes(StageKind::Backward, bwd.back().first, i + 1), limit)) {
          bwd.push_back({i, i});
          sum = 0;
          open = true;
        }
        bwd.back().second = i + 1;
        sum += model.layerBackwardMs(i);
      }
    }
    int S = static_cast<int>(fwd.size() + bwd.size()) + 1;
    double cost = std::max(S, options.numGpus) * T;
    if (cost < minCost) {
      minCost = cost;
      bestT = T;
      bestTail = layerEnd;
      bestFwd = std::move(fwd);
      bestBwd = std::move(bwd);
    }
  }

  for (auto it = bestFwd.rbegin(); it != bestFwd.rend(); ++it)
    plan.forward.push_back(makeStage(model, StageKind::Forward, it->first, it->second));
  plan.backward.push_back(makeStage(model, StageKind::FusedTail, bestTail, L));
  for (auto it = bestBwd.rbegin(); it != bestBwd.rend(); ++it)
    plan.backward.push_back(makeStage(model, StageKind::Backward, it->first, it->second));
  plan.stageTimeMs = bestT;
  plan.objective = minCost;
  RP_RETURN_IF_ERROR(finish(plan, model));
  return plan;
}

//===----------------------------------------------------------------------===//
// Exact
//===----------------------------------------------------------------------===//

namespace {

/// Best cover of a prefix [0, i): fewest stages, then the smallest slowest stage.
struct Cover {
  int count = std::numeric_limits<int>::max(); ///< max() = infeasible.
  double slowest = kInf;
  int prev = -1; ///< Start of the last stage.
  bool feasible() const { return count != std::numeric_limits<int>::max(); }
};

bool better(int count, double slowest, const Cover &than) {
  return count < than.count || (count == than.count && slowest < than.slowest);
}

/// Prefix DP over [0, n) with stages of `kind`: cover[i] for every i in [0, n].
void coverPrefixes(const CostModel &model, StageKind kind, int n, double T, uint64_t limit,
                   bool withTransfer, std::vector<Cover> &cover) {
  cover.assign(static_cast<size_t>(n) + 1, Cover());
  cover[0].count = 0;
  cover[0].slowest = 0;
  for (int i = 1; i <= n; ++i) {
    Cover &best = cover[static_cast<size_t>(i)];
    for (int j = i - 1; j >= 0; --j) {
      // Compute time and memory only grow as the stage extends to the left: stop there.
      if (model.computeMs(kind, j, i) > T || !fits(model.memoryBytes(kind, j, i), limit))
        break;
      const Cover &before = cover[static_cast<size_t>(j)];
      if (!before.feasible())
        continue;
      double t = model.timeMs(kind, j, i, withTransfer);
      if (t > T)
        continue;
      int count = before.count + 1;
      double slowest = std::max(before.slowest, t);
      if (better(count, slowest, best)) {
        best.count = count;
        best.slowest = slowest;
        best.prev = j;
      }
    }
  }
}

/// The stages of the cover of [0, n), ascending.
std::vector<std::pair<int, int>> unwind(const std::vector<Cover> &cover, int n) {
  std::vector<std::pair<int, int>> stages;
  for (int i = n; i > 0; i = cover[static_cast<size_t>(i)].prev)
    stages.push_back({cover[static_cast<size_t>(i)].prev, i});
  std::reverse(stages.begin(), stages.end());
  return stages;
}

} // namespace

StatusOr<Plan> partitionExact(const CostModel &model, const PartitionOptions &options) {
  Plan plan;
  plan.algorithm = PartitionAlgorithm::Exact;
  RP_RETURN_IF_ERROR(prepare(model, options, plan));
  const int L = model.numLayers();
  const uint64_t limit = plan.modelMemoryLimitBytes;
  const bool withTransfer = options.includeTransfer;
  const int N = options.numGpus;

  // Candidates: the time of every memory-feasible stage.
  std::vector<double> candidates;
  for (int e = 1; e < L; ++e) {
    for (StageKind kind : {StageKind::Forward, StageKind::Backward}) {
      for (int b = e - 1; b >= 0; --b) {
        if (!fits(model.memoryBytes(kind, b, e), limit))
          break;
        candidates.push_back(model.timeMs(kind, b, e, withTransfer));
      }
    }
  }
  for (int t = L - 1; t >= 0; --t) {
    if (!fits(model.memoryBytes(StageKind::FusedTail, t, L), limit))
      break;
    candidates.push_back(model.timeMs(StageKind::FusedTail, t, L, withTransfer));
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  double bestObjective = kInf, bestSlowest = kInf;
  int bestTail = -1;
  std::vector<std::pair<int, int>> bestFwd, bestBwd;
  std::vector<Cover> fwd, bwd;
  for (double T : candidates) {
    if (N * T >= bestObjective)
      break; // every later candidate costs at least N * T
    // The tail is fixed to end at L; its start t is at most L - 1.
    coverPrefixes(model, StageKind::Forward, L - 1, T, limit, withTransfer, fwd);
    coverPrefixes(model, StageKind::Backward, L - 1, T, limit, withTransfer, bwd);
    for (int t = L - 1; t >= 0; --t) {
      if (model.computeMs(StageKind::FusedTail, t, L) > T ||
          !fits(model.memoryBytes(StageKind::FusedTail, t, L), limit))
        break;
      double tailTime = model.timeMs(StageKind::FusedTail, t, L, withTransfer);
      const Cover &f = fwd[static_cast<size_t>(t)];
      const Cover &b = bwd[static_cast<size_t>(t)];
      if (tailTime > T || !f.feasible() || !b.feasible())
        continue;
      int S = 1 + f.count + b.count;
      double slowest = std::max({tailTime, f.slowest, b.slowest});
      double objective = std::max(S, N) * slowest;
      if (objective < bestObjective ||
          (objective == bestObjective && slowest < bestSlowest)) {
        bestObjective = objective;
        bestSlowest = slowest;
        bestTail = t;
        bestFwd = unwind(fwd, t);
        bestBwd = unwind(bwd, t);
      }
    }
  }
  if (bestTail < 0)
    return internal("exact partitioner found no feasible plan (the largest layer fits, so a "
                    "plan of single-layer stages should exist)");

  for (auto [b, e] : bestFwd)
    plan.forward.push_back(makeStage(model, StageKind::Forward, b, e));
  plan.backward.push_back(makeStage(model, StageKind::FusedTail, bestTail, L));
  for (auto it = bestBwd.rbegin(); it != bestBwd.rend(); ++it)
    plan.backward.push_back(makeStage(model, StageKind::Backward, it->first, it->second));
  plan.stageTimeMs = bestSlowest;
  plan.objective = bestObjective;
  RP_RETURN_IF_ERROR(finish(plan, model));
  return plan;
}

StatusOr<Plan> partition(PartitionAlgorithm algorithm, const CostModel &model,
                         const PartitionOptions &options) {
  switch (algorithm) {
  case PartitionAlgorithm::RoundPipe:
    return partitionRoundPipe(model, options);
  case PartitionAlgorithm::Exact:
    return partitionExact(model, options);
  case PartitionAlgorithm::Fixed:
    break;
  }
  return invalidArgument("partition: a fixed plan is built from stage sizes "
                         "(planFromStageSizes), not by a partitioning algorithm");
}

//===----------------------------------------------------------------------===//
// Plans from sizes, validation, evaluation
//===----------------------------------------------------------------------===//

StatusOr<Plan> planFromStageSizes(const CostModel &model, const PartitionOptions &options,
                                  const std::vector<int> &forwardSizes,
                                  const std::vector<int> &backwardSizes) {
  Plan plan;
  plan.algorithm = PartitionAlgorithm::Fixed;
  RP_RETURN_IF_ERROR(prepare(model, options, plan));
  const int L = model.numLayers();
  if (backwardSizes.empty())
    return invalidArgument("plan: no backward stages (the first one is the fused tail)");
  for (size_t i = 0; i < forwardSizes.size(); ++i)
    if (forwardSizes[i] < 1)
      return invalidArgument("plan: forward stage " + std::to_string(i) + " has size " +
                             std::to_string(forwardSizes[i]) + "; sizes must be positive");
  for (size_t i = 0; i < backwardSizes.size(); ++i)
    if (backwardSizes[i] < 1)
      return invalidArgument("plan: backward stage " + std::to_string(i) + " has size " +
                             std::to_string(backwardSizes[i]) + "; sizes must be positive");
  int tail = L - backwardSizes[0];
  long fwdTotal = 0, bwdTotal = 0;
  for (int s : forwardSizes)
    fwdTotal += s;
  for (size_t i = 1; i < backwardSizes.size(); ++i)
    bwdTotal += backwardSizes[i];
  if (tail < 0 || fwdTotal != tail || bwdTotal != tail)
    return invalidArgument("plan: the stage sizes do not cover the " + std::to_string(L) +
                           " layers: fused tail " + std::to_string(backwardSizes[0]) +
                           ", forward total " + std::to_string(fwdTotal) + ", backward total " +
                           std::to_string(bwdTotal) + " (both must equal " +
                           std::to_string(std::max(tail, 0)) + ")");
  int at = 0;
  for (int s : forwardSizes) {
    plan.forward.push_back(makeStage(model, StageKind::Forward, at, at + s));
    at += s;
  }
  plan.backward.push_back(makeStage(model, StageKind::FusedTail, tail, L));
  at = tail;
  for (size_t i = 1; i < backwardSizes.size(); ++i) {
    plan.backward.push_back(
        makeStage(model, StageKind::Backward, at - backwardSizes[i], at));
    at -= backwardSizes[i];
  }
  plan.numStages = static_cast<int>(plan.forward.size() + plan.backward.size());
  plan.stageTimeMs = maxStageComputeMs(plan);
  plan.objective = computeObjective(plan);
  RP_RETURN_IF_ERROR(validatePlan(plan, model));
  return plan;
}

Status validatePlan(const Plan &plan, const CostModel &model) {
  const int L = model.numLayers();
  auto name = [](const char *dir, size_t i, const PlannedStage &s) {
    return std::string(dir) + " stage " + std::to_string(i) + " [" + std::to_string(s.begin) +
           ", " + std::to_string(s.end) + ")";
  };
  if (plan.backward.empty())
    return invalidArgument("plan: no backward stages (the first one is the fused tail)");
  const PlannedStage &tail = plan.backward[0];
  if (tail.kind != StageKind::FusedTail || tail.end != L || tail.begin < 0 ||
      tail.begin >= L)
    return invalidArgument("plan: " + name("backward", 0, tail) +
                           " must be the fused tail [t, " + std::to_string(L) +
                           ") with 0 <= t < " + std::to_string(L));
  const int t = tail.begin;
  int next = 0;
  for (size_t i = 0; i < plan.forward.size(); ++i) {
    const PlannedStage &s = plan.forward[i];
    if (s.kind != StageKind::Forward)
      return invalidArgument("plan: " + name("forward", i, s) + " is not a forward stage");
    if (s.begin != next || s.end <= s.begin)
      return invalidArgument("plan: " + name("forward", i, s) + " must start at layer " +
                             std::to_string(next) + " and be non-empty");
    next = s.end;
  }
  if (next != t)
    return invalidArgument("plan: the forward stages end at layer " + std::to_string(next) +
                           ", but the fused tail starts at " + std::to_string(t));
  next = t;
  for (size_t i = 1; i < plan.backward.size(); ++i) {
    const PlannedStage &s = plan.backward[i];
    if (s.kind != StageKind::Backward)
      return invalidArgument("plan: " + name("backward", i, s) + " is not a backward stage");
    if (s.end != next || s.end <= s.begin || s.begin < 0)
      return invalidArgument("plan: " + name("backward", i, s) + " must end at layer " +
                             std::to_string(next) + " and be non-empty");
    next = s.begin;
  }
  if (next != 0)
    return invalidArgument("plan: the backward stages stop at layer " + std::to_string(next) +
                           " instead of covering layer 0");
  if (plan.numStages != static_cast<int>(plan.forward.size() + plan.backward.size()))
    return invalidArgument("plan: S = " + std::to_string(plan.numStages) + " but there are " +
                           std::to_string(plan.forward.size() + plan.backward.size()) +
                           " stages");
  auto checkMemory = [&](const char *dir, size_t i, const PlannedStage &s) -> Status {
    uint64_t bytes = model.memoryBytes(s.kind, s.begin, s.end);
    if (bytes > plan.stageBudgetBytes)
      return invalidArgument("plan: " + name(dir, i, s) + " needs " + formatBytes(bytes) +
                             ", more than the per-stage budget " +
                             formatBytes(plan.stageBudgetBytes));
    return Status();
  };
  for (size_t i = 0; i < plan.forward.size(); ++i)
    RP_RETURN_IF_ERROR(checkMemory("forward", i, plan.forward[i]));
  for (size_t i = 0; i < plan.backward.size(); ++i)
    RP_RETURN_IF_ERROR(checkMemory("backward", i, plan.backward[i]));
  return Status();
}

double maxStageComputeMs(const Plan &plan) {
  double m = 0;
  for (const PlannedStage &s : plan.forward)
    m = std::max(m, s.cost.computeMs);
  for (const PlannedStage &s : plan.backward)
    m = std::max(m, s.cost.computeMs);
  return m;
}

double maxStageTimeMs(const Plan &plan) {
  double m = 0;
  for (const PlannedStage &s : plan.forward)
    m = std::max(m, s.cost.timeMs);
  for (const PlannedStage &s : plan.backward)
    m = std::max(m, s.cost.timeMs);
  return m;
}

double computeObjective(const Plan &plan) {
  return std::max(plan.numStages, plan.numGpus) * maxStageComputeMs(plan);
}

double transferObjective(const Plan &plan) {
  return std::max(plan.numStages, plan.numGpus) * maxStageTimeMs(plan);
}

double estimatedStepMs(const Plan &plan, bool withTransfer) {
  if (plan.numGpus < 1)
    return 0;
  double obj = withTransfer ? transferObjective(plan) : computeObjective(plan);
  return plan.numMicroBatches * obj / plan.numGpus;
}

std::string formatPlan(const Plan &plan) {
  std::string s = std::string(partitionAlgorithmName(plan.algorithm)) + ": forward";
  for (const PlannedStage &st : plan.forward)
    s += " " + std::to_string(st.size());
  s += " | backward tail(" + std::to_string(plan.backward.empty() ? 0 : plan.backward[0].size()) +
       ")";
  for (size_t i = 1; i < plan.backward.size(); ++i)
    s += " " + std::to_string(plan.backward[i].size());
  char buf[160];
  std::snprintf(buf, sizeof(buf), " (S=%d, N=%d, T=%s, objective=%.2f ms)", plan.numStages,
                plan.numGpus, formatMs(plan.stageTimeMs).c_str(), plan.objective);
  return s + buf;
}

} // namespace rp::partition
