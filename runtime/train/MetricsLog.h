//===- MetricsLog.h - Per-step training metrics as JSON lines ---*- C++ -*-===//
//
// A metrics file is JSON Lines (https://jsonlines.org): one compact JSON object per line, one
// line per training step, then optionally a summary line the caller builds:
//
//   {"step":1,"loss":3.871234083175659,"lr":0.0003,"tokens":512,"step_s":0.0123,"tokens_per_s":41626.0,"skipped":false}
//   {"step":2,"loss":3.52,"lr":0.0003,"tokens":512,"step_s":0.0119,"tokens_per_s":43025.2,"eval_loss":3.61,"skipped":false}
//   {"summary":{"steps":2,"final_loss":3.52}}
//
// "skipped" is true for a step skipped for a non-finite gradient (no weight changed); with
// loss scaling (fp16 plans) "loss_scale" (the scale its backward seeds carried) comes before it.
//
// A resumed run (rp-run --resume) appends to its log (openResumed), so that one file holds the
// whole run.
//
// Numbers are written in the shortest form that reads back to the same double (nlohmann-json's
// Grisu2 printer, like Python's repr), so `json.loads` recovers the loss bit for bit while
// 0.0003 stays "0.0003". A NaN or infinite value (a diverged loss) has no JSON spelling and is
// written as null. Each line is flushed as it is written, so `tail -f` and a crash show every
// completed step. Read it with pandas.read_json(path, lines=True).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_METRICSLOG_H
#define RP_RUNTIME_TRAIN_METRICSLOG_H

#include "base/Status.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace rp::runtime {

/// The metrics of one training step.
struct StepMetrics {
  int64_t step = 0;               ///< 1-based: steps completed after this one.
  double loss = 0.0;              ///< Mean training loss of the step (nats per token).
  double lr = 0.0;                ///< Learning rate used by the step's update.
  int64_t tokens = 0;             ///< Tokens (targets) the step trained on.
  double stepSeconds = 0.0;       ///< Wall-clock seconds of the step.
  double tokensPerSecond = 0.0;   ///< tokens / stepSeconds.
  std::optional<double> evalLoss; ///< Mean eval loss, when an evaluation ran after the step.
  /// GPU memory in use (bytes; the most over the GPUs; cudaMemGetInfo after the arenas are
  /// allocated: the CUDA backend allocates nothing later), for --backend cuda only.
  std::optional<int64_t> gpuMemoryBytes;
  /// With loss scaling: the scale the step's backward seeds carried.
  std::optional<double> lossScale;
  /// Whether the step was skipped (a non-finite gradient: no weight changed); rp-run writes it
  /// for every step.
  std::optional<bool> skipped;
};

/// An open metrics file. Movable, not copyable, not thread-safe (one writer).
class MetricsLog {
public:
  /// Opens `path` for writing, truncating it (a run's log starts empty).
  /// Errors: Unavailable naming the path and the system's message.
  static StatusOr<MetricsLog> open(const std::string &path);

  /// Opens `path` to continue a resumed run's log: its lines of steps up to `lastStep` (the
  /// checkpoint's) are kept, those of later steps (written after that checkpoint by a run that
  /// did not save them) and a torn last line are dropped, and new lines are appended. A missing
  /// file starts empty. Errors: Unavailable naming the path and the system's message.
  static StatusOr<MetricsLog> openResumed(const std::string &path, int64_t lastStep);

  /// Writes one line {"step":..,"loss":..,"lr":..,"tokens":..,"step_s":..,"tokens_per_s":..}
  /// plus "eval_loss" when set, and flushes it.
  /// Errors: Unavailable (disk full, closed log) naming the path.
  Status write(const StepMetrics &m);

  /// Writes `jsonObject` (e.g. a final {"summary": {...}} the caller builds) as one compact
  /// line, keeping its key order, and flushes it.
  /// Errors: InvalidArgument when it is not one valid JSON object; Unavailable as write().
  Status writeRaw(const std::string &jsonObject);

  /// Closes the file (also done by the destructor). Errors: Unavailable when the final flush
  /// fails. Later writes fail with Unavailable.
  Status close();

  const std::string &path() const { return path_; }

private:
  struct FileCloser {
    void operator()(FILE *f) const;
  };
  MetricsLog(std::string path, FILE *file) : path_(std::move(path)), file_(file) {}
  Status writeLine(const std::string &line);

  std::string path_;
  std::unique_ptr<FILE, FileCloser> file_;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_METRICSLOG_H
