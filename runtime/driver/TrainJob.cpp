//===- TrainJob.cpp - rp-run train: the MPI launch, signals, the summary ---===//

#include "runtime/driver/Driver.h"

#include "base/AbortCleanup.h"
#include "runtime/dist/World.h"
#include "runtime/train/Progress.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

namespace rp::runtime {

namespace {

/// Set to the first SIGINT / SIGTERM: the trainer stops after the steps under way and saves;
/// the exit code is 128 + the signal (130 or 143).
std::atomic<int> stopSignal{0};

/// A second signal: remove the files being written (base/AbortCleanup.h) and exit at once.
extern "C" void onSecondSignal(int sig) {
  removeAbortCleanupFiles();
  _exit(128 + sig);
}

extern "C" void onStopSignal(int sig) {
  stopSignal.store(sig);
  struct sigaction again {};
  again.sa_handler = onSecondSignal;
  sigemptyset(&again.sa_mask);
  sigaction(SIGINT, &again, nullptr);
  sigaction(SIGTERM, &again, nullptr);
}

/// The first SIGINT or SIGTERM asks the run to stop cleanly; a second one ends the process at
/// once, removing any file it was writing.
void installStopHandler() {
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

/// The exit code of a run that `s` says was interrupted: 128 + the signal (130 for SIGINT, 143
/// for SIGTERM; under mpirun the same on every rank, whichever rank got it).
int interruptedExitCode(const TrainSummary &s) {
  return s.stopSignal > 0 ? 128 + s.stopSignal : kExitInterrupted;
}

/// A data-parallel run's error that every rank found alike (train() aborts on the others):
/// rank 0 prints it.
int failOnEveryRank(const Status &status, const World &world) {
  if (world.rank() == 0)
    return reportError(status);
  return status.code() == StatusCode::Internal ? kExitFailure : kExitBadInput;
}

/// Under an MPI launch (World.h, detectMpiLaunch): the ranks, or an error (exit 2) when this
/// rp-run has no MPI and the launch has more than one process. Null: a plain run.
StatusOr<std::unique_ptr<World>> startWorld() {
  const std::optional<MpiLaunch> launch = detectMpiLaunch();
  if (!launch || (!mpiBuilt() && launch->size == 1))
    return std::unique_ptr<World>();
  if (!mpiBuilt())
    return invalidArgument("started by an MPI launcher with " + std::to_string(launch->size) +
                           " processes (" + launch->variable + "), but this rp-run was built "
                           "without MPI: it cannot train data-parallel; install an MPI "
                           "(libopenmpi-dev) and rebuild, or run without mpirun");
  return World::init();
}

/// The lines after the losses: evaluation, checkpoint, export, trace and kernel profile.
void printTrainOutputs(const TrainSummary &s) {
  if (s.evalLoss)
    std::printf("rp-run: eval loss %.4f\n", *s.evalLoss);
  if (!s.checkpointDir.empty())
    std::printf("rp-run: checkpoint: %s\n", s.checkpointDir.c_str());
  if (!s.exportSummary.empty())
    std::printf("rp-run: exported %s\n", s.exportSummary.c_str());
  if (!s.tracePath.empty())
    std::printf("rp-run: trace: %s (open in https://ui.perfetto.dev)\n", s.tracePath.c_str());
  if (!s.kernelProfilePath.empty())
    std::printf("%srp-run: kernel profile: %s\n", s.kernelProfileTable.c_str(),
                s.kernelProfilePath.c_str());
}

/// The result lines of a training run on stdout; kExitInterrupted when it was stopped early.
int printTrainSummary(const TrainSummary &s, const TrainOptions &o) {
  if (s.alreadyDone) { // resumed at --steps
    std::printf("rp-run: %s is at step %lld, the run's --steps: nothing to train\n",
                o.resumeDir.c_str(), static_cast<long long>(s.firstStep));
    printTrainOutputs(s);
    return kExitOk;
  }
  if (s.losses.empty()) { // interrupted before the first step
    std::printf("rp-run: interrupted before step %lld; nothing trained\n",
                static_cast<long long>(s.firstStep + 1));
    return interruptedExitCode(s);
  }
  const auto steps = static_cast<int64_t>(s.losses.size());
  const double tokens = static_cast<double>(s.tokensPerStep) * static_cast<double>(steps);
  const std::string ranks =
      s.ranks > 1 ? " (" + std::to_string(s.ranks) + " data-parallel ranks)" : std::string();
  std::printf("rp-run: trained steps %lld..%lld on %s x %d%s: loss %.4f -> %.4f, %.0f tokens/s "
              "(%s)\n",
              static_cast<long long>(s.firstStep + 1), static_cast<long long>(s.firstStep + steps),
              o.backend.c_str(), s.devices, ranks.c_str(), s.losses.front(), s.losses.back(),
              s.seconds > 0 ? tokens / s.seconds : 0.0, formatDuration(s.seconds).c_str());
  if (s.skippedSteps > 0)
    std::printf("rp-run: %lld steps skipped (non-finite gradients; no weight changed)\n",
                static_cast<long long>(s.skippedSteps));
  printTrainOutputs(s);
  if (!s.interrupted)
    return kExitOk;
  if (!o.exportHf.dir.empty())
    std::printf("rp-run: not exported to %s (the run was interrupted; --resume its checkpoint "
                "with --export-hf to convert it)\n",
                o.exportHf.dir.c_str());
  std::printf("rp-run: interrupted after step %lld\n", static_cast<long long>(s.firstStep + steps));
  return interruptedExitCode(s);
}

} // namespace

int runTrain(TrainOptions options) {
  StatusOr<std::unique_ptr<World>> world = startWorld();
  if (!world.ok())
    return reportError(world.status());
  options.world = world.value().get();
  // Several ranks agree on the step a signal stops at with one collective per step on the
  // main thread, which needs MPI_THREAD_MULTIPLE; without it mpirun's forwarded signal ends
  // the job (docs/MULTI_NODE.md).
  if (!options.world || options.world->ranks() == 1 || options.world->stopAgreement()) {
    options.stop = &stopSignal;
    installStopHandler();
  }
  StatusOr<TrainSummary> result = train(options, stderr);
  if (!result.ok())
    return options.world ? failOnEveryRank(result.status(), *options.world)
                         : reportError(result.status());
  if (options.world && options.world->rank() != 0)
    return result.value().interrupted ? interruptedExitCode(result.value()) : kExitOk;
  return printTrainSummary(result.value(), options);
}

} // namespace rp::runtime
