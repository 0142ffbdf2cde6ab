//===- SimBackend.cpp - The executor's devices on a virtual clock ---------===//

#include "runtime/sim/SimBackend.h"

#include "base/FormatBytes.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanReport.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace rp::runtime {

namespace pb = rp::plan;
namespace part = rp::partition;
using rp::sim::Lane;
using rp::sim::Span;

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

part::TargetSpec defaultSimTarget() {
  return *part::targetPreset("rtx4090");
}

namespace {

bool positiveFinite(double v) { return std::isfinite(v) && v > 0; }
bool nonNegativeFinite(double v) { return std::isfinite(v) && v >= 0; }

const part::TargetSpec &targetOf(const SimConfig &c, const part::TargetSpec &fallback) {
  return c.target.name.empty() ? fallback : c.target;
}

} // namespace

Status validateSimConfig(const SimConfig &config) {
  if (config.devices < 1)
    return invalidArgument("the simulator needs at least 1 GPU (got " +
                           std::to_string(config.devices) + ")");
  const part::TargetSpec fallback = defaultSimTarget();
  const part::TargetSpec &target = targetOf(config, fallback);
  if (!nonNegativeFinite(config.linkGbps))
    return invalidArgument("the link bandwidth must be a non-negative number of GB/s (got " +
                           formatNumber(config.linkGbps) + ")");
  if (!positiveFinite(config.linkGbps > 0 ? config.linkGbps : target.pcieGbps))
    return invalidArgument("target '" + target.name + "' has no PCIe bandwidth (pcie_gbps)");
  if (!nonNegativeFinite(config.hostUplinkGbps))
    return invalidArgument("the host uplink bandwidth must be a non-negative number of GB/s "
                           "(got " + formatNumber(config.hostUplinkGbps) + ")");
  if (config.devicesPerUplink < 0)
    return invalidArgument("devices per uplink must be >= 0 (got " +
                           std::to_string(config.devicesPerUplink) + ")");
  if (config.optimizerMs && !nonNegativeFinite(*config.optimizerMs))
    return invalidArgument("the optimizer time must be a non-negative number of ms (got " +
                           formatNumber(*config.optimizerMs) + ")");
  if (!positiveFinite(config.adamwGbps))
    return invalidArgument("the host AdamW throughput must be a positive number of GB/s (got " +
                           formatNumber(config.adamwGbps) + ")");
  if (!positiveFinite(config.hostCopyGbps))
    return invalidArgument("the host copy throughput must be a positive number of GB/s (got " +
                           formatNumber(config.hostCopyGbps) + ")");
  if (!(config.computeEfficiency > 0 && config.computeEfficiency <= 1))
    return invalidArgument("the compute efficiency must be in (0, 1] (got " +
                           formatNumber(config.computeEfficiency) + ")");
  RP_RETURN_IF_ERROR(rp::sim::validateNodeLink(config.nodes));
  if (config.profile)
    return part::validateProfile(*config.profile, "the profile");
  if (!positiveFinite(target.peakTflops) || !positiveFinite(target.hbmGbps))
    return invalidArgument("the roofline cost model needs the target's peak_tflops and hbm_gbps "
                           "(target '" + target.name + "' has " +
                           formatNumber(target.peakTflops) + " TFLOP/s and " +
                           formatNumber(target.hbmGbps) + " GB/s); give them or a --profile");
  return okStatus();
}

//===----------------------------------------------------------------------===//
// The recorded graph
//===----------------------------------------------------------------------===//

struct SimBackend::SimEvent final : BackendEvent {
  explicit SimEvent(int64_t id) : id(id) {}
  const int64_t id;
  bool resolved = false;   // live: its time is determined by what was issued
  bool gradients = false;  // recorded on a Download queue right after a gradient copy
  std::vector<int> waiters; // live: queues blocked on it
};

struct SimBackend::Op {
  enum Kind { Copy, Compute, Work, Record, Wait } kind = Compute;
  std::shared_ptr<SimEvent> event; // Record, Wait
  double ms = 0;                   // Compute, Work
  double bytes = 0;                // Copy: bytes at the link's rate
  std::string label;
  std::string category;
  int64_t step = 0;
  int function = -1; // Compute of a call: the plan function
};

