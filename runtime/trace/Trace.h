//===- Trace.h - Chrome trace format recorder -------------------*- C++ -*-===//
//
// Records what the runtime did and when (uploads, stage compute, downloads, optimizer steps)
// as "complete" events on named tracks, and writes them in the Chrome trace event format
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU, "Complete
// Events" and "Metadata Events"), which Perfetto (ui.perfetto.dev) and chrome://tracing open:
//
//   {"traceEvents":[
//   {"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"rp-run"}},
//   {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"device 0 compute"}},
//   {"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":1}},
//   {"ph":"X","pid":1,"tid":1,"name":"F0","cat":"compute","ts":12.5,"dur":830.25,
//    "args":{"micro_batch":"0"}},
//   ...],
//   "displayTimeUnit":"ms"}
//
// A track is a Chrome "thread" of the single process "rp-run"; tracks appear in the order they
// were created. Times are microseconds (double) of the steady clock from the recorder's
// creation.
//
//   TraceRecorder trace(opts.tracePath.has_value());
//   int compute = trace.track("device 0 compute");
//   double t0 = trace.nowUs();
//   ... run stage F0 ...
//   trace.complete(compute, "F0", "compute", t0, trace.nowUs() - t0);
//   { TraceScope scope(trace, compute, "optimizer step", "optimizer"); ... }
//   RP_RETURN_IF_ERROR(trace.write(*opts.tracePath));
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRACE_TRACE_H
#define RP_RUNTIME_TRACE_TRACE_H

#include "base/Status.h"

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace rp::runtime {

/// The trace arguments of a copy of `bytes` bytes ({"bytes": "<n>"}), none for bytes < 0.
inline std::vector<std::pair<std::string, std::string>> copyArgs(int64_t bytes) {
  if (bytes < 0)
    return {};
  return {{"bytes", std::to_string(bytes)}};
}

/// Thread-safe recorder of complete events ("ph":"X") on named tracks. Every method may be
/// called from any thread. A disabled recorder records nothing: every call is a cheap no-op
/// (no lock, no allocation), track() returns 0 and write() writes no file.
class TraceRecorder {
public:
  explicit TraceRecorder(bool enabled = true);
  TraceRecorder(const TraceRecorder &) = delete;
  TraceRecorder &operator=(const TraceRecorder &) = delete;

  bool enabled() const { return enabled_; }

  /// The track (Chrome thread id, >= 1) called `name`, e.g. "device 0 compute", "optimizer";
  /// created on first use, so the same name gives the same track. 0 when disabled.
  int track(const std::string &name);

  /// Microseconds of the steady clock since the recorder was created.
  double nowUs() const;

  /// Records an event `name` of `category` on `track` that started at `startUs` (nowUs() time)
  /// and lasted `durationUs` microseconds, with string `args` shown in the viewer's details.
  /// An unknown track (not returned by track()) is recorded as is; the viewer shows it unnamed.
  void complete(int track, std::string name, std::string category, double startUs,
                double durationUs, std::vector<std::pair<std::string, std::string>> args = {});

  /// Writes the trace to `path` atomically (base/AtomicFile.h): the metadata events
  /// (process name "rp-run", one thread_name and thread_sort_index per track), then the events
  /// sorted by (track, start, recording order) for reproducible output, one event per line.
  /// Names that are not valid UTF-8 are written with U+FFFD replacements. A disabled recorder
  /// writes nothing and returns Ok.
  /// Errors: Unavailable when the file cannot be written (naming the path).
  Status write(const std::string &path) const;

  /// Events recorded so far (0 when disabled).
  size_t eventCount() const;

private:
  struct Event {
    int track;
    double startUs;
    double durationUs;
    std::string name;
    std::string category;
    std::vector<std::pair<std::string, std::string>> args;
  };

  const bool enabled_;
  const std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<std::string> tracks_; ///< tracks_[tid - 1] is the name of track tid.
  std::vector<Event> events_;
};

/// Records one complete event covering its own lifetime (construction to destruction) on
/// `track` of `recorder`. Costs two clock reads when the recorder is enabled, nothing else.
class TraceScope {
public:
  TraceScope(TraceRecorder &recorder, int track, std::string name, std::string category)
      : recorder_(recorder), track_(track), name_(std::move(name)), category_(std::move(category)),
        startUs_(recorder.enabled() ? recorder.nowUs() : 0.0) {}
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;
  ~TraceScope() {
    if (recorder_.enabled())
      recorder_.complete(track_, std::move(name_), std::move(category_), startUs_,
                         recorder_.nowUs() - startUs_);
  }

private:
  TraceRecorder &recorder_;
  int track_;
  std::string name_;
  std::string category_;
  double startUs_;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_TRACE_TRACE_H
