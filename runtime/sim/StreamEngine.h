//===- StreamEngine.h - In-order streams and copy links on a virtual clock -*- C++ -*-===//
//
// The virtual-time engine of the simulator backend (runtime/sim/SimBackend.h): a discrete-event
// simulation of in-order queues (a GPU's CUDA streams, a host thread) joined by events, whose
// copies go over host<->device links that may share host uplinks.
//
// The model (times in ms, sizes in bytes, bandwidths in GB/s = 1e6 bytes per ms):
//  - A queue runs its ops in order, from time 0. Record(e) completes event e at the queue's
//    current time (the first record of e; later ones change nothing) and takes no time.
//    Wait(e) holds the queue until e has completed, and takes no time after that. Busy(ms)
//    occupies the queue for ms. Copy(bytes) asks the queue's link and occupies the queue from
//    the moment the link starts serving it until its last byte has crossed.
//  - A link serves one copy at a time, first come, first served, without preemption: when it
//    is free, the waiting copy that became ready first wins; ties go to the lower queue index.
//    A link is arbitrated only after every queue has progressed at the current time, so copies
//    that become ready at the same instant compete.
//  - A copy crosses at `linkGbps`; on a link that belongs to an uplink group, at
//    min(linkGbps, uplinkGbps / n) where n is the number of the group's links with a copy in
//    flight (a fair share of the uplink), recomputed whenever a copy of the group starts or
//    ends: each copy in flight keeps the bytes it has left and finishes at the new rate.
//  - Ordering: pending actions run in time order; at equal times queue progress (an op ends,
//    a queue resumes after an event) before link arbitration, then in the order the actions
//    were scheduled. The result is deterministic.
//
// This is not the schedule simulator of the baselines (runtime/sim/ScheduleSim.h): that one is
// a list scheduler over task dependencies whose shared uplinks carry one transfer at a time;
// docs/SIMULATOR.md ("Two engines") says why both exist.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_STREAMENGINE_H
#define RP_RUNTIME_SIM_STREAMENGINE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rp::sim {

/// One command of an in-order queue.
struct StreamOp {
  enum Kind { Wait, Record, Busy, Copy } kind = Busy;
  int64_t event = -1; ///< Wait, Record: the event, in [0, StreamGraph::numEvents).
  double ms = 0;      ///< Busy: how long it occupies the queue, >= 0.
  double bytes = 0;   ///< Copy: bytes that cross the queue's link, >= 0.
};

/// An in-order queue and the link its copies use.
struct StreamQueue {
  std::vector<StreamOp> ops;
  int link = -1; ///< Index into StreamGraph::linkUplink; -1 only for a queue without copies.
};

/// What the engine simulates.
struct StreamGraph {
  std::vector<StreamQueue> queues;
  int64_t numEvents = 0;       ///< Events are 0 .. numEvents - 1.
  double linkGbps = 0;         ///< Every link's bandwidth, GB/s (> 0).
  double uplinkGbps = 0;       ///< Every uplink group's bandwidth, GB/s (> 0 when one is used).
  std::vector<int> linkUplink; ///< One entry per link: its uplink group (0, 1, ...) or -1.
};

/// One op that took time: ops [op] of queues [queue], busy over [startMs, endMs].
struct StreamSpan {
  int queue;
  size_t op;
  double startMs, endMs;
};

/// Runs `graph` until no action is left and returns the spans of the Busy and Copy ops that
/// completed, in completion order. Ops behind a Wait whose event is never recorded (and
/// everything after them in their queue) never run and have no span. Requires the indices
/// and values documented above (they are not checked).
std::vector<StreamSpan> simulateStreams(const StreamGraph &graph);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_STREAMENGINE_H