struct SimBackend::QueueOps {
  int device = -1;     // < 0: a host thread (-1 the optimizer, -2 the weights writer)
  bool rowSet = false; // host threads: device set by the first hostWork
  Lane lane = Lane::Host;
  std::vector<Op> ops;
  size_t resolved = 0; // live: ops [0, resolved) are resolved
  // Host queues: ops count when the last issue mark was recorded, and that mark.
  size_t markedAt = 0;
  std::shared_ptr<SimEvent> mark;
  // Device queues: the last issue mark waited for.
  int64_t waitedMark = -1;
  size_t finishedAt = 0; // ops count when finish() last marked the queue
  size_t traced = 0;     // ops whose spans went to the trace
  int track = 0;
  // Host queues, R > 1 nodes: gradient events waited for since the thread's last AdamW.
  std::vector<std::shared_ptr<SimEvent>> pendingGrads;
};

SimBackend::SimBackend(SimConfig config) : config_(std::move(config)) {
  if (config_.target.name.empty())
    config_.target = defaultSimTarget();
  const int devices = std::max(config_.devices, 0);
  for (int d = 0; d < devices; ++d)
    for (int q = 0; q < kNumQueues; ++q) {
      auto ops = std::make_unique<QueueOps>();
      ops->device = d;
      ops->lane = static_cast<Lane>(q);
      queues_.push_back(std::move(ops));
    }
  deviceStage_.assign(static_cast<size_t>(devices), 0);
  if (config_.nodes.active()) {
    auto link = std::make_unique<QueueOps>();
    link->device = -1;
    link->rowSet = true;
    link->lane = Lane::NodeLink;
    queues_.push_back(std::move(link));
    nodeQueue_ = static_cast<int>(queues_.size()) - 1;
  }
}

SimBackend::~SimBackend() = default;

double SimBackend::copyMs(int64_t bytes) const {
  const double link = config_.linkGbps > 0 ? config_.linkGbps : config_.target.pcieGbps;
  return static_cast<double>(bytes) / (link * 1e6);
}

