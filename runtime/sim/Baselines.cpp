//===- Baselines.cpp - Task graphs of pipeline schedules ------------------===//
//
// The classic schedules share one builder (buildStatic): per-GPU action lists (F/B/W of a
// virtual stage and micro-batch) become compute tasks in that order, then each GPU's outgoing
// copies in its compute order (its Download queue), then each GPU's incoming copies in its
// compute order (its ActivationUpload queue). RoundPipe is built round by round because the
// first GPU of a round depends on when the previous round's jobs end.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Baselines.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

namespace rp::sim {

using partition::Profile;
using runtime::invalidArgument;
using runtime::Status;
using runtime::StatusOr;

namespace {

/// Shared uplinks (ScheduleSim's uplink index).
constexpr int kUplinkH2D = 0;
constexpr int kUplinkD2H = 1;

/// Per-stage costs and transfer times of a profile under the options.
class Costs {
public:
  Costs(const Profile &profile, const CompareOptions &options)
      : profile_(profile), options_(options) {
    double link = options.linkGbps;
    effGbps_ = options.hostUplinkGbps > 0 ? std::min(link, options.hostUplinkGbps) : link;
  }

  int numLayers() const { return static_cast<int>(profile_.layers.size()); }
  int tail() const { return numLayers() - 1; }

  double fwd(LayerRange r) const {
    double s = 0;
    for (int i = r.begin; i < r.end; ++i)
      s += layer(i).fwdMs;
    return s;
  }
  /// Recomputation of the non-tail layers of r.
  double recompute(LayerRange r) const {
    double s = 0;
    for (int i = r.begin; i < r.end; ++i)
      if (i != tail())
        s += layer(i).recomputeMs;
    return s;
  }
  double bwd(LayerRange r) const {
    double s = 0;
    for (int i = r.begin; i < r.end; ++i)
      s += layer(i).bwdMs;
    return s;
  }
  /// One direction of the hop after layer `i` (the boundary between i and i + 1), ms.
  double hopLegMs(int i) const {
    if (profile_.commMs)
      return *profile_.commMs / 2 * (options_.linkGbps / effGbps_);
    return bytesMs(static_cast<double>(layer(i).actBytes));
  }
  double weightsMs(LayerRange r) const {
    double b = 0;
    for (int i = r.begin; i < r.end; ++i)
      b += static_cast<double>(layer(i).paramBytes);
    return bytesMs(b);
  }
  double gradsMs(LayerRange r) const {
    double b = 0;
    for (int i = r.begin; i < r.end; ++i)
      b += static_cast<double>(layer(i).trainableBytes);
    return bytesMs(b);
  }
  int h2dUplink() const { return options_.hostUplinkGbps > 0 ? kUplinkH2D : -1; }
  int d2hUplink() const { return options_.hostUplinkGbps > 0 ? kUplinkD2H : -1; }

private:
  const partition::LayerProfile &layer(int i) const {
    return profile_.layers[static_cast<size_t>(i)];
  }
  double bytesMs(double bytes) const { return bytes / (effGbps_ * 1e6); }

  const Profile &profile_;
  const CompareOptions &options_;
  double effGbps_ = 1;
};

std::string join(const std::vector<std::string> &parts, const char *sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i)
      out += sep;
    out += parts[i];
  }
  return out;
}

/// "3,3,4,2+tail" for stage ranges of a model whose last layer is the tail.
std::string describeRanges(const std::vector<LayerRange> &stages, int tail) {
  std::vector<std::string> parts;
  for (const LayerRange &r : stages) {
    bool hasTail = r.begin <= tail && tail < r.end;
    int blocks = r.size() - (hasTail ? 1 : 0);
    parts.push_back(hasTail ? std::to_string(blocks) + "+tail" : std::to_string(blocks));
  }
  return join(parts, ",");
}

//===----------------------------------------------------------------------===//
// Statically bound schedules
//===----------------------------------------------------------------------===//

enum class Kind { F, B, W };

struct Action {
  Kind kind;
  int stage;
  int mb;
};

