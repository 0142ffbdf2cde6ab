//===- Simulate.cpp - rp-run simulate ------------------------------------===//

#include "runtime/sim/Simulate.h"

#include "base/FormatBytes.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"
#include "runtime/partition/Profile.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanInputs.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/sim/Compare.h"
#include "runtime/sim/NodeModel.h"
#include "runtime/sim/Roofline.h"
#include "runtime/sim/SimBackend.h"
#include "runtime/sim/Timeline.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace rp::runtime {

namespace pb = rp::plan;
namespace part = rp::partition;
namespace sim = rp::sim;

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

/// Milliseconds with 3 significant decimals at least ("0.00123 ms", "12.346 ms").
std::string ms(double v) {
  char buf[64];
  if (v != 0 && std::fabs(v) < 0.1)
    std::snprintf(buf, sizeof(buf), "%.3g ms", v);
  else
    std::snprintf(buf, sizeof(buf), "%.3f ms", v);
  return buf;
}

/// A target file (JSON) when `spec` names an existing file or ends in .json, else the flag form.
StatusOr<part::TargetSpec> resolveTarget(const std::string &spec) {
  if (spec.empty())
    return defaultSimTarget();
  std::error_code ec;
  if (std::filesystem::exists(spec, ec) ||
      (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".json") == 0))
    return part::loadTarget(spec);
  return part::parseTargetFlag(spec);
}

/// The spans of `t` clipped to [begin, end], shifted to start at 0 (for window statistics).
sim::Timeline window(const sim::Timeline &t, double begin, double end) {
  sim::Timeline out;
  out.schedule = t.schedule;
  out.numDevices = t.numDevices;
  for (const sim::Span &s : t.spans) {
    const double a = std::max(s.startMs, begin), b = std::min(s.endMs, end);
    if (b <= a)
      continue;
    sim::Span c = s;
    c.startMs = a - begin;
    c.endMs = b - begin;
    c.step = 0;
    out.spans.push_back(std::move(c));
  }
  // A zero-length marker at the window's end so that the makespan is the window.
  if (end > begin) {
    sim::Span marker;
    marker.device = 0;
    marker.lane = sim::Lane::Compute;
    marker.startMs = marker.endMs = end - begin;
    marker.category = "marker";
    out.spans.push_back(marker);
  }
  return out;
}

/// Per-device busy/idle and the totals of `stats`, as a table.
void printStats(std::FILE *out, const sim::TimelineStats &stats, const char *what) {
  std::fprintf(out, "%-8s %14s %14s %8s %22s\n", "device", "busy", "idle", "busy %",
               "exposed transfer");
  for (size_t d = 0; d < stats.devices.size(); ++d) {
    const sim::DeviceStats &s = stats.devices[d];
    const double span = s.computeBusyMs + s.computeIdleMs;
    std::fprintf(out, "%-8s %14s %14s %8s %22s\n", ("gpu" + std::to_string(d)).c_str(),
                 ms(s.computeBusyMs).c_str(), ms(s.computeIdleMs).c_str(),
                 fixed(span > 0 ? 100.0 * s.computeBusyMs / span : 0, 1).c_str(),
                 ms(s.exposedTransferMs).c_str());
  }
  std::fprintf(out, "rp-run: %s: bubble %s%%, exposed transfer %s%%\n", what,
               fixed(stats.bubblePercent, 1).c_str(), fixed(stats.exposedTransferPercent, 1).c_str());
}

Status writeOutputs(const sim::Timeline &timeline, const SimulateOptions &o, std::FILE *out) {
  if (!o.tracePath.empty()) {
    RP_RETURN_IF_ERROR(sim::writeChromeTrace(timeline, o.tracePath));
    std::fprintf(out, "rp-run: trace: %s (open in https://ui.perfetto.dev)\n", o.tracePath.c_str());
  }
  if (!o.ganttPath.empty()) {
    RP_RETURN_IF_ERROR(sim::writeSvgGantt(timeline, o.ganttPath));
    std::fprintf(out, "rp-run: gantt: %s\n", o.ganttPath.c_str());
  }
  return okStatus();
}

