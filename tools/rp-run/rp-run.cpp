//===- rp-run.cpp - train with a compiled RoundPipe plan ------------------===//
//
//   rp-run MODEL.rpplan --data FILE --steps N [--lr 3e-4] [--warmup 20]
//          [--backend cpu|cuda|sim] [--gpus N] [--seed S] [--save DIR] [--save-every K]
//          [--resume DIR] [--log FILE.jsonl] [--trace FILE.json] [--eval-every K]
//          [--data-format auto|tokens|text] [--weights FILE.safetensors] [--no-progress]
//   rp-run MODEL.rpplan --check [--weights FILE.safetensors]
//
// Loads MODEL.rpplan and its initial weights (runtime/plan/PlanLoader.h) and trains with the
// executor (runtime/train/Trainer.h). `--check` stops after loading and prints a summary.
// Runtime world: no LLVM/MLIR.
//
// Exit codes: 0 success, 2 bad input (plan, weights, data, checkpoint, flags; nothing is
// written), 1 a failure during training.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"
#include "runtime/train/Progress.h"
#include "runtime/train/Trainer.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace {

constexpr int kBadInput = 2;
constexpr int kFailure = 1;

int fail(const rp::runtime::Status &status) {
  std::fprintf(stderr, "rp-run: error: %s\n", status.message().c_str());
  return status.code() == rp::runtime::StatusCode::Internal ? kFailure : kBadInput;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"rp-run: train with a compiled RoundPipe plan (rpc-compile -o MODEL.rpplan)"};
  app.set_version_flag("--version", std::string("rp-run ") + RP_VERSION);
  rp::runtime::TrainOptions o;
  bool check = false, noProgress = false;
  double lr = 0;
  uint64_t seed = 0;
  std::string dataFormat = "auto";
  app.add_option("plan", o.planPath, "The plan file (MODEL.rpplan)")->required();
  app.add_option("--weights", o.weightsPath,
                 "Initial weights (default: the safetensors file the plan names, beside it)");
  app.add_flag("--check", check, "Validate the plan and its weights, print a summary, and exit");
  app.add_option("--data", o.dataPath,
                 "Training data: an llm.c token file (uint16/uint32 ids), or raw text as byte "
                 "tokens (--data-format text, or a .txt name)");
  app.add_option("--data-format", dataFormat, "auto | tokens | text")
      ->check(CLI::IsMember({"auto", "tokens", "text"}));
  app.add_option("--steps", o.steps, "Training steps to run")->check(CLI::PositiveNumber);
  auto *lrOption = app.add_option("--lr", lr, "Peak learning rate (default: the plan's)")
                       ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "Linear learning-rate warmup steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--backend", o.backend, "cpu | cuda | sim")
      ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  app.add_option("--gpus", o.devices, "Pool size: workers (default: the plan's)")
      ->check(CLI::PositiveNumber);
  auto *seedOption = app.add_option("--seed", seed, "Data sampling seed (default 0)");
  app.add_option("--save", o.saveDir, "Write a checkpoint to DIR at the end");
  app.add_option("--save-every", o.saveEvery, "Also write a checkpoint every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", o.resumeDir, "Resume from the checkpoint in DIR");
  app.add_option("--log", o.logPath, "Write metrics as JSON lines to FILE");
  app.add_option("--trace", o.tracePath, "Write a Chrome trace (Perfetto) of the run to FILE");
  app.add_option("--eval-every", o.evalEvery, "Evaluate on held-out windows every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-progress", noProgress, "No progress bar or progress lines");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  if (check) {
    rp::runtime::StatusOr<rp::runtime::LoadedPlan> loaded =
        rp::runtime::loadPlan(o.planPath, o.weightsPath);
    if (!loaded.ok())
      return fail(loaded.status());
    std::fputs(rp::runtime::describePlan(loaded.value()).c_str(), stdout);
    std::printf("rp-run: %s is valid\n", o.planPath.c_str());
    return 0;
  }
  if (o.dataPath.empty() || o.steps == 0) {
    std::fprintf(stderr, "rp-run: error: training needs --data FILE and --steps N "
                         "(or --check to validate the plan)\n");
    return kBadInput;
  }
  if (lrOption->count())
    o.lr = lr;
  if (seedOption->count())
    o.seed = seed;
  o.dataFormat = rp::runtime::parseDataFormat(dataFormat).value();
  o.progress = !noProgress;

  rp::runtime::StatusOr<rp::runtime::TrainSummary> result = rp::runtime::train(o, stderr);
  if (!result.ok())
    return fail(result.status());
  const rp::runtime::TrainSummary &s = result.value();
  const double tokens = static_cast<double>(s.tokensPerStep) * static_cast<double>(s.losses.size());
  std::printf("rp-run: trained steps %lld..%lld on %s x %d: loss %.4f -> %.4f, %.0f tokens/s "
              "(%s)\n",
              static_cast<long long>(s.firstStep + 1),
              static_cast<long long>(s.firstStep + static_cast<int64_t>(s.losses.size())),
              o.backend.c_str(), s.devices, s.losses.front(), s.losses.back(),
              s.seconds > 0 ? tokens / s.seconds : 0.0,
              rp::runtime::formatDuration(s.seconds).c_str());
  if (s.evalLoss)
    std::printf("rp-run: eval loss %.4f\n", *s.evalLoss);
  if (!s.checkpointDir.empty())
    std::printf("rp-run: checkpoint: %s\n", s.checkpointDir.c_str());
  if (!s.tracePath.empty())
    std::printf("rp-run: trace: %s (open in https://ui.perfetto.dev)\n", s.tracePath.c_str());
  return 0;
}
