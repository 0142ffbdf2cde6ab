//===- Trainer.cpp - A training run of a compiled plan (rp-run) -----------===//

#include "runtime/train/Trainer.h"

#include "base/HostTensor.h"
#include "runtime/data/BatchSampler.h"
#include "runtime/dist/World.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/optim/AdamW.h"
#include "runtime/optim/LossScaler.h"
#include "runtime/plan/PlanInputs.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/train/ArenaCheckpoint.h"
#include "runtime/train/BackendFactory.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/InputGuards.h"
#include "runtime/train/LaunchCheck.h"
#include "runtime/train/MetricsLog.h"
#include "runtime/trace/KernelProfile.h"
#include "runtime/trace/Trace.h"
#include "runtime/train/Progress.h"
#include "runtime/train/TokenWeights.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

using Clock = std::chrono::steady_clock;

/// Step counts beyond this are refused (job indices step * stages stay far from overflow).
constexpr int64_t kMaxSteps = int64_t(1) << 40;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The data-fed inputs of a plan: token ids (required), labels and positions (optional), and
/// the fused tail's loss-seed buffer (TokenWeights.h).
struct Feed {
  PlanInput tokens;
  std::optional<PlanInput> labels;
  std::optional<PlanInput> positions; ///< `position_ids` (PlanInputs.h)
  int seedBuffer = -1;
};

StatusOr<Feed> planFeed(const pb::Plan &plan) {
  Feed feed;
  bool haveTokens = false;
  for (const PlanInput &in : analyzeInputs(plan)) {
    if (in.role == InputRole::Tokens && !haveTokens) {
      feed.tokens = in;
      haveTokens = true;
    } else if (in.role == InputRole::Labels && !feed.labels) {
      feed.labels = in;
    } else if (in.role == InputRole::Positions && !feed.positions) {
      feed.positions = in;
    } else {
      return unimplemented("model input '" + in.name +
                           "' is neither token ids (the indices of an embedding gather), labels "
                           "(of the cross-entropy loss) nor position_ids; rp-run --data feeds "
                           "those only");
    }
  }
  if (!haveTokens)
    return unimplemented("the plan has no token-id input (an input used as the indices of an "
                         "embedding gather); rp-run --data cannot feed it");
  if (feed.tokens.shape.size() != 2)
    return unimplemented("token input '" + feed.tokens.name + "' has shape " +
                         formatShape(feed.tokens.shape) + "; rp-run feeds [batch, seq]");
  for (const PlanInput *in : {&feed.tokens, feed.labels ? &*feed.labels : nullptr,
                              feed.positions ? &*feed.positions : nullptr})
    if (in && in->dtype != DType::I64 && in->dtype != DType::I32)
      return unimplemented("input '" + in->name + "' holds " + dtypeName(in->dtype) +
                           " ids; rp-run feeds i64 or i32");
  if (feed.labels && feed.labels->shape != feed.tokens.shape)
    return unimplemented("labels input '" + feed.labels->name + "' has shape " +
                         formatShape(feed.labels->shape) + ", the token input " +
                         formatShape(feed.tokens.shape) + "; rp-run feeds both as [batch, seq]");
  if (feed.positions && feed.positions->shape != feed.tokens.shape)
    return unimplemented("position input '" + feed.positions->name + "' has shape " +
                         formatShape(feed.positions->shape) + ", the token input " +
                         formatShape(feed.tokens.shape) + "; rp-run feeds both as [batch, seq]");
  for (int b = 0; b < plan.host_buffers_size(); ++b)
    if (plan.host_buffers(b).kind() == pb::LOSS_SEED)
      feed.seedBuffer = b;
  if (feed.seedBuffer < 0)
    return invalidArgument("the plan has no LOSS_SEED buffer (the fused tail's backward seed); "
                           "recompile the model with this rpc-compile");
  return feed;
}

/// Checks before anything is loaded or created that output file `path` (of option `flag`) can
/// be written and is not one of `inputs` (rp-run would destroy its own plan or data).
Status checkOutputFile(const std::string &path, const char *flag,
                       const std::vector<std::string> &inputs) {
  namespace fs = std::filesystem;
  if (path.empty())
    return okStatus();
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return invalidArgument(std::string(flag) + " " + path + " is a directory, not a file");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty())
    parent = ".";
  if (!fs::is_directory(parent, ec))
    return invalidArgument(std::string("cannot write ") + flag + " " + path + ": directory " +
                           parent.string() + " does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return invalidArgument(std::string("cannot write ") + flag + " " + path + ": directory " +
                           parent.string() + " is not writable");
  for (const std::string &input : inputs)
    if (!input.empty() && fs::exists(path, ec) && fs::equivalent(path, input, ec))
      return invalidArgument(std::string(flag) + " " + path + " is the input file " + input +
                             "; rp-run would overwrite it");
  return okStatus();
}

Status trainingError(int64_t step, const Status &status) {
  return internal("training failed at step " + std::to_string(step + 1) + ": " +
                  status.message());
}

} // namespace

StatusOr<uint64_t> parseSeed(const std::string &text, const std::string &where) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return invalidArgument(where + ": the checkpoint's seed '" + text + "' is not a number");
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return invalidArgument(where + ": the checkpoint's seed '" + text +
                           "' does not fit in 64 bits");
  return static_cast<uint64_t>(value);
}

