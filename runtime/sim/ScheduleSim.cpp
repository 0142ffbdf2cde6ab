//===- ScheduleSim.cpp - Discrete-event engine over a task graph ----------===//
//
// List scheduling in time order: the candidates are the heads of the queues whose
// dependencies have all been committed; the one with the earliest start is committed next.
// A start never precedes an earlier commit's start (a task becomes a candidate only after its
// dependencies and its queue predecessor are committed, and starts after they end), which
// makes this a discrete-event simulation and serves shared uplinks first come, first served.
// O(T * Q) for T tasks and Q queues: a few thousand tasks, tens of queues.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/ScheduleSim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace rp::sim {

using base::internal;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

int TaskGraph::add(SimTask task) {
  tasks_.push_back(std::move(task));
  return static_cast<int>(tasks_.size()) - 1;
}

namespace {

std::string taskName(const SimTask &t, int id) {
  std::string name = "task " + std::to_string(id);
  if (!t.label.empty())
    name += " ('" + t.label + "')";
  return name;
}

Status checkDeps(const std::vector<Dep> &deps, int id, const SimTask &t, int size) {
  for (const Dep &d : deps) {
    if (d.task < 0 || d.task >= size || d.task == id)
      return invalidArgument(taskName(t, id) + ": dependency on " +
                             (d.task == id ? std::string("itself")
                                           : "unknown task " + std::to_string(d.task)));
    if (!(d.latencyMs >= 0) || !std::isfinite(d.latencyMs))
      return invalidArgument(taskName(t, id) + ": negative or non-finite latency");
  }
  return Status();
}

Status checkTask(const SimTask &t, int id, int size, int numDevices) {
  bool host = t.lane == Lane::Host || t.lane == Lane::NodeLink;
  if (host ? t.device != -1 : (t.device < 0 || t.device >= numDevices))
    return invalidArgument(taskName(t, id) + ": device " + std::to_string(t.device) +
                           " is not valid for lane '" + laneName(t.lane) + "' with " +
                           std::to_string(numDevices) + " devices");
  if (!(t.durationMs >= 0) || !std::isfinite(t.durationMs))
    return invalidArgument(taskName(t, id) + ": negative or non-finite duration");
  if (!(t.leadMs >= 0) || t.leadMs > t.durationMs)
    return invalidArgument(taskName(t, id) + ": lead must lie in [0, duration]");
  RP_RETURN_IF_ERROR(checkDeps(t.deps, id, t, size));
  RP_RETURN_IF_ERROR(checkDeps(t.leadDeps, id, t, size));
  if (t.uplink < -1)
    return invalidArgument(taskName(t, id) + ": uplink index must be >= -1");
  return Status();
}

/// The graph's tasks grouped into queues ordered by (device, lane), each in insertion order.
struct Queues {
  std::vector<std::vector<int>> ids;
  int numUplinks = 0;
};

/// Validates every task (errors as simulate()) and groups them into queues.
StatusOr<Queues> groupQueues(const TaskGraph &graph, int numDevices) {
  std::map<std::pair<int, int>, std::vector<int>> queueMap;
  Queues queues;
  for (int id = 0; id < graph.size(); ++id) {
    const SimTask &t = graph.task(id);
    RP_RETURN_IF_ERROR(checkTask(t, id, graph.size(), numDevices));
    queues.numUplinks = std::max(queues.numUplinks, t.uplink + 1);
    queueMap[{t.device, static_cast<int>(t.lane)}].push_back(id);
  }
  for (auto &[key, ids] : queueMap)
    queues.ids.push_back(std::move(ids));
  return queues;
}

/// Commits the queue heads in order of their earliest start (see the file comment), filling
/// the start and end of every task.
class ListScheduler {
public:
  ListScheduler(const TaskGraph &graph, Queues queues, SimResult &result)
      : graph_(graph), queues_(std::move(queues.ids)), result_(result), head_(queues_.size(), 0),
        queueFree_(queues_.size(), 0.0), uplinkFree_(static_cast<size_t>(queues.numUplinks), 0.0) {
    result_.startMs.assign(static_cast<size_t>(graph.size()), kUnset);
    result_.endMs.assign(static_cast<size_t>(graph.size()), kUnset);
  }

