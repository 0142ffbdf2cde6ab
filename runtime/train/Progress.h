//===- Progress.h - A terminal progress bar for training runs ---*- C++ -*-===//
//
// On a terminal the bar redraws one line in place ('\r', then "ESC[K" to clear the rest):
//
//   [###########...................]  37/100  loss 3.8712  41.2k tok/s  ETA 3m05s
//
// Into a file or a pipe (a CI log) it writes a plain line every max(1, steps/20) of the steps
// this run does (counted from the first, so a resumed run too) and at
// the last step, so a log of 10000 steps holds about 20 lines:
//
//   step 35/100  loss 3.8712  41.2k tok/s  elapsed 1m02s  ETA 3m05s
//
// The ETA is (total - step) times the average wall-clock time per step since the bar was
// constructed (steady clock), so the first steps of a resumed run are not counted as free.
// Messages (eval results, "saved checkpoint ...") go on their own lines above the bar.
// Not thread-safe: one training loop drives it.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_PROGRESS_H
#define RP_RUNTIME_TRAIN_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace rp::runtime {

/// A progress bar for steps (firstStep, totalSteps] written to `out` (not owned; it must stay
/// open while the bar is used).
class ProgressBar {
public:
  /// Draws in place when `out` is a terminal (isatty(fileno(out))), plain lines otherwise.
  /// `firstStep`: steps already completed when the bar starts (a resumed run).
  ProgressBar(FILE *out, int64_t totalSteps, int64_t firstStep = 0);
  /// As above with the terminal mode forced (`tty`), for tests and --progress flags.
  ProgressBar(FILE *out, int64_t totalSteps, int64_t firstStep, bool tty);

  /// Reports that `step` steps (1-based, absolute) are complete, with that step's loss and
  /// throughput (tokens per second).
  void update(int64_t step, double loss, double tokensPerSecond);

  /// Writes `line` (no trailing newline needed) on its own line above the bar; on a terminal
  /// clears the bar's line first and redraws the bar below.
  void message(const std::string &line);

  /// Ends the bar's line on a terminal (a newline after the last drawn bar); idempotent. Call
  /// before anything else writes to `out`. Not called by the destructor (`out` may be closed).
  void finish();

  bool tty() const { return tty_; }
  /// Plain-mode line interval: max(1, totalSteps / 20).
  int64_t every() const { return every_; }

private:
  /// The text after the bar / "step": "37/100  loss 3.8712  41.2k tok/s  ETA 3m05s".
  std::string statusText(bool withElapsed) const;
  void drawTty();

  FILE *out_;
  int64_t total_;
  int64_t first_;
  bool tty_;
  int64_t every_;
  std::chrono::steady_clock::time_point start_;
  // The last update.
  int64_t step_ = -1; ///< -1 before the first update.
  double loss_ = 0.0;
  double tokensPerSecond_ = 0.0;
  double elapsedSeconds_ = 0.0;
  bool lineOpen_ = false; ///< A tty bar is drawn and its line not yet ended.
  bool finished_ = false; ///< finish() was called: messages no longer redraw the bar.
};

/// A duration for humans, rounded to whole seconds: "42s", "3m05s", "1h02m" (hours and
/// minutes from one hour on, the seconds dropped). Negative values print as "0s", NaN or
/// infinite ones as "?".
std::string formatDuration(double seconds);

/// A rate for humans with 3 significant digits: "987", "41.2k", "1.23M".
std::string formatRate(double perSecond);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_PROGRESS_H