namespace {

/// Text data on a model whose vocabulary is not bytes, or a file that is not text: refused
/// unless --text-as-bytes (TrainOptions::textAsBytes).
Status checkTextData(const TokenData &data, int64_t vocab, bool textAsBytes) {
  if (data.format != DataFormat::Text || textAsBytes)
    return okStatus();
  // The first byte that is not UTF-8 text: a NUL, a stray continuation byte, a truncated or
  // overlong sequence.
  const std::vector<uint32_t> &b = data.tokens;
  for (size_t i = 0; i < b.size();) {
    const uint32_t c = b[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 && c >= 0xC2 ? 2 : (c >> 4) == 0xE ? 3
                         : (c >> 3) == 0x1E && c <= 0xF4     ? 4
                                                             : 0;
    bool ok = c != 0 && n > 0 && i + n <= b.size();
    for (size_t k = 1; ok && k < n; ++k)
      ok = (b[i + k] & 0xC0) == 0x80;
    if (ok && n == 3) // no overlong forms or surrogates
      ok = !(c == 0xE0 && b[i + 1] < 0xA0) && !(c == 0xED && b[i + 1] >= 0xA0);
    if (ok && n == 4)
      ok = !(c == 0xF0 && b[i + 1] < 0x90) && !(c == 0xF4 && b[i + 1] >= 0x90);
    if (!ok)
      return invalidArgument(
          data.path + " is not UTF-8 text (" +
          (c == 0 ? std::string("a NUL byte") : "an invalid UTF-8 sequence") + " at byte " +
          std::to_string(i) + "): a binary file? Pass a token file (--data-format tokens or "
          "nanogpt), or --text-as-bytes to train on its bytes anyway");
    i += n;
  }
  if (vocab > kByteVocabularyMax)
    return invalidArgument(
        data.path + " is text, read as byte tokens (ids 0-255), but the plan's vocabulary has " +
        std::to_string(vocab) + " tokens: the model's tokenizer is not bytes, so each byte "
        "would train as another token; tokenize the text with the model's tokenizer "
        "(rpc-finetune does, or examples/data/prepare_corpus.py --tokenizer tokenizer.json), "
        "or pass --text-as-bytes to train on the bytes anyway");
  return okStatus();
}

/// A double as a checkpoint's metadata keeps it (reads back exactly), and as messages show it.
std::string exactNumber(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}
std::string shortNumber(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// Checks the flags of `options` before anything is loaded or created (nothing is written).
/// Data-parallel ranks other than 0 skip the files only rank 0 writes (--log; --save and
/// --export-hf are checked later, on rank 0): those paths need not exist on their nodes.
Status checkTrainOptions(const TrainOptions &options, bool writesRankZeroOutputs) {
  if (options.steps < 1)
    return invalidArgument("--steps must be at least 1 (got " + std::to_string(options.steps) +
                           ")");
  RP_RETURN_IF_ERROR(BackendFactory::checkBuilt(options));
  if (options.backend == "sim")
    return invalidArgument("the simulator backend does not train: rp-run simulate simulates "
                           "the plan (runtime/sim/Simulate.h)");
  if (options.backend != "cpu" && options.backend != "cuda")
    return invalidArgument("unknown --backend '" + options.backend +
                           "' (expected cpu, cuda or sim)");
  if (options.devices < 0 || options.devices > kMaxWorkers)
    return invalidArgument("--gpus " + std::to_string(options.devices) + ": a pool has 1 to " +
                           std::to_string(kMaxWorkers) + " workers");
  if (options.steps > kMaxSteps)
    return invalidArgument("--steps " + std::to_string(options.steps) + " is more than the " +
                           std::to_string(kMaxSteps) + " steps rp-run counts");
  if (options.lr && !(std::isfinite(*options.lr) && *options.lr > 0))
    return invalidArgument("--lr must be a positive finite number");
  if (options.warmup && *options.warmup < 0)
    return invalidArgument("--warmup must be at least 0 (got " + std::to_string(*options.warmup) +
                           ")");
  if (!(options.evalSplit >= 0 && options.evalSplit < 1))
    return invalidArgument("--eval-split must be at least 0 and below 1");
  if (options.minLr && !(std::isfinite(*options.minLr) && *options.minLr >= 0))
    return invalidArgument("--min-lr must be a finite number >= 0");
  if (!options.resumeOverride.empty() && options.resumeDir.empty())
    return invalidArgument("--resume-override applies to a resumed run: add --resume DIR");
  for (const std::string &group : options.resumeOverride)
    if (std::find(std::begin(kResumeOverrideGroups), std::end(kResumeOverrideGroups), group) ==
        std::end(kResumeOverrideGroups))
      return invalidArgument("--resume-override: unknown setting '" + group +
                             "' (expected lr, schedule, seed, data or batch)");
  if (options.lossScale && options.noLossScale)
    return invalidArgument("--loss-scale and --no-loss-scale contradict each other");
  if (options.lossScale && !(std::isfinite(*options.lossScale) && *options.lossScale > 0))
    return invalidArgument("--loss-scale must be a positive finite number");
  if (options.lossScaleGrowthInterval < 1)
    return invalidArgument("--loss-scale-growth-interval must be at least 1 (got " +
                           std::to_string(options.lossScaleGrowthInterval) + ")");
  if (options.injectFailureStep < 0)
    return invalidArgument("--inject-failure-step must be a step number >= 1 (0: never)");
  if (options.injectNonFiniteStep < 0)
    return invalidArgument("--inject-nonfinite-step must be a step number >= 1 (0: never)");
  if (options.logPath == options.tracePath && !options.logPath.empty())
    return invalidArgument("--log and --trace name the same file " + options.logPath);
  if (writesRankZeroOutputs)
    RP_RETURN_IF_ERROR(checkOutputFile(options.logPath, "--log",
                                       {options.planPath, options.weightsPath, options.dataPath}));
  RP_RETURN_IF_ERROR(checkOutputFile(options.tracePath, "--trace",
                                     {options.planPath, options.weightsPath, options.dataPath}));
  for (const auto &[flag, path] : {std::pair<const char *, const std::string &>{"--log", options.logPath},
                                   {"--trace", options.tracePath}})
    if (!path.empty() && path == options.profileKernelsPath)
      return invalidArgument(std::string("--profile-kernels and ") + flag +
                             " name the same file " + path);
  RP_RETURN_IF_ERROR(checkOutputFile(options.profileKernelsPath, "--profile-kernels",
                                     {options.planPath, options.weightsPath, options.dataPath}));
  return okStatus();
}

/// One training run, phase by phase: every phase up to openOutputs() checks its input before
/// anything is written; the members hold what the phases share. Members are declared in the
/// order they are made, so they are destroyed in reverse: the executor before the backend,
/// the backend before the host arena it reads.
class Trainer {
public:
  Trainer(const TrainOptions &options, std::FILE *out) : options_(options), out_(out) {
    if (options.world) {
      rank_ = options.world->rank();
      ranks_ = options.world->ranks();
    }
  }

  StatusOr<TrainSummary> run();
  /// Whether run()'s error is every rank's alike (a refused launch), not this rank's alone.
  bool failedOnEveryRank() const { return everyRankFailed_; }

private:
  /// The plan, its data-fed inputs and the token data (checked against the plan's vocabulary).
  Status loadPlanAndData();
  /// --resume: the checkpoint, its step (at most --steps) and the run's settings (the
  /// learning-rate schedule, the seed; resumeSettings); without: the flags' settings.
  Status loadCheckpointToResume();
  /// The checkpoint's math-changing settings against this run's (Trainer.h): the checkpoint's
  /// for the flags left out; flags that differ refused unless --resume-override names them.
  Status resumeSettings();
  /// The learning-rate schedule's bounds, once resolved.
  Status checkSchedule() const;
  /// The batch sampler of (batch, seq) windows; --eval-every needs held-out windows.
  Status createSampler();
  /// The pool size, the memory check, and the host arena with the checkpoint's state or the
  /// plan's initial weights.
  Status createHostArena();
  /// Data parallel: the ranks compare their plan, data, state and flags (LaunchCheck.h).
  Status checkLaunch();
  /// The trained labels of every micro-batch of step `k` (R * M with ranks; n_m, or
  /// batch * seq for every one without a `mean` labels input), this rank's written into the
  /// records of `k`, the other ranks' drawn into scratch to be counted.
  StatusOr<std::vector<int64_t>> fillStep(int64_t k);
  /// The trace recorder, the backend (BackendFactory) and the executor, started.
  Status startExecutor();
  /// The checkpoint directory check and the metrics log (output files are opened only once
  /// every input has been checked), the summary's constants and the progress bar.
  Status openOutputs();
  /// Steps [firstStep, end) in segments ending at evaluations, checkpoints or the end.
  Status runSteps();
  /// Fills and dispatches the steps of [step, segmentEnd) until an interrupt, reporting each
  /// step once the next one is dispatched; returns the first step not dispatched.
  StatusOr<int64_t> dispatchSegment(int64_t step, int64_t segmentEnd);
  /// Step `k`: waits for its input records, fills them from the sampler and dispatches it.
  Status dispatchStep(int64_t k, int64_t segmentEnd);
  /// After the drain of a segment whose steps [.., done) completed: its last step's report,
  /// the evaluation and the checkpoint that fall on it.
  Status endSegment(int64_t done, int64_t segmentEnd, int64_t &savedAt);
  /// The evaluation at the end of segment `segmentEnd` (and its progress message).
  StatusOr<double> evaluateAt(int64_t segmentEnd);
  /// The summary's time, the end of the progress bar and the trace file.
  StatusOr<TrainSummary> finish();

  /// A step's token-weighted loss (TokenWeights.h) from its micro-batch losses, read from its
  /// host records (read it before an evaluation, which reuses the records).
  StatusOr<double> lossOf(int64_t step);
  /// Writes the micro-batches' loss seeds (TokenWeights.h) into the records of `step` (the
  /// records of parity 0 for an evaluation, whose seeds are 0: its gradients are unused).
  void writeSeeds(int64_t step, const std::vector<float> &seeds);
  /// The loss scaler's state to resume from: the checkpoint's ("loss_scale",
  /// "loss_scale_good_steps"), or the initial scale.
  Status lossScaleFromCheckpoint();
  /// Logs and shows step `step`; fails a diverged run.
  Status report(int64_t step, double loss, std::optional<double> evalLoss);
  /// The mean loss over the held-out windows (up to 4 groups of M micro-batches).
  StatusOr<double> evaluate();
  /// A checkpoint of the first `steps` steps to --save.
  Status save(int64_t steps);
  /// Where a micro-batch's inputs go in its host record. The labels of a plan without a labels
  /// input go to `unusedLabels_` (the sampler always writes both); labels may have another
  /// integer dtype than the token ids.
  uint8_t *tokensIn(uint8_t *record) const;
  void *labelsIn(uint8_t *record);
  /// Where the positions go (null without a `position_ids` input), and their dtype.
  void *positionsIn(uint8_t *record) const {
    return feed_.positions ? record + loaded_.plan.host_buffers(feed_.positions->buffer).offset()
                           : nullptr;
  }
  DType positionDType() const { return feed_.positions ? feed_.positions->dtype : DType::I64; }
  /// This process's stop request: the signal, or 0.
  int stopRequest() const { return options_.stop ? options_.stop->load() : 0; }
  /// Whether to stop before dispatching the next step: this process's stop request, or, with
  /// several ranks, any rank's (one collective per step boundary, so every rank stops at the
  /// same step). Records the request's value in the summary.
  StatusOr<bool> stopAgreed() {
    int request = stopRequest();
    if (options_.world && options_.world->ranks() > 1 && options_.stop) {
      RP_ASSIGN_OR_RETURN(request, options_.world->maxOverRanks(request));
    }
    summary_.stopSignal = request;
    return request != 0;
  }
  int64_t nextBoundary(int64_t step, int64_t every) const {
    return every > 0 ? (step / every + 1) * every : end_;
  }

  const TrainOptions &options_;
  std::FILE *out_;
  std::optional<BackendFactory> backends_;
  LoadedPlan loaded_;
  Feed feed_;
  TokenData data_{};
  std::optional<LoadedCheckpoint> ckpt_;
  uint64_t seed_ = 0;
  LrSchedule schedule_;
  uint64_t dataFingerprint_ = 0; ///< Of the tokens and the loss mask (checkpoint metadata).
  int64_t batch_ = 0, seq_ = 0;
  std::optional<BatchSampler> sampler_;
  int devices_ = 0;
  std::optional<HostArena> host_;
  int64_t firstStep_ = 0;
  std::optional<TraceRecorder> trace_;
  std::optional<KernelProfile> profile_; // --profile-kernels; outlives the backend
  std::unique_ptr<Backend> backend_;
  ExecutorOptions exec_;
  std::optional<Executor> executor_;
  std::optional<MetricsLog> log_;
  TrainSummary summary_;
  int64_t microBatches_ = 0;
  int64_t end_ = 0;
  std::optional<ProgressBar> bar_;
  Clock::time_point start_, lastReport_;
  std::vector<uint8_t> unusedLabels_;
  DType labelDType_ = DType::I64;
  /// Trained labels per micro-batch of the steps dispatched and not yet reported.
  std::map<int64_t, std::vector<int64_t>> trained_;
  LossScaleConfig lossScale_;
  /// The most consecutive skipped steps before the run stops (TrainOptions::maxSkippedSteps,
  /// resolved once the loss scaling is known), and the current run of them.
  int64_t maxSkippedSteps_ = 0;
  int64_t consecutiveSkips_ = 0;
  LossScaleState lossScaleStart_;
  int rank_ = 0, ranks_ = 1; ///< Data parallel: this rank and the number of ranks.
  bool everyRankFailed_ = false;
  std::vector<uint8_t> scratchTokens_, scratchLabels_; ///< Other ranks' micro-batches.
};

StatusOr<TrainSummary> Trainer::run() {
  RP_RETURN_IF_ERROR(checkTrainOptions(options_, rank_ == 0));
  RP_ASSIGN_OR_RETURN(backends_, BackendFactory::probe(options_));
  RP_RETURN_IF_ERROR(loadPlanAndData());
  RP_RETURN_IF_ERROR(loadCheckpointToResume());
  RP_RETURN_IF_ERROR(createSampler());
  RP_RETURN_IF_ERROR(createHostArena());
  RP_RETURN_IF_ERROR(checkLaunch());
  if (firstStep_ == options_.steps) { // resumed at the end: nothing to train (the export runs)
    start_ = Clock::now();
    trace_.emplace(false);
    summary_.alreadyDone = true;
    summary_.firstStep = firstStep_;
    summary_.devices = devices_;
    summary_.ranks = ranks_;
    return finish();
  }
  RP_RETURN_IF_ERROR(startExecutor());
  RP_RETURN_IF_ERROR(openOutputs());
  RP_RETURN_IF_ERROR(runSteps());
  return finish();
}

Status Trainer::loadPlanAndData() {
  RP_ASSIGN_OR_RETURN(loaded_, loadPlan(options_.planPath, options_.weightsPath,
                                        options_.allowExtraWeights));
  RP_ASSIGN_OR_RETURN(feed_, planFeed(loaded_.plan));
  const bool weightsGiven = !options_.weightsPath.empty() || !options_.resumeDir.empty();
  RP_RETURN_IF_ERROR(checkInitialWeights(loaded_.plan, options_.planPath, weightsGiven,
                                         options_.fromScratch, "--from-scratch"));
  if (!weightsGiven && rank_ == 0)
    if (std::optional<std::string> note = placeholderWeightsNote(loaded_.plan, options_.planPath))
      std::fprintf(out_, "rp-run: note: %s; training from them (--from-scratch)\n", note->c_str());
  if (rank_ == 0) { // the export is rank 0's (its directory need not exist on other nodes)
    RP_RETURN_IF_ERROR(checkHfExport(options_.exportHf, loaded_.plan));
    RP_RETURN_IF_ERROR(checkExportOutsideInputs(
        options_.exportHf.dir, "--export-hf",
        {options_.weightsPath, options_.resumeDir,
         {options_.planPath, options_.dataPath, options_.exportHf.configPath}}));
  }
  if (options_.gemmAccumulate == "fp16" && loaded_.plan.config().compute_dtype() != pb::F16)
    return invalidArgument("--gemm-accumulate fp16 applies to fp16 plans (compile with "
                           "--dtype fp16)");
  RP_ASSIGN_OR_RETURN(data_, readTokens(options_.dataPath, options_.dataFormat));
  int64_t vocab = feed_.tokens.vocabSize;
  if (feed_.labels && feed_.labels->vocabSize < vocab)
    vocab = feed_.labels->vocabSize;
  if (!data_.lossMask.empty() && !(feed_.labels && feed_.labels->meanLoss))
    return invalidArgument(options_.dataPath +
                           " has a loss mask, but the plan has no labels input of a `mean` "
                           "cross-entropy to mask (export the model with a labels input)");
  RP_RETURN_IF_ERROR(checkTextData(data_, vocab, options_.textAsBytes));
  RP_RETURN_IF_ERROR(checkVocabulary(data_, vocab));
  RP_RETURN_IF_ERROR(checkPositionFeed(data_, feed_.positions.has_value(),
                                       feed_.positions ? feed_.positions->vocabSize : 0,
                                       feed_.tokens.shape[1]));
  dataFingerprint_ =
      fingerprintBytes(data_.tokens.data(), data_.tokens.size() * sizeof(uint32_t), 0);
  dataFingerprint_ =
      fingerprintBytes(data_.lossMask.data(), data_.lossMask.size(), dataFingerprint_);
  dataFingerprint_ = fingerprintBytes(data_.positions.data(),
                                      data_.positions.size() * sizeof(uint32_t), dataFingerprint_);
  return okStatus();
}

Status Trainer::loadCheckpointToResume() {
  seed_ = options_.seed.value_or(0);
  schedule_ = LrSchedule{options_.lr.value_or(loaded_.plan.config().optimizer().lr()),
                         options_.warmup.value_or(0),
                         options_.lrSchedule.value_or(LrDecay::Constant),
                         options_.minLr.value_or(0), options_.steps};
  if (options_.resumeDir.empty())
    return checkSchedule();
  RP_ASSIGN_OR_RETURN(ckpt_, loadCheckpoint(options_.resumeDir));
  if (ckpt_->step > kMaxSteps)
    return invalidArgument(options_.resumeDir + ": the checkpoint's step " +
                           std::to_string(ckpt_->step) + " is more than the " +
                           std::to_string(kMaxSteps) + " steps rp-run counts");
  if (ckpt_->step > options_.steps)
    return invalidArgument(options_.resumeDir + ": the checkpoint is at step " +
                           std::to_string(ckpt_->step) + ", past --steps " +
                           std::to_string(options_.steps) +
                           " (the run's total step count): pass --steps " +
                           std::to_string(ckpt_->step) + " or more");
  auto r = ckpt_->metadata.find("data_parallel_ranks");
  const std::string written = r != ckpt_->metadata.end() ? r->second : "1";
  if (written != std::to_string(ranks_))
    return invalidArgument(options_.resumeDir + ": the checkpoint was written by " + written +
                           " data-parallel rank(s), this run has " + std::to_string(ranks_) +
                           ": resume with the same number of ranks (mpirun -np " + written +
                           (written == "1" ? ", or without mpirun" : "") + ")");
  RP_RETURN_IF_ERROR(resumeSettings());
  return checkSchedule();
}

Status Trainer::resumeSettings() {
  const std::string &dir = options_.resumeDir;
  const auto saved = [&](const char *key) -> const std::string * {
    auto it = ckpt_->metadata.find(key);
    return it == ckpt_->metadata.end() ? nullptr : &it->second;
  };
  const auto number = [&](const char *key, const std::string &text) -> StatusOr<double> {
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (errno || end == text.c_str() || *end || !std::isfinite(v) || v < 0)
      return invalidArgument(dir + ": the checkpoint's " + key + " '" + text +
                             "' is not a number >= 0");
    return v;
  };
  const auto count = [&](const char *key, const std::string &text) -> StatusOr<uint64_t> {
    StatusOr<uint64_t> v = parseSeed(text, dir);
    if (!v.ok())
      return invalidArgument(dir + ": the checkpoint's " + key + " '" + text +
                             "' is not a step count");
    return v;
  };
  std::vector<std::pair<std::string, std::string>> changed; // (group, what)
  const auto differs = [&](const char *group, const std::string &flag, const std::string &given,
                           const std::string &was) {
    changed.push_back({group, flag + " " + given + " (the checkpoint's " + was + ")"});
  };
  if (const std::string *s = saved("lr")) {
    RP_ASSIGN_OR_RETURN(const double lr, number("lr", *s));
    if (!options_.lr)
      schedule_.lr = lr;
    else if (*options_.lr != lr)
      differs("lr", "--lr", shortNumber(*options_.lr), shortNumber(lr));
  }
  if (const std::string *s = saved("lr_schedule")) {
    StatusOr<LrDecay> decay = parseLrDecay(*s);
    if (!decay.ok())
      return invalidArgument(dir + ": the checkpoint's lr_schedule '" + *s +
                             "' is not constant, cosine or linear");
    if (!options_.lrSchedule)
      schedule_.decay = *decay;
    else if (*options_.lrSchedule != *decay)
      differs("schedule", "--lr-schedule", lrDecayName(*options_.lrSchedule), *s);
  }
  if (const std::string *s = saved("warmup")) {
    RP_ASSIGN_OR_RETURN(const uint64_t warmup, count("warmup", *s));
    if (!options_.warmup)
      schedule_.warmup = static_cast<int64_t>(warmup);
    else if (static_cast<uint64_t>(*options_.warmup) != warmup)
      differs("schedule", "--warmup", std::to_string(*options_.warmup), *s);
  }
  if (const std::string *s = saved("min_lr")) {
    RP_ASSIGN_OR_RETURN(const double minLr, number("min_lr", *s));
    if (!options_.minLr)
      schedule_.minLr = minLr;
    else if (*options_.minLr != minLr)
      differs("schedule", "--min-lr", shortNumber(*options_.minLr), shortNumber(minLr));
  }
  // A decay's length is the run's total step count: another --steps changes it.
  if (const std::string *s = saved("steps"); s && schedule_.decay != LrDecay::Constant) {
    RP_ASSIGN_OR_RETURN(const uint64_t steps, count("steps", *s));
    if (static_cast<uint64_t>(options_.steps) != steps)
      changed.push_back({"schedule", "--steps " + std::to_string(options_.steps) + " (the " +
                                         lrDecayName(schedule_.decay) + " decay of the " +
                                         "checkpoint's run ends at step " + *s + ")"});
  }
  if (const std::string *s = saved("seed")) {
    RP_ASSIGN_OR_RETURN(const uint64_t seed, parseSeed(*s, dir));
    if (!options_.seed)
      seed_ = seed;
    else if (*options_.seed != seed)
      differs("seed", "--seed", std::to_string(*options_.seed), *s);
  }
  if (const std::string *s = saved("data_fingerprint");
      s && *s != std::to_string(dataFingerprint_)) {
    const std::string *was = saved("data");
    changed.push_back({"data", "--data " + options_.dataPath + " (other tokens than the " +
                                   "checkpoint's " + (was ? *was : std::string("data")) + ")"});
  }
  if (const std::string *s = saved("eval_split")) {
    RP_ASSIGN_OR_RETURN(const double split, number("eval_split", *s));
    if (split != options_.evalSplit)
      differs("data", "--eval-split", shortNumber(options_.evalSplit), shortNumber(split));
  }
  const pb::Plan &plan = loaded_.plan;
  const std::string batch = std::to_string(plan.config().micro_batches()) + " micro-batches of " +
                            std::to_string(feed_.tokens.shape[0]) + " x " +
                            std::to_string(feed_.tokens.shape[1]) + " tokens";
  const std::string *m = saved("micro_batches"), *b = saved("batch");
  if ((m && *m != std::to_string(plan.config().micro_batches())) ||
      (b && *b != std::to_string(feed_.tokens.shape[0]) + "x" +
                      std::to_string(feed_.tokens.shape[1])))
    changed.push_back({"batch", "a plan of " + batch + " (the checkpoint's run: " +
                                    (m ? *m : std::string("?")) + " micro-batches" +
                                    (b ? " of " + *b + " tokens" : std::string()) + ")"});
  std::string refused, groups;
  std::set<std::string> named;
  for (const auto &[group, what] : changed) {
    if (std::find(options_.resumeOverride.begin(), options_.resumeOverride.end(), group) !=
        options_.resumeOverride.end()) {
      if (rank_ == 0)
        std::fprintf(out_, "rp-run: note: resuming with %s, as --resume-override %s allows\n",
                     what.c_str(), group.c_str());
      continue;
    }
    refused += (refused.empty() ? "" : "; ") + what;
    if (named.insert(group).second)
      groups += (groups.empty() ? "" : ",") + group;
  }
  if (!refused.empty())
    return invalidArgument(dir + ": " + refused + ": these change the training of the " +
                           "checkpoint's run; leave the flags out (or repeat its values) to " +
                           "continue it, or pass --resume-override " + groups +
                           " to change them");
  return okStatus();
}

Status Trainer::checkSchedule() const {
  if (schedule_.minLr > schedule_.lr)
    return invalidArgument("--min-lr " + shortNumber(schedule_.minLr) +
                           " is above the peak learning rate " + shortNumber(schedule_.lr));
  if (schedule_.decay != LrDecay::Constant && schedule_.warmup >= schedule_.totalSteps)
    return invalidArgument(std::string("--lr-schedule ") + lrDecayName(schedule_.decay) +
                           " decays after the warmup, but --warmup " +
                           std::to_string(schedule_.warmup) + " leaves none of the " +
                           std::to_string(schedule_.totalSteps) + " --steps");
  return okStatus();
}

Status Trainer::lossScaleFromCheckpoint() {
  // On for fp16 plans, with --loss-scale, and when resuming a run that scaled.
  const bool resumedScaling = ckpt_ && ckpt_->metadata.count("loss_scale");
  lossScale_.enabled = !options_.noLossScale &&
                       (options_.lossScale || resumedScaling ||
                        loaded_.plan.config().compute_dtype() == pb::F16);
  lossScale_.initScale = options_.lossScale.value_or(lossScale_.initScale);
  lossScale_.growthInterval = options_.lossScaleGrowthInterval;
  RP_RETURN_IF_ERROR(checkLossScaleConfig(lossScale_));
  lossScaleStart_ = LossScaleState{lossScale_.initScale, 0};
  maxSkippedSteps_ = options_.maxSkippedSteps.value_or(
      lossScale_.enabled ? kMaxSkippedStepsScaled : kMaxSkippedSteps);
  if (!ckpt_ || !lossScale_.enabled || options_.lossScale)
    return okStatus(); // --loss-scale restarts the scaler
  auto s = ckpt_->metadata.find("loss_scale");
  auto g = ckpt_->metadata.find("loss_scale_good_steps");
  if (s == ckpt_->metadata.end() || g == ckpt_->metadata.end())
    return okStatus(); // written without loss scaling: start at the initial scale
  char *end = nullptr;
  errno = 0;
  const double scale = std::strtod(s->second.c_str(), &end);
  if (errno || end == s->second.c_str() || *end || !(std::isfinite(scale) && scale > 0))
    return invalidArgument(options_.resumeDir + ": the checkpoint's loss_scale '" + s->second +
                           "' is not a positive number");
  RP_ASSIGN_OR_RETURN(const uint64_t good, parseSeed(g->second, options_.resumeDir));
  lossScaleStart_ = LossScaleState{scale, static_cast<int64_t>(good)};
  return okStatus();
}

Status Trainer::createSampler() {
  batch_ = feed_.tokens.shape[0];
  seq_ = feed_.tokens.shape[1];
  RP_ASSIGN_OR_RETURN(sampler_,
                      BatchSampler::create(data_, batch_, seq_, seed_, options_.evalSplit));
  if (feed_.labels)
    sampler_->setIgnoreIndex(feed_.labels->ignoreIndex);
  if (options_.evalEvery > 0 && sampler_->evalBatches() == 0 && data_.packed())
    return invalidArgument("--eval-every needs held-out data: " + options_.dataPath + " holds " +
                           std::to_string(sampler_->evalTokens() / seq_) +
                           " eval rows, fewer than one batch of " + std::to_string(batch_) +
                           " (prepare it with a larger --eval-fraction)");
  if (options_.evalEvery > 0 && sampler_->evalBatches() == 0)
    return invalidArgument("--eval-every needs held-out data: " + options_.dataPath + " holds " +
                           std::to_string(data_.tokens.size()) + " tokens, too few for a " +
                           shortNumber(100 * options_.evalSplit) +
                           "% evaluation split (--eval-split) of windows of " +
                           std::to_string(seq_ + 1) + " tokens");
  return okStatus();
}

Status Trainer::createHostArena() {
  const pb::Plan &plan = loaded_.plan;
  devices_ = options_.devices > 0 ? options_.devices : static_cast<int>(plan.config().gpus());
  if (devices_ > kMaxWorkers)
    return invalidArgument("the plan's pool of " + std::to_string(devices_) +
                           " workers is more than " + std::to_string(kMaxWorkers) +
                           "; pass --gpus N");
  // The CPU backend keeps each worker's device arena in host memory too.
  const bool onGpu = options_.backend == "cuda";
  RP_RETURN_IF_ERROR(checkPlanFitsInMemory(plan, onGpu ? 0 : devices_));
  RP_ASSIGN_OR_RETURN(host_, HostArena::create(plan));
  if (ckpt_)
    RP_RETURN_IF_ERROR(restoreCheckpoint(*host_, *ckpt_));
  else
    RP_RETURN_IF_ERROR(host_->loadWeights(loaded_.weights));
  firstStep_ = ckpt_ ? ckpt_->step : 0;
  RP_RETURN_IF_ERROR(lossScaleFromCheckpoint());
  ckpt_.reset();
  return okStatus();
}

Status Trainer::checkLaunch() {
  if (!options_.world)
    return okStatus();
  std::vector<LaunchPart> parts;
  RP_ASSIGN_OR_RETURN(const uint64_t plan, fingerprintFile(options_.planPath));
  parts.push_back({"the plan file " + options_.planPath, plan});
  uint64_t data = fingerprintBytes(data_.tokens.data(), data_.tokens.size() * sizeof(uint32_t), 0);
  data = fingerprintBytes(data_.lossMask.data(), data_.lossMask.size(), data);
  data = fingerprintBytes(data_.positions.data(), data_.positions.size() * sizeof(uint32_t), data);
  data = fingerprintBytes(&data_.rowLength, sizeof(data_.rowLength), data);
  parts.push_back({"the data " + options_.dataPath, data});
  // The weights, the fp32 master weights and both moments: the initial weights (--weights)
  // or the resumed checkpoint (--resume), as loaded.
  const auto *grads = reinterpret_cast<const uint8_t *>(host_->grads());
  parts.push_back({"the initial weights and optimizer state (--weights / --resume)",
                   fingerprintBytes(host_->weights(),
                                    static_cast<size_t>(grads - host_->weights()), 0)});
  // The flags that change what is computed (not --gpus: results do not depend on the pool
  // size; not the output paths).
  char flags[512];
  std::snprintf(flags, sizeof flags,
                "steps=%lld first=%lld lr=%.17g warmup=%lld decay=%s min=%.17g seed=%llu "
                "backend=%s kernels=%s gemm=%s attn=%s eval=%lld/%.17g save=%lld "
                "scale=%d/%.17g/%.17g/%lld/%lld nonfinite=%lld",
                static_cast<long long>(options_.steps), static_cast<long long>(firstStep_),
                schedule_.lr, static_cast<long long>(schedule_.warmup),
                lrDecayName(schedule_.decay), schedule_.minLr,
                static_cast<unsigned long long>(seed_), options_.backend.c_str(),
                options_.kernels.c_str(), options_.gemmAccumulate.c_str(),
                options_.attentionKernel.c_str(), static_cast<long long>(options_.evalEvery),
                options_.evalSplit, static_cast<long long>(options_.saveEvery),
                lossScale_.enabled ? 1 : 0,
                lossScaleStart_.scale, lossScale_.initScale,
                static_cast<long long>(lossScaleStart_.goodSteps),
                static_cast<long long>(lossScale_.growthInterval),
                static_cast<long long>(options_.injectNonFiniteStep));
  parts.push_back({"the training flags (--steps, --lr, --warmup, --lr-schedule, --min-lr, "
                   "--seed, --backend, --kernels, --eval-every, --save-every, loss scaling, ...)",
                   fingerprintBytes(flags, std::strlen(flags), 0)});
  Status same = checkSameLaunch(*options_.world, parts);
  everyRankFailed_ = !same.ok();
  return same;
}

Status Trainer::startExecutor() {
  trace_.emplace(!options_.tracePath.empty());
  RP_ASSIGN_OR_RETURN(backend_, backends_->create(devices_, out_));
  if (trace_->enabled())
    backend_->setTrace(&*trace_);
  if (!options_.profileKernelsPath.empty()) {
    profile_.emplace();
    if (!backend_->setKernelProfile(&*profile_))
      return invalidArgument("--profile-kernels: the " + backend_->name() + " backend" +
                             (options_.kernels == "reference" ? "" : " with --kernels " +
                                                                          options_.kernels) +
                             " does not time its instructions (use --backend cuda, or cpu with "
                             "the reference kernels)");
  }
  exec_.schedule = schedule_;
  exec_.firstStep = firstStep_;
  exec_.trace = trace_->enabled() ? &*trace_ : nullptr;
  exec_.lossScale = lossScale_;
  exec_.lossScaleStart = lossScaleStart_;
  exec_.ranks = options_.world;
  executor_.emplace(*host_, *backend_, exec_);
  return executor_->start();
}

Status Trainer::openOutputs() {
  if (!options_.saveDir.empty() && rank_ == 0)
    RP_RETURN_IF_ERROR(checkCheckpointDir(options_.saveDir));
  if (!options_.logPath.empty() && rank_ == 0) {
    // A resumed run continues its log.
    RP_ASSIGN_OR_RETURN(log_, options_.resumeDir.empty()
                                  ? MetricsLog::open(options_.logPath)
                                  : MetricsLog::openResumed(options_.logPath, firstStep_));
  }
  const pb::Plan &plan = loaded_.plan;
  summary_.firstStep = firstStep_;
  summary_.devices = devices_;
  summary_.ranks = ranks_;
  summary_.tokensPerStep = ranks_ * plan.config().micro_batches() * batch_ * seq_;
  microBatches_ = plan.config().micro_batches();
  end_ = options_.steps;
  if (options_.progress && rank_ == 0)
    bar_.emplace(out_, end_, firstStep_);
  return okStatus();
}

uint8_t *Trainer::tokensIn(uint8_t *record) const {
  return record + loaded_.plan.host_buffers(feed_.tokens.buffer).offset();
}

void *Trainer::labelsIn(uint8_t *record) {
  return feed_.labels ? record + loaded_.plan.host_buffers(feed_.labels->buffer).offset()
                      : unusedLabels_.data();
}

StatusOr<double> Trainer::lossOf(int64_t step) {
  StatusOr<std::vector<float>> losses = executor_->losses(step);
  if (!losses.ok())
    return trainingError(step, losses.status());
  auto it = trained_.find(step);
  if (it == trained_.end())
    return trainingError(step, internal("no trained-label counts for this step"));
  const double loss = tokenWeightedLoss(losses.value(), it->second);
  trained_.erase(trained_.begin(), std::next(it));
  return loss;
}

void Trainer::writeSeeds(int64_t step, const std::vector<float> &seeds) {
  const int64_t offset = loaded_.plan.host_buffers(feed_.seedBuffer).offset();
  for (size_t m = 0; m < seeds.size(); ++m)
    std::memcpy(executor_->record(step, static_cast<int64_t>(m)) + offset, &seeds[m],
                sizeof(float));
}

Status Trainer::report(int64_t step, double loss, std::optional<double> evalLoss) {
  summary_.losses.push_back(loss);
  const double stepSeconds = std::chrono::duration<double>(Clock::now() - lastReport_).count();
  lastReport_ = Clock::now();
  const double elapsed = secondsSince(start_);
  const double tokensPerSecond =
      elapsed > 0 ? static_cast<double>(summary_.tokensPerStep) *
                        static_cast<double>(summary_.losses.size()) / elapsed
                  : 0;
  StatusOr<StepOutcome> outcome = executor_->outcome(step);
  if (!outcome.ok())
    return trainingError(step, outcome.status());
  summary_.skippedSteps += outcome->skipped;
  consecutiveSkips_ = outcome->skipped ? consecutiveSkips_ + 1 : 0;
  if (log_) {
    StepMetrics m{step + 1, loss, learningRate(exec_.schedule, step),
                  summary_.tokensPerStep, stepSeconds, tokensPerSecond, evalLoss, std::nullopt,
                  std::nullopt, std::nullopt};
    if (backend_->deviceMemoryBytes() >= 0)
      m.gpuMemoryBytes = backend_->deviceMemoryBytes();
    if (lossScale_.enabled)
      m.lossScale = outcome->lossScale;
    m.skipped = outcome->skipped;
    RP_RETURN_IF_ERROR(log_->write(m));
  }
  if (bar_ && outcome->skipped) {
    char text[128];
    if (lossScale_.enabled)
      std::snprintf(text, sizeof text,
                    "step %lld skipped: non-finite gradients at loss scale %g (now %g)",
                    static_cast<long long>(step + 1), outcome->lossScale,
                    outcome->lossScale * lossScale_.backoff);
    else
      std::snprintf(text, sizeof text, "step %lld skipped: non-finite gradients (no weight changed)",
                    static_cast<long long>(step + 1));
    bar_->message(text);
  }
  if (consecutiveSkips_ > maxSkippedSteps_)
    return trainingError(
        step, internal(std::to_string(consecutiveSkips_) +
                       " consecutive steps skipped for non-finite gradients (more than "
                       "--max-skipped-steps " + std::to_string(maxSkippedSteps_) +
                       "); the run diverged (try a lower --lr" +
                       (lossScale_.enabled ? std::string() : ", --grad-clip at compile time") +
                       ")"));
  if (bar_)
    bar_->update(step + 1, loss, tokensPerSecond);
  // A non-finite loss means the run diverged: fail once it is logged (exit 1), so that no
  // checkpoint of NaN weights is written.
  if (!std::isfinite(loss))
    return trainingError(step,
                         internal(std::string("the loss of step ") + std::to_string(step + 1) +
                                  " is " + (std::isnan(loss) ? "nan" : "inf") +
                                  "; the run diverged (try a lower --lr)"));
  return okStatus();
}

StatusOr<double> Trainer::evaluate() {
  const int64_t M = microBatches_;
  const int64_t groups = std::max<int64_t>(1, std::min<int64_t>(4, sampler_->evalBatches() / M));
  std::vector<float> all;
  std::vector<int64_t> trained(static_cast<size_t>(M)), allTrained;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t m = 0; m < M; ++m) {
      uint8_t *record = executor_->record(0, m);
      RP_RETURN_IF_ERROR(sampler_->fillEval((g * M + m) % sampler_->evalBatches(),
                                            feed_.tokens.dtype, tokensIn(record), labelDType_,
                                            labelsIn(record), &trained[static_cast<size_t>(m)],
                                            positionDType(), positionsIn(record)));
    }
    writeSeeds(0, std::vector<float>(trained.size(), 0.0f)); // gradients unused
    RP_ASSIGN_OR_RETURN(std::vector<float> losses, executor_->evaluate());
    all.insert(all.end(), losses.begin(), losses.end());
    allTrained.insert(allTrained.end(), trained.begin(), trained.end());
  }
  return tokenWeightedLoss(all, allTrained);
}

Status Trainer::save(int64_t steps) {
  if (rank_ != 0) // every rank holds the same state; rank 0 writes it
    return okStatus();
  RP_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointTensors> c, checkpointOf(*host_, steps, seed_));
  if (ranks_ > 1)
    c->data.metadata["data_parallel_ranks"] = std::to_string(ranks_);
  // The settings a resume compares (resumeSettings).
  c->data.metadata["lr"] = exactNumber(schedule_.lr);
  c->data.metadata["lr_schedule"] = lrDecayName(schedule_.decay);
  c->data.metadata["warmup"] = std::to_string(schedule_.warmup);
  c->data.metadata["min_lr"] = exactNumber(schedule_.minLr);
  c->data.metadata["steps"] = std::to_string(options_.steps);
  c->data.metadata["data"] = options_.dataPath;
  c->data.metadata["data_fingerprint"] = std::to_string(dataFingerprint_);
  c->data.metadata["eval_split"] = exactNumber(options_.evalSplit);
  c->data.metadata["batch"] = std::to_string(batch_) + "x" + std::to_string(seq_);
  if (lossScale_.enabled) { // after a drain: the state after the last step
    const LossScaleState state = executor_->lossScaleState();
    char scale[64];
    std::snprintf(scale, sizeof scale, "%.17g", state.scale);
    c->data.metadata["loss_scale"] = scale;
    c->data.metadata["loss_scale_good_steps"] = std::to_string(state.goodSteps);
  }
  RP_RETURN_IF_ERROR(saveCheckpoint(options_.saveDir, c->data));
  summary_.checkpointDir = options_.saveDir;
  if (bar_)
    bar_->message("saved checkpoint of step " + std::to_string(steps) + " to " +
                  options_.saveDir);
  return okStatus();
}

