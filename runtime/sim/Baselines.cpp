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
using base::invalidArgument;
using base::Status;
using base::StatusOr;

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

  const partition::LayerProfile &layer(int i) const {
    return profile_.layers[static_cast<size_t>(i)];
  }

private:
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

/// A transfer of `ms` on (device, lane), over the shared uplink of its direction, after task
/// `dep` (-1: none).
SimTask copyTask(const Costs &costs, int device, Lane lane, double ms, std::string label,
                 const char *category, int dep) {
  SimTask t;
  t.device = device;
  t.lane = lane;
  t.durationMs = ms;
  t.uplink = lane == Lane::Download ? costs.d2hUplink() : costs.h2dUplink();
  t.label = std::move(label);
  t.category = category;
  if (dep >= 0)
    t.deps.push_back({dep, 0});
  return t;
}

/// Host AdamW of layer `layer` (its dependencies are the caller's).
SimTask adamwTask(int layer, double ms) {
  SimTask t;
  t.device = -1;
  t.lane = Lane::Host;
  t.durationMs = ms;
  t.label = "adamw layer " + std::to_string(layer);
  t.category = "optimizer";
  return t;
}

/// The task graph of a statically bound schedule, built in the phases of the file comment
/// (tasks get their ids in that order).
class StaticBuilder {
public:
  StaticBuilder(const Profile &profile, const CompareOptions &options, const StaticSpec &spec)
      : costs_(profile, options), options_(options), spec_(spec),
        numStages_(static_cast<int>(spec.stages.size())), jobs_(spec.ops.size()) {}

  StatusOr<TaskGraph> build() {
    RP_RETURN_IF_ERROR(addComputeTasks());
    addLocalDeps();
    if (spec_.offload)
      for (size_t d = 0; d < spec_.ops.size(); ++d)
        addWeightUploads(d);
    for (size_t d = 0; d < spec_.ops.size(); ++d)
      addOutgoingCopies(d);
    for (size_t d = 0; d < spec_.ops.size(); ++d)
      addIncomingCopies(d);
    if (spec_.offload && options_.optimizerMsPerLayer > 0)
      addHostAdamW();
    return std::move(g_);
  }

private:
  using Key = std::tuple<int, int, int>; // (kind, stage, mb)
  /// Offload: one job = a maximal run of one stage's forwards, or of its backwards (B and W).
  struct Job {
    int stage;
    bool backward;
    std::vector<int> tasks;
  };

  static Key key(Kind k, int s, int mb) { return std::make_tuple(static_cast<int>(k), s, mb); }
  int id(Kind k, int s, int mb) const { return computeId_.at(key(k, s, mb)); }
  int dev(int s) const { return spec_.device[static_cast<size_t>(s)]; }
  const LayerRange &range(int s) const { return spec_.stages[static_cast<size_t>(s)]; }

  /// Phase 1: the compute tasks, per GPU in order; every action exactly once.
  Status addComputeTasks() {
    for (size_t d = 0; d < spec_.ops.size(); ++d)
      for (const Action &a : spec_.ops[d]) {
        if (a.stage < 0 || a.stage >= numStages_ || dev(a.stage) != static_cast<int>(d))
          return base::internal("schedule: action " + actionLabel(a.kind, a.stage, a.mb) +
                                   " placed on GPU " + std::to_string(d));
        if (!computeId_.emplace(key(a.kind, a.stage, a.mb), g_.add(computeTask(d, a))).second)
          return base::internal("schedule: duplicate action " +
                                   actionLabel(a.kind, a.stage, a.mb));
      }
    const bool split = spec_.wFraction > 0;
    for (int s = 0; s < numStages_; ++s)
      for (int mb = 0; mb < options_.microBatches; ++mb)
        for (Kind k : {Kind::F, Kind::B, Kind::W})
          if ((k != Kind::W || split) && !computeId_.count(key(k, s, mb)))
            return base::internal("schedule: missing action " + actionLabel(k, s, mb));
    return Status();
  }

