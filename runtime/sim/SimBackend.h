//===- SimBackend.h - The executor's devices on a virtual clock -*- C++ -*-===//
//
// The simulator backend (runtime/exec/Backend.h): N virtual GPUs driven by the
// same executor as the real backends (same dispatch, same events, same transfer order), on a
// virtual clock in milliseconds. No kernel runs and no byte is copied (device arenas are not
// allocated, host pointers are never read or written); the executor's host optimizer still
// runs on the host buffers, and reports each piece of its work with Backend::hostWork().
//
// How it works. Every command is appended, in the caller's program order, to one of
// N x 4 device queues or to the queue of the host thread that issued it (signal, hostWait,
// hostWork): the run is recorded as a graph of in-order queues joined by events. Two passes
// read that graph:
//
//  - live: an event is *resolved* once everything its time depends on has been issued (a
//    recorded event: every earlier command of its queue, and every event those wait for; a
//    host event: its signal()). hostWait(e) blocks, on a condition variable, until e is
//    resolved (e.g. while its queue waits behind an optimizer signal not yet given), then
//    returns; finish() blocks until every device queue is resolved.
//  - virtual time (timeline()): a discrete-event simulation of the whole graph in virtual
//    time order (runtime/sim/StreamEngine.h, which also models the copy links). A command
//    starts when its queue is free and the events it waits for have completed; a device
//    command also not before the issuing host thread's virtual time (its clock advances only
//    through hostWait and hostWork), so the dispatcher blocking on a loss delays the work it
//    issues afterwards exactly as on real hardware. Recorded events complete when their queue
//    reaches them, host events at the signalling thread's clock. Virtual times depend only on
//    each thread's program order, never on real thread timing: the simulation is deterministic.
//
// Costs (all per command; GB/s = 1e9 bytes/s, so bytes / (GB/s x 1e6) = ms):
//  - call: the layer profile (--profile, runtime/partition/Profile.h), charged as the
//    partitioner's cost model charges the stage (CostModel.h): every layer's forward work once
//    (fwd_ms in forward and fused stages, recompute_ms in backward stages), to the call of its
//    forward function when the stage body calls it, else to its backward function; bwd_ms to
//    the backward function (the fused tail function gets fwd_ms + bwd_ms of the tail). So a
//    stage costs exactly CostModel::computeMs(kind, begin, end). Without a profile, a roofline
//    over the function's instructions (Roofline.h): per instruction max(flops / (peak x
//    efficiency), bytes / HBM bandwidth), flops = instructionFlops of
//    runtime/plan/Instruction.h (the FLOP rules of kernels/FlopRules.h, as the plan report
//    counts them), bytes = operand + result bytes (reshape: a view, 0).
//  - accumulate: (dtype + 8) bytes per element / HBM bandwidth (roofline); 0 with a profile
//    (its bwd_ms includes autograd's gradient accumulation).
//  - copies: per device one host-to-device and one device-to-host link of `linkGbps` (PCIe is
//    full duplex). The two upload queues share the device's H2D link first come, first
//    served, without preemption (a copy engine; ties: activations first), which is what the
//    executor's chunked weight prefetch is built for. With a profile that gives comm_ms, a
//    boundary activation or cotangent copy takes comm_ms / 2, so that an uncontended hop
//    (download, then upload) costs comm_ms, the artifact's "comm per hop" (as the schedule
//    simulator, docs/SIMULATOR.md); the buffer is recognised by the executor's copy label,
//    which ends with the host buffer's name. Other copies take bytes / link. Optional shared
//    host uplinks: groups of `devicesPerUplink` devices (0: all) share `hostUplinkGbps` per
//    direction, fair share among the transfers in flight (each at min(link, uplink / n)).
//  - node link (config.nodes, R > 1 nodes; runtime/sim/NodeModel.h): one more in-order queue,
//    lane NodeLink. When the optimizer reports a layer's AdamW, the reduction of the layer's
//    fp32 gradient (its trainable fp32 bytes, reductionMs) joins that queue, waiting for the
//    gradient downloads the optimizer thread waited for since its previous AdamW (the events
//    recorded on a Download queue right after a gradient copy) and, without
//    config.nodes.commThread (rp-run reduces on a thread of its own), for the optimizer thread
//    itself (layer l + 1's reduction starts after layer l's AdamW); the AdamW then waits for
//    its reduction. Reductions run one at a time in the optimizer's layer order.
//  - host work: AdamW of a layer = its trainable fp32 bytes / `adamwGbps`; writing its compute
//    weights = compute-dtype bytes / `hostCopyGbps`; the clipping norm = every trainable fp32
//    byte / `hostCopyGbps`. `optimizerMs` (when set) replaces them: AdamW of every trainable
//    layer takes optimizerMs, the rest 0.
//
// Timeline (runtime/sim/Timeline.h): one span per command (device queues: lanes Compute,
// ActivationUpload, WeightUpload, Download; host work: lane Host, device -1), category
// forward / backward / fused (calls and accumulations, by the stage's kind), weights,
// activations (activation uploads and downloads, losses included), gradients, optimizer,
// reduction (node link: lane NodeLink, device -1); step
// = the executor's iteration (its labels' " s<step>"). timeline() also forwards the spans to
// the TraceRecorder given with setTrace(), once (virtual milliseconds as trace microseconds x
// 1000), each with its "step"; a call costed by the roofline also with its "function", its
// "flops" and its "instruction_flops" (runtime/plan/PlanReport.h, formatInstructionFlops: the
// FLOPs the roofline charged, per instruction, as the plan report's JSON lists them).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_SIMBACKEND_H
#define RP_RUNTIME_SIM_SIMBACKEND_H