Status Trainer::runSteps() {
  start_ = Clock::now();
  lastReport_ = start_;
  unusedLabels_.assign(static_cast<size_t>(batch_ * seq_) * 8, 0);
  labelDType_ = feed_.labels ? feed_.labels->dtype : feed_.tokens.dtype;
  int64_t savedAt = firstStep_; // the step of the newest checkpoint (or the resumed one)
  for (int64_t step = firstStep_; step < end_;) {
    const int64_t segmentEnd = std::min(
        {end_, nextBoundary(step, options_.evalEvery), nextBoundary(step, options_.saveEvery)});
    // An interrupt stops dispatching; the steps dispatched finish, then a checkpoint is saved.
    RP_ASSIGN_OR_RETURN(const int64_t k, dispatchSegment(step, segmentEnd));
    if (k < segmentEnd) {
      summary_.interrupted = true;
      if (bar_)
        bar_->message("interrupted: finishing step " + std::to_string(k) +
                      (options_.saveDir.empty() ? std::string() : " and saving a checkpoint") +
                      " (interrupt again to abort)");
    }
    if (Status s = executor_->drain(); !s.ok())
      return trainingError(k - 1, s);
    if (k == step) { // interrupted before this segment's first step
      if (!options_.saveDir.empty() && savedAt != step)
        if (Status s = save(step); !s.ok())
          return trainingError(step - 1, s);
      break;
    }
    RP_RETURN_IF_ERROR(endSegment(k, segmentEnd, savedAt));
    if (summary_.interrupted)
      break;
    step = segmentEnd;
  }
  return okStatus();
}