  SimTask computeTask(size_t d, const Action &a) const {
    const LayerRange r = range(a.stage);
    SimTask t;
    t.device = static_cast<int>(d);
    t.lane = Lane::Compute;
    t.label = actionLabel(a.kind, a.stage, a.mb);
    if (a.kind == Kind::F) {
      t.durationMs = costs_.fwd(r);
      t.category = "forward";
    } else if (a.kind == Kind::B) {
      t.durationMs = costs_.recompute(r) + (1 - spec_.wFraction) * costs_.bwd(r);
      t.category = "backward";
    } else {
      t.durationMs = spec_.wFraction * costs_.bwd(r);
      t.category = "weight-grad";
    }
    return t;
  }

  /// Hand-offs between stages on the same GPU, and B after F (W after B).
  void addLocalDeps() {
    for (int s = 0; s < numStages_; ++s) {
      for (int mb = 0; mb < options_.microBatches; ++mb) {
        if (s > 0 && dev(s - 1) == dev(s))
          g_.task(id(Kind::F, s, mb)).deps.push_back({id(Kind::F, s - 1, mb), 0});
        g_.task(id(Kind::B, s, mb)).deps.push_back({id(Kind::F, s, mb), 0});
        if (s + 1 < numStages_ && dev(s + 1) == dev(s))
          g_.task(id(Kind::B, s, mb)).deps.push_back({id(Kind::B, s + 1, mb), 0});
        if (spec_.wFraction > 0)
          g_.task(id(Kind::W, s, mb)).deps.push_back({id(Kind::B, s, mb), 0});
      }
    }
  }

  /// Offload: GPU d's jobs, and their weight uploads into two slots (job k's upload waits for
  /// job k - 2 to end).
  void addWeightUploads(size_t d) {
    std::vector<Job> &jobs = jobs_[d];
    for (const Action &a : spec_.ops[d]) {
      bool back = a.kind != Kind::F;
      if (jobs.empty() || jobs.back().stage != a.stage || jobs.back().backward != back)
        jobs.push_back(Job{a.stage, back, {}});
      jobs.back().tasks.push_back(id(a.kind, a.stage, a.mb));
    }
    for (size_t k = 0; k < jobs.size(); ++k) {
      const Job &job = jobs[k];
      int up = g_.add(copyTask(
          costs_, static_cast<int>(d), Lane::WeightUpload, costs_.weightsMs(range(job.stage)),
          std::string(job.backward ? "B" : "F") + std::to_string(job.stage) + " weights", "weights",
          k >= 2 ? jobs[k - 2].tasks.back() : -1));
      g_.task(job.tasks.front()).deps.push_back({up, 0});
    }
  }

  /// Phase 2: GPU d's outgoing copies in compute order (+ gradient downloads after a backward
  /// job when offloading).
  void addOutgoingCopies(size_t d) {
    size_t jobIndex = 0, inJob = 0;
    for (const Action &a : spec_.ops[d]) {
      int target = a.kind == Kind::F ? a.stage + 1 : a.kind == Kind::B ? a.stage - 1 : -1;
      if (target >= 0 && target < numStages_ && dev(target) != static_cast<int>(d)) {
        int boundary = a.kind == Kind::F ? range(a.stage).end - 1 : range(a.stage).begin - 1;
        d2hId_[key(a.kind, a.stage, a.mb)] = g_.add(copyTask(
            costs_, static_cast<int>(d), Lane::Download, costs_.hopLegMs(std::max(boundary, 0)),
            actionLabel(a.kind, a.stage, a.mb) + " out", "activations", id(a.kind, a.stage, a.mb)));
      }
      if (!spec_.offload)
        continue;
      const Job &job = jobs_[d][jobIndex];
      if (++inJob < job.tasks.size())
        continue;
      if (job.backward)
        gradDownload_[job.stage] = g_.add(
            copyTask(costs_, static_cast<int>(d), Lane::Download, costs_.gradsMs(range(job.stage)),
                     "B" + std::to_string(job.stage) + " grads", "gradients", job.tasks.back()));
      ++jobIndex;
      inJob = 0;
    }
  }