struct StaticSpec {
  std::vector<LayerRange> stages;       ///< Virtual stages in model order.
  std::vector<int> device;              ///< GPU of each stage.
  std::vector<std::vector<Action>> ops; ///< Per GPU, in execution order.
  double wFraction = 0;                 ///< > 0: backward split into B and W (zb-h1).
  bool offload = false;                 ///< Mobius: weights/grads through the host, CPU AdamW.
};

std::string actionLabel(Kind k, int stage, int mb) {
  const char *p = k == Kind::F ? "F" : k == Kind::B ? "B" : "W";
  return std::string(p) + std::to_string(stage) + " mb" + std::to_string(mb);
}

StatusOr<TaskGraph> buildStatic(const Profile &profile, const CompareOptions &options,
                                const StaticSpec &spec) {
  const Costs costs(profile, options);
  const int numStages = static_cast<int>(spec.stages.size());
  const int m = options.microBatches;
  const bool split = spec.wFraction > 0;
  TaskGraph g;

  // Phase 1: compute tasks, per GPU in order.
  std::map<std::tuple<int, int, int>, int> computeId; // (kind, stage, mb) -> task
  auto key = [](Kind k, int s, int mb) { return std::make_tuple(static_cast<int>(k), s, mb); };
  for (size_t d = 0; d < spec.ops.size(); ++d) {
    for (const Action &a : spec.ops[d]) {
      if (a.stage < 0 || a.stage >= numStages || spec.device[static_cast<size_t>(a.stage)] !=
                                                     static_cast<int>(d))
        return runtime::internal("schedule: action " + actionLabel(a.kind, a.stage, a.mb) +
                                 " placed on GPU " + std::to_string(d));
      LayerRange r = spec.stages[static_cast<size_t>(a.stage)];
      SimTask t;
      t.device = static_cast<int>(d);
      t.lane = Lane::Compute;
      t.label = actionLabel(a.kind, a.stage, a.mb);
      if (a.kind == Kind::F) {
        t.durationMs = costs.fwd(r);
        t.category = "forward";
      } else if (a.kind == Kind::B) {
        t.durationMs = costs.recompute(r) + (1 - spec.wFraction) * costs.bwd(r);
        t.category = "backward";
      } else {
        t.durationMs = spec.wFraction * costs.bwd(r);
        t.category = "weight-grad";
      }
      if (!computeId.emplace(key(a.kind, a.stage, a.mb), g.add(std::move(t))).second)
        return runtime::internal("schedule: duplicate action " +
                                 actionLabel(a.kind, a.stage, a.mb));
    }
  }
  for (int s = 0; s < numStages; ++s)
    for (int mb = 0; mb < m; ++mb)
      for (Kind k : {Kind::F, Kind::B, Kind::W})
        if ((k != Kind::W || split) && !computeId.count(key(k, s, mb)))
          return runtime::internal("schedule: missing action " + actionLabel(k, s, mb));
  auto id = [&](Kind k, int s, int mb) { return computeId.at(key(k, s, mb)); };
  auto dev = [&](int s) { return spec.device[static_cast<size_t>(s)]; };

  // Local dependencies.
  for (int s = 0; s < numStages; ++s) {
    for (int mb = 0; mb < m; ++mb) {
      if (s > 0 && dev(s - 1) == dev(s))
        g.task(id(Kind::F, s, mb)).deps.push_back({id(Kind::F, s - 1, mb), 0});
      g.task(id(Kind::B, s, mb)).deps.push_back({id(Kind::F, s, mb), 0});
      if (s + 1 < numStages && dev(s + 1) == dev(s))
        g.task(id(Kind::B, s, mb)).deps.push_back({id(Kind::B, s + 1, mb), 0});
      if (split)
        g.task(id(Kind::W, s, mb)).deps.push_back({id(Kind::B, s, mb), 0});
    }
  }

  // Offload: one job = a maximal run of one stage's forwards, or of its backwards (B and W).
  struct Job {
    int stage;
    bool backward;
    std::vector<int> tasks;
  };
  std::vector<std::vector<Job>> jobs(spec.ops.size());
  if (spec.offload) {
    for (size_t d = 0; d < spec.ops.size(); ++d) {
      for (const Action &a : spec.ops[d]) {
        bool back = a.kind != Kind::F;
        if (jobs[d].empty() || jobs[d].back().stage != a.stage || jobs[d].back().backward != back)
          jobs[d].push_back(Job{a.stage, back, {}});
        jobs[d].back().tasks.push_back(id(a.kind, a.stage, a.mb));
      }
      // Weight uploads into two slots: job k's upload waits for job k - 2 to end.
      for (size_t k = 0; k < jobs[d].size(); ++k) {
        const Job &job = jobs[d][k];
        LayerRange r = spec.stages[static_cast<size_t>(job.stage)];
        SimTask t;
        t.device = static_cast<int>(d);
        t.lane = Lane::WeightUpload;
        t.durationMs = costs.weightsMs(r);
        t.uplink = costs.h2dUplink();
        t.label = std::string(job.backward ? "B" : "F") + std::to_string(job.stage) + " weights";
        t.category = "weights";
        if (k >= 2)
          t.deps.push_back({jobs[d][k - 2].tasks.back(), 0});
        int up = g.add(std::move(t));
        g.task(job.tasks.front()).deps.push_back({up, 0});
      }
    }
  }

  // Phase 2: outgoing copies per GPU in compute order (+ gradient downloads after a backward
  // job when offloading).
  std::map<std::tuple<int, int, int>, int> d2hId;
  std::map<int, int> gradDownload; // stage -> task
  for (size_t d = 0; d < spec.ops.size(); ++d) {
    size_t jobIndex = 0, inJob = 0;
    for (const Action &a : spec.ops[d]) {
      int target = a.kind == Kind::F ? a.stage + 1 : a.kind == Kind::B ? a.stage - 1 : -1;
      if (target >= 0 && target < numStages && dev(target) != static_cast<int>(d)) {
        int boundary = a.kind == Kind::F ? spec.stages[static_cast<size_t>(a.stage)].end - 1
                                         : spec.stages[static_cast<size_t>(a.stage)].begin - 1;
        SimTask t;
        t.device = static_cast<int>(d);
        t.lane = Lane::Download;
        t.durationMs = costs.hopLegMs(std::max(boundary, 0));
        t.uplink = costs.d2hUplink();
        t.label = actionLabel(a.kind, a.stage, a.mb) + " out";
        t.category = "activations";
        t.deps.push_back({id(a.kind, a.stage, a.mb), 0});
        d2hId[key(a.kind, a.stage, a.mb)] = g.add(std::move(t));
      }
      if (spec.offload) {
        const Job &job = jobs[d][jobIndex];
        if (++inJob == job.tasks.size()) {
          if (job.backward) {
            SimTask t;
            t.device = static_cast<int>(d);
            t.lane = Lane::Download;
            t.durationMs = costs.gradsMs(spec.stages[static_cast<size_t>(job.stage)]);
            t.uplink = costs.d2hUplink();
            t.label = "B" + std::to_string(job.stage) + " grads";
            t.category = "gradients";
            t.deps.push_back({job.tasks.back(), 0});
            gradDownload[job.stage] = g.add(std::move(t));
          }
          ++jobIndex;
          inJob = 0;
        }
      }
    }
  }

  // Phase 3: incoming copies per GPU in compute order.
  for (size_t d = 0; d < spec.ops.size(); ++d) {
    for (const Action &a : spec.ops[d]) {
      int source = a.kind == Kind::F ? a.stage - 1 : a.kind == Kind::B ? a.stage + 1 : -1;
      if (source < 0 || source >= numStages || dev(source) == static_cast<int>(d))
        continue;
      Kind srcKind = a.kind;
      int boundary = a.kind == Kind::F ? spec.stages[static_cast<size_t>(a.stage)].begin - 1
                                       : spec.stages[static_cast<size_t>(a.stage)].end - 1;
      SimTask t;
      t.device = static_cast<int>(d);
      t.lane = Lane::ActivationUpload;
      t.durationMs = costs.hopLegMs(std::max(boundary, 0));
      t.uplink = costs.h2dUplink();
      t.label = actionLabel(a.kind, a.stage, a.mb) + " in";
      t.category = "activations";
      t.deps.push_back({d2hId.at(key(srcKind, source, a.mb)), 0});
      int up = g.add(std::move(t));
      g.task(id(a.kind, a.stage, a.mb)).deps.push_back({up, 0});
    }
  }

  // Host AdamW per layer, in the order the gradients arrive (last stage first).
  if (spec.offload && options.optimizerMsPerLayer > 0) {
    for (int s = numStages - 1; s >= 0; --s) {
      LayerRange r = spec.stages[static_cast<size_t>(s)];
      for (int l = r.end - 1; l >= r.begin; --l) {
        SimTask t;
        t.device = -1;
        t.lane = Lane::Host;
        t.durationMs = options.optimizerMsPerLayer;
        t.label = "adamw layer " + std::to_string(l);
        t.category = "optimizer";
        t.deps.push_back({gradDownload.at(s), 0});
        g.add(std::move(t));
      }
    }
  }
  return g;
}

