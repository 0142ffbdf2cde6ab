//===- MetricsLog.cpp - Per-step training metrics as JSON lines -----------===//

#include "runtime/train/MetricsLog.h"

#include "base/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace rp::runtime {
namespace {

using ordered_json = nlohmann::ordered_json;

/// A double as JSON: null when it is NaN or infinite (JSON has no spelling for them).
ordered_json number(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(); }

} // namespace

void MetricsLog::FileCloser::operator()(FILE *f) const {
  if (f)
    std::fclose(f);
}

StatusOr<MetricsLog> MetricsLog::open(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return unavailable("cannot open metrics file '" + path + "': " + std::strerror(errno));
  return MetricsLog(path, f);
}

StatusOr<MetricsLog> MetricsLog::openResumed(const std::string &path, int64_t lastStep) {
  if (FILE *old = std::fopen(path.c_str(), "rb")) {
    std::string text;
    char buffer[65536];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, old)) > 0;)
      text.append(buffer, n);
    const bool readError = std::ferror(old) != 0;
    std::fclose(old);
    if (readError)
      return unavailable("cannot read metrics file '" + path + "'");
    std::string kept;
    bool dropped = false;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      const bool torn = end == std::string::npos; // a line its writer did not finish
      if (torn)
        end = text.size();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      const ordered_json j = ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
      const bool later = j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                         j["step"].get<int64_t>() > lastStep;
      if (torn || later) {
        dropped = true;
        continue;
      }
      kept += line + "\n";
    }
    if (dropped)
      RP_RETURN_IF_ERROR(writeFileAtomic(path, kept.data(), kept.size()));
  }
  FILE *f = std::fopen(path.c_str(), "a");
  if (!f)
    return unavailable("cannot open metrics file '" + path + "': " + std::strerror(errno));
  return MetricsLog(path, f);
}

Status MetricsLog::writeLine(const std::string &line) {
  if (!file_)
    return unavailable("metrics file '" + path_ + "' is closed");
  errno = 0;
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() ||
      std::fputc('\n', file_.get()) == EOF || std::fflush(file_.get()) != 0)
    return unavailable("cannot write metrics file '" + path_ +
                       "': " + (errno ? std::strerror(errno) : "write error"));
  return okStatus();
}

Status MetricsLog::write(const StepMetrics &m) {
  ordered_json j = ordered_json::object();
  j["step"] = m.step;
  j["loss"] = number(m.loss);
  j["lr"] = number(m.lr);
  j["tokens"] = m.tokens;
  j["step_s"] = number(m.stepSeconds);
  j["tokens_per_s"] = number(m.tokensPerSecond);
  if (m.evalLoss)
    j["eval_loss"] = number(*m.evalLoss);
  if (m.gpuMemoryBytes)
    j["gpu_mem_peak_bytes"] = *m.gpuMemoryBytes;
  if (m.lossScale)
    j["loss_scale"] = number(*m.lossScale);
  if (m.skipped)
    j["skipped"] = *m.skipped;
  return writeLine(j.dump());
}

Status MetricsLog::writeRaw(const std::string &jsonObject) {
  ordered_json j = ordered_json::parse(jsonObject, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalidArgument("writing metrics file '" + path_ +
                           "': not one valid JSON object: " + jsonObject);
  return writeLine(j.dump());
}

Status MetricsLog::close() {
  if (!file_)
    return okStatus();
  FILE *f = file_.release();
  if (std::fclose(f) != 0)
    return unavailable("cannot close metrics file '" + path_ + "': " + std::strerror(errno));
  return okStatus();
}

} // namespace rp::runtime