#include "runtime/exec/Backend.h"
#include "runtime/partition/Profile.h"
#include "runtime/sim/NodeModel.h"
#include "runtime/sim/Roofline.h"
#include "runtime/sim/StreamEngine.h"
#include "runtime/sim/Timeline.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace rp::runtime {

/// The simulated machine and its costs (see the file comment for how each is used).
struct SimConfig {
  int devices = 1;                  ///< N virtual GPUs (>= 1).
  rp::partition::TargetSpec target; ///< The GPU (defaultSimTarget() when name is empty).
  /// Per-layer costs; when absent, the roofline of the plan's instructions on `target`.
  std::optional<rp::partition::Profile> profile;
  double linkGbps = 0;        ///< Host<->device link per device per direction, GB/s; 0: target's.
  double hostUplinkGbps = 0;  ///< Shared host uplink per direction, GB/s; 0: none.
  int devicesPerUplink = 0;   ///< Devices sharing one uplink (0: all).
  std::optional<double> optimizerMs; ///< Host AdamW time per trainable layer, ms.
  double adamwGbps = 8;       ///< Host AdamW throughput, GB/s of fp32 params (2e9 params/s).
  double hostCopyGbps = 10;   ///< Host weight-copy / norm throughput, GB/s.
  double computeEfficiency = 0.5; ///< Fraction of peak_tflops a matmul reaches (roofline).
  /// Data parallelism over R nodes (runtime/sim/NodeModel.h): every node runs this plan, and
  /// each layer's AdamW first waits for the reduction of its fp32 gradient over the node link.
  rp::sim::NodeLink nodes;
};

/// The default target: an RTX 4090 as the partitioner assumes it (passes/Schedule/PartitionStages.cpp):
/// 165 dense bf16 TFLOP/s, 1008 GB/s HBM, 25 GB/s PCIe per direction, 24 GiB.
rp::partition::TargetSpec defaultSimTarget();

/// Checks a configuration (devices >= 1, positive finite bandwidths, a target with peak and
/// HBM bandwidth when there is no profile, ...). Errors: InvalidArgument naming the field.
Status validateSimConfig(const SimConfig &config);

class SimBackend final : public Backend {
public:
  /// `config` must pass validateSimConfig (prepare() reports it otherwise).
  explicit SimBackend(SimConfig config);
  ~SimBackend() override;