namespace {

/// The trace arguments of a call of function `name` whose roofline cost is `cost`: the
/// function, its FLOPs and its instructions' FLOPs (formatInstructionFlops, as the plan
/// report's JSON writes them).
SimBackend::TraceArgs callTraceArgs(const std::string &name, const FunctionCost &cost) {
  char flops[64];
  std::snprintf(flops, sizeof flops, "%.0f", cost.flops);
  return {{"function", name},
          {"flops", flops},
          {"instruction_flops", formatInstructionFlops(cost.instructionFlops)}};
}

/// The iteration in an executor label ("F0 s3 mb1 x" -> 3; "B1 s-1 ..." -> -1); 0 if none.
int64_t stepOfLabel(const std::string &label) {
  for (size_t i = label.find(" s"); i != std::string::npos; i = label.find(" s", i + 1)) {
    size_t j = i + 2;
    const bool negative = j < label.size() && label[j] == '-';
    if (negative)
      ++j;
    if (j >= label.size() || !std::isdigit(static_cast<unsigned char>(label[j])))
      continue;
    int64_t v = 0;
    while (j < label.size() && std::isdigit(static_cast<unsigned char>(label[j])))
      v = v * 10 + (label[j++] - '0');
    if (j == label.size() || label[j] == ' ')
      return negative ? -v : v;
  }
  return 0;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const char *kindCategory(pb::StageKind kind) {
  switch (kind) {
  case pb::FORWARD:
    return "forward";
  case pb::FUSED_TAIL:
    return "fused";
  default:
    return "backward";
  }
}

} // namespace

Status SimBackend::prepare(const pb::Plan &plan) {
  RP_RETURN_IF_ERROR(validateSimConfig(config_));
  plan_ = &plan;
  const int L = plan.layers_size();
  if (config_.profile && static_cast<int>(config_.profile->layers.size()) != L)
    return invalidArgument("the profile has " + std::to_string(config_.profile->layers.size()) +
                           " layers, the plan " + std::to_string(L) +
                           " (a profile of another model?)");
  // Which layer each function belongs to, and whether it runs the layer's forward (the
  // forward function or the saving forward, whose backward then recomputes nothing).
  std::vector<std::pair<int, bool>> owner(static_cast<size_t>(plan.functions_size()), {-1, false});
  for (int l = 0; l < L; ++l) {
    owner[static_cast<size_t>(plan.layers(l).forward())] = {l, true};
    if (plan.layers(l).has_saving())
      owner[static_cast<size_t>(plan.layers(l).saving())] = {l, true};
    owner[static_cast<size_t>(plan.layers(l).backward())] = {l, false};
  }
  std::vector<double> roofline(static_cast<size_t>(plan.functions_size()), 0);
  callTraceArgs_.clear();
  if (!config_.profile)
    for (int f = 0; f < plan.functions_size(); ++f) {
      const FunctionCost cost =
          functionCost(plan.functions(f), config_.target, config_.computeEfficiency);
      roofline[static_cast<size_t>(f)] = cost.ms;
      callTraceArgs_.push_back(callTraceArgs(plan.functions(f).name(), cost));
    }

  callMs_.clear();
  for (int s = 0; s < plan.stages_size(); ++s) {
    const pb::Stage &st = plan.stages(s);
    std::vector<bool> forwardCalled(static_cast<size_t>(L), false);
    for (const pb::Step &step : st.body())
      if (step.has_call()) {
        auto [l, fwd] = owner[static_cast<size_t>(step.call().function())];
        if (l >= 0 && fwd)
          forwardCalled[static_cast<size_t>(l)] = true;
      }
    for (const pb::Step &step : st.body()) {
      if (!step.has_call())
        continue;
      const int f = step.call().function();
      if (!config_.profile) {
        callMs_[{s, f}] = roofline[static_cast<size_t>(f)];
        continue;
      }
      auto [l, fwd] = owner[static_cast<size_t>(f)];
      if (l < 0)
        return invalidArgument("stage " + st.name() + " calls function '" +
                               plan.functions(f).name() +
                               "', which is no layer's forward or backward: the profile cannot "
                               "cost it");
      const part::LayerProfile &p = config_.profile->layers[static_cast<size_t>(l)];
      const double forwardWork = st.kind() == pb::BACKWARD ? p.recomputeMs : p.fwdMs;
      double ms;
      if (fwd)
        ms = forwardWork;
      else
        ms = p.bwdMs + (forwardCalled[static_cast<size_t>(l)] ? 0.0 : forwardWork);
      callMs_[{s, f}] = ms;
    }
  }

  layerTrainableBytes_.assign(static_cast<size_t>(L), 0);
  layerComputeBytes_.assign(static_cast<size_t>(L), 0);
  trainableBytes_ = 0;
  const std::optional<DType> compute = fromPlanDType(plan.config().compute_dtype());
  const int64_t computeSize = compute ? static_cast<int64_t>(dtypeSize(*compute)) : 4;
  for (const pb::Param &p : plan.params()) {
    // A copy of a shared param: its owner's AdamW updates it (the copy adds a download).
    if (!p.trainable() || p.has_primary() || p.layer() < 0 || p.layer() >= L)
      continue;
    const auto n = static_cast<int64_t>(elementCount(p.type()));
    layerTrainableBytes_[static_cast<size_t>(p.layer())] += 4 * n;
    layerComputeBytes_[static_cast<size_t>(p.layer())] += computeSize * n;
    trainableBytes_ += 4 * n;
  }
  hopBuffer_.clear();
  for (const pb::HostBuffer &b : plan.host_buffers())
    hopBuffer_.push_back(b.kind() == pb::ACTIVATION || b.kind() == pb::COTANGENT);
  return okStatus();
}

SimBackend::TraceArgs SimBackend::callArgs(const Op &op) const {
  if (op.kind != Op::Compute || op.function < 0 ||
      static_cast<size_t>(op.function) >= callTraceArgs_.size())
    return {};
  return callTraceArgs_[static_cast<size_t>(op.function)];
}

double SimBackend::callMs(int stage, int function) const {
  auto it = callMs_.find({stage, function});
  return it == callMs_.end() ? 0.0 : it->second;
}

//===----------------------------------------------------------------------===//
// Issuing (live pass)
//===----------------------------------------------------------------------===//

int SimBackend::hostQueue() {
  const std::thread::id self = std::this_thread::get_id();
  auto it = hostQueues_.find(self);
  if (it != hostQueues_.end())
    return it->second;
  auto ops = std::make_unique<QueueOps>();
  queues_.push_back(std::move(ops));
  const int index = static_cast<int>(queues_.size()) - 1;
  hostQueues_.emplace(self, index);
  return index;
}

void SimBackend::resolve(int queue) {
  std::vector<int> work{queue};
  while (!work.empty()) {
    QueueOps &q = *queues_[static_cast<size_t>(work.back())];
    const int index = work.back();
    work.pop_back();
    while (q.resolved < q.ops.size()) {
      Op &op = q.ops[q.resolved];
      if (op.kind == Op::Wait && !op.event->resolved) {
        op.event->waiters.push_back(index);
        break;
      }
      if (op.kind == Op::Record && !op.event->resolved) {
        op.event->resolved = true;
        work.insert(work.end(), op.event->waiters.begin(), op.event->waiters.end());
        op.event->waiters.clear();
      }
      ++q.resolved;
    }
  }
  cv_.notify_all();
}

void SimBackend::push(int queue, Op op) {
  queues_[static_cast<size_t>(queue)]->ops.push_back(std::move(op));
  resolve(queue);
}

void SimBackend::pushOrdering(int before, int after) {
  Op record;
  record.kind = Op::Record;
  record.event = std::make_shared<SimEvent>(nextEvent_++);
  Op wait;
  wait.kind = Op::Wait;
  wait.event = record.event;
  push(before, std::move(record));
  push(after, std::move(wait));
}

void SimBackend::issueDevice(int device, Queue queue, Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int index = device * kNumQueues + static_cast<int>(queue);
  const int hostIndex = hostQueue();
  QueueOps &host = *queues_[static_cast<size_t>(hostIndex)];
  // Nothing issued after a host wait may start before it: the device queue waits for a mark
  // recorded at the issuing thread's current position.
  if (host.ops.size() > host.markedAt) {
    host.mark = std::make_shared<SimEvent>(nextEvent_++);
    Op rec;
    rec.kind = Op::Record;
    rec.event = host.mark;
    host.ops.push_back(std::move(rec));
    host.markedAt = host.ops.size();
    resolve(hostIndex);
  }
  QueueOps &q = *queues_[static_cast<size_t>(index)];
  if (host.mark && q.waitedMark != host.mark->id) {
    Op w;
    w.kind = Op::Wait;
    w.event = host.mark;
    q.ops.push_back(std::move(w));
    q.waitedMark = host.mark->id;
  }
  push(index, std::move(op));
}

double SimBackend::hopBytes(const std::string &label, double bytes) const {
  // With a profile's comm_ms, a boundary activation's copy costs half a hop (docs/SIMULATOR.md).
  if (!config_.profile || !config_.profile->commMs || !plan_)
    return bytes;
  for (int b = 0; b < plan_->host_buffers_size(); ++b)
    if (hopBuffer_[static_cast<size_t>(b)] && endsWith(label, " " + plan_->host_buffers(b).name())) {
      const double link = config_.linkGbps > 0 ? config_.linkGbps : config_.target.pcieGbps;
      return *config_.profile->commMs / 2 * link * 1e6;
    }
  return bytes;
}

void SimBackend::issueCopy(int device, Queue queue, int64_t bytes, std::string label,
                           const char *category) {
  Op op;
  op.kind = Op::Copy;
  op.category = category;
  op.bytes = op.category == "activations" ? hopBytes(label, static_cast<double>(bytes))
                                          : static_cast<double>(bytes);
  op.step = stepOfLabel(label);
  op.label = std::move(label);
  issueDevice(device, queue, std::move(op));
}

void SimBackend::copyToDevice(int device, Queue queue, const void *, int64_t, int64_t bytes,
                              std::string label) {
  issueCopy(device, queue, bytes, std::move(label),
            queue == Queue::WeightUpload ? "weights" : "activations");
}

void SimBackend::copyToHost(int device, Queue queue, int64_t, void *, int64_t bytes,
                            std::string label) {
  const char *category = endsWith(label, " grads") ? "gradients" : "activations";
  issueCopy(device, queue, bytes, std::move(label), category);
}

void SimBackend::downloadGradients(int device, int64_t, void *, int64_t bytes,
                                   std::vector<GradientRange>, GradientCheck *check,
                                   std::string label) {
  check->nonFinite = 0; // no values, nothing is ever non-finite; the copy is costed
  check->squares.clear();
  issueCopy(device, Queue::Download, bytes, std::move(label), "gradients");
}

void SimBackend::call(int device, CallFrame frame, std::string label) {
  Op op;
  op.kind = Op::Compute;
  op.ms = callMs(frame.stage, frame.function);
  op.function = frame.function;
  if (plan_ && frame.stage >= 0 && frame.stage < plan_->stages_size())
    op.category = kindCategory(plan_->stages(frame.stage).kind());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deviceStage_[static_cast<size_t>(device)] = frame.stage;
  }
  op.step = stepOfLabel(label);
  op.label = std::move(label);
  issueDevice(device, Queue::Compute, std::move(op));
}

