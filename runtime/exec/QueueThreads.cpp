//===- QueueThreads.cpp - In-order task queues, one host thread each ------===//

#include "runtime/exec/QueueThreads.h"

namespace rp::runtime {

QueueThreads::QueueThreads(int queues) : queues_(static_cast<size_t>(queues < 0 ? 0 : queues)) {}

QueueThreads::~QueueThreads() { stop(); }

void QueueThreads::start(Runner run, ThreadInit init) {
  run_ = std::move(run);
  init_ = std::move(init);
  for (size_t q = 0; q < queues_.size(); ++q)
    queues_[q].thread = std::thread([this, q] { loop(static_cast<int>(q), run_, init_); });
}

void QueueThreads::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    failed_ = true; // releases waits on events that will never complete; skips the rest
  }
  cv_.notify_all();
  for (State &q : queues_)
    if (q.thread.joinable())
      q.thread.join();
}

void QueueThreads::enqueue(int queue, Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queues_[static_cast<size_t>(queue)].tasks.push_back(std::move(task));
  }
  cv_.notify_all();
}

void QueueThreads::setFailed(Status status) {
  if (!failed_) {
    failed_ = true;
    status_ = std::move(status);
  }
}

void QueueThreads::loop(int queue, const Runner &run, const ThreadInit &init) {
  State &q = queues_[static_cast<size_t>(queue)];
  const Status started = init ? init(queue) : okStatus();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!started.ok())
    setFailed(started);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !q.tasks.empty(); });
    if (q.tasks.empty())
      return; // stopping
    Task task = std::move(q.tasks.front());
    q.tasks.pop_front();
    q.busy = true;
    const bool skip = failed_;
    lock.unlock();
    Status status;
    if (!skip)
      status = run(queue, task);
    lock.lock();
    q.busy = false;
    if (!status.ok())
      setFailed(std::move(status));
    cv_.notify_all();
  }
}

void QueueThreads::markRecorded(QueueEvent &event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    event.recorded = true;
  }
  cv_.notify_all();
}

void QueueThreads::markSignalled(QueueEvent &event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    event.signalled = true;
  }
  cv_.notify_all();
}

QueueThreads::EventWait QueueThreads::waitEvent(const QueueEvent &event) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return event.recorded || event.signalled || failed_; });
  return EventWait{failed_, event.recorded, failed_ ? status_ : okStatus()};
}

void QueueThreads::fail(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    setFailed(std::move(status));
  }
  cv_.notify_all();
}

Status QueueThreads::status() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_ ? status_ : okStatus();
}

Status QueueThreads::waitIdle(bool *failed) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] {
    if (failed_)
      return true;
    for (const State &q : queues_)
      if (q.busy || !q.tasks.empty())
        return false;
    return true;
  });
  if (failed)
    *failed = failed_;
  return failed_ ? status_ : okStatus();
}

} // namespace rp::runtime