StatusOr<int64_t> Trainer::dispatchSegment(int64_t step, int64_t segmentEnd) {
  int64_t k = step;
  for (; k < segmentEnd; ++k) {
    StatusOr<bool> stop = stopAgreed();
    if (!stop.ok())
      return trainingError(k, stop.status());
    if (stop.value())
      break;
    if (Status s = dispatchStep(k, segmentEnd); !s.ok())
      return trainingError(k, s);
    if (k > step) {
      RP_ASSIGN_OR_RETURN(const double loss, lossOf(k - 1));
      RP_RETURN_IF_ERROR(report(k - 1, loss, std::nullopt));
    }
  }
  return k;
}

StatusOr<std::vector<int64_t>> Trainer::fillStep(int64_t k) {
  const int64_t M = microBatches_;
  std::vector<int64_t> trained(static_cast<size_t>(ranks_ * M));
  const size_t rowBytes = static_cast<size_t>(batch_ * seq_) * 8; // i64 at most
  for (int64_t g = 0; g < ranks_ * M; ++g) {
    const bool mine = g / M == rank_;
    if (!mine && scratchTokens_.empty()) {
      scratchTokens_.assign(rowBytes, 0);
      scratchLabels_.assign(rowBytes, 0);
    }
    uint8_t *record = mine ? executor_->record(k, g % M) : nullptr;
    RP_RETURN_IF_ERROR(sampler_->fillTrain(
        k, g, feed_.tokens.dtype, mine ? tokensIn(record) : scratchTokens_.data(), labelDType_,
        mine ? labelsIn(record) : scratchLabels_.data(), &trained[static_cast<size_t>(g)],
        positionDType(), mine ? positionsIn(record) : nullptr));
  }
  // Without a labels input (or with a `sum` loss) every micro-batch weighs the same.
  if (!feed_.labels || !feed_.labels->meanLoss)
    std::fill(trained.begin(), trained.end(), batch_ * seq_);
  return trained;
}