void SimBackend::accumulate(int device, int64_t, int64_t, int64_t elements, DType dtype, bool,
                            std::string label) {
  Op op;
  op.kind = Op::Compute;
  if (!config_.profile)
    op.ms = static_cast<double>(elements) * static_cast<double>(dtypeSize(dtype) + 8) /
            (config_.target.hbmGbps * 1e6);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int stage = deviceStage_[static_cast<size_t>(device)];
    op.category = plan_ && stage < plan_->stages_size()
                      ? kindCategory(plan_->stages(stage).kind())
                      : "backward";
  }
  op.step = stepOfLabel(label);
  op.label = std::move(label);
  issueDevice(device, Queue::Compute, std::move(op));
}

Event SimBackend::newEvent() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::make_shared<SimEvent>(nextEvent_++);
}

void SimBackend::record(int device, Queue queue, const Event &event) {
  Op op;
  op.kind = Op::Record;
  op.event = std::static_pointer_cast<SimEvent>(event);
  if (queue == Queue::Download) { // after a gradient copy: a layer's gradients are on the host
    std::lock_guard<std::mutex> lock(mutex_);
    const QueueOps &q = *queues_[static_cast<size_t>(device * kNumQueues + static_cast<int>(queue))];
    op.event->gradients = !q.ops.empty() && q.ops.back().kind == Op::Copy &&
                          q.ops.back().category == "gradients";
  }
  issueDevice(device, queue, std::move(op));
}

