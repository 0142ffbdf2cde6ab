//===- TrainCommand.cpp - rp-run train: the training flags ----------------===//
//
//   rp-run train MODEL.rpplan --data FILE --steps N [--lr 3e-4] [--warmup 20]
//          [--lr-schedule constant|cosine|linear] [--min-lr X]
//          [--backend cpu|cuda] [--gpus N] [--seed S] [--save DIR] [--save-every K]
//          [--resume DIR [--resume-override lr,schedule,seed,data,batch]] [--log FILE.jsonl]
//          [--trace FILE.json] [--eval-every K] ...
//          [--export-hf DIR [export options]]
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenFile.h"
#include "runtime/driver/Driver.h"
#include "runtime/train/Trainer.h"
#include "tools/rp-run/Commands.h"
#include "tools/rp-run/ExportFlags.h"
#include "tools/rp-run/Flags.h"

#include <optional>

namespace rp::rprun {

namespace {

using runtime::TrainOptions;

class TrainCommand final : public Command {
public:
  explicit TrainCommand(CLI::App &rpRun)
      : Command(rpRun.add_subcommand(
            "train", "Train with a plan on the CPU or CUDA backend (and export the result)")) {
    addInputFlags();
    addRunFlags();
    addBackendFlags();
    addOutputFlags();
    addLossScaleFlags();
    addTestingFlags();
    exportFlags_.emplace(app(), options_.exportHf, /*required=*/false);
  }

  int run(const Invocation &) override {
    if (Status s = exportFlags_->resolve(); !s.ok())
      return runtime::reportError(s);
    if (lr_->count())
      options_.lr = lrValue_;
    if (warmup_->count())
      options_.warmup = warmupValue_;
    if (minLr_->count())
      options_.minLr = minLrValue_;
    if (lrSchedule_->count())
      options_.lrSchedule = runtime::parseLrDecay(lrScheduleText_).value(); // the parser checked it
    if (lossScale_->count())
      options_.lossScale = lossScaleValue_;
    if (seed_->count())
      options_.seed = runtime::parseSeed(seedText_, "--seed").value(); // the parser checked it
    options_.dataFormat = runtime::parseDataFormat(dataFormat_).value();
    options_.progress = !noProgress_;
    return runtime::runTrain(options_);
  }

private:
  /// The plan, its weights and the data.
  void addInputFlags() {
    CLI::App &app = this->app();
    addPlanWithWeights(app, options_.planPath, options_.weightsPath, options_.allowExtraWeights);
    app.add_option("--data", options_.dataPath,
                   "Training data: an llm.c token file (uint16/uint32 ids), raw text as byte "
                   "tokens (--data-format text, or a .txt name), or nanoGPT's headerless uint16 "
                   "ids (--data-format nanogpt)")
        ->required();
    app.add_option("--data-format", dataFormat_,
                   "auto (default) | tokens (llm.c) | text (bytes) | nanogpt (headerless uint16)")
        ->check(CLI::IsMember({"auto", "tokens", "text", "nanogpt"}));
    app.add_flag("--text-as-bytes", options_.textAsBytes,
                 "Train on text data's bytes as token ids although the plan's vocabulary is not "
                 "a byte vocabulary (more than 320 tokens) or the file is not UTF-8 text "
                 "(default: refused; tokenize the text with the model's tokenizer instead)");
    app.add_flag("--from-scratch", options_.fromScratch,
                 "Train from the plan's random initial weights although its model was exported "
                 "from a checkpoint's config (default: such a plan needs --weights DIR)");
  }

  /// Steps, schedule and sampling.
  void addRunFlags() {
    CLI::App &app = this->app();
    app.add_option("--steps", options_.steps,
                   "The run's total step count: a resumed run trains from its checkpoint's step "
                   "up to N (nothing when it is at N)")
        ->required()
        ->check(CLI::PositiveNumber);
    lr_ = app.add_option("--lr", lrValue_,
                         "Peak learning rate (default: the checkpoint's when resuming, else the "
                         "plan's, rpc-compile --lr)")
              ->check(finiteNumber(true));
    warmup_ = app.add_option("--warmup", warmupValue_,
                             "Linear learning-rate warmup steps (default 0, or the checkpoint's)")
                  ->check(CLI::NonNegativeNumber);
    lrSchedule_ = app.add_option("--lr-schedule", lrScheduleText_,
                                 "After the warmup: constant, or cosine or linear decay to "
                                 "--min-lr at --steps (default constant, or the checkpoint's)")
                      ->check(CLI::IsMember({"constant", "cosine", "linear"}));
    minLr_ = app.add_option("--min-lr", minLrValue_,
                            "The floor of the cosine or linear decay (default 0, or the "
                            "checkpoint's)")
                 ->check(finiteNumber(false));
    seed_ = app.add_option("--seed", seedText_, "Data sampling seed, 0 to 2^64 - 1 (default 0)")
                ->check(CLI::Validator(
                    [](std::string &text) -> std::string {
                      if (runtime::parseSeed(text, "--seed").ok())
                        return "";
                      return "must be an integer from 0 to 2^64 - 1, not '" + text + "'";
                    },
                    "UINT64"));
    app.add_option("--eval-every", options_.evalEvery,
                   "Evaluate on held-out windows every K steps (default 0: never)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--eval-split", options_.evalSplit,
                   "The fraction of the data held out for evaluation: its last tokens "
                   "(default 0.1)")
        ->check(CLI::Range(0.0, 0.99));
  }

