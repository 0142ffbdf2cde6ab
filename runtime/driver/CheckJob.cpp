//===- CheckJob.cpp - rp-run check: a plan and its weights, validated -----===//

#include "runtime/driver/Driver.h"

#include "base/AtomicFile.h"
#include "runtime/driver/OneProcess.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanReport.h"
#include "runtime/train/BackendFactory.h"
#include "runtime/train/InputGuards.h"

#include <cstdio>
#include <optional>
#include <string>

namespace rp::runtime {

namespace {

/// Prints the plan report (options.report) and writes it as JSON (options.reportJsonPath).
Status reportPlan(const CheckOptions &options, const rp::plan::Plan &plan) {
  if (options.report)
    std::fputs(formatPlanReport(computePlanReport(plan), plan).c_str(), stdout);
  if (options.reportJsonPath.empty())
    return okStatus();
  const std::string json = formatPlanReportJson(computePlanReport(plan), plan);
  RP_RETURN_IF_ERROR(writeFileAtomic(options.reportJsonPath, json.data(), json.size()));
  std::printf("rp-run: wrote the plan report to %s\n", options.reportJsonPath.c_str());
  return okStatus();
}

} // namespace

int runCheck(const CheckOptions &options, const std::string &job) {
  if (Status s = checkOneProcess(job); !s.ok())
    return reportError(s);
  StatusOr<LoadedPlan> loaded =
      loadPlan(options.planPath, options.weightsPath, options.allowExtraWeights);
  if (!loaded.ok())
    return reportError(loaded.status());
  std::fputs(describePlan(loaded.value()).c_str(), stdout);
  const rp::plan::Plan &plan = loaded.value().plan;
  if (options.weightsPath.empty())
    if (std::optional<std::string> note = placeholderWeightsNote(plan, options.planPath))
      std::printf("note: %s: train it with --weights %s\n", note->c_str(),
                  plan.checkpoint_dir().empty() ? "DIR" : plan.checkpoint_dir().c_str());
  if (Status s = reportPlan(options, plan); !s.ok())
    return reportError(s);
  if (options.backend == "cpu" || options.backend == "cuda") {
    StatusOr<std::string> decoded = checkPlanForBackend(plan, options.backend);
    if (!decoded.ok())
      return reportError(decoded.status());
    std::printf("%s\n", decoded.value().c_str());
  }
  // The CPU backend also keeps a device arena per worker in host memory; the simulator
  // reserves none.
  if (options.backend != "sim") {
    const std::string backend = options.backend.empty() ? "cpu" : options.backend;
    const int workers =
        options.devices > 0 ? options.devices : static_cast<int>(plan.config().gpus());
    if (Status fits = checkPlanFitsInMemory(plan, backend == "cuda" ? 0 : workers); !fits.ok()) {
      std::fprintf(stderr,
                   "rp-run: error: %s is valid, but it cannot train here on --backend %s: %s\n",
                   options.planPath.c_str(), backend.c_str(), fits.message().c_str());
      return kExitBadInput;
    }
  }
  std::printf("rp-run: %s is valid\n", options.planPath.c_str());
  return kExitOk;
}

} // namespace rp::runtime
