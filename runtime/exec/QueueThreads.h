//===- QueueThreads.h - In-order task queues, one host thread each -*- C++ -*-===//
//
// The queue machinery the CPU and CUDA backends (runtime/backends/cpu/CpuBackend.h,
// runtime/backends/cuda/CudaBackend.h) share: a fixed number of queues, each an in-order list
// of tasks run by its own host thread (the CPU backend's queue thread runs the work itself,
// the CUDA backend's feeder submits it to the queue's stream), the events those tasks record
// and wait on, and the failed state of Backend.h.
//
// Tasks of one queue run in enqueue order, one at a time. Once the pool has failed (a task
// returned an error, or fail()), later tasks are skipped and every wait returns; status()
// then holds the first error. Events are flags under the pool's one mutex; every change of
// state wakes every waiter (one condition variable), so no thread spins.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_QUEUETHREADS_H
#define RP_RUNTIME_EXEC_QUEUETHREADS_H

#include "runtime/exec/Backend.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rp::runtime {

/// An event of a QueueThreads pool: complete once a queue has set `recorded` (the task of a
/// record) or the host has set `signalled` (Backend::signal). Set through
/// QueueThreads::markRecorded / markSignalled, read under the pool's mutex.
struct QueueEvent : BackendEvent {
  bool recorded = false;
  bool signalled = false;
};

class QueueThreads {
public:
  /// One task of a queue.
  struct Task {
    std::function<Status()> run;
    std::string label;  ///< Empty: not traced (waits, records).
    int64_t bytes = -1; ///< Copies: bytes moved (a trace argument).
  };
  /// Runs a task that is not skipped, on its queue's thread, without the lock (the backend's
  /// tracing around task.run()); the error it returns fails the pool.
  using Runner = std::function<Status(int queue, Task &task)>;
  /// Runs once on each queue's thread before its first task (e.g. selecting the queue's GPU);
  /// an error fails the pool.
  using ThreadInit = std::function<Status(int queue)>;

  /// `queues` (>= 0) empty queues; no thread runs before start().
  explicit QueueThreads(int queues);
  /// stop().
  ~QueueThreads();
  QueueThreads(const QueueThreads &) = delete;
  QueueThreads &operator=(const QueueThreads &) = delete;

  /// Starts one thread per queue: `init(queue)` (when given), then each task with `run`, in
  /// order, until stop(). Called once.
  void start(Runner run, ThreadInit init = nullptr);
  /// Fails the pool (releasing waits on events that will never complete; later tasks are
  /// skipped), ends the threads once their current task is done and joins them. Idempotent.
  void stop();

  /// Appends `task` to queue `queue` (thread-safe; never blocks on the queue's work).
  void enqueue(int queue, Task task);

  /// Completes `event` from a queue's task (sets `recorded`), waking every waiter.
  void markRecorded(QueueEvent &event);
  /// Completes `event` from the host (sets `signalled`), waking every waiter.
  void markSignalled(QueueEvent &event);
  /// How waitEvent() ended, as read at that moment.
  struct EventWait {
    bool failed = false;   ///< The pool has failed.
    bool recorded = false; ///< The event was recorded by a queue (not only signalled).
    Status status;         ///< The first error when the pool has failed, else OK.
  };
  /// Blocks the calling thread until `event` is complete or the pool has failed.
  EventWait waitEvent(const QueueEvent &event);

  /// Puts the pool in the failed state with `status` (the first error wins), waking every
  /// waiter. Thread-safe.
  void fail(Status status);
  /// The first error once the pool has failed, else OK.
  Status status();
  /// Blocks until every queue is empty and idle, or the pool has failed; returns status() as
  /// read at that moment, and whether the pool has failed in `failed` (when given).
  Status waitIdle(bool *failed = nullptr);

private:
  struct State {
    std::deque<Task> tasks;
    bool busy = false;
    std::thread thread;
  };

  void loop(int queue, const Runner &run, const ThreadInit &init);
  void setFailed(Status status); // mutex_ held

  std::mutex mutex_; // guards the queues, the events' flags, the failed state
  std::condition_variable cv_;
  std::vector<State> queues_;
  Runner run_;
  ThreadInit init_;
  Status status_;
  bool failed_ = false;
  bool stopping_ = false;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_QUEUETHREADS_H
