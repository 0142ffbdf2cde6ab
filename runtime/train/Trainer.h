//===- Trainer.h - A training run of a compiled plan (rp-run) ---*- C++ -*-===//
//
// Loads a plan and its weights (or a checkpoint), checks the data against the plan's inputs,
// and trains for a number of steps through the executor (runtime/exec/Executor.h) on a
// backend, with progress on a terminal, metrics as JSON lines, a Chrome trace, evaluation on
// held-out windows, and crash-safe checkpoints that resume bit for bit.
//
// Step k (0-based, global: a resumed run continues the count) draws its M micro-batches from
// the sampler at (seed, k, m) and uses learning rate learningRate(schedule, k)
// (runtime/optim/AdamW.h: warmup, then constant, cosine or linear decay to a floor over the
// run's total --steps). The loss of a step is the mean of its M micro-batch losses (each the
// model's mean over tokens), summed in double in micro-batch order.
//
// --steps is the run's total step count: a run resumed from a checkpoint of step c trains the
// steps [c, steps), and one resumed at c == steps trains nothing (it may still export). A
// checkpoint records the settings that change the math (lr, schedule, seed, data, batch;
// docs/USAGE.md, "Checkpoints, resuming and stopping"): a resume takes the checkpoint's for
// the flags left out and refuses flags that differ unless TrainOptions::resumeOverride names
// their group.
//
// Data parallel (TrainOptions::world, rp-run under mpirun; docs/MULTI_NODE.md): rank r of R
// trains the micro-batches [r M, (r + 1) M) of a step of R M, the sampler's (seed, k, m) for m
// in that range, so R ranks draw what one process with R M micro-batches draws. The backward
// seeds are the global ones (TokenWeights.h over the R M micro-batches: every rank counts the
// trained labels of all of them from the deterministic sampler), the executor sums each
// layer's gradients over the ranks before AdamW (Executor.h), and a step's loss is the
// token-weighted mean over all R M micro-batch losses. Rank 0 alone writes the metrics log,
// checkpoints (their metadata records data_parallel_ranks when R > 1; resuming needs the same
// R) and the export, and shows progress; each rank writes its own --trace / --profile-kernels
// (rank r > 0: PATH.rankR). Before the first step the ranks compare fingerprints of their plan,
// data, initial state and training flags and all refuse a launch where they differ.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_TRAINER_H
#define RP_RUNTIME_TRAIN_TRAINER_H

#include "base/Status.h"
#include "runtime/data/TokenFile.h"
#include "runtime/optim/AdamW.h"
#include "runtime/train/HfExport.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace rp::runtime {

class World;

/// The most workers of a pool (rp-run --gpus): each is four host threads, or streams and
/// feeder threads.
inline constexpr int kMaxWorkers = 1024;

/// A data sampling seed written as decimal digits of a uint64 (--seed, a checkpoint's
/// metadata). Errors: InvalidArgument "<where>: the checkpoint's seed '<text>' is not a
/// number" (empty, a sign or any other character) or "... does not fit in 64 bits".
StatusOr<uint64_t> parseSeed(const std::string &text, const std::string &where);

