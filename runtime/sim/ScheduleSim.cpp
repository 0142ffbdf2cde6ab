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

using runtime::internal;
using runtime::invalidArgument;
using runtime::Status;
using runtime::StatusOr;

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

} // namespace

StatusOr<SimResult> simulate(const TaskGraph &graph, int numDevices, const std::string &schedule) {
  const int n = graph.size();
  if (numDevices < 1)
    return invalidArgument("simulate: numDevices must be >= 1, got " +
                           std::to_string(numDevices));

  // Validate and group tasks into queues keyed by (device, lane), in insertion order.
  std::map<std::pair<int, int>, std::vector<int>> queueMap;
  int numUplinks = 0;
  for (int id = 0; id < n; ++id) {
    const SimTask &t = graph.task(id);
    bool host = t.lane == Lane::Host;
    if (host ? t.device != -1 : (t.device < 0 || t.device >= numDevices))
      return invalidArgument(taskName(t, id) + ": device " + std::to_string(t.device) +
                             " is not valid for lane '" + laneName(t.lane) + "' with " +
                             std::to_string(numDevices) + " devices");
    if (!(t.durationMs >= 0) || !std::isfinite(t.durationMs))
      return invalidArgument(taskName(t, id) + ": negative or non-finite duration");
    if (!(t.leadMs >= 0) || t.leadMs > t.durationMs)
      return invalidArgument(taskName(t, id) + ": lead must lie in [0, duration]");
    RP_RETURN_IF_ERROR(checkDeps(t.deps, id, t, n));
    RP_RETURN_IF_ERROR(checkDeps(t.leadDeps, id, t, n));
    if (t.uplink < -1)
      return invalidArgument(taskName(t, id) + ": uplink index must be >= -1");
    numUplinks = std::max(numUplinks, t.uplink + 1);
    queueMap[{t.device, static_cast<int>(t.lane)}].push_back(id);
  }
  std::vector<std::vector<int>> queues;
  std::vector<std::pair<int, int>> queueKeys;
  for (auto &[key, ids] : queueMap) {
    queueKeys.push_back(key);
    queues.push_back(std::move(ids));
  }

  const double kUnset = -1;
  SimResult result;
  result.startMs.assign(static_cast<size_t>(n), kUnset);
  result.endMs.assign(static_cast<size_t>(n), kUnset);
  std::vector<size_t> head(queues.size(), 0);
  std::vector<double> queueFree(queues.size(), 0.0);
  std::vector<double> uplinkFree(static_cast<size_t>(numUplinks), 0.0);

  // Earliest start of task `id` (its queue head), or -1 while a dependency is uncommitted.
  auto earliestStart = [&](int id, double queueFreeMs) -> double {
    const SimTask &t = graph.task(id);
    double start = queueFreeMs;
    if (t.uplink >= 0)
      start = std::max(start, uplinkFree[static_cast<size_t>(t.uplink)]);
    for (const Dep &d : t.leadDeps) {
      double e = result.endMs[static_cast<size_t>(d.task)];
      if (e < 0)
        return kUnset;
      start = std::max(start, e + d.latencyMs);
    }
    for (const Dep &d : t.deps) {
      double e = result.endMs[static_cast<size_t>(d.task)];
      if (e < 0)
        return kUnset;
      start = std::max(start, e + d.latencyMs - t.leadMs);
    }
    return start;
  };

  for (int committed = 0; committed < n; ++committed) {
    int bestQueue = -1;
    double bestStart = 0;
    for (size_t q = 0; q < queues.size(); ++q) {
      if (head[q] >= queues[q].size())
        continue;
      double s = earliestStart(queues[q][head[q]], queueFree[q]);
      if (s < 0)
        continue;
      // Queues are ordered by (device, lane), so the first minimum wins ties as documented.
      if (bestQueue < 0 || s < bestStart) {
        bestQueue = static_cast<int>(q);
        bestStart = s;
      }
    }
    if (bestQueue < 0) {
      std::string waiting;
      for (size_t q = 0; q < queues.size(); ++q) {
        if (head[q] >= queues[q].size())
          continue;
        int id = queues[q][head[q]];
        if (!waiting.empty())
          waiting += ", ";
        waiting += taskName(graph.task(id), id);
      }
      return internal("simulate '" + schedule + "': deadlock; waiting queue heads: " + waiting);
    }
    size_t q = static_cast<size_t>(bestQueue);
    int id = queues[q][head[q]];
    const SimTask &t = graph.task(id);
    double end = bestStart + t.durationMs;
    result.startMs[static_cast<size_t>(id)] = bestStart;
    result.endMs[static_cast<size_t>(id)] = end;
    queueFree[q] = end;
    if (t.uplink >= 0)
      uplinkFree[static_cast<size_t>(t.uplink)] = end;
    ++head[q];
  }

  Timeline &tl = result.timeline;
  tl.schedule = schedule;
  tl.numDevices = numDevices;
  for (int id = 0; id < n; ++id) {
    const SimTask &t = graph.task(id);
    double s = result.startMs[static_cast<size_t>(id)];
    double e = result.endMs[static_cast<size_t>(id)];
    if (t.leadMs > 0)
      tl.spans.push_back(Span{t.device, t.lane, s, s + t.leadMs, t.leadLabel, t.leadCategory,
                              t.step});
    if (t.durationMs - t.leadMs > 0)
      tl.spans.push_back(Span{t.device, t.lane, s + t.leadMs, e, t.label, t.category, t.step});
  }
  return result;
}

} // namespace rp::sim