Status Trainer::dispatchStep(int64_t k, int64_t segmentEnd) {
  if (k + 1 == options_.injectFailureStep) // testing: this process fails here
    return internal("--inject-failure-step " + std::to_string(k + 1) +
                    ": the failure this testing flag asks for");
  RP_RETURN_IF_ERROR(executor_->waitInputsWritable(k));
  RP_ASSIGN_OR_RETURN(std::vector<int64_t> trained, fillStep(k));
  RP_ASSIGN_OR_RETURN(const double scale, executor_->lossScale(k));
  // The seeds of every rank's micro-batches (global token weights); this rank's M are written.
  std::vector<float> seeds = lossSeeds(trained, scale);
  if (k + 1 == options_.injectNonFiniteStep) // testing: an overflow in this step's backward
    std::fill(seeds.begin(), seeds.end(), std::numeric_limits<float>::infinity());
  writeSeeds(k, std::vector<float>(seeds.begin() + rank_ * microBatches_,
                                   seeds.begin() + (rank_ + 1) * microBatches_));
  trained_[k] = std::move(trained);
  return executor_->dispatch(k, segmentEnd);
}

Status Trainer::endSegment(int64_t done, int64_t segmentEnd, int64_t &savedAt) {
  // Steps completed: [0, done).
  RP_ASSIGN_OR_RETURN(const double loss, lossOf(done - 1));
  std::optional<double> evalLoss;
  if (!summary_.interrupted && options_.evalEvery > 0 && segmentEnd % options_.evalEvery == 0) {
    RP_ASSIGN_OR_RETURN(evalLoss, evaluateAt(segmentEnd));
  }
  RP_RETURN_IF_ERROR(report(done - 1, loss, evalLoss));
  if (!options_.saveDir.empty() &&
      (summary_.interrupted || (options_.saveEvery > 0 && done % options_.saveEvery == 0) ||
       done == end_)) {
    if (Status s = save(done); !s.ok())
      return trainingError(done - 1, s);
    savedAt = done;
  }
  return okStatus();
}