/// The unit the report and the messages give the node link's bandwidth in
/// (SimulateOptions::nodeLinkInGigabits).
struct NodeLinkUnit {
  double perGBps;          ///< 1 GB/s in this unit: 1 (GB/s) or 8 (Gb/s).
  const char *name;        ///< "GB/s" or "Gb/s".
  const char *placeholder; ///< The flag's value in messages.
  const char *examples;    ///< Typical NIC ratings in this unit.
};

NodeLinkUnit nodeLinkUnit(const SimulateOptions &o) {
  if (o.nodeLinkInGigabits)
    return {8, "Gb/s", "G", "25 or 100"};
  return {1, "GB/s", "B", "3.125 or 12.5"};
}

/// The node link's bandwidth as given, with its unit ("3.125 GB/s", "25 Gb/s").
std::string nodeLinkText(const SimulateOptions &o) {
  const NodeLinkUnit unit = nodeLinkUnit(o);
  return formatNumber(o.nodeLinkGbps.value_or(0) * unit.perGBps) + " " + unit.name;
}

/// --node-link-gbps in the unit it was given in: a finite number >= 0, and > 0 for R > 1 nodes.
Status checkNodeLinkBandwidth(const SimulateOptions &o, int nodes) {
  const NodeLinkUnit unit = nodeLinkUnit(o);
  const double given = o.nodeLinkGbps.value_or(0) * unit.perGBps;
  if (!std::isfinite(given) || given < 0)
    return invalidArgument(std::string("--node-link-gbps must be a positive number of ") +
                           unit.name + " (got " + formatNumber(given) + ")");
  if (nodes > 1 && !(given > 0))
    return invalidArgument("--nodes " + std::to_string(nodes) + " needs --node-link-gbps " +
                           unit.placeholder + ", the node link's bandwidth in " + unit.name +
                           " per direction (e.g. " + unit.examples + ")");
  return okStatus();
}

/// The node model of the options (NodeModel.h), validated. Without --nodes the other node
/// flags are refused (they would silently do nothing).
StatusOr<sim::NodeLink> nodeLinkOf(const SimulateOptions &o) {
  sim::NodeLink link;
  if (!o.nodes) {
    const char *given = o.nodeLinkGbps        ? "--node-link-gbps"
                        : o.nodeLinkLatencyUs ? "--node-link-latency-us"
                        : !o.nodeReduction.empty() ? "--node-reduction"
                        : o.nodeReduceOnOptimizer  ? "--node-reduce-on-optimizer"
                                                   : nullptr;
    if (given)
      return invalidArgument(std::string(given) +
                             " describes the link between nodes: give --nodes R as well");
    return link;
  }
  link.nodes = *o.nodes;
  if (link.nodes >= 1) // validateNodeLink refuses fewer first
    RP_RETURN_IF_ERROR(checkNodeLinkBandwidth(o, link.nodes));
  link.linkGbit = 8 * o.nodeLinkGbps.value_or(0); // GB/s -> Gb/s, NodeLink's unit
  link.latencyUs = o.nodeLinkLatencyUs.value_or(0);
  link.commThread = !o.nodeReduceOnOptimizer;
  if (!o.nodeReduction.empty()) {
    RP_ASSIGN_OR_RETURN(link.reduction, sim::parseNodeReduction(o.nodeReduction));
  }
  RP_RETURN_IF_ERROR(sim::validateNodeLink(link));
  return link;
}

/// A byte count in decimal units ("6.882 GB", "12.5 MB", "640 B").
std::string byteSize(double bytes) {
  if (bytes >= 1e9)
    return fixed(bytes / 1e9, 3) + " GB";
  if (bytes >= 1e6)
    return fixed(bytes / 1e6, 3) + " MB";
  if (bytes >= 1e3)
    return fixed(bytes / 1e3, 3) + " kB";
  return fixed(bytes, 0) + " B";
}

