//===- StreamEngine.cpp - In-order streams and copy links on a virtual clock ----===//
//
// A priority queue of actions ordered by (time, phase, sequence number). Four kinds: a queue
// advances (runs its zero-time ops, then starts its next Busy or Copy op or blocks on an
// event), a Busy op completes, a copy completes (stale completions, scheduled before the
// link's rate last changed, carry an old version and are dropped), a link arbitrates.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/StreamEngine.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>
#include <utility>

namespace rp::sim {

namespace {

class StreamEngine {
public:
  explicit StreamEngine(const StreamGraph &graph);
  std::vector<StreamSpan> run();

private:
  enum Type { Advance = 0, Complete = 1, CopyDone = 2, Arbitrate = 3 };
  /// Phase 0: queue progress; 1: link arbitration (after every arrival at the same time).
  enum Phase { Progress = 0, Arbitration = 1 };
  struct Action {
    double time;
    int phase;
    uint64_t seq;
    int type;
    int index; // a queue (Advance, Complete) or a link (CopyDone, Arbitrate)
    uint64_t version;
    bool operator>(const Action &o) const {
      return std::tie(time, phase, seq) > std::tie(o.time, o.phase, o.seq);
    }
  };
  struct QueueState {
    size_t next = 0;      // the op it runs or will run
    bool running = false; // a Busy op runs or a Copy waits for or crosses its link
    double start = 0;     // of the running op
  };
  struct Link {
    int active = -1;                             // queue index of the copy in flight
    std::vector<std::pair<double, int>> waiting; // (ready time, queue)
    double remaining = 0, rate = 0, last = 0;    // bytes left, bytes per ms, at time `last`
    uint64_t version = 0;                        // bumped whenever its completion moves
    int group = -1;                              // uplink group, -1: none
  };

  void schedule(double t, int phase, int type, int index, uint64_t version = 0);
  /// Runs queue q's ops from its next one until one takes time or waits.
  void advance(int q, double now);
  /// Record: completes the event and resumes its waiters. Wait: false while the event is open.
  bool passEvent(int q, const StreamOp &op, double now);
  /// The running op of queue q ends at `now`.
  void finishOp(int q, double now);
  /// Starts the earliest waiting copy on a free link.
  void arbitrate(int li, double now);
  /// The copy in flight on link li ends (unless `version` is stale).
  void completeCopy(int li, uint64_t version, double now);
  /// Every copy in flight in uplink group g gets the fair share; their ends move.
  void rescheduleGroup(int g, double now);

