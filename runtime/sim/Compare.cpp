//===- Compare.cpp - RoundPipe against the usual pipeline schedules -------===//
//
// Validates the inputs, picks RoundPipe's partition, builds and runs each schedule's task
// graph and measures it. RoundPipe's stage counts come from rp::partition's RoundPipe
// partitioner (the library's ModelExecutePlan.auto); its layers are then spread evenly over
// those counts, as the partitions the authors fed their simulator (docs/SIMULATOR.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Compare.h"

#include "runtime/partition/CostModel.h"
#include "runtime/partition/Partitioner.h"
#include "runtime/sim/Baselines.h"
#include "runtime/sim/ScheduleSim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rp::sim {

using partition::Profile;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

namespace {

Status validateOptions(const CompareOptions &o) {
  auto bad = [](const std::string &what) { return invalidArgument("simulator options: " + what); };
  if (o.gpus < 1)
    return bad("gpus must be >= 1, got " + std::to_string(o.gpus));
  if (o.microBatches < 1)
    return bad("micro-batches must be >= 1, got " + std::to_string(o.microBatches));
  if (o.chunks < 0)
    return bad("chunks must be >= 0 (0 = automatic), got " + std::to_string(o.chunks));
  if (!(o.linkGbps > 0) || !std::isfinite(o.linkGbps))
    return bad("link bandwidth must be a positive number of GB/s");
  if (!(o.hostUplinkGbps >= 0) || !std::isfinite(o.hostUplinkGbps))
    return bad("host uplink bandwidth must be >= 0 GB/s (0 = not shared)");
  if (!(o.optimizerMsPerLayer >= 0) || !std::isfinite(o.optimizerMsPerLayer))
    return bad("optimizer time per layer must be >= 0 ms");
  if (!(o.zbWeightGradFraction > 0 && o.zbWeightGradFraction < 1))
    return bad("zb-h1 weight-gradient fraction must lie in (0, 1)");
  if (o.roundMicroBatches < 0)
    return bad("RoundPipe micro-batches per round must be >= 0 (0 = min(M, N))");
  if (o.gpuMemoryBytes == 0)
    return bad("GPU memory must be positive");
  return validateNodeLink(o.nodes);
}

/// `total` layers over `count` stages, the first `total mod count` in `order` one larger.
std::vector<int> balanced(int total, int count, bool extraFirst) {
  std::vector<int> sizes(static_cast<size_t>(count), total / count);
  int extra = total % count;
  for (int i = 0; i < extra; ++i)
    sizes[static_cast<size_t>(extraFirst ? i : count - 1 - i)] += 1;
  return sizes;
}

/// RoundPipe's stage sizes: the options' when given, else the partitioner's stage counts with
/// the layers spread evenly (extra layers nearest the tail, as the artifact's partitions), or
/// the partitioner's own sizes when spreading would make a stage slower or too large.
StatusOr<std::pair<std::vector<int>, std::vector<int>>>
roundPipeSizes(const Profile &profile, const CompareOptions &options) {
  if (!options.roundPipeForward.empty() || !options.roundPipeBackward.empty())
    return std::make_pair(options.roundPipeForward, options.roundPipeBackward);
  RP_ASSIGN_OR_RETURN(partition::CostModel model,
                      partition::CostModel::create(profile, options.linkGbps,
                                                   options.microBatches));
  RP_ASSIGN_OR_RETURN(partition::TargetSpec target,
                      partition::makeTarget("sim", 0, 0, options.linkGbps,
                                            options.gpuMemoryBytes));
  partition::PartitionOptions popts;
  popts.numGpus = options.gpus;
  popts.modelMemoryLimitBytes = partition::defaultModelMemoryLimit(target);
  popts.raiseMemoryLimit = true;
  RP_ASSIGN_OR_RETURN(partition::Plan plan, partition::partitionRoundPipe(model, popts));
  std::vector<int> greedyF, greedyB;
  for (const auto &s : plan.forward)
    greedyF.push_back(s.size());
  for (const auto &s : plan.backward)
    greedyB.push_back(s.size());
  const int t = plan.backward.front().begin;
  const int f = static_cast<int>(plan.forward.size());
  const int b = static_cast<int>(plan.backward.size());
  std::vector<int> evenF = f > 0 ? balanced(t, f, /*extraFirst=*/false) : std::vector<int>{};
  std::vector<int> evenB{plan.backward.front().size()};
  if (b > 1) {
    std::vector<int> rest = balanced(t, b - 1, /*extraFirst=*/true);
    evenB.insert(evenB.end(), rest.begin(), rest.end());
  }
  popts.modelMemoryLimitBytes = plan.modelMemoryLimitBytes;
  popts.raiseMemoryLimit = false;
  StatusOr<partition::Plan> even = partition::planFromStageSizes(model, popts, evenF, evenB);
  if (even.ok() &&
      partition::maxStageComputeMs(*even) <= partition::maxStageComputeMs(plan) + 1e-9)
    return std::make_pair(evenF, evenB);
  return std::make_pair(greedyF, greedyB);
}

StatusOr<BuiltSchedule> build(const std::string &name, const Profile &profile,
                              const CompareOptions &options) {
  if (name == "gpipe")
    return buildGpipe(profile, options);
  if (name == "1f1b")
    return buildOneFOneB(profile, options);
  if (name == "interleaved-1f1b")
    return buildInterleaved(profile, options);
  if (name == "looped-bfs")
    return buildLoopedBfs(profile, options);
  if (name == "zb-h1")
    return buildZbH1(profile, options);
  if (name == "mobius")
    return buildMobius(profile, options);
  if (name == "roundpipe-sync" || name == "roundpipe-async") {
    RP_ASSIGN_OR_RETURN(auto sizes, roundPipeSizes(profile, options));
    return buildRoundPipe(profile, options, sizes.first, sizes.second,
                          /*syncOptimizer=*/name == "roundpipe-sync");
  }
  std::string known;
  for (const std::string &s : scheduleNames())
    known += (known.empty() ? "" : ", ") + s;
  return invalidArgument("unknown schedule '" + name + "'; expected one of: " + known);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

} // namespace

const std::vector<std::string> &scheduleNames() {
  static const std::vector<std::string> kNames = {
      "gpipe", "1f1b",   "interleaved-1f1b", "looped-bfs",
      "zb-h1", "mobius", "roundpipe-sync",   "roundpipe-async"};
  return kNames;
}

StatusOr<ScheduleResult> simulateSchedule(const std::string &name, const Profile &profile,
                                          const CompareOptions &options) {
  RP_RETURN_IF_ERROR(validateOptions(options));
  RP_RETURN_IF_ERROR(partition::validateProfile(profile, "profile"));
  if (profile.layers.size() < 2)
    return invalidArgument("profile: the simulator needs at least 2 layers (a block and the "
                           "tail), got " + std::to_string(profile.layers.size()));
  if (options.nodes.active() && name.rfind("roundpipe-", 0) != 0)
    return invalidArgument("simulator options: " + name + " does not model data parallelism "
                           "across nodes (only roundpipe-sync and roundpipe-async do)");
  RP_ASSIGN_OR_RETURN(BuiltSchedule built, build(name, profile, options));
  RP_ASSIGN_OR_RETURN(SimResult sim, simulate(built.graph, options.gpus, name));
  ScheduleResult r;
  r.name = name;
  r.description = std::move(built.description);
  r.timeline = std::move(sim.timeline);
  r.stats = computeStats(r.timeline);
  r.stepMs = r.stats.makespanMs;
  r.bubblePercent = r.stats.bubblePercent;
  if (name == "roundpipe-async") {
    // Consecutive iterations overlap fill and drain (the round-robin pointer carries over and
    // nothing waits for the optimizer); the host's AdamW overlaps too unless it is slower.
    const double n = options.gpus;
    double steady = (n * r.stats.makespanMs - r.stats.fillMs - r.stats.drainMs) / n;
    double hostMs = options.optimizerMsPerLayer * static_cast<double>(profile.layers.size());
    // With R nodes the node link reduces every layer's fp32 gradient once per step, overlapped
    // with the next step like the optimizer: on a thread of their own (rp-run's way) the
    // busier of the two bounds the step, on the optimizer thread the thread does both in turn.
    double linkMs = 0;
    for (const partition::LayerProfile &l : profile.layers)
      if (l.trainableBytes > 0)
        linkMs += reductionMs(options.nodes, 2.0 * static_cast<double>(l.trainableBytes));
    r.stepMs = options.nodes.commThread ? std::max({steady, hostMs, linkMs})
                                        : std::max(steady, hostMs + linkMs);
    r.bubblePercent = r.stats.steadyBubblePercent;
  }
  return r;
}

StatusOr<std::vector<ScheduleResult>> compareSchedules(const Profile &profile,
                                                       const CompareOptions &options) {
  if (options.nodes.active())
    return invalidArgument("simulator options: the comparison's baseline schedules do not model "
                           "data parallelism across nodes (give --nodes 1, or no --compare)");
  std::vector<ScheduleResult> results;
  for (const std::string &name : scheduleNames()) {
    RP_ASSIGN_OR_RETURN(ScheduleResult r, simulateSchedule(name, profile, options));
    results.push_back(std::move(r));
  }
  return results;
}

std::string formatCompareTable(const std::vector<ScheduleResult> &results) {
  const ScheduleResult *sync = nullptr, *async = nullptr;
  for (const ScheduleResult &r : results) {
    if (r.name == "roundpipe-sync")
      sync = &r;
    if (r.name == "roundpipe-async")
      async = &r;
  }
  auto speedup = [](const ScheduleResult *rp, const ScheduleResult &r) -> std::string {
    if (!rp || !(rp->stepMs > 0))
      return "-";
    return fixed(r.stepMs / rp->stepMs, 2) + "x";
  };
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof(line), "%-18s %12s %10s %17s %18s\n", "schedule", "step (ms)",
                "bubble %", "RP-sync speedup", "RP-async speedup");
  o << line;
  for (const ScheduleResult &r : results) {
    std::snprintf(line, sizeof(line), "%-18s %12s %10s %17s %18s\n", r.name.c_str(),
                  fixed(r.stepMs, 1).c_str(), fixed(r.bubblePercent, 1).c_str(),
                  speedup(sync, r).c_str(), speedup(async, r).c_str());
    o << line;
  }
  return o.str();
}

} // namespace rp::sim