/// The node model's lines (when --nodes is given): the link, the bytes each node sends per
/// step, the link's busy time, the exposed communication and the scaling efficiency.
/// `linkText`: the link's bandwidth as given (nodeLinkText); `gradientBytes`: the fp32 gradient
/// bytes of every reduced layer, per step.
void printNodeReport(std::FILE *out, const std::string &linkText, const sim::NodeLink &link,
                     const std::vector<double> &gradientBytes, double linkBusyMs,
                     double oneNodeStepMs, double stepMs, int64_t tokensPerStep) {
  double sent = 0, total = 0;
  for (double b : gradientBytes) {
    sent += sim::reductionBytesPerNode(link, b);
    total += b;
  }
  std::fprintf(out,
               "rp-run: nodes: %d in data parallelism, node link %s per direction, %s us "
               "per message, %s reduction of %zu layer gradients (%s fp32) %s: %s sent per "
               "node per step\n",
               link.nodes, linkText.c_str(), formatNumber(link.latencyUs).c_str(),
               sim::nodeReductionName(link.reduction), gradientBytes.size(),
               byteSize(total).c_str(),
               link.commThread ? "on its own thread" : "on the optimizer thread",
               byteSize(sent).c_str());
  const double exposed = stepMs - oneNodeStepMs;
  std::fprintf(out,
               "rp-run: node link busy %s per step; exposed communication %s (%s%% of the "
               "step; one node's step %s)\n",
               ms(linkBusyMs).c_str(), ms(exposed).c_str(),
               fixed(stepMs > 0 ? 100.0 * exposed / stepMs : 0, 1).c_str(),
               ms(oneNodeStepMs).c_str());
  std::string tokens;
  if (tokensPerStep > 0 && stepMs > 0 && oneNodeStepMs > 0)
    tokens = ", " + fixed(link.nodes * static_cast<double>(tokensPerStep) / (stepMs / 1000), 0) +
             " tokens/s vs " + std::to_string(link.nodes) + " x " +
             fixed(static_cast<double>(tokensPerStep) / (oneNodeStepMs / 1000), 0) +
             " of one node";
  std::fprintf(out, "rp-run: scaling efficiency %s%% (%d node%s%s)\n",
               fixed(sim::scalingEfficiencyPercent(oneNodeStepMs, stepMs), 1).c_str(), link.nodes,
               link.nodes == 1 ? "" : "s", tokens.c_str());
}