/// 1F1B order of one GPU with one stage (PyTorch Schedule1F1B): min(M, N - r) forwards, then
/// backward, forward, ... and the remaining backwards.
std::vector<Action> oneFOneBOrder(int rank, int n, int m) {
  std::vector<Action> ops;
  int f = 0, b = 0;
  int warmup = std::min(m, n - rank);
  for (; f < warmup; ++f)
    ops.push_back({Kind::F, rank, f});
  while (b < m) {
    ops.push_back({Kind::B, rank, b++});
    if (f < m)
      ops.push_back({Kind::F, rank, f++});
  }
  return ops;
}

StaticSpec oneStagePerGpu(const Profile &profile, const CompareOptions &options) {
  StaticSpec spec;
  spec.stages = splitLayers(profile, options.gpus);
  for (int s = 0; s < options.gpus; ++s)
    spec.device.push_back(s);
  spec.ops.resize(static_cast<size_t>(options.gpus));
  return spec;
}

StaticSpec loopedStages(const Profile &profile, const CompareOptions &options, int &v) {
  v = options.chunks > 0 ? options.chunks : defaultChunks(profile, options.gpus);
  StaticSpec spec;
  spec.stages = splitLayers(profile, options.gpus * v);
  for (int s = 0; s < options.gpus * v; ++s)
    spec.device.push_back(s % options.gpus);
  spec.ops.resize(static_cast<size_t>(options.gpus));
  return spec;
}

