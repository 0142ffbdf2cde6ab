//===- Trace.cpp - Chrome trace format recorder ---------------------------===//
//
// Events are kept in memory (about 100 bytes each plus the strings) and serialized once by
// write(). Each event line is a compact JSON object (nlohmann-json, shortest round-trip
// numbers); times are rounded to nanoseconds (3 decimals of a microsecond).
//
//===----------------------------------------------------------------------===//

#include "runtime/trace/Trace.h"

#include "base/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rp::runtime {
namespace {

using ordered_json = nlohmann::ordered_json;

/// The Chrome pid of every track.
constexpr int kPid = 1;

/// Microseconds rounded to nanoseconds.
double roundUs(double us) { return std::round(us * 1000.0) / 1000.0; }

std::string dumpLine(const ordered_json &j) {
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

ordered_json metadataEvent(int tid, const char *name, ordered_json args) {
  ordered_json e = ordered_json::object();
  e["ph"] = "M";
  e["pid"] = kPid;
  e["tid"] = tid;
  e["name"] = name;
  e["args"] = std::move(args);
  return e;
}

} // namespace

TraceRecorder::TraceRecorder(bool enabled)
    : enabled_(enabled), origin_(std::chrono::steady_clock::now()) {}

int TraceRecorder::track(const std::string &name) {
  if (!enabled_)
    return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(tracks_.begin(), tracks_.end(), name);
  if (it != tracks_.end())
    return static_cast<int>(it - tracks_.begin()) + 1;
  tracks_.push_back(name);
  return static_cast<int>(tracks_.size());
}

double TraceRecorder::nowUs() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
      .count();
}

void TraceRecorder::complete(int track, std::string name, std::string category, double startUs,
                             double durationUs,
                             std::vector<std::pair<std::string, std::string>> args) {
  if (!enabled_)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(
      {track, startUs, durationUs, std::move(name), std::move(category), std::move(args)});
}

size_t TraceRecorder::eventCount() const {
  if (!enabled_)
    return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

Status TraceRecorder::write(const std::string &path) const {
  if (!enabled_)
    return okStatus();
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lines.reserve(1 + 2 * tracks_.size() + events_.size());
    lines.push_back(dumpLine(metadataEvent(0, "process_name", {{"name", "rp-run"}})));
    for (size_t i = 0; i < tracks_.size(); ++i) {
      int tid = static_cast<int>(i) + 1;
      lines.push_back(dumpLine(metadataEvent(tid, "thread_name", {{"name", tracks_[i]}})));
      lines.push_back(dumpLine(metadataEvent(tid, "thread_sort_index", {{"sort_index", tid}})));
    }
    std::vector<size_t> order(events_.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Event &x = events_[a], &y = events_[b];
      if (x.track != y.track)
        return x.track < y.track;
      return x.startUs < y.startUs;
    });
    for (size_t i : order) {
      const Event &ev = events_[i];
      ordered_json e = ordered_json::object();
      e["ph"] = "X";
      e["pid"] = kPid;
      e["tid"] = ev.track;
      e["name"] = ev.name;
      e["cat"] = ev.category;
      e["ts"] = roundUs(ev.startUs);
      e["dur"] = roundUs(ev.durationUs);
      if (!ev.args.empty()) {
        ordered_json args = ordered_json::object();
        for (const auto &[key, value] : ev.args)
          args[key] = value;
        e["args"] = std::move(args);
      }
      lines.push_back(dumpLine(e));
    }
  }
  std::string text = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    text += lines[i];
    text += i + 1 < lines.size() ? ",\n" : "\n";
  }
  text += "],\n\"displayTimeUnit\":\"ms\"}\n";
  Status status = writeFileAtomic(path, text.data(), text.size());
  if (!status.ok())
    return unavailable("cannot write trace '" + path + "': " + status.message());
  return okStatus();
}

} // namespace rp::runtime