Status checkCommon(const SimulateOptions &o) {
  if (o.steps < 1)
    return invalidArgument("--steps must be at least 1 (got " + std::to_string(o.steps) + ")");
  if (o.gpus < 0)
    return invalidArgument("--gpus must be at least 1 (got " + std::to_string(o.gpus) + ")");
  if (o.microBatches < 0)
    return invalidArgument("--micro-batches must be at least 1 (got " +
                           std::to_string(o.microBatches) + ")");
  if (!o.update.empty() && o.update != "sync" && o.update != "async")
    return invalidArgument("--update must be sync or async (got '" + o.update + "')");
  if (o.optimizerMs && o.adamwGbps)
    return invalidArgument("give --optimizer-ms or --adamw-gbps, not both");
  if (!o.tracePath.empty() && o.tracePath == o.ganttPath)
    return invalidArgument("--trace and --gantt name the same file '" + o.tracePath + "'");
  RP_ASSIGN_OR_RETURN(const sim::NodeLink link, nodeLinkOf(o));
  if (link.active() && o.compare)
    return invalidArgument("--compare with --nodes " + std::to_string(link.nodes) +
                           ": the baseline schedules do not model data parallelism across "
                           "nodes (compare on one node, or drop --compare)");
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Profile mode
//===----------------------------------------------------------------------===//

/// Host AdamW ms per layer for the schedule simulator: --optimizer-ms, else the mean over the
/// profile's layers of their fp32 master bytes (2 x trainable_bytes, the library's 16-bit
/// gradients) / the AdamW throughput.
double profileOptimizerMs(const part::Profile &profile, const SimulateOptions &o) {
  if (o.optimizerMs)
    return *o.optimizerMs;
  const double gbps = o.adamwGbps.value_or(SimConfig().adamwGbps);
  double bytes = 0;
  for (const part::LayerProfile &l : profile.layers)
    bytes += 2.0 * static_cast<double>(l.trainableBytes);
  return profile.layers.empty() ? 0 : bytes / (gbps * 1e6) / static_cast<double>(profile.layers.size());
}

Status simulateProfile(const SimulateOptions &o, std::FILE *out) {
  if (o.profilePath.empty())
    return invalidArgument("rp-run simulate needs a plan (MODEL.rpplan) or a --profile "
                           "FILE.json");
  if (o.gpus == 0)
    return invalidArgument("without a plan, --gpus N is required (the pool to simulate)");
  if (o.microBatches == 0)
    return invalidArgument("without a plan, --micro-batches M is required (micro-batches per "
                           "iteration)");
  RP_ASSIGN_OR_RETURN(part::Profile profile, part::loadProfile(o.profilePath));
  RP_ASSIGN_OR_RETURN(part::TargetSpec target, resolveTarget(o.target));
  if (o.adamwGbps && !(*o.adamwGbps > 0 && std::isfinite(*o.adamwGbps)))
    return invalidArgument("--adamw-gbps must be a positive number");
  sim::CompareOptions opts;
  opts.gpus = o.gpus;
  opts.microBatches = static_cast<int>(o.microBatches);
  opts.linkGbps = o.linkGbps > 0 ? o.linkGbps : target.pcieGbps;
  opts.hostUplinkGbps = o.hostUplinkGbps;
  opts.optimizerMsPerLayer = profileOptimizerMs(profile, o);
  opts.gpuMemoryBytes = target.memoryBytes;
  RP_ASSIGN_OR_RETURN(opts.nodes, nodeLinkOf(o));
  const std::string mode = o.update.empty() ? "sync" : o.update;
  const std::string name = "roundpipe-" + mode;

  std::vector<sim::ScheduleResult> all;
  sim::ScheduleResult result;
  if (o.compare) {
    RP_ASSIGN_OR_RETURN(all, sim::compareSchedules(profile, opts));
    for (const sim::ScheduleResult &r : all)
      if (r.name == name)
        result = r;
  } else {
    RP_ASSIGN_OR_RETURN(result, sim::simulateSchedule(name, profile, opts));
  }
  std::fprintf(out,
               "rp-run: simulated %s on %d GPUs, %d micro-batches, profile %s (%zu layers)\n"
               "rp-run: link %s GB/s per direction%s, host optimizer %s per layer\n",
               name.c_str(), o.gpus, opts.microBatches, o.profilePath.c_str(),
               profile.layers.size(), fixed(opts.linkGbps, 1).c_str(),
               o.hostUplinkGbps > 0
                   ? (", shared host uplink " + fixed(o.hostUplinkGbps, 1) + " GB/s").c_str()
                   : "",
               ms(opts.optimizerMsPerLayer).c_str());
  std::fprintf(out, "rp-run: stages: %s\n", result.description.c_str());
  std::fprintf(out, "rp-run: step time %s (one iteration, makespan %s)\n", ms(result.stepMs).c_str(),
               ms(result.stats.makespanMs).c_str());
  printStats(out, result.stats, "iteration");
  if (mode == "async")
    std::fprintf(out, "rp-run: steady state (fill and drain overlapped): bubble %s%%\n",
                 fixed(result.bubblePercent, 1).c_str());
  if (o.nodes) {
    // The same schedule on one node, for the exposed communication and the efficiency.
    double oneNodeMs = result.stepMs;
    if (opts.nodes.active()) {
      sim::CompareOptions one = opts;
      one.nodes = sim::NodeLink();
      RP_ASSIGN_OR_RETURN(sim::ScheduleResult single, sim::simulateSchedule(name, profile, one));
      oneNodeMs = single.stepMs;
    }
    std::vector<double> grads; // fp32: twice the profile's 16-bit gradient bytes
    double linkMs = 0;
    for (const part::LayerProfile &l : profile.layers)
      if (l.trainableBytes > 0) {
        grads.push_back(2.0 * static_cast<double>(l.trainableBytes));
        linkMs += sim::reductionMs(opts.nodes, grads.back());
      }
    printNodeReport(out, nodeLinkText(o), opts.nodes, grads, linkMs, oneNodeMs, result.stepMs, 0);
  }
  if (o.compare)
    std::fputs(sim::formatCompareTable(all).c_str(), out);
  return writeOutputs(result.timeline, o, out);
}

//===----------------------------------------------------------------------===//
// Plan mode
//===----------------------------------------------------------------------===//

/// A per-layer profile of `plan` with the costs the simulator backend uses: the given profile,
/// or the roofline of each layer's functions (fwd_ms = forward function; bwd_ms = the backward
/// work: the saving forward + the backward function - fwd_ms when the layer has a saving
/// forward (its backward takes the residuals), else the backward function - fwd_ms, since that
/// backward function recomputes its layer's forward), compute-dtype weights, fp32 gradients
/// (what the plan downloads) and the forward function's results as the layer's activation.
part::Profile planProfile(const pb::Plan &plan, const SimConfig &config) {
  if (config.profile)
    return *config.profile;
  part::Profile p;
  const std::optional<DType> compute = fromPlanDType(plan.config().compute_dtype());
  const uint64_t computeSize = compute ? dtypeSize(*compute) : 4;
  for (int l = 0; l < plan.layers_size(); ++l) {
    const pb::Layer &layer = plan.layers(l);
    part::LayerProfile lp;
    lp.name = layer.name();
    lp.fwdMs = rooflineMs(plan.functions(layer.forward()), config.target, config.computeEfficiency);
    const double saving = layer.has_saving() ? rooflineMs(plan.functions(layer.saving()),
                                                          config.target, config.computeEfficiency)
                                             : 0.0;
    lp.bwdMs = std::max(0.0, saving +
                                 rooflineMs(plan.functions(layer.backward()), config.target,
                                            config.computeEfficiency) -
                                 lp.fwdMs);
    lp.recomputeMs = lp.fwdMs;
    for (int pi : layer.params()) {
      const pb::Param &param = plan.params(pi);
      const auto n = static_cast<uint64_t>(elementCount(param.type()));
      lp.paramBytes += n * computeSize;
      if (param.trainable())
        lp.trainableBytes += 4 * n;
    }
    for (const pb::TensorType &t : plan.functions(layer.forward()).results())
      if (isPlanFloat(t.dtype()))
        lp.actBytes += static_cast<uint64_t>(byteCount(t));
    p.layers.push_back(lp);
  }
  return p;
}

/// End of the last device span of each step.
std::map<int, double> stepEnds(const sim::Timeline &t) {
  std::map<int, double> ends;
  for (const sim::Span &s : t.spans)
    if (s.device >= 0 && s.step >= 0)
      ends[s.step] = std::max(ends[s.step], s.endMs);
  return ends;
}

/// Reads and validates the plan; --update and --micro-batches must be the plan's.
StatusOr<pb::Plan> readSimulatedPlan(const SimulateOptions &o) {
  RP_ASSIGN_OR_RETURN(pb::Plan plan, readPlanFile(o.planPath));
  if (Status valid = validatePlan(plan); !valid.ok())
    return Status(valid.code(), o.planPath + ": " + valid.message());
  const pb::Config &cfg = plan.config();
  const std::string planMode = cfg.update() == pb::ASYNC ? "async" : "sync";
  if (!o.update.empty() && o.update != planMode)
    return invalidArgument("--update " + o.update + ": the plan was compiled for " + planMode +
                           " updates (recompile with rpc-compile --update " + o.update + ")");
  if (o.microBatches != 0 && o.microBatches != cfg.micro_batches())
    return invalidArgument("--micro-batches " + std::to_string(o.microBatches) +
                           ": the plan was compiled for " + std::to_string(cfg.micro_batches()) +
                           " (recompile with rpc-compile --micro-batches, or simulate a profile "
                           "without a plan)");
  return plan;
}

/// The simulated machine of the options (the plan's pool unless --gpus), validated.
StatusOr<SimConfig> planSimConfig(const SimulateOptions &o, const pb::Plan &plan) {
  SimConfig config;
  config.devices = o.gpus > 0 ? o.gpus : static_cast<int>(plan.config().gpus());
  if (!o.profilePath.empty()) {
    RP_ASSIGN_OR_RETURN(part::Profile profile, part::loadProfile(o.profilePath));
    config.profile = std::move(profile);
  }
  RP_ASSIGN_OR_RETURN(config.target, resolveTarget(o.target));
  config.linkGbps = o.linkGbps;
  config.hostUplinkGbps = o.hostUplinkGbps;
  config.optimizerMs = o.optimizerMs;
  if (o.adamwGbps)
    config.adamwGbps = *o.adamwGbps;
  RP_ASSIGN_OR_RETURN(config.nodes, nodeLinkOf(o));
  RP_RETURN_IF_ERROR(validateSimConfig(config));
  if (config.profile && static_cast<int>(config.profile->layers.size()) != plan.layers_size())
    return invalidArgument(o.profilePath + ": the profile has " +
                           std::to_string(config.profile->layers.size()) + " layers, the plan " +
                           std::to_string(plan.layers_size()) + " (a profile of another model?)");
  return config;
}

/// The comparison's options on the plan's costs: its pool and partition, one job per stage over
/// all M micro-batches (the executor), the mean host AdamW time per layer.
sim::CompareOptions planCompareOptions(const pb::Plan &plan, const SimConfig &config) {
  sim::CompareOptions copts;
  copts.gpus = config.devices;
  copts.microBatches = static_cast<int>(plan.config().micro_batches());
  copts.linkGbps = config.linkGbps > 0 ? config.linkGbps : config.target.pcieGbps;
  copts.hostUplinkGbps = config.hostUplinkGbps;
  copts.gpuMemoryBytes = config.target.memoryBytes;
  copts.roundMicroBatches = copts.microBatches; // one job per stage over all M (the executor)
  double adamwMs = 0;
  int layers = 0;
  for (const pb::Layer &layer : plan.layers()) {
    double bytes = 0;
    for (int pi : layer.params())
      if (plan.params(pi).trainable() && !plan.params(pi).has_primary()) // owners run AdamW
        bytes += 4.0 * static_cast<double>(
                           tensorTypeElements(plan.params(pi).type(), "param").valueOr(0));
    adamwMs += config.optimizerMs ? (bytes > 0 ? *config.optimizerMs : 0)
                                  : bytes / (config.adamwGbps * 1e6);
    ++layers;
  }
  copts.optimizerMsPerLayer = layers ? adamwMs / layers : 0;
  for (const pb::Stage &st : plan.stages())
    (st.kind() == pb::FORWARD ? copts.roundPipeForward : copts.roundPipeBackward)
        .push_back(st.end() - st.begin());
  return copts;
}

/// Runs `steps` iterations as rp-run trains (dispatch step k, then read step k-1's losses).
Status runSteps(Executor &executor, int64_t steps) {
  auto failed = [](int64_t step, const Status &s) {
    return internal("the simulated run failed at step " + std::to_string(step + 1) + ": " +
                    s.message());
  };
  for (int64_t k = 0; k < steps; ++k) {
    Status s = executor.waitInputsWritable(k);
    if (s.ok())
      s = executor.dispatch(k, steps);
    if (s.ok() && k > 0)
      s = executor.losses(k - 1).status();
    if (!s.ok())
      return failed(k, s);
  }
  if (Status s = executor.drain(); !s.ok())
    return failed(steps - 1, s);
  return okStatus();
}

/// The steady-state measures of a simulated run (Simulate.h).
struct StepMeasure {
  int last = 0;      ///< The last step (0-based).
  double stepMs = 0; ///< End of the last step minus the end of the one before.
  sim::TimelineStats whole, steady;
};

StepMeasure measureSteps(const sim::Timeline &timeline, int64_t steps) {
  StepMeasure m;
  const std::map<int, double> ends = stepEnds(timeline);
  m.last = static_cast<int>(steps - 1);
  const double end = ends.count(m.last) ? ends.at(m.last) : 0;
  const double begin = m.last > 0 && ends.count(m.last - 1) ? ends.at(m.last - 1) : 0;
  m.stepMs = end - begin;
  m.whole = sim::computeStats(timeline);
  m.steady = sim::computeStats(window(timeline, begin, end));
  return m;
}

/// Tokens per iteration: batch x seq of the plan's token input x M (0 without one).
int64_t tokensPerStep(const pb::Plan &plan) {
  for (const PlanInput &in : analyzeInputs(plan))
    if (in.role == InputRole::Tokens && in.shape.size() == 2)
      return in.shape[0] * in.shape[1] * plan.config().micro_batches();
  return 0;
}

void printPlanReport(std::FILE *out, const SimulateOptions &o, const pb::Plan &plan,
                     const SimConfig &config, const std::string &planMode, const StepMeasure &m) {
  const int64_t tokens = tokensPerStep(plan);
  const double link = config.linkGbps > 0 ? config.linkGbps : config.target.pcieGbps;
  std::fprintf(out,
               "rp-run: simulated %s: %d stages, %lld micro-batches, %s updates, %lld steps on %d "
               "virtual GPUs\n",
               o.planPath.c_str(), plan.stages_size(),
               static_cast<long long>(plan.config().micro_batches()), planMode.c_str(),
               static_cast<long long>(o.steps), config.devices);
  std::fprintf(out, "rp-run: costs: %s; target %s (%s TFLOP/s, %s GB/s HBM); link %s GB/s per "
                    "direction%s\n",
               config.profile ? ("profile " + o.profilePath).c_str()
                              : "roofline of the plan's instructions",
               config.target.name.c_str(), fixed(config.target.peakTflops, 0).c_str(),
               fixed(config.target.hbmGbps, 0).c_str(), fixed(link, 1).c_str(),
               config.hostUplinkGbps > 0
                   ? (", shared host uplink " + fixed(config.hostUplinkGbps, 1) + " GB/s").c_str()
                   : "");
  std::fprintf(
      out, "rp-run: step time %s (steady state: step %d ends %s after step %d)%s\n",
      ms(m.stepMs).c_str(), m.last + 1, ms(m.stepMs).c_str(), m.last,
      tokens > 0 && m.stepMs > 0
          ? (", " + fixed(static_cast<double>(tokens) / (m.stepMs / 1000), 0) + " tokens/s").c_str()
          : "");
  printStats(out, m.steady, ("step " + std::to_string(m.last + 1)).c_str());
  std::fprintf(out,
               "rp-run: whole run (%lld steps): makespan %s, bubble %s%%, exposed transfer "
               "%s%%, host optimizer busy %s\n",
               static_cast<long long>(o.steps), ms(m.whole.makespanMs).c_str(),
               fixed(m.whole.bubblePercent, 1).c_str(),
               fixed(m.whole.exposedTransferPercent, 1).c_str(), ms(m.whole.hostBusyMs).c_str());
}

/// The comparison table with the executor's row, and why it differs from the schedule model's.
void printPlanComparison(std::FILE *out, std::vector<sim::ScheduleResult> results,
                         const std::string &planMode, const StepMeasure &m, int64_t steps) {
  sim::ScheduleResult mine;
  mine.name = "executor-" + planMode;
  mine.description = "the compiled plan run by the executor (steady-state step)";
  mine.stats = m.steady;
  mine.stepMs = m.stepMs;
  mine.bubblePercent = m.steady.bubblePercent;
  // The analytic row's step time by value: the push_back below may move `results`
  // (a pointer into it was read after the move; found by ASan, docs/FUZZING.md).
  std::optional<double> analyticMs;
  for (const sim::ScheduleResult &r : results)
    if (r.name == "roundpipe-" + planMode)
      analyticMs = r.stepMs;
  results.push_back(mine);
  std::fputs(sim::formatCompareTable(results).c_str(), out);
  if (analyticMs && std::fabs(*analyticMs - m.stepMs) > 0.01 * std::max(m.stepMs, 1e-9))
    std::fprintf(out,
                 "rp-run: executor-%s (%s) differs from roundpipe-%s (%s), the schedule model "
                 "of the same partition and costs: the executor runs the plan's own commands "
                 "(plans without saving forwards recompute each layer's forward once more in "
                 "its backward function; the weight prefetch shares each GPU's upload link with the "
                 "activations; the first N jobs upload their weights unprefetched; the host "
                 "optimizer, %s per step here, runs as the executor orders it: sync steps wait "
                 "for it, async steps wait for the previous step's) and its step is measured "
                 "in steady state, after %lld steps\n",
                 planMode.c_str(), ms(m.stepMs).c_str(), planMode.c_str(), ms(*analyticMs).c_str(),
                 ms(m.whole.hostBusyMs / static_cast<double>(steps)).c_str(),
                 static_cast<long long>(steps));
}

/// One simulated run of `plan` on `config`: `steps` iterations through the executor.
StatusOr<sim::Timeline> runPlan(const pb::Plan &plan, const SimConfig &config, int64_t steps) {
  // The simulated devices hold no memory, and the host arena is address space only: the
  // executor models its host work (SimBackend::hostWork) without computing it, so a plan
  // larger than this machine's memory simulates (its needs: rp-run --check).
  RP_ASSIGN_OR_RETURN(HostArena host, HostArena::reserve(plan));
  SimBackend backend(config);
  ExecutorOptions exec;
  exec.schedule.lr = plan.config().optimizer().lr();
  exec.hostArithmetic = false;
  Executor executor(host, backend, exec);
  RP_RETURN_IF_ERROR(executor.start());
  RP_RETURN_IF_ERROR(runSteps(executor, steps));
  return backend.timeline();
}

/// The fp32 gradient bytes of every layer that runs AdamW (what each step reduces across nodes).
std::vector<double> planGradientBytes(const pb::Plan &plan) {
  std::vector<double> bytes(static_cast<size_t>(plan.layers_size()), 0);
  for (const pb::Param &p : plan.params())
    if (p.trainable() && !p.has_primary() && p.layer() >= 0 && p.layer() < plan.layers_size())
      bytes[static_cast<size_t>(p.layer())] +=
          4.0 * static_cast<double>(tensorTypeElements(p.type(), "param").valueOr(0));
  bytes.erase(std::remove(bytes.begin(), bytes.end(), 0.0), bytes.end());
  return bytes;
}

Status simulatePlan(const SimulateOptions &o, std::FILE *out) {
  RP_ASSIGN_OR_RETURN(pb::Plan plan, readSimulatedPlan(o));
  const pb::Config &cfg = plan.config();
  const std::string planMode = cfg.update() == pb::ASYNC ? "async" : "sync";
  RP_ASSIGN_OR_RETURN(SimConfig config, planSimConfig(o, plan));

  // The comparison's inputs are checked before anything runs or is written.
  sim::CompareOptions copts;
  part::Profile profile;
  std::vector<sim::ScheduleResult> results;
  if (o.compare) {
    profile = planProfile(plan, config);
    copts = planCompareOptions(plan, config);
    StatusOr<std::vector<sim::ScheduleResult>> r = sim::compareSchedules(profile, copts);
    if (!r.ok())
      return Status(r.status().code(), "--compare: " + r.status().message());
    results = std::move(r).value();
  }

  RP_ASSIGN_OR_RETURN(sim::Timeline timeline, runPlan(plan, config, o.steps));
  const StepMeasure measure = measureSteps(timeline, o.steps);
  printPlanReport(out, o, plan, config, planMode, measure);
  if (o.nodes) {
    // The same plan on one node, for the exposed communication and the efficiency.
    double oneNodeMs = measure.stepMs;
    if (config.nodes.active()) {
      SimConfig one = config;
      one.nodes = sim::NodeLink();
      RP_ASSIGN_OR_RETURN(sim::Timeline single, runPlan(plan, one, o.steps));
      oneNodeMs = measureSteps(single, o.steps).stepMs;
    }
    const std::vector<double> grads = planGradientBytes(plan);
    double linkMs = 0;
    for (double b : grads)
      linkMs += sim::reductionMs(config.nodes, b);
    printNodeReport(out, nodeLinkText(o), config.nodes, grads, linkMs, oneNodeMs, measure.stepMs,
                    tokensPerStep(plan));
  }
  if (o.compare)
    printPlanComparison(out, std::move(results), planMode, measure, o.steps);
  return writeOutputs(timeline, o, out);
}

} // namespace

Status simulate(const SimulateOptions &options, std::FILE *out) {
  RP_RETURN_IF_ERROR(checkCommon(options));
  if (options.planPath.empty())
    return simulateProfile(options, out);
  return simulatePlan(options, out);
}

} // namespace rp::runtime
