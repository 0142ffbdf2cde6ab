//===- Compare.h - RoundPipe against the usual pipeline schedules -*- C++ -*-===//
//
// The schedule comparison: one layer profile (the partitioner's format,
// runtime/partition/Profile.h), N GPUs and M micro-batches are turned into the task graph of
// each schedule (runtime/sim/Baselines.h), run on the discrete-event engine
// (runtime/sim/ScheduleSim.h), and measured the same way (runtime/sim/Timeline.h,
// computeStats). The model of every schedule, the bubble definitions and where we differ from
// the authors' simulator (ITcarrot/RoundPipe-artifact, pp-simulate/simulator.py) are in
// docs/SIMULATOR.md.
//
//   CompareOptions opts;  opts.gpus = 8;  opts.microBatches = 16;
//   RP_ASSIGN_OR_RETURN(auto results, compareSchedules(profile, opts));
//   std::cout << formatCompareTable(results);
//
// Schedules (scheduleNames(), in table order):
//   gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, mobius, roundpipe-sync, roundpipe-async
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_COMPARE_H
#define RP_RUNTIME_SIM_COMPARE_H

#include "base/Status.h"
#include "runtime/partition/Profile.h"
#include "runtime/sim/NodeModel.h"
#include "runtime/sim/Timeline.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rp::sim {

/// Knobs shared by every schedule of a comparison.
struct CompareOptions {
  int gpus = 8;          ///< N >= 1.
  int microBatches = 16; ///< M >= 1 per iteration.
  /// v, virtual stages per GPU of interleaved-1f1b, looped-bfs and mobius. 0 = the artifact's
  /// rule: floor(U / N) with U the layer units (docs/SIMULATOR.md, "Layer split"), at least 1.
  int chunks = 0;
  /// Host<->device bandwidth of each GPU's link, per direction, GB/s (1 GB = 1e9 bytes).
  /// Times the byte counts of the profile: weights, weight gradients, and boundary activations
  /// when the profile has no comm_ms. > 0. Default: the RTX 4090 target of the cost model.
  double linkGbps = 25.0;
  /// Bandwidth of a host uplink shared by all GPUs, per direction, GB/s; 0 = not shared (each
  /// GPU's link is independent). When > 0 every host<->device transfer also occupies the
  /// shared uplink of its direction (first come, first served) at min(link, uplink) speed.
  double hostUplinkGbps = 0;
  /// CPU optimizer (AdamW) time per layer, ms, for the schedules whose optimizer runs on the
  /// host (roundpipe-*, mobius): runs on the host lane once the layer's gradients are on the
  /// host. Exposed in roundpipe-sync and mobius, overlapped with the next iteration in
  /// roundpipe-async. >= 0.
  double optimizerMsPerLayer = 0;
  /// zb-h1: the fraction of a layer's backward that computes weight gradients (W); the rest
  /// (with the recomputation) is the input-gradient pass B. In (0, 1). Default 1/2: the GEMM
  /// FLOPs of dX and dW are equal (docs/SIMULATOR.md).
  double zbWeightGradFraction = 0.5;
  /// RoundPipe: micro-batches per dispatch round. 0 = the artifact's rounds of at most N
  /// micro-batches (each round dispatches every stage once, the next round starts on the
  /// least loaded GPU); M = one job per stage over all M micro-batches (rpc's executor).
  int roundMicroBatches = 0;
  /// RoundPipe's stage sizes (layers per stage). Empty = partition the profile: the stage
  /// counts of rp::partition's RoundPipe partitioner, layers balanced evenly over them
  /// (docs/SIMULATOR.md). forward: ascending from layer 0; backward: dispatch order, the fused
  /// tail first (it must hold the tail layer; 1 = the tail alone).
  std::vector<int> roundPipeForward;
  std::vector<int> roundPipeBackward;
  /// GPU memory, bytes, for the RoundPipe partitioner's memory limit (0.6 x, halved per stage).
  uint64_t gpuMemoryBytes = 25757220864ull; ///< RTX 4090 (24 GiB).
  /// Data parallelism over R nodes (runtime/sim/NodeModel.h): roundpipe-sync reduces each
  /// trainable layer's fp32 gradient (2 x trainable_bytes) over the node link before its host
  /// AdamW; roundpipe-async's step is at least the link's busy time per step plus the host
  /// AdamW's (max of the two with nodes.commThread, the default). The other
  /// schedules do not model nodes: compareSchedules() refuses nodes > 1.
  NodeLink nodes;
};

/// One simulated schedule.
struct ScheduleResult {
  std::string name;        ///< One of scheduleNames().
  std::string description; ///< Stage layout, e.g. "8 stages: 3,3,4,4,4,4,4,2+tail".
  Timeline timeline;       ///< One iteration.
  TimelineStats stats;     ///< computeStats(timeline).
  /// The step time compared, ms: stats.makespanMs; for roundpipe-async the steady-state step
  /// (N * makespan - fill - drain) / N, since consecutive iterations overlap fill and drain.
  double stepMs = 0;
  /// The bubble compared, %: stats.bubblePercent; for roundpipe-async
  /// stats.steadyBubblePercent (the artifact's "switch + intra-iteration idle").
  double bubblePercent = 0;
};

/// The schedule names, in table order.
const std::vector<std::string> &scheduleNames();

/// Simulates one schedule (`name` from scheduleNames()). Errors (InvalidArgument): an unknown
/// name (listing the known ones), an invalid profile (partition::validateProfile), a profile
/// with fewer than 2 layers (a block and the tail), bad options (gpus or microBatches < 1,
/// chunks < 0, linkGbps <= 0, negative uplink or optimizer time, zbWeightGradFraction outside
/// (0, 1), validateNodeLink), nodes > 1 for a schedule other than roundpipe-*, RoundPipe stage sizes that do not cover the layers, and the partitioner's errors.
base::StatusOr<ScheduleResult> simulateSchedule(const std::string &name,
                                                   const partition::Profile &profile,
                                                   const CompareOptions &options);

/// Simulates every schedule of scheduleNames() (errors as simulateSchedule; InvalidArgument
/// with options.nodes.nodes > 1: only RoundPipe models the node link).
base::StatusOr<std::vector<ScheduleResult>>
compareSchedules(const partition::Profile &profile, const CompareOptions &options);

/// A fixed-width text table, one row per result in the given order:
///
///   schedule          step (ms)  bubble %  RP-sync speedup  RP-async speedup
///   gpipe               2896.9     36.1          1.27x            1.52x
///   ...
///
/// Speedup of RoundPipe over a schedule = that schedule's stepMs / RoundPipe's stepMs; the
/// columns read "-" when the results hold no roundpipe-sync / roundpipe-async row.
std::string formatCompareTable(const std::vector<ScheduleResult> &results);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_COMPARE_H
