//===- Driver.cpp - rp-run's errors, the one-process jobs -----------------===//

#include "runtime/driver/Driver.h"

#include "runtime/dist/World.h"
#include "runtime/driver/OneProcess.h"

#include <cstdio>
#include <optional>

namespace rp::runtime {

int reportError(const Status &status) {
  std::fprintf(stderr, "rp-run: error: %s\n", status.message().c_str());
  return status.code() == StatusCode::Internal ? kExitFailure : kExitBadInput;
}

Status checkOneProcess(const std::string &job) {
  const std::optional<MpiLaunch> launch = detectMpiLaunch();
  if (launch && launch->size > 1)
    return invalidArgument(job + " runs in one process, not under an MPI launch of " +
                           std::to_string(launch->size) + " (" + launch->variable +
                           "); only training is data-parallel");
  return okStatus();
}

int runSimulate(const SimulateOptions &options, const std::string &job) {
  if (Status s = checkOneProcess(job); !s.ok())
    return reportError(s);
  Status status = simulate(options, stdout);
  return status.ok() ? kExitOk : reportError(status);
}

int runExport(const ExportOptions &options, const std::string &job) {
  if (Status s = checkOneProcess(job); !s.ok())
    return reportError(s);
  Status status = exportWeights(options.planPath, options.weightsPath, options.allowExtraWeights,
                                options.resumeDir, options.hf, stdout);
  return status.ok() ? kExitOk : reportError(status);
}

} // namespace rp::runtime