struct TrainOptions {
  std::string planPath;
  std::string weightsPath; ///< Empty: the file the plan names, beside it.
  /// Ignore weights tensors that no param names (default: refuse them; validateWeights).
  bool allowExtraWeights = false;
  std::string dataPath;
  DataFormat dataFormat = DataFormat::Auto;
  /// Text data read as byte tokens although the plan's vocabulary is not a byte vocabulary
  /// (more than kByteVocabularyMax tokens), or although the file is not UTF-8 text (default:
  /// refused: the ids would mean other tokens of the model's tokenizer).
  bool textAsBytes = false;
  /// Train from the plan's own initial weights although they are random placeholders of a
  /// model whose weights are a checkpoint's (the plan's `placeholder_weights` "random"; default:
  /// refused without weightsPath). Placeholders of zeros are always refused.
  bool fromScratch = false;
  int64_t steps = 0;                 ///< The run's total step count (>= 1; file comment).
  /// Peak learning rate; default: the checkpoint's when resuming, else the plan's.
  std::optional<double> lr;
  /// The schedule (runtime/optim/AdamW.h LrSchedule); each default: the checkpoint's when
  /// resuming, else 0 warmup steps, constant, a floor of 0.
  std::optional<int64_t> warmup;
  std::optional<LrDecay> lrSchedule;
  std::optional<double> minLr;
  /// The groups of math-changing settings a resume may change (file comment): "lr",
  /// "schedule", "seed", "data", "batch".
  std::vector<std::string> resumeOverride;
  std::string backend = "cpu";       ///< cpu | cuda (sim: Simulate.h, simulate())
  /// --backend cpu's kernels: "reference" (kernels/cpu) or "cuda-host" (the CUDA backend's
  /// kernels replayed on the host, runtime/backends/cuda/CudaHostKernels.h).
  std::string kernels = "reference";
  /// --backend cuda's GEMM accumulation for fp16 plans: "fp32" (default) or "fp16"
  /// (cuBLASLt CUBLAS_COMPUTE_16F, opt-in; kernels/cuda/Gemm.h).
  std::string gemmAccumulate = "fp32";
  /// --backend cuda: replay each function call as a CUDA graph captured at its first call
  /// (runtime/backends/cuda/CallGraphs.h); not with profileKernelsPath.
  bool cudaGraphs = false;
  /// --backend cuda's attention kernels: "auto" (cuDNN's fused SDPA where it takes the case,
  /// else rpc's), "cudnn" (a decline is an error) or "flash" (rpc's kernels only);
  /// kernels/cuda/CudnnAttention.h.
  std::string attentionKernel = "auto";
  int devices = 0;                   ///< Pool size N; 0: the plan's `gpus`.
  std::optional<uint64_t> seed;      ///< Data sampling seed; default 0 (or the checkpoint's).
  std::string saveDir;               ///< Checkpoint directory ("" : none).
  int64_t saveEvery = 0;             ///< Also save every K steps (0: only at the end).
  std::string resumeDir;             ///< Resume from this checkpoint directory.
  std::string logPath;               ///< Metrics as JSON lines ("" : none).
  std::string tracePath;             ///< Chrome trace ("" : none).
  /// Per-instruction kernel times as JSON ("" : none; runtime/trace/KernelProfile.h). The
  /// CUDA backend then synchronises after every call, so step times are not the pipeline's.
  std::string profileKernelsPath;
  int64_t evalEvery = 0;             ///< Evaluate every K steps (0: never).
  /// The fraction of the data held out for evaluation (its last tokens; BatchSampler.h).
  double evalSplit = 0.1;
  /// --export-hf: the weights in the Hugging Face layout at the end of a run that was not
  /// interrupted (checked with the plan before the first step).
  HfExportOptions exportHf;
  bool progress = true;              ///< Progress bar / lines on `out`.
  /// Dynamic loss scaling (runtime/optim/LossScaler.h): on by default for fp16 plans and for
  /// runs resumed from a checkpoint that holds a loss scale (continuing its state), or with an
  /// initial scale (--loss-scale, which also restarts a resumed scaler); noLossScale turns it
  /// off. The growth interval is not saved: pass it again on resume.
  std::optional<double> lossScale;
  bool noLossScale = false;
  int64_t lossScaleGrowthInterval = 2000;
  /// Testing (--inject-nonfinite-step K): step K's (1-based) backward seeds are +inf, so its
  /// gradients overflow as an fp16 run's can. 0: never.
  int64_t injectNonFiniteStep = 0;
  /// A step with a non-finite gradient is skipped in every dtype (no weight changes; the
  /// metrics say `"skipped": true`); more than this many in a row stop the run with an error
  /// (0: the first one does). Default: kMaxSkippedSteps, or kMaxSkippedStepsScaled with loss
  /// scaling (whose scale backs off by half at each skip, so that a high initial scale may
  /// skip several steps in a row).
  std::optional<int64_t> maxSkippedSteps;
  /// Set to a signal number (e.g. by a SIGINT handler; any non-zero value) to stop early: no
  /// further step is dispatched, the steps under way finish, a checkpoint of them is saved
  /// (with --save), and train() returns normally with TrainSummary::interrupted. With several
  /// ranks, any rank's request stops every rank at the same step. Null: never.
  const std::atomic<int> *stop = nullptr;
  /// Data-parallel ranks (runtime/dist/World.h; file comment), or null: a single process. A
  /// failure that is not every rank's ends every rank (World::abort) before train() returns.
  World *world = nullptr;
  /// Testing (--inject-failure-step K): this process fails with an error when step K
  /// (1-based) is dispatched (under mpirun: one rank failing). 0: never. Not part of the
  /// launch check, so one rank of an MPMD launch may pass it.
  int64_t injectFailureStep = 0;
};

/// The groups TrainOptions::resumeOverride takes.
inline constexpr const char *kResumeOverrideGroups[] = {"lr", "schedule", "seed", "data", "batch"};

/// The largest vocabulary text data (byte tokens 0..255) trains without textAsBytes: 256 bytes
/// and up to 64 special tokens.
inline constexpr int64_t kByteVocabularyMax = 320;

/// TrainOptions::maxSkippedSteps' defaults.
constexpr int64_t kMaxSkippedSteps = 5;
constexpr int64_t kMaxSkippedStepsScaled = 25;

struct TrainSummary {
  int64_t firstStep = 0;            ///< The first step run (0, or the checkpoint's step).
  /// Resumed at --steps: nothing was trained (losses is empty; the export still ran).
  bool alreadyDone = false;
  std::vector<double> losses;       ///< One per step run.
  std::optional<double> evalLoss;   ///< The last evaluation's loss.
  int64_t tokensPerStep = 0;
  double seconds = 0;               ///< Wall time of the steps (excluding loading).
  std::string checkpointDir;        ///< Where the last checkpoint went ("" : none).
  std::string tracePath;
  std::string kernelProfilePath;    ///< Where --profile-kernels went ("" : nowhere).
  std::string kernelProfileTable;   ///< Its largest kernels and instructions, as text.
  std::string exportSummary;        ///< What --export-hf wrote ("" : nothing).
  int devices = 0;
  int ranks = 1;                    ///< Data-parallel ranks (TrainOptions::world), 1 without.
  bool interrupted = false;         ///< Stopped early by TrainOptions::stop.
  /// The stop request's value (the largest over the ranks): the signal, for the exit code.
  int stopSignal = 0;
  int64_t skippedSteps = 0;         ///< Steps skipped for non-finite gradients.
};

/// Runs `options`. With options.world, an error on this rank alone prints
/// "rp-run: rank r of R: error: ..." and aborts every rank (it does not return); an error every
/// rank found alike (a refused launch: different plans, data, state or flags) returns, as
/// without ranks. Errors: InvalidArgument / NotFound / DataLoss / Unimplemented for bad
/// input found before the first step (plan, weights, data, checkpoint, flags; nothing is
/// written then), Internal for a failure during training (naming the step).
StatusOr<TrainSummary> train(const TrainOptions &options, std::FILE *out);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_TRAINER_H