void SimBackend::wait(int device, Queue queue, const Event &event) {
  Op op;
  op.kind = Op::Wait;
  op.event = std::static_pointer_cast<SimEvent>(event);
  issueDevice(device, queue, std::move(op));
}

void SimBackend::signal(const Event &event) {
  std::lock_guard<std::mutex> lock(mutex_);
  Op op;
  op.kind = Op::Record;
  op.event = std::static_pointer_cast<SimEvent>(event);
  push(hostQueue(), std::move(op));
}

Status SimBackend::hostWait(const Event &event) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_)
    return status_;
  auto e = std::static_pointer_cast<SimEvent>(event);
  Op op;
  op.kind = Op::Wait;
  op.event = e;
  const int thread = hostQueue();
  if (nodeQueue_ >= 0 && e->gradients)
    queues_[static_cast<size_t>(thread)]->pendingGrads.push_back(e);
  push(thread, std::move(op));
  cv_.wait(lock, [&] { return failed_ || e->resolved; });
  return failed_ ? status_ : okStatus();
}

void SimBackend::hostWork(HostTask task, int64_t step, int layer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan_)
    return;
  // The thread's timeline row: a thread whose first work is a weight write is the executor's
  // weights writer (async updates; device -2), any other the optimizer (-1). Deterministic,
  // unlike the order in which threads first reach the backend.
  QueueOps &thread = *queues_[static_cast<size_t>(hostQueue())];
  if (!thread.rowSet) {
    thread.device = task == HostTask::WriteWeights ? -2 : -1;
    thread.rowSet = true;
  }
  Op op;
  op.kind = Op::Work;
  op.category = "optimizer";
  op.step = step;
  const std::string layerName =
      layer >= 0 && layer < plan_->layers_size() ? plan_->layers(layer).name() : "all layers";
  const size_t l = static_cast<size_t>(std::max(layer, 0));
  switch (task) {
  case HostTask::AdamW:
    if (nodeQueue_ >= 0 && layerTrainableBytes_[l] > 0)
      issueReduction(thread, hostQueue(), step, static_cast<int>(l));
    op.ms = config_.optimizerMs ? *config_.optimizerMs
                                : static_cast<double>(layerTrainableBytes_[l]) /
                                      (config_.adamwGbps * 1e6);
    op.label = "s" + std::to_string(step) + " adamw " + layerName;
    break;
  case HostTask::WriteWeights:
    op.ms = config_.optimizerMs ? 0.0
                                : static_cast<double>(layerComputeBytes_[l]) /
                                      (config_.hostCopyGbps * 1e6);
    op.label = "s" + std::to_string(step) + " copy " + layerName;
    break;
  case HostTask::GradNorm:
    op.ms = config_.optimizerMs ? 0.0
                                : static_cast<double>(trainableBytes_) / (config_.hostCopyGbps * 1e6);
    op.label = "s" + std::to_string(step) + " grad norm";
    break;
  }
  push(hostQueue(), std::move(op));
}