  /// The backend, its kernels and the pool.
  void addBackendFlags() {
    CLI::App &app = this->app();
    app.add_option("--backend", options_.backend, "cpu | cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--kernels", options_.kernels,
                   "--backend cpu's kernels: reference (the CPU reference kernels) or cuda-host "
                   "(the CUDA backend's kernels replayed on the host: tests the GPU code path "
                   "without a GPU; slow; fp32, bf16 and fp16 plans)")
        ->check(CLI::IsMember({"reference", "cuda-host"}));
    app.add_option("--gemm-accumulate", options_.gemmAccumulate,
                   "--backend cuda, fp16 plans: GEMM accumulation, fp32 (default) or fp16 "
                   "(cuBLASLt compute type 16F: faster on consumer GPUs, less precise)")
        ->check(CLI::IsMember({"fp32", "fp16"}));
    app.add_flag("--cuda-graphs", options_.cudaGraphs,
                 "--backend cuda: capture each plan function's call into a CUDA graph at its "
                 "first call and replay it afterwards (saves the per-kernel launch cost; same "
                 "results; not with --profile-kernels)");
    app.add_option("--attention-kernel", options_.attentionKernel,
                   "--backend cuda, f16/bf16 attention: auto (default: cuDNN's fused SDPA where "
                   "it takes the case, else rpc's flash kernels), cudnn (cuDNN only: a case it "
                   "declines is an error) or flash (rpc's kernels only)")
        ->check(CLI::IsMember({"auto", "cudnn", "flash"}));
    addGpusFlag(app, options_.devices, "Pool size: workers (default: the plan's)");
  }

  /// Checkpoints, metrics, trace, kernel profile, progress.
  void addOutputFlags() {
    CLI::App &app = this->app();
    app.add_option("--save", options_.saveDir, "Write a checkpoint to DIR at the end");
    app.add_option("--save-every", options_.saveEvery, "Also write a checkpoint every K steps")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--resume", options_.resumeDir,
                   "Resume from the checkpoint in DIR: its lr, schedule and seed unless given; "
                   "flags that change them, other data or another batch are refused unless "
                   "--resume-override names them");
    app.add_option("--resume-override", options_.resumeOverride,
                   "With --resume: the settings this run may change from the checkpoint's, "
                   "comma-separated: lr, schedule (--lr-schedule, --warmup, --min-lr, and --steps "
                   "of a decaying schedule), seed, data, batch (default: none)")
        ->delimiter(',')
        ->check(CLI::IsMember({"lr", "schedule", "seed", "data", "batch"}));
    app.add_option("--log", options_.logPath,
                   "Write metrics as JSON lines to FILE (a resumed run appends to it)");
    app.add_option("--trace", options_.tracePath,
                   "Write a Chrome trace (Perfetto) of the run to FILE");
    app.add_option("--profile-kernels", options_.profileKernelsPath,
                   "Time every plan instruction and write the totals per kernel, kernel and "
                   "types, and instruction as JSON to FILE (cuda, or cpu with the reference "
                   "kernels; the cuda backend then waits for each call, so step times are not "
                   "the pipeline's)");
    app.add_flag("--no-progress", noProgress_, "No progress bar or progress lines");
  }

  void addLossScaleFlags() {
    CLI::App &app = this->app();
    lossScale_ = app.add_option("--loss-scale", lossScaleValue_,
                                "Dynamic loss scaling from this initial scale (default for fp16 "
                                "plans: 32768; growth x2 every --loss-scale-growth-interval good "
                                "steps, x0.5 and the step skipped on a non-finite gradient)")
                     ->check(finiteNumber(true));
    app.add_flag("--no-loss-scale", options_.noLossScale, "No loss scaling (also for fp16 plans)");
    app.add_option("--loss-scale-growth-interval", options_.lossScaleGrowthInterval,
                   "Consecutive good steps before the loss scale doubles (default 2000)")
        ->check(CLI::PositiveNumber);
    app.add_option("--max-skipped-steps", options_.maxSkippedSteps,
                   "Stop with an error after more than N consecutive steps skipped for "
                   "non-finite gradients (0: at the first; default 5, 25 with loss scaling)")
        ->check(CLI::NonNegativeNumber);
  }

  void addTestingFlags() {
    CLI::App &app = this->app();
    app.add_option("--inject-failure-step", options_.injectFailureStep,
                   "Testing: fail with an error when step K is dispatched (under mpirun: this "
                   "rank fails and every rank stops)")
        ->check(CLI::PositiveNumber);
    app.add_option("--inject-nonfinite-step", options_.injectNonFiniteStep,
                   "Testing: step K's backward seeds are +inf (a gradient overflow: the step is "
                   "skipped)")
        ->check(CLI::PositiveNumber);
  }

  TrainOptions options_;
  std::optional<ExportFlags> exportFlags_;
  std::string dataFormat_ = "auto", seedText_, lrScheduleText_;
  double lrValue_ = 0, lossScaleValue_ = 0, minLrValue_ = 0;
  int64_t warmupValue_ = 0;
  bool noProgress_ = false;
  CLI::Option *lr_ = nullptr, *seed_ = nullptr, *lossScale_ = nullptr, *warmup_ = nullptr,
              *lrSchedule_ = nullptr, *minLr_ = nullptr;
};

} // namespace

std::unique_ptr<Command> addTrainCommand(CLI::App &rpRun) {
  return std::make_unique<TrainCommand>(rpRun);
}

} // namespace rp::rprun