  const StreamGraph &graph_;
  const double linkRate_;   // bytes per ms
  const double uplinkRate_; // bytes per ms
  std::vector<QueueState> queues_;
  std::vector<char> eventDone_;
  std::vector<std::vector<int>> eventWaiters_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> groups_; // links with a copy in flight, in start order
  std::priority_queue<Action, std::vector<Action>, std::greater<Action>> heap_;
  uint64_t seq_ = 0;
  std::vector<StreamSpan> done_;
};

StreamEngine::StreamEngine(const StreamGraph &graph)
    : graph_(graph), linkRate_(graph.linkGbps * 1e6), uplinkRate_(graph.uplinkGbps * 1e6),
      queues_(graph.queues.size()), eventDone_(static_cast<size_t>(graph.numEvents), 0),
      eventWaiters_(static_cast<size_t>(graph.numEvents)), links_(graph.linkUplink.size()) {
  int numGroups = 0;
  for (size_t li = 0; li < links_.size(); ++li) {
    links_[li].group = graph.linkUplink[li];
    numGroups = std::max(numGroups, graph.linkUplink[li] + 1);
  }
  groups_.resize(static_cast<size_t>(numGroups));
}

void StreamEngine::schedule(double t, int phase, int type, int index, uint64_t version) {
  heap_.push(Action{t, phase, seq_++, type, index, version});
}

std::vector<StreamSpan> StreamEngine::run() {
  for (size_t q = 0; q < queues_.size(); ++q)
    schedule(0, Progress, Advance, static_cast<int>(q));
  while (!heap_.empty()) {
    const Action a = heap_.top();
    heap_.pop();
    switch (a.type) {
    case Advance:
      advance(a.index, a.time);
      break;
    case Complete:
      finishOp(a.index, a.time);
      break;
    case Arbitrate:
      arbitrate(a.index, a.time);
      break;
    case CopyDone:
      completeCopy(a.index, a.version, a.time);
      break;
    }
  }
  return std::move(done_);
}

bool StreamEngine::passEvent(int q, const StreamOp &op, double now) {
  const size_t id = static_cast<size_t>(op.event);
  if (op.kind == StreamOp::Wait) {
    if (!eventDone_[id])
      eventWaiters_[id].push_back(q);
    return eventDone_[id] != 0;
  }
  if (!eventDone_[id]) {
    eventDone_[id] = 1;
    for (int w : eventWaiters_[id])
      schedule(now, Progress, Advance, w);
    eventWaiters_[id].clear();
  }
  return true;
}

void StreamEngine::advance(int q, double now) {
  QueueState &s = queues_[static_cast<size_t>(q)];
  const std::vector<StreamOp> &ops = graph_.queues[static_cast<size_t>(q)].ops;
  if (s.running)
    return;
  for (; s.next < ops.size(); ++s.next) {
    const StreamOp &op = ops[s.next];
    switch (op.kind) {
    case StreamOp::Wait:
    case StreamOp::Record:
      if (!passEvent(q, op, now))
        return;
      continue;
    case StreamOp::Busy:
      s.running = true;
      s.start = now;
      schedule(now + op.ms, Progress, Complete, q);
      return;
    case StreamOp::Copy: {
      s.running = true;
      const int li = graph_.queues[static_cast<size_t>(q)].link;
      links_[static_cast<size_t>(li)].waiting.push_back({now, q});
      schedule(now, Arbitration, Arbitrate, li);
      return;
    }
    }
  }
}

void StreamEngine::finishOp(int q, double now) {
  QueueState &s = queues_[static_cast<size_t>(q)];
  done_.push_back({q, s.next, s.start, now});
  ++s.next;
  s.running = false;
  advance(q, now);
}

void StreamEngine::arbitrate(int li, double now) {
  Link &link = links_[static_cast<size_t>(li)];
  if (link.active >= 0 || link.waiting.empty())
    return;
  // First come, first served; at equal times the lower queue index.
  auto best = std::min_element(link.waiting.begin(), link.waiting.end());
  const int q = best->second;
  link.waiting.erase(best);
  QueueState &s = queues_[static_cast<size_t>(q)];
  s.start = now;
  link.active = q;
  link.remaining = graph_.queues[static_cast<size_t>(q)].ops[s.next].bytes;
  link.last = now;
  ++link.version;
  if (link.group >= 0) {
    groups_[static_cast<size_t>(link.group)].push_back(li);
    rescheduleGroup(link.group, now);
  } else {
    link.rate = linkRate_;
    schedule(now + link.remaining / link.rate, Progress, CopyDone, li, link.version);
  }
}

void StreamEngine::completeCopy(int li, uint64_t version, double now) {
  Link &link = links_[static_cast<size_t>(li)];
  if (version != link.version || link.active < 0)
    return;
  const int q = link.active;
  link.active = -1;
  ++link.version;
  if (link.group >= 0) {
    std::vector<int> &active = groups_[static_cast<size_t>(link.group)];
    active.erase(std::find(active.begin(), active.end(), li));
    rescheduleGroup(link.group, now);
  }
  finishOp(q, now);
  schedule(now, Arbitration, Arbitrate, li);
}

void StreamEngine::rescheduleGroup(int g, double now) {
  const std::vector<int> &active = groups_[static_cast<size_t>(g)];
  const double rate =
      std::min(linkRate_, uplinkRate_ / static_cast<double>(std::max<size_t>(active.size(), 1)));
  for (int li : active) {
    Link &link = links_[static_cast<size_t>(li)];
    link.remaining = std::max(0.0, link.remaining - link.rate * (now - link.last));
    link.last = now;
    link.rate = rate;
    ++link.version;
    schedule(now + link.remaining / link.rate, Progress, CopyDone, li, link.version);
  }
}

} // namespace

std::vector<StreamSpan> simulateStreams(const StreamGraph &graph) {
  return StreamEngine(graph).run();
}

} // namespace rp::sim