StatusOr<double> Trainer::evaluateAt(int64_t segmentEnd) {
  StatusOr<double> e = evaluate();
  if (!e.ok())
    return trainingError(segmentEnd - 1, e.status());
  summary_.evalLoss = e.value();
  if (bar_) {
    char text[64];
    std::snprintf(text, sizeof text, "step %lld: eval loss %.4f",
                  static_cast<long long>(segmentEnd), e.value());
    bar_->message(text);
  }
  return e;
}

StatusOr<TrainSummary> Trainer::finish() {
  summary_.seconds = secondsSince(start_);
  if (bar_)
    bar_->finish();
  if (trace_->enabled()) {
    const std::string path = rankPath(options_.tracePath, rank_);
    if (Status s = trace_->write(path); !s.ok())
      return internal("cannot write the trace: " + s.message());
    summary_.tracePath = path;
  }
  if (profile_) {
    const std::string path = rankPath(options_.profileKernelsPath, rank_);
    if (Status s = profile_->write(path); !s.ok())
      return internal(s.message());
    summary_.kernelProfilePath = path;
    summary_.kernelProfileTable = profile_->table(12);
  }
  if (!options_.exportHf.dir.empty() && !summary_.interrupted && rank_ == 0) {
    StatusOr<std::string> exported = exportHf(*host_, options_.exportHf);
    if (!exported.ok())
      return internal("training finished, but the export failed: " +
                      exported.status().message());
    summary_.exportSummary = exported.value();
  }
  return summary_;
}

} // namespace

StatusOr<TrainSummary> train(const TrainOptions &options, std::FILE *out) {
  Trainer trainer(options, out);
  StatusOr<TrainSummary> result = trainer.run();
  // A failure of this rank alone: end every rank now, before ~Trainer joins an optimizer
  // thread that may wait in a reduction the others never reach.
  if (!result.ok() && options.world && !trainer.failedOnEveryRank())
    options.world->abort(result.status().message(),
                         result.status().code() == StatusCode::Internal ? 1 : 2);
  return result;
}

} // namespace rp::runtime
