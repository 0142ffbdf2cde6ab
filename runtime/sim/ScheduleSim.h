//===- ScheduleSim.h - Discrete-event engine over a task graph --*- C++ -*-===//
//
// The engine under every simulated schedule: a task graph whose tasks run on the
// resources of N virtual GPUs and the host, each resource an in-order queue like a CUDA stream
// or the CPU optimizer thread. A task starts when
//
//   start = max(its queue's previous task has ended,            (in-order queue)
//               the shared uplink it uses is free,              (first come, first served)
//               every lead dependency has ended (+ latency),
//               every dependency has ended (+ latency) - leadMs)
//
// and ends at start + durationMs. The first leadMs of a task is work that needs only the lead
// dependencies (a backward stage's recomputation needs the saved stage input, not the output
// gradient): it is placed as late as possible, right before the part that waits for the
// dependencies (the artifact's model of recomputation, pp-simulate/simulator.py
// _simulate_roundpipe: "recompute is placed right before [the backward]").
//
// Tasks are committed in order of their start times (ties: device, lane, then id), so start
// times are non-decreasing in commit order and a shared uplink serves transfers in the order
// they become ready. The result is deterministic.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_SCHEDULESIM_H
#define RP_RUNTIME_SIM_SCHEDULESIM_H

#include "base/Status.h"
#include "runtime/sim/Timeline.h"

#include <string>
#include <vector>

namespace rp::sim {

/// "Task `task` must have ended `latencyMs` before".
struct Dep {
  int task = 0;
  double latencyMs = 0; ///< >= 0.
};

/// One unit of work on one in-order queue.
struct SimTask {
  int device = 0;            ///< In [0, N); -1 with Lane::Host and Lane::NodeLink.
  Lane lane = Lane::Compute; ///< The queue: (device, lane).
  double durationMs = 0;     ///< >= 0, lead included.
  double leadMs = 0;         ///< In [0, durationMs]: the part that may run before `deps` end.
  std::vector<Dep> deps;     ///< Gate the part after the lead.
  std::vector<Dep> leadDeps; ///< Gate the whole task (its start).
  /// A shared host uplink the task also occupies for its whole duration (-1 = none). Uplinks
  /// are numbered by the graph's builder (e.g. 0 = host-to-device, 1 = device-to-host).
  int uplink = -1;
  std::string label;         ///< Span label of the part after the lead.
  std::string category;      ///< Span category of the part after the lead.
  std::string leadLabel;     ///< Span label of the lead part.
  std::string leadCategory;  ///< Span category of the lead part.
  int step = 0;              ///< Iteration, copied to the spans.
};

/// Tasks in the order they join their queues: a queue runs its tasks in the order they were
/// added, whatever their ids in other queues.
class TaskGraph {
public:
  /// Appends `task` to the end of its queue; returns its id (0, 1, ...).
  int add(SimTask task);
  SimTask &task(int id) { return tasks_[static_cast<size_t>(id)]; }
  const SimTask &task(int id) const { return tasks_[static_cast<size_t>(id)]; }
  int size() const { return static_cast<int>(tasks_.size()); }

private:
  std::vector<SimTask> tasks_;
};

/// Start and end time of every task (ms, indexed by id) and the spans.
struct SimResult {
  std::vector<double> startMs; ///< Start of the task (of its lead when it has one).
  std::vector<double> endMs;
  Timeline timeline;           ///< One span per non-empty part (lead, rest) of each task.
};

/// Runs the graph on `numDevices` virtual GPUs. `schedule` names the timeline.
/// Errors (InvalidArgument): a task on a device outside [0, numDevices) (or a Host task with
/// device != -1), a negative duration or latency, leadMs outside [0, durationMs], a dependency
/// on an unknown task or on itself. Internal: a deadlock (a cycle through dependencies and
/// queue order), naming the queue heads that wait.
base::StatusOr<SimResult> simulate(const TaskGraph &graph, int numDevices,
                                      const std::string &schedule);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_SCHEDULESIM_H