  /// Internal error on a deadlock.
  Status run(const std::string &schedule) {
    for (int committed = 0; committed < graph_.size(); ++committed) {
      double start = 0;
      const int q = pickQueue(start);
      if (q < 0)
        return internal("simulate '" + schedule +
                        "': deadlock; waiting queue heads: " + waitingHeads());
      commit(static_cast<size_t>(q), start);
    }
    return Status();
  }

private:
  static constexpr double kUnset = -1;

  /// Earliest start of task `id` (its queue head), or -1 while a dependency is uncommitted.
  double earliestStart(int id, double queueFreeMs) const {
    const SimTask &t = graph_.task(id);
    double start = queueFreeMs;
    if (t.uplink >= 0)
      start = std::max(start, uplinkFree_[static_cast<size_t>(t.uplink)]);
    for (const Dep &d : t.leadDeps) {
      double e = result_.endMs[static_cast<size_t>(d.task)];
      if (e < 0)
        return kUnset;
      start = std::max(start, e + d.latencyMs);
    }
    for (const Dep &d : t.deps) {
      double e = result_.endMs[static_cast<size_t>(d.task)];
      if (e < 0)
        return kUnset;
      start = std::max(start, e + d.latencyMs - t.leadMs);
    }
    return start;
  }

  /// The queue whose head can start first and that start, or -1 when no head can.
  int pickQueue(double &bestStart) const {
    int bestQueue = -1;
    for (size_t q = 0; q < queues_.size(); ++q) {
      if (head_[q] >= queues_[q].size())
        continue;
      double s = earliestStart(queues_[q][head_[q]], queueFree_[q]);
      if (s < 0)
        continue;
      // Queues are ordered by (device, lane), so the first minimum wins ties as documented.
      if (bestQueue < 0 || s < bestStart) {
        bestQueue = static_cast<int>(q);
        bestStart = s;
      }
    }
    return bestQueue;
  }

  /// "task 3 ('F0 mb1'), task 7" for the heads of the unfinished queues.
  std::string waitingHeads() const {
    std::string waiting;
    for (size_t q = 0; q < queues_.size(); ++q) {
      if (head_[q] >= queues_[q].size())
        continue;
      int id = queues_[q][head_[q]];
      if (!waiting.empty())
        waiting += ", ";
      waiting += taskName(graph_.task(id), id);
    }
    return waiting;
  }

  void commit(size_t q, double start) {
    int id = queues_[q][head_[q]];
    const SimTask &t = graph_.task(id);
    double end = start + t.durationMs;
    result_.startMs[static_cast<size_t>(id)] = start;
    result_.endMs[static_cast<size_t>(id)] = end;
    queueFree_[q] = end;
    if (t.uplink >= 0)
      uplinkFree_[static_cast<size_t>(t.uplink)] = end;
    ++head_[q];
  }

  const TaskGraph &graph_;
  const std::vector<std::vector<int>> queues_;
  SimResult &result_;
  std::vector<size_t> head_;
  std::vector<double> queueFree_;
  std::vector<double> uplinkFree_;
};

/// One span per non-empty part (lead, rest) of each task, in task order.
void fillTimeline(const TaskGraph &graph, SimResult &result) {
  for (int id = 0; id < graph.size(); ++id) {
    const SimTask &t = graph.task(id);
    double s = result.startMs[static_cast<size_t>(id)];
    double e = result.endMs[static_cast<size_t>(id)];
    if (t.leadMs > 0)
      result.timeline.spans.push_back(
          Span{t.device, t.lane, s, s + t.leadMs, t.leadLabel, t.leadCategory, t.step, {}});
    if (t.durationMs - t.leadMs > 0)
      result.timeline.spans.push_back(
          Span{t.device, t.lane, s + t.leadMs, e, t.label, t.category, t.step, {}});
  }
}

} // namespace

StatusOr<SimResult> simulate(const TaskGraph &graph, int numDevices, const std::string &schedule) {
  if (numDevices < 1)
    return invalidArgument("simulate: numDevices must be >= 1, got " + std::to_string(numDevices));
  RP_ASSIGN_OR_RETURN(Queues queues, groupQueues(graph, numDevices));
  SimResult result;
  RP_RETURN_IF_ERROR(ListScheduler(graph, std::move(queues), result).run(schedule));
  result.timeline.schedule = schedule;
  result.timeline.numDevices = numDevices;
  fillTimeline(graph, result);
  return result;
}

} // namespace rp::sim