  /// Phase 3: GPU d's incoming copies in compute order.
  void addIncomingCopies(size_t d) {
    for (const Action &a : spec_.ops[d]) {
      int source = a.kind == Kind::F ? a.stage - 1 : a.kind == Kind::B ? a.stage + 1 : -1;
      if (source < 0 || source >= numStages_ || dev(source) == static_cast<int>(d))
        continue;
      int boundary = a.kind == Kind::F ? range(a.stage).begin - 1 : range(a.stage).end - 1;
      int up = g_.add(copyTask(costs_, static_cast<int>(d), Lane::ActivationUpload,
                               costs_.hopLegMs(std::max(boundary, 0)),
                               actionLabel(a.kind, a.stage, a.mb) + " in", "activations",
                               d2hId_.at(key(a.kind, source, a.mb))));
      g_.task(id(a.kind, a.stage, a.mb)).deps.push_back({up, 0});
    }
  }

  /// Host AdamW per layer, in the order the gradients arrive (last stage first).
  void addHostAdamW() {
    for (int s = numStages_ - 1; s >= 0; --s)
      for (int l = range(s).end - 1; l >= range(s).begin; --l) {
        SimTask t = adamwTask(l, options_.optimizerMsPerLayer);
        t.deps.push_back({gradDownload_.at(s), 0});
        g_.add(std::move(t));
      }
  }

  const Costs costs_;
  const CompareOptions &options_;
  const StaticSpec &spec_;
  const int numStages_;
  TaskGraph g_;
  std::map<Key, int> computeId_;       // compute task of (kind, stage, mb)
  std::map<Key, int> d2hId_;           // its outgoing copy
  std::map<int, int> gradDownload_;    // stage -> its gradient download (offload)
  std::vector<std::vector<Job>> jobs_; // per GPU (offload)
};

