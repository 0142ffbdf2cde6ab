//===- Simulate.h - rp-run simulate: a plan or a profile on N virtual GPUs -*- C++ -*-===//
//
// What `rp-run simulate` does (old spelling: `rp-run --backend sim`; docs/SIMULATOR.md, "The
// simulator backend"):
//
//  plan mode      rp-run simulate MODEL.rpplan [--gpus N] [--steps K] [--profile F]
//                 The executor (runtime/exec/Executor.h) runs K iterations of the compiled plan
//                 on the simulator backend (runtime/sim/SimBackend.h): the same dispatch,
//                 events and transfer order as a real run, on a virtual clock. No weights file
//                 and no data are needed (the input records stay zero; no kernel reads them).
//  profile mode   rp-run simulate --profile F --gpus N --micro-batches M [--update U]
//                 No plan: the schedule simulator (runtime/sim/Compare.h) replays RoundPipe on
//                 the layer profile, as the published measurements are given.
//
// Both print the step time, per-device busy and idle time, the bubble and the exposed transfer
// share (runtime/sim/Timeline.h, computeStats), and can write the Chrome trace and an SVG Gantt
// chart of the simulated run. `--compare` adds the table of the baseline schedules on the same
// costs (formatCompareTable); in plan mode it includes the executor-driven RoundPipe row.
//
// Data parallelism across nodes (--nodes R --node-link-gbps B [--node-link-latency-us L]
// [--node-reduction chain|allgather|ring] [--node-reduce-on-optimizer], runtime/sim/NodeModel.h): every node runs the same schedule,
// so one is simulated, with each layer's gradient reduced over the node link before its host
// AdamW. Both modes then also simulate one node on the same costs and print the node link's
// busy time, the exposed communication (step of R nodes - step of one) and the scaling
// efficiency (tokens/s of R nodes / (R x tokens/s of one) = one node's step / R nodes' step).
//
// Plan mode's step time is the steady state: the end of iteration K's last device command minus
// the end of iteration K-1's (K = 1: the end of the only one); its per-device numbers, bubble
// and exposed transfer are measured in that window [end of K-1, end of K].
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_SIMULATE_H
#define RP_RUNTIME_SIM_SIMULATE_H

#include "base/Status.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace rp::runtime {

struct SimulateOptions {
  std::string planPath;      ///< The plan; empty: profile mode (needs profilePath).
  std::string profilePath;   ///< Layer profile JSON (runtime/partition/Profile.h); optional
                             ///< with a plan (default: the roofline of its instructions).
  std::string target;        ///< A target JSON file or the flag form "name=..,pcie_gbps=..";
                             ///< empty: an RTX 4090 (defaultSimTarget()).
  int gpus = 0;              ///< N; 0: the plan's (required in profile mode).
  int64_t microBatches = 0;  ///< M; required in profile mode; with a plan: its M or 0.
  std::string update;        ///< "sync" | "async"; with a plan: its mode or empty. Default sync.
  int64_t steps = 3;         ///< Iterations the executor runs (plan mode), >= 1.
  double linkGbps = 0;       ///< Per device per direction, GB/s; 0: the target's pcie_gbps.
  double hostUplinkGbps = 0; ///< Shared host uplink per direction, GB/s; 0: none.
  std::optional<double> optimizerMs; ///< Host AdamW ms per trainable layer.
  std::optional<double> adamwGbps;   ///< Host AdamW throughput (default 8 GB/s of fp32 params).
  /// R nodes in data parallelism; unset: one node, and the other node flags are refused.
  std::optional<int> nodes;
  /// Node link per node per direction, GB/s (1e9 bytes/s) as every bandwidth here; required
  /// when nodes > 1.
  std::optional<double> nodeLinkGbps;
  /// The report and the messages give the node link in Gb/s (gigabits), the unit of
  /// `--node-link-gbps` in rp-run's old spelling (`--backend sim`); nodeLinkGbps stays GB/s.
  bool nodeLinkInGigabits = false;
  std::optional<double> nodeLinkLatencyUs; ///< Per message, microseconds; default 0.
  std::string nodeReduction; ///< "chain" (default) | "allgather" | "ring"; "": not given.
  bool nodeReduceOnOptimizer = false; ///< Reductions on the optimizer thread, not their own.
  bool compare = false;      ///< Also print the comparison with the baseline schedules.
  std::string tracePath;     ///< Chrome trace of the simulated run ("": none).
  std::string ganttPath;     ///< SVG Gantt chart of the simulated run ("": none).
};

/// Runs the simulation of `options` and prints its report to `out`. Errors: InvalidArgument /
/// NotFound / DataLoss for bad input (plan, profile, target, flags: checked before anything is
/// written), Unavailable when an output file cannot be written, Internal for a failure of the
/// simulated run.
Status simulate(const SimulateOptions &options, std::FILE *out);

} // namespace rp::runtime

#endif // RP_RUNTIME_SIM_SIMULATE_H
