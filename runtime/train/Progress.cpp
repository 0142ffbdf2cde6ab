//===- Progress.cpp - A terminal progress bar for training runs -----------===//

#include "runtime/train/Progress.h"

#include <algorithm>
#include <cmath>
#include <unistd.h>

namespace rp::runtime {
namespace {

constexpr int kBarWidth = 30;

std::string printf1(const char *format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

} // namespace

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds > 1e12)
    return "?";
  long long s = std::llround(std::max(0.0, seconds));
  char buf[64];
  if (s < 60)
    std::snprintf(buf, sizeof(buf), "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string formatRate(double perSecond) {
  if (!std::isfinite(perSecond))
    return "?";
  double a = std::fabs(perSecond);
  if (a < 999.5)
    return printf1("%.0f", perSecond);
  const char *suffix = "k";
  double v = perSecond / 1e3;
  if (a >= 999.5e6) {
    suffix = "G";
    v = perSecond / 1e9;
  } else if (a >= 999.5e3) {
    suffix = "M";
    v = perSecond / 1e6;
  }
  double av = std::fabs(v);
  const char *format = av < 9.995 ? "%.2f" : av < 99.95 ? "%.1f" : "%.0f";
  return printf1(format, v) + suffix;
}

ProgressBar::ProgressBar(FILE *out, int64_t totalSteps, int64_t firstStep)
    : ProgressBar(out, totalSteps, firstStep, out && ::isatty(fileno(out))) {}

ProgressBar::ProgressBar(FILE *out, int64_t totalSteps, int64_t firstStep, bool tty)
    : out_(out), total_(totalSteps), first_(firstStep), tty_(tty),
      every_(std::max<int64_t>(1, (totalSteps - firstStep) / 20)),
      start_(std::chrono::steady_clock::now()) {}

std::string ProgressBar::statusText(bool withElapsed) const {
  const int width = static_cast<int>(std::to_string(total_).size());
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%*lld/%lld  loss %.4f  ", width, static_cast<long long>(step_),
                static_cast<long long>(total_), loss_);
  std::string text = buf;
  text += formatRate(tokensPerSecond_) + " tok/s";
  if (withElapsed)
    text += "  elapsed " + formatDuration(elapsedSeconds_);
  const int64_t done = step_ - first_;
  text += "  ETA ";
  if (done > 0)
    text += formatDuration(elapsedSeconds_ / static_cast<double>(done) *
                           static_cast<double>(std::max<int64_t>(0, total_ - step_)));
  else
    text += "?";
  return text;
}

void ProgressBar::drawTty() {
  int filled = kBarWidth;
  if (total_ > 0)
    filled = static_cast<int>(std::clamp<int64_t>(step_, 0, total_) * kBarWidth / total_);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  std::fprintf(out_, "\r[%s] %s\033[K", bar.c_str(), statusText(false).c_str());
  std::fflush(out_);
  lineOpen_ = true;
}

void ProgressBar::update(int64_t step, double loss, double tokensPerSecond) {
  step_ = step;
  loss_ = loss;
  tokensPerSecond_ = tokensPerSecond;
  elapsedSeconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!out_)
    return;
  if (tty_) {
    finished_ = false;
    drawTty();
    return;
  }
  if ((step - first_) % every_ == 0 || step >= total_) {
    std::fprintf(out_, "step %s\n", statusText(true).c_str());
    std::fflush(out_);
  }
}

void ProgressBar::message(const std::string &line) {
  if (!out_)
    return;
  if (tty_ && lineOpen_)
    std::fputs("\r\033[K", out_);
  std::fprintf(out_, "%s\n", line.c_str());
  lineOpen_ = false;
  if (tty_ && !finished_ && step_ >= 0)
    drawTty();
  else
    std::fflush(out_);
}

void ProgressBar::finish() {
  if (out_ && tty_ && lineOpen_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  lineOpen_ = false;
  finished_ = true;
}

} // namespace rp::runtime