StatusOr<BuiltSchedule> finish(const Profile &profile, const CompareOptions &options,
                               const StaticSpec &spec, std::string prefix) {
  RP_ASSIGN_OR_RETURN(TaskGraph g, buildStatic(profile, options, spec));
  BuiltSchedule out{std::move(g), {}};
  out.description = std::move(prefix) + std::to_string(spec.stages.size()) + " stages: " +
                    describeRanges(spec.stages, static_cast<int>(profile.layers.size()) - 1);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Layer split
//===----------------------------------------------------------------------===//

std::vector<int> layerUnits(const Profile &profile) {
  const int numLayers = static_cast<int>(profile.layers.size());
  std::vector<double> work(static_cast<size_t>(numLayers));
  for (int i = 0; i < numLayers; ++i) {
    const auto &l = profile.layers[static_cast<size_t>(i)];
    work[static_cast<size_t>(i)] =
        i == numLayers - 1 ? l.fwdMs + l.bwdMs : l.fwdMs + l.recomputeMs + l.bwdMs;
  }
  std::vector<double> body(work.begin(), work.end() - (numLayers > 0 ? 1 : 0));
  double median = 0;
  if (!body.empty()) {
    std::sort(body.begin(), body.end());
    size_t h = body.size() / 2;
    median = body.size() % 2 ? body[h] : (body[h - 1] + body[h]) / 2;
  }
  std::vector<int> units(static_cast<size_t>(numLayers), 1);
  if (median > 0)
    for (int i = 0; i < numLayers; ++i)
      units[static_cast<size_t>(i)] =
          static_cast<int>(std::lround(work[static_cast<size_t>(i)] / median));
  if (numLayers > 0)
    units.back() = std::max(units.back(), 1);
  return units;
}

std::vector<LayerRange> splitLayers(const Profile &profile, int numStages) {
  const int numLayers = static_cast<int>(profile.layers.size());
  std::vector<int> units = layerUnits(profile);
  long total = 0;
  for (int u : units)
    total += u;
  const long base = total / numStages, extra = total % numStages;
  auto target = [&](int k) { return base + (k >= numStages - extra ? 1 : 0); };
  std::vector<LayerRange> stages(static_cast<size_t>(numStages));
  int k = numStages - 1;
  long filled = 0;
  int end = numLayers;
  for (int i = numLayers - 1; i >= 0; --i) {
    int u = units[static_cast<size_t>(i)];
    if (filled > 0 && filled + u > target(k) && k > 0) {
      stages[static_cast<size_t>(k)] = {i + 1, end};
      end = i + 1;
      --k;
      filled = 0;
    }
    filled += u;
  }
  stages[static_cast<size_t>(k)] = {0, end};
  for (int j = k - 1; j >= 0; --j)
    stages[static_cast<size_t>(j)] = {0, 0};
  return stages;
}

int defaultChunks(const Profile &profile, int gpus) {
  long total = 0;
  for (int u : layerUnits(profile))
    total += u;
  return std::max<long>(1, total / std::max(gpus, 1));
}

//===----------------------------------------------------------------------===//
// Classic schedules
//===----------------------------------------------------------------------===//

StatusOr<BuiltSchedule> buildGpipe(const Profile &profile, const CompareOptions &options) {
  StaticSpec spec = oneStagePerGpu(profile, options);
  for (int r = 0; r < options.gpus; ++r) {
    for (int mb = 0; mb < options.microBatches; ++mb)
      spec.ops[static_cast<size_t>(r)].push_back({Kind::F, r, mb});
    for (int mb = 0; mb < options.microBatches; ++mb)
      spec.ops[static_cast<size_t>(r)].push_back({Kind::B, r, mb});
  }
  return finish(profile, options, spec, "");
}

StatusOr<BuiltSchedule> buildOneFOneB(const Profile &profile, const CompareOptions &options) {
  StaticSpec spec = oneStagePerGpu(profile, options);
  for (int r = 0; r < options.gpus; ++r)
    spec.ops[static_cast<size_t>(r)] = oneFOneBOrder(r, options.gpus, options.microBatches);
  return finish(profile, options, spec, "");
}

StatusOr<BuiltSchedule> buildZbH1(const Profile &profile, const CompareOptions &options) {
  StaticSpec spec = oneStagePerGpu(profile, options);
  spec.wFraction = options.zbWeightGradFraction;
  const int m = options.microBatches;
  for (int r = 0; r < options.gpus; ++r) {
    std::vector<Action> &ops = spec.ops[static_cast<size_t>(r)];
    int nextW = 0;
    for (const Action &a : oneFOneBOrder(r, options.gpus, m)) {
      ops.push_back(a);
      if (a.kind == Kind::B && a.mb - r >= 0)
        ops.push_back({Kind::W, r, nextW++});
    }
    while (nextW < m)
      ops.push_back({Kind::W, r, nextW++});
  }
  std::ostringstream prefix;
  prefix << "W = " << options.zbWeightGradFraction << " of backward; ";
  return finish(profile, options, spec, prefix.str());
}

/// Looped-BFS order: each GPU runs its chunks' forwards breadth-first (every micro-batch of
/// chunk k before chunk k + 1), then the backwards in reverse. `offload`: Mobius-like, the
/// weights of each stage uploaded from the host.
StatusOr<BuiltSchedule> buildLoopedOrder(const Profile &profile, const CompareOptions &options,
                                         bool offload) {
  int v = 0;
  StaticSpec spec = loopedStages(profile, options, v);
  spec.offload = offload;
  const int n = options.gpus, m = options.microBatches;
  for (int r = 0; r < n; ++r) {
    std::vector<Action> &ops = spec.ops[static_cast<size_t>(r)];
    for (int k = 0; k < v; ++k)
      for (int mb = 0; mb < m; ++mb)
        ops.push_back({Kind::F, k * n + r, mb});
    for (int k = v - 1; k >= 0; --k)
      for (int mb = m - 1; mb >= 0; --mb)
        ops.push_back({Kind::B, k * n + r, mb});
  }
  return finish(profile, options, spec,
                "v=" + std::to_string(v) + (offload ? ", offloaded, " : ", "));
}

StatusOr<BuiltSchedule> buildLoopedBfs(const Profile &profile, const CompareOptions &options) {
  return buildLoopedOrder(profile, options, /*offload=*/false);
}

StatusOr<BuiltSchedule> buildMobius(const Profile &profile, const CompareOptions &options) {
  return buildLoopedOrder(profile, options, /*offload=*/true);
}

StatusOr<BuiltSchedule> buildInterleaved(const Profile &profile, const CompareOptions &options) {
  int v = 0;
  StaticSpec spec = loopedStages(profile, options, v);
  const int n = options.gpus, m = options.microBatches;
  const int rounds = std::max(1, m / n);
  if (m % rounds != 0)
    return invalidArgument("interleaved-1f1b: the number of micro-batches (" +
                           std::to_string(m) + ") must be a multiple of the number of rounds (" +
                           std::to_string(rounds) + " = max(1, M / N)), as PyTorch requires");
  const int perRound = m / rounds;
  for (int r = 0; r < n; ++r) {
    const int total = m * v;
    const int warmup = std::min((v - 1) * perRound + 2 * (n - 1 - r), total);
    auto fwdStage = [&](int step) { return ((step / perRound) % v) * n + r; };
    auto bwdStage = [&](int step) {
      return (v - 1 - ((step - warmup) / perRound) % v) * n + r;
    };
    std::map<int, int> nextF, nextB;
    std::vector<Action> &ops = spec.ops[static_cast<size_t>(r)];
    for (int step = 0; step < total + warmup; ++step) {
      if (step < total) {
        int s = fwdStage(step);
        ops.push_back({Kind::F, s, nextF[s]++});
      }
      if (step >= warmup) {
        int s = bwdStage(step);
        ops.push_back({Kind::B, s, nextB[s]++});
      }
    }
  }
  return finish(profile, options, spec, "v=" + std::to_string(v) + ", ");
}

//===----------------------------------------------------------------------===//
// RoundPipe
//===----------------------------------------------------------------------===//

StatusOr<BuiltSchedule> buildRoundPipe(const Profile &profile, const CompareOptions &options,
                                       const std::vector<int> &forwardSizes,
                                       const std::vector<int> &backwardSizes,
                                       bool syncOptimizer) {
  const Costs costs(profile, options);
  const int numLayers = static_cast<int>(profile.layers.size());
  const int n = options.gpus, m = options.microBatches;
  // Stage ranges: forward ascending from 0; backward[0] = [t, L), then descending to 0.
  if (backwardSizes.empty() || backwardSizes[0] < 1)
    return invalidArgument("roundpipe: the fused tail stage must hold at least the tail layer");
  std::vector<LayerRange> fwd, bwd;
  int at = 0;
  for (int s : forwardSizes) {
    if (s < 1)
      return invalidArgument("roundpipe: forward stage sizes must be positive");
    fwd.push_back({at, at + s});
    at += s;
  }
  const int t = at;
  if (t + backwardSizes[0] != numLayers)
    return invalidArgument("roundpipe: forward stages cover " + std::to_string(t) +
                           " layers and the fused tail " + std::to_string(backwardSizes[0]) +
                           ", but the profile has " + std::to_string(numLayers));
  bwd.push_back({t, numLayers});
  int top = t;
  for (size_t j = 1; j < backwardSizes.size(); ++j) {
    if (backwardSizes[j] < 1)
      return invalidArgument("roundpipe: backward stage sizes must be positive");
    bwd.push_back({top - backwardSizes[j], top});
    top -= backwardSizes[j];
  }
  if (top != 0)
    return invalidArgument("roundpipe: backward stages cover " + std::to_string(t - top) +
                           " of the " + std::to_string(t) + " layers below the fused tail");
  const int f = static_cast<int>(fwd.size()), b = static_cast<int>(bwd.size());
  const int perRound = options.roundMicroBatches > 0 ? std::min(options.roundMicroBatches, m)
                                                     : std::min(m, n);

  TaskGraph g;
  // Per micro-batch: the forward tasks (for saved inputs) and the outgoing copy of the last
  // task of the chain (forward stage j, then backward stage j).
  std::vector<std::vector<int>> fTask(static_cast<size_t>(f), std::vector<int>(m, -1));
  std::vector<std::vector<int>> fOut(static_cast<size_t>(f), std::vector<int>(m, -1));
  std::vector<std::vector<int>> bTask(static_cast<size_t>(b), std::vector<int>(m, -1));
  std::vector<std::vector<int>> bOut(static_cast<size_t>(b), std::vector<int>(m, -1));
  std::vector<std::vector<int>> lastJobTasks(static_cast<size_t>(n)); // last compute of each job
  std::vector<std::vector<int>> gradDownloads(static_cast<size_t>(b));

  // Forward stage holding layer i (for a backward stage's saved input = output of layer i).
  auto forwardOf = [&](int i) {
    for (int j = 0; j < f; ++j)
      if (fwd[static_cast<size_t>(j)].begin <= i && i < fwd[static_cast<size_t>(j)].end)
        return j;
    return -1;
  };

  auto addCopy = [&](int device, Lane lane, double ms, int dep, std::string label) {
    SimTask c;
    c.device = device;
    c.lane = lane;
    c.durationMs = ms;
    c.uplink = lane == Lane::Download ? costs.d2hUplink() : costs.h2dUplink();
    c.label = std::move(label);
    c.category = "activations";
    c.deps.push_back({dep, 0});
    return g.add(std::move(c));
  };

  int g0 = 0;
  for (int r0 = 0; r0 < m; r0 += perRound) {
    const int r1 = std::min(r0 + perRound, m);
    for (int k = 0; k < f + b; ++k) {
      const bool isFwd = k < f;
      const int j = isFwd ? k : k - f;
      const LayerRange range = isFwd ? fwd[static_cast<size_t>(j)] : bwd[static_cast<size_t>(j)];
      const int device = (g0 + k) % n;
      const std::string stageName = (isFwd ? "F" : "B") + std::to_string(j);
      // Weights into the free slot: wait for the job two before on this GPU.
      SimTask w;
      w.device = device;
      w.lane = Lane::WeightUpload;
      w.durationMs = costs.weightsMs(range);
      w.uplink = costs.h2dUplink();
      w.label = stageName + " weights";
      w.category = "weights";
      std::vector<int> &jobsHere = lastJobTasks[static_cast<size_t>(device)];
      if (jobsHere.size() >= 2)
        w.deps.push_back({jobsHere[jobsHere.size() - 2], 0});
      const int weights = g.add(std::move(w));
      int last = -1;
      for (int mb = r0; mb < r1; ++mb) {
        SimTask c;
        c.device = device;
        c.lane = Lane::Compute;
        c.label = stageName + " mb" + std::to_string(mb);
        c.step = 0;
        if (mb == r0)
          c.deps.push_back({weights, 0});
        // Input of this task, from the previous task of the micro-batch's chain.
        int producer = -1, producerOut = -1, boundary = -1;
        if (isFwd && j > 0) {
          producer = fTask[static_cast<size_t>(j - 1)][static_cast<size_t>(mb)];
          producerOut = fOut[static_cast<size_t>(j - 1)][static_cast<size_t>(mb)];
          boundary = range.begin - 1;
        } else if (!isFwd && j == 0 && f > 0) {
          producer = fTask[static_cast<size_t>(f - 1)][static_cast<size_t>(mb)];
          producerOut = fOut[static_cast<size_t>(f - 1)][static_cast<size_t>(mb)];
          boundary = range.begin - 1;
        } else if (!isFwd && j > 0) {
          producer = bTask[static_cast<size_t>(j - 1)][static_cast<size_t>(mb)];
          producerOut = bOut[static_cast<size_t>(j - 1)][static_cast<size_t>(mb)];
          boundary = range.end - 1;
        }
        if (producer >= 0) {
          if (g.task(producer).device == device) {
            c.deps.push_back({producer, 0});
          } else {
            int in = addCopy(device, Lane::ActivationUpload, costs.hopLegMs(boundary),
                             producerOut, c.label + " in");
            c.deps.push_back({in, 0});
          }
        }
        if (isFwd) {
          c.durationMs = costs.fwd(range);
          c.category = "forward";
        } else if (j == 0) {
          c.durationMs = costs.fwd(range) + costs.bwd(range);
          c.category = "fused";
        } else {
          // Recomputation as the lead: it needs only the saved stage input (the output of
          // layer begin - 1, saved to the host by the forward stage holding it).
          c.leadMs = costs.recompute(range);
          c.durationMs = c.leadMs + costs.bwd(range);
          c.category = "backward";
          c.leadLabel = "R" + std::to_string(j) + " mb" + std::to_string(mb);
          c.leadCategory = "recompute";
          int saver = forwardOf(range.begin - 1);
          if (saver >= 0)
            c.leadDeps.push_back({fTask[static_cast<size_t>(saver)][static_cast<size_t>(mb)],
                                  2 * costs.hopLegMs(range.begin - 1)});
        }
        const std::string label = c.label;
        const int task = g.add(std::move(c));
        last = task;
        // Output towards the next task of the chain (a forward output, or an input gradient).
        bool hasConsumer = isFwd ? true : (j + 1 < b);
        int out = -1;
        if (hasConsumer) {
          int outBoundary = isFwd ? range.end - 1 : range.begin - 1;
          out = addCopy(device, Lane::Download, costs.hopLegMs(std::max(outBoundary, 0)), task,
                        label + " out");
        }
        (isFwd ? fTask : bTask)[static_cast<size_t>(j)][static_cast<size_t>(mb)] = task;
        (isFwd ? fOut : bOut)[static_cast<size_t>(j)][static_cast<size_t>(mb)] = out;
      }
      jobsHere.push_back(last);
      if (!isFwd) {
        SimTask gd;
        gd.device = device;
        gd.lane = Lane::Download;
        gd.durationMs = costs.gradsMs(range);
        gd.uplink = costs.d2hUplink();
        gd.label = stageName + " grads";
        gd.category = "gradients";
        gd.deps.push_back({last, 0});
        gradDownloads[static_cast<size_t>(j)].push_back(g.add(std::move(gd)));
      }
    }
    if (r1 < m) {
      // The next round starts on the GPU whose compute queue frees first (ties: lowest).
      RP_ASSIGN_OR_RETURN(SimResult partial, simulate(g, n, "roundpipe"));
      std::vector<double> free(static_cast<size_t>(n), 0.0);
      for (int id = 0; id < g.size(); ++id)
        if (g.task(id).lane == Lane::Compute)
          free[static_cast<size_t>(g.task(id).device)] =
              std::max(free[static_cast<size_t>(g.task(id).device)],
                       partial.endMs[static_cast<size_t>(id)]);
      g0 = static_cast<int>(std::min_element(free.begin(), free.end()) - free.begin());
    }
  }

  // Synchronous AdamW on the host, per layer once all of its gradients are there, in dispatch
  // order of the backward stages (the order gradients arrive), top layer first.
  if (syncOptimizer && options.optimizerMsPerLayer > 0) {
    for (int j = 0; j < b; ++j) {
      LayerRange r = bwd[static_cast<size_t>(j)];
      for (int l = r.end - 1; l >= r.begin; --l) {
        SimTask t;
        t.device = -1;
        t.lane = Lane::Host;
        t.durationMs = options.optimizerMsPerLayer;
        t.label = "adamw layer " + std::to_string(l);
        t.category = "optimizer";
        for (int gd : gradDownloads[static_cast<size_t>(j)])
          t.deps.push_back({gd, 0});
        g.add(std::move(t));
      }
    }
  }

  BuiltSchedule out{std::move(g), {}};
  std::vector<std::string> fs, bs;
  for (int s : forwardSizes)
    fs.push_back(std::to_string(s));
  bs.push_back(std::to_string(backwardSizes[0] - 1) + "+tail");
  for (size_t j = 1; j < backwardSizes.size(); ++j)
    bs.push_back(std::to_string(backwardSizes[j]));
  out.description = "S=" + std::to_string(f + b) + ": forward " + join(fs, ",") +
                    " | backward " + join(bs, ",") + "; rounds of " +
                    std::to_string(perRound) + " micro-batches";
  return out;
}

} // namespace rp::sim