void SimBackend::issueReduction(QueueOps &thread, int threadIndex, int64_t step, int layer) {
  if (!config_.nodes.commThread) // on the optimizer thread (--node-reduce-on-optimizer):
    pushOrdering(threadIndex, nodeQueue_); // not before the thread gets here
  for (std::shared_ptr<SimEvent> &grads : thread.pendingGrads) {
    Op wait;
    wait.kind = Op::Wait;
    wait.event = std::move(grads);
    push(nodeQueue_, std::move(wait));
  }
  thread.pendingGrads.clear();
  Op reduce;
  reduce.kind = Op::Work;
  reduce.ms = rp::sim::reductionMs(config_.nodes,
                                   static_cast<double>(layerTrainableBytes_[static_cast<size_t>(layer)]));
  reduce.category = "reduction";
  reduce.step = step;
  reduce.label = "s" + std::to_string(step) + " reduce " + plan_->layers(layer).name();
  push(nodeQueue_, std::move(reduce));
  pushOrdering(nodeQueue_, threadIndex);
}

void SimBackend::fail(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      failed_ = true;
      status_ = std::move(status);
    }
  }
  cv_.notify_all();
}

Status SimBackend::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  const size_t deviceQueues = static_cast<size_t>(config_.devices) * kNumQueues;
  cv_.wait(lock, [&] {
    if (failed_)
      return true;
    for (size_t i = 0; i < deviceQueues; ++i)
      if (queues_[i]->resolved < queues_[i]->ops.size())
        return false;
    return true;
  });
  if (failed_)
    return status_;
  // The caller's clock moves to the end of everything issued so far.
  const int host = hostQueue();
  for (size_t i = 0; i < deviceQueues; ++i) {
    QueueOps &q = *queues_[i];
    if (q.ops.size() == q.finishedAt)
      continue;
    pushOrdering(static_cast<int>(i), host);
    q.finishedAt = q.ops.size();
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Virtual time (runtime/sim/StreamEngine.h simulates the recorded graph)
//===----------------------------------------------------------------------===//

rp::sim::StreamGraph SimBackend::streamGraph() const {
  const int N = config_.devices;
  rp::sim::StreamGraph graph;
  graph.numEvents = nextEvent_;
  graph.linkGbps = config_.linkGbps > 0 ? config_.linkGbps : config_.target.pcieGbps;
  graph.uplinkGbps = config_.hostUplinkGbps;
  // Links: device d's H2D is 2d, its D2H 2d + 1. With a host uplink, groups of
  // devicesPerUplink devices (0: all) share one per direction: group 2k + direction.
  const int perUplink = config_.devicesPerUplink > 0 ? config_.devicesPerUplink : N;
  graph.linkUplink.assign(static_cast<size_t>(2 * N), -1);
  if (config_.hostUplinkGbps > 0)
    for (int d = 0; d < N; ++d)
      for (int dir = 0; dir < 2; ++dir)
        graph.linkUplink[static_cast<size_t>(2 * d + dir)] = 2 * (d / perUplink) + dir;
  for (const std::unique_ptr<QueueOps> &q : queues_) {
    rp::sim::StreamQueue &sq = graph.queues.emplace_back();
    if (q->device >= 0)
      sq.link = 2 * q->device + (q->lane == Lane::Download ? 1 : 0);
    for (const Op &op : q->ops) {
      rp::sim::StreamOp &so = sq.ops.emplace_back();
      switch (op.kind) {
      case Op::Wait:
      case Op::Record:
        so.kind = op.kind == Op::Wait ? rp::sim::StreamOp::Wait : rp::sim::StreamOp::Record;
        so.event = op.event->id;
        break;
      case Op::Compute:
      case Op::Work:
        so.kind = rp::sim::StreamOp::Busy;
        so.ms = op.ms;
        break;
      case Op::Copy:
        so.kind = rp::sim::StreamOp::Copy;
        so.bytes = op.bytes;
        break;
      }
    }
  }
  return graph;
}

rp::sim::Timeline SimBackend::timelineOf(std::vector<rp::sim::StreamSpan> done) const {
  rp::sim::Timeline out;
  out.schedule = std::string("roundpipe-") +
                 (plan_ && plan_->config().update() == pb::ASYNC ? "async" : "sync");
  out.numDevices = config_.devices;
  using rp::sim::StreamSpan;
  std::sort(done.begin(), done.end(), [&](const StreamSpan &a, const StreamSpan &b) {
    const QueueOps &qa = *queues_[static_cast<size_t>(a.queue)];
    const QueueOps &qb = *queues_[static_cast<size_t>(b.queue)];
    return std::make_tuple(static_cast<int>(qa.lane), qa.device, a.startMs, a.queue, a.op) <
           std::make_tuple(static_cast<int>(qb.lane), qb.device, b.startMs, b.queue, b.op);
  });
  for (const StreamSpan &d : done) {
    const QueueOps &q = *queues_[static_cast<size_t>(d.queue)];
    const Op &op = q.ops[d.op];
    Span span;
    span.device = q.device;
    span.lane = q.lane;
    span.startMs = d.startMs;
    span.endMs = d.endMs;
    span.label = op.label;
    span.category = op.category;
    span.step = static_cast<int>(op.step);
    span.args = callArgs(op);
    out.spans.push_back(span);
  }
  return out;
}

void SimBackend::traceSpans(const std::vector<rp::sim::StreamSpan> &done) {
  if (!trace_ || !trace_->enabled())
    return;
  // Each queue's spans once, in queue order (later calls add the spans of later commands).
  std::vector<std::vector<const rp::sim::StreamSpan *>> byQueue(queues_.size());
  for (const rp::sim::StreamSpan &d : done)
    byQueue[static_cast<size_t>(d.queue)].push_back(&d);
  for (size_t i = 0; i < queues_.size(); ++i) {
    QueueOps &q = *queues_[i];
    if (byQueue[i].empty())
      continue;
    if (q.track == 0)
      q.track = trace_->track(q.lane == Lane::NodeLink ? std::string("node link")
                              : q.device == -2       ? std::string("host weights writer")
                              : q.device < 0 ? std::string("host optimizer")
                                             : "gpu" + std::to_string(q.device) + " " +
                                                   queueName(static_cast<Queue>(q.lane)));
    std::sort(
        byQueue[i].begin(), byQueue[i].end(),
        [](const rp::sim::StreamSpan *a, const rp::sim::StreamSpan *b) { return a->op < b->op; });
    size_t last = q.traced;
    for (const rp::sim::StreamSpan *d : byQueue[i]) {
      if (d->op < q.traced)
        continue;
      const Op &op = q.ops[d->op];
      TraceArgs args = {{"step", std::to_string(op.step)}};
      const TraceArgs call = callArgs(op);
      args.insert(args.end(), call.begin(), call.end());
      trace_->complete(q.track, op.label, op.category, d->startMs * 1000,
                       (d->endMs - d->startMs) * 1000, std::move(args));
      last = d->op + 1;
    }
    q.traced = last;
  }
}

rp::sim::Timeline SimBackend::timeline() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<rp::sim::StreamSpan> done = rp::sim::simulateStreams(streamGraph());
  traceSpans(done); // spans in queue order: the order of `done` does not matter
  return timelineOf(std::move(done));
}

} // namespace rp::runtime
