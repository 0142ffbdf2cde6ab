//===- Driver.h - rp-run's driver: its jobs once the flags are parsed -*- C++ -*-===//
//
// What rp-run does once its command line (tools/rp-run) is parsed, one function per job:
//
//   runTrain     rp-run train: a training run (runtime/train/Trainer.h), under an MPI launcher
//                one data-parallel rank of R (runtime/dist/World.h, docs/MULTI_NODE.md), with
//                the export after it (--export-hf); the summary on stdout.
//   runCheck     rp-run check: loads and validates the plan and its weights, prints a summary
//                (and the plan report), decodes the plan for a backend, and refuses a plan this
//                machine lacks the host memory to train.
//   runSimulate  rp-run simulate: the plan or a layer profile on N virtual GPUs
//                (runtime/sim/Simulate.h).
//   runExport    rp-run export: a plan's weights or a checkpoint in the Hugging Face layout
//                (runtime/train/HfExport.h, exportWeights), without training.
//
// Each prints its result on stdout, progress on stderr and its error on stderr as
// "rp-run: error: ...", and returns rp-run's exit code: kExitOk, kExitBadInput for bad input
// (plan, weights, data, checkpoint, profile, flags; nothing is written), kExitFailure for a
// failure during training or simulation, kExitInterrupted for a training run stopped by SIGINT
// or SIGTERM (the steps under way finish and, with --save, a checkpoint of them is written; a
// second signal ends the process at once and the previous checkpoint stays intact).
//
// Only training is data-parallel: the other jobs run in one process and refuse an MPI launch
// of several. Their `job` argument names them in that message as the command line spelled
// them: "rp-run check", or the flag that picked the job in rp-run's old flat spelling
// ("--check").
//
// Runtime world: no LLVM/MLIR; no command-line parsing (tools/rp-run does that).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DRIVER_DRIVER_H
#define RP_RUNTIME_DRIVER_DRIVER_H

#include "base/Status.h"
#include "runtime/sim/Simulate.h"
#include "runtime/train/HfExport.h"
#include "runtime/train/Trainer.h"

#include <string>

namespace rp::runtime {

/// rp-run's exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  ///< A failure during training or simulation.
inline constexpr int kExitBadInput = 2; ///< Bad input or flags; nothing was written.
/// A training run stopped cleanly by SIGINT / SIGTERM: 128 + SIGINT, as shells report.
inline constexpr int kExitInterrupted = 130;

/// Prints `status` on stderr as "rp-run: error: MESSAGE" and returns its exit code:
/// kExitFailure for StatusCode::Internal, else kExitBadInput.
int reportError(const Status &status);

/// What `rp-run check` checks.
struct CheckOptions {
  std::string planPath;
  std::string weightsPath; ///< Empty: the weights the plan names.
  bool allowExtraWeights = false;
  bool report = false;        ///< Also print the plan report (runtime/plan/PlanReport.h).
  std::string reportJsonPath; ///< Also write the plan report as JSON there ("": no).
  /// "cpu" or "cuda": decode the plan for that backend and check the host memory it needs;
  /// "sim": neither (the simulator needs no host memory); "": not given, the host memory
  /// check of the CPU backend without decoding.
  std::string backend;
  int devices = 0; ///< The pool the memory check counts (CPU device arenas); 0: the plan's.
};

/// rp-run check: prints the plan's summary (describePlan), with options.report the plan
/// report, with options.reportJsonPath writes it (atomically), with a backend the decoding's
/// summary, and "rp-run: PLAN is valid". Errors (kExitBadInput): the loader's, an unwritable
/// report, a plan the backend cannot decode, a plan whose host memory this machine lacks for
/// training on the backend (after the summary), an MPI launch of several processes.
int runCheck(const CheckOptions &options, const std::string &job);

/// rp-run train: `options` as parsed (world, stop and the signal handler are set here). Under
/// an MPI launch it trains as one rank (an rp-run built without MPI refuses a launch of
/// several processes, exit 2); alone, the first SIGINT / SIGTERM stops it cleanly. Rank 0
/// prints the summary: the steps and losses, throughput, evaluation loss, checkpoint, export,
/// trace and kernel profile. Errors: train()'s (exit 2 for bad input found before the first
/// step, 1 for a failure during training); an interrupted run returns kExitInterrupted.
int runTrain(TrainOptions options);

/// rp-run simulate: simulate(options) on stdout. Errors: simulate()'s (exit 2 for bad input,
/// 1 for a failure of the simulated run), an MPI launch of several processes.
int runSimulate(const SimulateOptions &options, const std::string &job);

/// What `rp-run export` converts.
struct ExportOptions {
  std::string planPath;
  std::string weightsPath; ///< Empty: the weights the plan names.
  bool allowExtraWeights = false;
  std::string resumeDir; ///< A checkpoint to export instead of the weights ("": none).
  HfExportOptions hf;    ///< Where and how (hf.dir is required).
};

/// rp-run export: the weights in the Hugging Face layout (exportWeights), its summary on
/// stdout. Errors (kExitBadInput): exportWeights's, an MPI launch of several processes.
int runExport(const ExportOptions &options, const std::string &job);

} // namespace rp::runtime

#endif // RP_RUNTIME_DRIVER_DRIVER_H