StatusOr<TaskGraph> buildStatic(const Profile &profile, const CompareOptions &options,
                                const StaticSpec &spec) {
  return StaticBuilder(profile, options, spec).build();
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

namespace {

/// RoundPipe's stage ranges: forward ascending from layer 0; backward[0] = [t, L) (the fused
/// tail), then descending to layer 0.
struct RoundPipeStages {
  std::vector<LayerRange> fwd, bwd;
};

StatusOr<RoundPipeStages> roundPipeStages(int numLayers, const std::vector<int> &forwardSizes,
                                          const std::vector<int> &backwardSizes) {
  if (backwardSizes.empty() || backwardSizes[0] < 1)
    return invalidArgument("roundpipe: the fused tail stage must hold at least the tail layer");
  RoundPipeStages stages;
  int at = 0;
  for (int s : forwardSizes) {
    if (s < 1)
      return invalidArgument("roundpipe: forward stage sizes must be positive");
    stages.fwd.push_back({at, at + s});
    at += s;
  }
  const int t = at;
  if (t + backwardSizes[0] != numLayers)
    return invalidArgument("roundpipe: forward stages cover " + std::to_string(t) +
                           " layers and the fused tail " + std::to_string(backwardSizes[0]) +
                           ", but the profile has " + std::to_string(numLayers));
  stages.bwd.push_back({t, numLayers});
  int top = t;
  for (size_t j = 1; j < backwardSizes.size(); ++j) {
    if (backwardSizes[j] < 1)
      return invalidArgument("roundpipe: backward stage sizes must be positive");
    stages.bwd.push_back({top - backwardSizes[j], top});
    top -= backwardSizes[j];
  }
  if (top != 0)
    return invalidArgument("roundpipe: backward stages cover " + std::to_string(t - top) +
                           " of the " + std::to_string(t) + " layers below the fused tail");
  return stages;
}

/// "S=5: forward 2,2 | backward 0+tail,2,2; rounds of 4 micro-batches".
std::string describeRoundPipe(const std::vector<int> &forwardSizes,
                              const std::vector<int> &backwardSizes, int perRound) {
  std::vector<std::string> fs, bs;
  for (int s : forwardSizes)
    fs.push_back(std::to_string(s));
  bs.push_back(std::to_string(backwardSizes[0] - 1) + "+tail");
  for (size_t j = 1; j < backwardSizes.size(); ++j)
    bs.push_back(std::to_string(backwardSizes[j]));
  return "S=" + std::to_string(forwardSizes.size() + backwardSizes.size()) + ": forward " +
         join(fs, ",") + " | backward " + join(bs, ",") + "; rounds of " +
         std::to_string(perRound) + " micro-batches";
}

/// The task graph of RoundPipe, built round by round: in each round, every stage's job in
/// dispatch order (forward stages, then backward stages), each job its weight upload, per
/// micro-batch its input copy, compute task and output copy, then (backward) its gradient
/// download; finally the host optimizer.
class RoundPipeBuilder {
public:
  RoundPipeBuilder(const Profile &profile, const CompareOptions &options, RoundPipeStages stages)
      : costs_(profile, options), options_(options), fwd_(std::move(stages.fwd)),
        bwd_(std::move(stages.bwd)), f_(static_cast<int>(fwd_.size())),
        b_(static_cast<int>(bwd_.size())), n_(options.gpus), m_(options.microBatches),
        fTask_(static_cast<size_t>(f_), std::vector<int>(m_, -1)),
        fOut_(static_cast<size_t>(f_), std::vector<int>(m_, -1)),
        bTask_(static_cast<size_t>(b_), std::vector<int>(m_, -1)),
        bOut_(static_cast<size_t>(b_), std::vector<int>(m_, -1)),
        lastJobTasks_(static_cast<size_t>(n_)), gradDownloads_(static_cast<size_t>(b_)) {}

  StatusOr<TaskGraph> build(int perRound, bool syncOptimizer) {
    int g0 = 0;
    for (int r0 = 0; r0 < m_; r0 += perRound) {
      const int r1 = std::min(r0 + perRound, m_);
      for (int k = 0; k < f_ + b_; ++k)
        addJob(jobAt(k, g0), r0, r1);
      if (r1 < m_) {
        RP_ASSIGN_OR_RETURN(g0, firstFreeGpu());
      }
    }
    if (syncOptimizer && (options_.optimizerMsPerLayer > 0 || options_.nodes.active()))
      addOptimizer();
    return std::move(g_);
  }

private:
  /// Job k of a round whose first GPU is g0: stage F_k (k < f) or B_{k - f}.
  struct Job {
    bool isFwd;
    int j; // F_j or B_j
    LayerRange range;
    int device;
    std::string stageName;
  };

  Job jobAt(int k, int g0) const {
    const bool isFwd = k < f_;
    const int j = isFwd ? k : k - f_;
    const LayerRange range = isFwd ? fwd_[static_cast<size_t>(j)] : bwd_[static_cast<size_t>(j)];
    return Job{isFwd, j, range, (g0 + k) % n_, (isFwd ? "F" : "B") + std::to_string(j)};
  }

  /// The job's weight upload, its compute tasks for micro-batches [r0, r1), its gradients.
  void addJob(const Job &job, int r0, int r1) {
    // Weights into the free slot: wait for the job two before on this GPU.
    std::vector<int> &jobsHere = lastJobTasks_[static_cast<size_t>(job.device)];
    const int weights = g_.add(copyTask(costs_, job.device, Lane::WeightUpload,
                                        costs_.weightsMs(job.range), job.stageName + " weights",
                                        "weights", jobsHere.size() >= 2 ? jobsHere.end()[-2] : -1));
    int last = -1;
    for (int mb = r0; mb < r1; ++mb)
      last = addMicroBatch(job, mb, mb == r0 ? weights : -1);
    jobsHere.push_back(last);
    if (!job.isFwd)
      gradDownloads_[static_cast<size_t>(job.j)].push_back(
          g_.add(copyTask(costs_, job.device, Lane::Download, costs_.gradsMs(job.range),
                          job.stageName + " grads", "gradients", last)));
  }

  /// Micro-batch mb's compute task of the job (after `weights` unless -1), with its input and
  /// output copies; returns the compute task.
  int addMicroBatch(const Job &job, int mb, int weights) {
    SimTask c;
    c.device = job.device;
    c.lane = Lane::Compute;
    c.label = job.stageName + " mb" + std::to_string(mb);
    c.step = 0;
    if (weights >= 0)
      c.deps.push_back({weights, 0});
    addInput(job, mb, c);
    setWork(job, mb, c);
    const std::string label = c.label;
    const int task = g_.add(std::move(c));
    // Output towards the next task of the chain (a forward output, or an input gradient).
    int out = -1;
    if (job.isFwd || job.j + 1 < b_) {
      int outBoundary = job.isFwd ? job.range.end - 1 : job.range.begin - 1;
      out = g_.add(copyTask(costs_, job.device, Lane::Download,
                            costs_.hopLegMs(std::max(outBoundary, 0)), label + " out",
                            "activations", task));
    }
    const size_t j = static_cast<size_t>(job.j), m = static_cast<size_t>(mb);
    (job.isFwd ? fTask_ : bTask_)[j][m] = task;
    (job.isFwd ? fOut_ : bOut_)[j][m] = out;
    return task;
  }

  /// c's input, from the previous task of the micro-batch's chain: a dependency on it on the
  /// same GPU, else on an upload (added now) of its outgoing copy.
  void addInput(const Job &job, int mb, SimTask &c) {
    const size_t m = static_cast<size_t>(mb);
    int producer = -1, producerOut = -1, boundary = -1;
    if (job.isFwd && job.j > 0) {
      producer = fTask_[static_cast<size_t>(job.j - 1)][m];
      producerOut = fOut_[static_cast<size_t>(job.j - 1)][m];
      boundary = job.range.begin - 1;
    } else if (!job.isFwd && job.j == 0 && f_ > 0) {
      producer = fTask_[static_cast<size_t>(f_ - 1)][m];
      producerOut = fOut_[static_cast<size_t>(f_ - 1)][m];
      boundary = job.range.begin - 1;
    } else if (!job.isFwd && job.j > 0) {
      producer = bTask_[static_cast<size_t>(job.j - 1)][m];
      producerOut = bOut_[static_cast<size_t>(job.j - 1)][m];
      boundary = job.range.end - 1;
    }
    if (producer < 0)
      return;
    if (g_.task(producer).device == job.device) {
      c.deps.push_back({producer, 0});
      return;
    }
    int in = g_.add(copyTask(costs_, job.device, Lane::ActivationUpload, costs_.hopLegMs(boundary),
                             c.label + " in", "activations", producerOut));
    c.deps.push_back({in, 0});
  }

  /// c's duration and category; a backward stage's recomputation is its lead.
  void setWork(const Job &job, int mb, SimTask &c) const {
    if (job.isFwd) {
      c.durationMs = costs_.fwd(job.range);
      c.category = "forward";
      return;
    }
    if (job.j == 0) {
      c.durationMs = costs_.fwd(job.range) + costs_.bwd(job.range);
      c.category = "fused";
      return;
    }
    // Recomputation as the lead: it needs only the saved stage input (the output of
    // layer begin - 1, saved to the host by the forward stage holding it).
    c.leadMs = costs_.recompute(job.range);
    c.durationMs = c.leadMs + costs_.bwd(job.range);
    c.category = "backward";
    c.leadLabel = "R" + std::to_string(job.j) + " mb" + std::to_string(mb);
    c.leadCategory = "recompute";
    int saver = forwardOf(job.range.begin - 1);
    if (saver >= 0)
      c.leadDeps.push_back({fTask_[static_cast<size_t>(saver)][static_cast<size_t>(mb)],
                            2 * costs_.hopLegMs(job.range.begin - 1)});
  }

  /// Forward stage holding layer i (for a backward stage's saved input = output of layer i).
  int forwardOf(int i) const {
    for (int j = 0; j < f_; ++j)
      if (fwd_[static_cast<size_t>(j)].begin <= i && i < fwd_[static_cast<size_t>(j)].end)
        return j;
    return -1;
  }

  /// The next round starts on the GPU whose compute queue frees first (ties: lowest).
  StatusOr<int> firstFreeGpu() const {
    RP_ASSIGN_OR_RETURN(SimResult partial, simulate(g_, n_, "roundpipe"));
    std::vector<double> free(static_cast<size_t>(n_), 0.0);
    for (int id = 0; id < g_.size(); ++id)
      if (g_.task(id).lane == Lane::Compute)
        free[static_cast<size_t>(g_.task(id).device)] = std::max(
            free[static_cast<size_t>(g_.task(id).device)], partial.endMs[static_cast<size_t>(id)]);
    return static_cast<int>(std::min_element(free.begin(), free.end()) - free.begin());
  }

  /// Synchronous AdamW on the host, per layer once all of its gradients are there, in dispatch
  /// order of the backward stages (the order gradients arrive), top layer first. With R > 1
  /// nodes, each trainable layer's gradient is first reduced over the node link (one serial
  /// queue, the same layer order; runtime/sim/NodeModel.h) and its AdamW waits for that.
  void addOptimizer() {
    int previousAdamW = -1;
    for (int j = 0; j < b_; ++j) {
      LayerRange r = bwd_[static_cast<size_t>(j)];
      for (int l = r.end - 1; l >= r.begin; --l) {
        std::vector<Dep> ready;
        for (int gd : gradDownloads_[static_cast<size_t>(j)])
          ready.push_back({gd, 0});
        // On the optimizer thread (--node-reduce-on-optimizer) a reduction also waits for the
        // previous layer's AdamW; on a thread of its own (rp-run's way) it does not.
        std::vector<Dep> reduceAfter = ready;
        if (!options_.nodes.commThread && previousAdamW >= 0)
          reduceAfter.push_back({previousAdamW, 0});
        const int reduce = addReduction(l, reduceAfter);
        if (reduce >= 0)
          ready = {{reduce, 0}};
        if (options_.optimizerMsPerLayer <= 0)
          continue;
        SimTask t = adamwTask(l, options_.optimizerMsPerLayer);
        t.deps = std::move(ready);
        previousAdamW = g_.add(std::move(t));
      }
    }
  }

  /// The node-link reduction of layer l's fp32 gradient (2 x the profile's 16-bit
  /// trainable_bytes) after `ready`; -1 when there is none (one node, or a frozen layer).
  int addReduction(int l, const std::vector<Dep> &ready) {
    const double bytes = 2.0 * static_cast<double>(costs_.layer(l).trainableBytes);
    if (!options_.nodes.active() || bytes <= 0)
      return -1;
    SimTask t;
    t.device = -1;
    t.lane = Lane::NodeLink;
    t.durationMs = reductionMs(options_.nodes, bytes);
    t.deps = ready;
    t.label = "reduce layer " + std::to_string(l);
    t.category = "reduction";
    return g_.add(std::move(t));
  }

  const Costs costs_;
  const CompareOptions &options_;
  const std::vector<LayerRange> fwd_, bwd_;
  const int f_, b_, n_, m_;
  TaskGraph g_;
  // Per stage and micro-batch: the compute task (forward ones: for saved inputs too) and the
  // outgoing copy of the last task of the chain (forward stage j, then backward stage j).
  std::vector<std::vector<int>> fTask_, fOut_, bTask_, bOut_;
  std::vector<std::vector<int>> lastJobTasks_;  // per GPU: last compute task of each job
  std::vector<std::vector<int>> gradDownloads_; // per backward stage
};

} // namespace

StatusOr<BuiltSchedule> buildRoundPipe(const Profile &profile, const CompareOptions &options,
                                       const std::vector<int> &forwardSizes,
                                       const std::vector<int> &backwardSizes, bool syncOptimizer) {
  RP_ASSIGN_OR_RETURN(
      RoundPipeStages stages,
      roundPipeStages(static_cast<int>(profile.layers.size()), forwardSizes, backwardSizes));
  const int m = options.microBatches;
  const int perRound = options.roundMicroBatches > 0 ? std::min(options.roundMicroBatches, m)
                                                     : std::min(m, options.gpus);
  RP_ASSIGN_OR_RETURN(
      TaskGraph g,
      RoundPipeBuilder(profile, options, std::move(stages)).build(perRound, syncOptimizer));
  BuiltSchedule out{std::move(g), {}};
  out.description = describeRoundPipe(forwardSizes, backwardSizes, perRound);
  return out;
}

} // namespace rp::sim
