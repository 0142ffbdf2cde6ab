//===- Timeline.h - A simulated run: spans on virtual time ------*- C++ -*-===//
//
// What the simulator produces: every busy interval of every resource of N virtual
// GPUs (compute, the two upload queues, the download queue) and of the host (the optimizer),
// on one virtual clock in milliseconds from the start of the simulated run. Both producers
// fill it: the schedule simulator of the baselines and the profile replay (runtime/sim/), and
// the simulator backend that the executor drives through a compiled plan
// (runtime/sim/). The statistics, the Chrome trace and the SVG Gantt chart are
// computed from it alone, so every schedule is measured the same way.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_TIMELINE_H
#define RP_RUNTIME_SIM_TIMELINE_H

#include "base/Status.h"

#include <string>
#include <utility>
#include <vector>

namespace rp::sim {

/// The resource a span occupies. Device lanes mirror runtime::Queue (runtime/exec/Backend.h);
/// Host is a host thread: device -1 the CPU optimizer, -2 the executor's weights writer
/// (async updates), each its own row. NodeLink (device -1) is the link between nodes in data
/// parallelism (runtime/sim/NodeModel.h): one span per layer's gradient reduction.
enum class Lane {
  Compute = 0,
  ActivationUpload = 1,
  WeightUpload = 2,
  Download = 3,
  Host = 4,
  NodeLink = 5
};

/// "compute", "h2d activations", "h2d weights", "d2h", "host", "node link".
const char *laneName(Lane lane);

/// One busy interval of one resource.
struct Span {
  int device = 0;          ///< Virtual GPU index in [0, numDevices); Lane::Host: -1 or -2;
                           ///< Lane::NodeLink: -1.
  Lane lane = Lane::Compute;
  double startMs = 0;      ///< Virtual time, ms from the start of the run.
  double endMs = 0;        ///< >= startMs.
  std::string label;       ///< e.g. "F3 mb2", "B0 mb1", "W stage 4", "adamw layer 7".
  std::string category;    ///< "forward", "backward", "fused", "weights", "activations",
                           ///< "gradients", "optimizer", "reduction".
  int step = 0;            ///< Training iteration the span belongs to (0-based).
  /// More arguments for the Chrome trace (a call the simulator backend's roofline costed: its
  /// "function", "flops" and "instruction_flops", SimBackend.h); usually none.
  std::vector<std::pair<std::string, std::string>> args;
};

/// A simulated run of one schedule.
struct Timeline {
  std::string schedule;    ///< "roundpipe-sync", "1f1b", ... (names the run in outputs).
  int numDevices = 0;
  std::vector<Span> spans; ///< In any order.
};

/// What one virtual GPU did during a run (computeStats). All times in ms of the virtual clock.
struct DeviceStats {
  double computeBusyMs = 0;    ///< Length of the union of the device's Compute spans.
  double computeIdleMs = 0;    ///< makespanMs - computeBusyMs.
  double transferBusyMs = 0;   ///< Length of the union of its three transfer lanes' spans.
  /// Time in [0, makespan) when the device's Compute lane is idle while at least one of its
  /// transfer lanes (ActivationUpload, WeightUpload, Download) is busy.
  double exposedTransferMs = 0;
  double fillMs = 0;           ///< Idle before its first Compute span (makespan when none).
  double drainMs = 0;          ///< Idle after its last Compute span (0 when none).
};

/// Statistics of a Timeline (computeStats). N = Timeline::numDevices.
///
/// Definitions (docs/SIMULATOR.md; the bubble follows the artifact's pp-simulate/simulator.py,
/// compute_bubble_stats and compute_bubble_breakdown):
///   makespan   = the latest end of any span (devices and host); the run starts at 0.
///   bubble %   = 100 * sum over devices of computeIdleMs / (N * makespan).
///   fill/drain = per device, the idle before its first / after its last compute span.
///   steady %   = 100 * (idle - fill - drain) / (N * makespan): the artifact's "switch + intra"
///                bubble, i.e. what remains when consecutive iterations overlap fill and drain
///                (its "RoundPipe" = async row).
///   exposed transfer % = 100 * sum of exposedTransferMs / (N * makespan).
struct TimelineStats {
  double makespanMs = 0;
  int numSteps = 1;            ///< 1 + the largest Span::step.
  double stepMs = 0;           ///< makespanMs / numSteps.
  std::vector<DeviceStats> devices; ///< Indexed by device, size N.
  double computeBusyMs = 0;    ///< Sum over devices.
  double computeIdleMs = 0;    ///< Sum over devices.
  double fillMs = 0;           ///< Sum over devices.
  double drainMs = 0;          ///< Sum over devices.
  double exposedTransferMs = 0;///< Sum over devices.
  double hostBusyMs = 0;       ///< Union of the Host lane's spans.
  double nodeLinkBusyMs = 0;   ///< Union of the NodeLink lane's spans (gradient reductions).
  double bubblePercent = 0;
  double steadyBubblePercent = 0;
  double exposedTransferPercent = 0;
};

/// Computes the statistics above. Spans of devices outside [0, numDevices) (other than the
/// Host and NodeLink lanes) are ignored; zero-length spans count for nothing. An empty timeline gives zeros.
TimelineStats computeStats(const Timeline &timeline);

/// Writes the timeline in the Chrome trace event format (runtime/trace/Trace.h; opens in
/// ui.perfetto.dev and chrome://tracing): one track per device lane that has spans ("device 0
/// compute", "device 0 h2d activations", ...) in device then lane order, then "host", "host
/// weights writer" and "node link"; each span
/// is a complete event named by its label, its category as "cat", times in microseconds of the
/// virtual clock, args step and device. Written atomically. Errors: Unavailable when the file
/// cannot be written (naming the path).
base::Status writeChromeTrace(const Timeline &timeline, const std::string &path);

/// Writes a self-contained SVG Gantt chart: a title (schedule name, makespan, bubble %), one row
/// per device lane that has spans (plus the host and node-link rows when they have spans), rectangles colored by
/// category with the label as a tooltip (<title>), a time axis in ms with gridlines, and a
/// legend of the categories present. Written atomically (base/AtomicFile.h).
/// Errors: Unavailable / Internal when the file cannot be written (naming the path).
base::Status writeSvgGantt(const Timeline &timeline, const std::string &path);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_TIMELINE_H