  std::string name() const override { return "sim"; }
  int numDevices() const override { return config_.devices; }
  /// Computes every call's cost. Errors (InvalidArgument): a bad configuration, a profile
  /// whose layer count differs from the plan's, an instruction the roofline cannot cost.
  Status prepare(const rp::plan::Plan &plan) override;
  void copyToDevice(int device, Queue queue, const void *src, int64_t dst, int64_t bytes,
                    std::string label) override;
  void copyToHost(int device, Queue queue, int64_t src, void *dst, int64_t bytes,
                  std::string label) override;
  /// The simulated nodes (SimConfig::nodes), whose reductions precede each layer's AdamW.
  int modeledRanks() const override { return config_.nodes.nodes; }
  void downloadGradients(int device, int64_t src, void *dst, int64_t bytes,
                         std::vector<GradientRange> ranges, GradientCheck *check,
                         std::string label) override;
  void call(int device, CallFrame frame, std::string label) override;
  void accumulate(int device, int64_t dst, int64_t src, int64_t elements, DType dtype, bool first,
                  std::string label) override;
  Event newEvent() override;
  void record(int device, Queue queue, const Event &event) override;
  void wait(int device, Queue queue, const Event &event) override;
  void signal(const Event &event) override;
  Status hostWait(const Event &event) override;
  void hostWork(HostTask task, int64_t step, int layer) override;
  void fail(Status status) override;
  Status finish() override;
  void setTrace(TraceRecorder *trace) override { trace_ = trace; }

  /// Simulates everything issued so far (call after finish(): commands still blocked on
  /// events that were never resolved are left out) and returns the spans, sorted by
  /// (lane, device, start). Forwards new spans to the trace recorder. Deterministic.
  rp::sim::Timeline timeline();

  /// Modelled cost of one call of `function` in `stage` (after prepare()), ms.
  double callMs(int stage, int function) const;

  /// Trace arguments of a span, (name, value) in order.
  using TraceArgs = std::vector<std::pair<std::string, std::string>>;

private:
  struct SimEvent;
  struct Op;
  struct QueueOps;

  /// The trace arguments of `op` beyond its step: a roofline-costed call's function, FLOPs
  /// and instructions' FLOPs; none for any other op.
  TraceArgs callArgs(const Op &op) const;

  int hostQueue(); // the calling thread's host queue (created on first use); lock held
  void push(int queue, Op op);
  /// Nothing pushed on queue `after` from now on starts before everything pushed so far on
  /// queue `before` has finished: a fresh event recorded on `before`, waited on by `after`.
  /// Lock held.
  void pushOrdering(int before, int after);
  void issueDevice(int device, Queue queue, Op op);
  /// The bytes a copy labelled `label` is charged: half a hop for a boundary activation when the
  /// profile gives comm_ms, else `bytes`.
  double hopBytes(const std::string &label, double bytes) const;
  /// Issues a copy of `bytes` on (device, queue) with span `category` ("weights",
  /// "activations", "gradients"); activations are charged hopBytes().
  void issueCopy(int device, Queue queue, int64_t bytes, std::string label, const char *category);
  void resolve(int queue); // live pass from `queue`, lock held
  double copyMs(int64_t bytes) const;
  // timeline(), lock held: the recorded queues as the engine's input, the engine's spans as a
  // Timeline (sorted by lane, device, start), and the spans not yet traced to the recorder.
  rp::sim::StreamGraph streamGraph() const;
  rp::sim::Timeline timelineOf(std::vector<rp::sim::StreamSpan> done) const;
  void traceSpans(const std::vector<rp::sim::StreamSpan> &done);

  /// With R > 1 nodes: layer `layer`'s gradient reduction on the node-link queue after the
  /// gradients `thread` waited for; the AdamW op the caller pushes next waits for it. Lock held.
  void issueReduction(QueueOps &thread, int threadIndex, int64_t step, int layer);

  SimConfig config_;
  int nodeQueue_ = -1; // the node link's queue (R > 1), after the device queues
  const rp::plan::Plan *plan_ = nullptr;
  TraceRecorder *trace_ = nullptr;
  std::map<std::pair<int, int>, double> callMs_; // (stage, function) -> ms
  // Roofline costs (no profile): per plan function, the trace arguments of its calls.
  std::vector<TraceArgs> callTraceArgs_;
  std::vector<int> deviceStage_;                 // the last called stage per device
  std::vector<int64_t> layerTrainableBytes_;     // fp32 bytes per layer
  std::vector<int64_t> layerComputeBytes_;       // compute-dtype trainable bytes per layer
  int64_t trainableBytes_ = 0;
  std::vector<bool> hopBuffer_; // host buffers charged comm_ms (activations, cotangents)

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<QueueOps>> queues_; // device * kNumQueues + queue, then hosts
  std::map<std::thread::id, int> hostQueues_;
  int64_t nextEvent_ = 0;
  Status status_;
  bool failed_ = false;
  size_t traced_ = 0; // spans already forwarded to the trace
};

} // namespace rp::runtime

#endif // RP_RUNTIME_SIM_SIMBACKEND_H
