//===- rp-run.cpp - train with a compiled RoundPipe plan ------------------===//
//
//   rp-run MODEL.rpplan --data FILE --steps N [--lr 3e-4] [--warmup 20]
//          [--backend cpu|cuda|sim] [--gpus N] [--seed S] [--save DIR] [--save-every K]
//          [--resume DIR] [--log FILE.jsonl] [--trace FILE.json] [--eval-every K]
//          [--data-format auto|tokens|text] [--weights FILE.safetensors] [--no-progress]
//   rp-run MODEL.rpplan --check [--weights FILE.safetensors]
//   rp-run MODEL.rpplan --backend sim [--gpus N] [--steps K] [--profile FILE.json]
//          [--target T] [--link-gbps X] [--host-uplink-gbps Y] [--optimizer-ms Z | --adamw-gbps W]
//          [--trace FILE.json] [--gantt FILE.svg] [--compare]
//   rp-run --backend sim --profile FILE.json --gpus N --micro-batches M [--update sync|async]
//          [same options]
//
// Loads MODEL.rpplan and its initial weights (runtime/plan/PlanLoader.h) and trains with the
// executor (runtime/train/Trainer.h). `--check` stops after loading and prints a summary.
// `--backend sim` simulates the plan on N virtual GPUs, or a layer profile without a plan
// (runtime/train/Simulate.h). Runtime world: no LLVM/MLIR.
//
// Exit codes: 0 success, 2 bad input (plan, weights, data, checkpoint, profile, flags; nothing
// is written), 1 a failure during training or simulation, 130 a run stopped by SIGINT or
// SIGTERM: the steps under way finish and, with --save, a checkpoint of them is written (a
// second signal ends the process at once; the previous checkpoint stays intact).
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"
#include "runtime/train/BackendFactory.h"
#include "runtime/train/Progress.h"
#include "runtime/train/Simulate.h"
#include "runtime/train/Trainer.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr int kBadInput = 2;
constexpr int kFailure = 1;
/// An interrupted run (SIGINT / SIGTERM) that stopped cleanly: 128 + SIGINT, as shells report.
constexpr int kInterrupted = 130;

/// A number option that must be finite and > 0 (`positive`) or >= 0. CLI11's PositiveNumber
/// accepts nan and prints DBL_MAX in full when it refuses.
CLI::Validator finiteNumber(bool positive) {
  return CLI::Validator(
      [positive](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end && *end == '\0';
        if (parsed && std::isfinite(v) && (positive ? v > 0 : v >= 0))
          return "";
        return positive ? "must be a positive finite number, not '" + text + "'"
                        : "must be a finite number >= 0, not '" + text + "'";
      },
      positive ? "POSITIVE" : "NONNEGATIVE");
}

/// Set by the first SIGINT / SIGTERM: the trainer stops after the steps under way and saves.
std::atomic<bool> stopRequested{false};

extern "C" void onStopSignal(int) { stopRequested.store(true); }

/// The first SIGINT or SIGTERM asks the run to stop cleanly; the handler then resets to the
/// default, so a second one ends the process at once.
void installStopHandler() {
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int fail(const rp::runtime::Status &status) {
  std::fprintf(stderr, "rp-run: error: %s\n", status.message().c_str());
  return status.code() == rp::runtime::StatusCode::Internal ? kFailure : kBadInput;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"rp-run: train with a compiled RoundPipe plan (rpc-compile -o MODEL.rpplan), or "
                "simulate it or a layer profile on N virtual GPUs (--backend sim)"};
  app.set_version_flag("--version", std::string("rp-run ") + RP_VERSION);
  rp::runtime::TrainOptions o;
  bool check = false, noProgress = false;
  double lr = 0;
  std::string seed;
  std::string dataFormat = "auto";
  rp::runtime::SimulateOptions sim;
  double optimizerMs = 0, adamwGbps = 0;
  app.add_option("plan", o.planPath,
                 "The plan file (MODEL.rpplan); required except for --backend sim --profile");
  app.add_option("--weights", o.weightsPath,
                 "Initial weights (default: the safetensors file the plan names, beside it)");
  app.add_flag("--check", check, "Validate the plan and its weights, print a summary, and exit");
  app.add_option("--data", o.dataPath,
                 "Training data: an llm.c token file (uint16/uint32 ids), raw text as byte "
                 "tokens (--data-format text, or a .txt name), or nanoGPT's headerless uint16 "
                 "ids (--data-format nanogpt)");
  app.add_option("--data-format", dataFormat,
                 "auto | tokens (llm.c) | text (bytes) | nanogpt (headerless uint16)")
      ->check(CLI::IsMember({"auto", "tokens", "text", "nanogpt"}));
  app.add_option("--steps", o.steps,
                 "Training steps to run (--backend sim: iterations to simulate, default 3)")->check(CLI::PositiveNumber);
  auto *lrOption = app.add_option("--lr", lr, "Peak learning rate (default: the plan's)")
                       ->check(finiteNumber(true));
  app.add_option("--warmup", o.warmup, "Linear learning-rate warmup steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--backend", o.backend, "cpu | cuda | sim")
      ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  app.add_option("--kernels", o.kernels,
                 "--backend cpu's kernels: reference (the CPU reference kernels) or cuda-host "
                 "(the CUDA backend's kernels replayed on the host: tests the GPU code path "
                 "without a GPU; slow; fp32, bf16 and fp16 plans)")
      ->check(CLI::IsMember({"reference", "cuda-host"}));
  app.add_option("--gpus", o.devices, "Pool size: workers (default: the plan's)")
      ->check(CLI::Range(1, rp::runtime::kMaxWorkers));
  auto *seedOption = app.add_option("--seed", seed, "Data sampling seed, 0 to 2^64 - 1 (default 0)")
                         ->check(CLI::Validator(
                             [](std::string &text) -> std::string {
                               if (rp::runtime::parseSeed(text, "--seed").ok())
                                 return "";
                               return "must be an integer from 0 to 2^64 - 1, not '" + text + "'";
                             },
                             "UINT64"));
  app.add_option("--save", o.saveDir, "Write a checkpoint to DIR at the end");
  app.add_option("--save-every", o.saveEvery, "Also write a checkpoint every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", o.resumeDir, "Resume from the checkpoint in DIR");
  app.add_option("--log", o.logPath, "Write metrics as JSON lines to FILE");
  app.add_option("--trace", o.tracePath, "Write a Chrome trace (Perfetto) of the run (or the simulated run) to FILE");
  app.add_option("--eval-every", o.evalEvery, "Evaluate on held-out windows every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-progress", noProgress, "No progress bar or progress lines");
  // --backend sim (runtime/train/Simulate.h, docs/SIMULATOR.md).
  auto *simGroup = app.add_option_group("simulator", "--backend sim: a plan or a layer profile "
                                                     "on N virtual GPUs (default --steps 3)");
  std::vector<CLI::Option *> simOptions = {
      simGroup->add_option("--profile", sim.profilePath,
                           "Layer profile JSON (the partitioner's format): kernel times instead "
                           "of the roofline; without a plan, simulate the profile alone"),
      simGroup->add_option("--target", sim.target,
                           "GPU: a target JSON file or name=..,peak_tflops=..,hbm_gbps=..,"
                           "pcie_gbps=..,memory_bytes=.. (default: an RTX 4090, 165 TFLOP/s, "
                           "1008 GB/s, 25 GB/s PCIe)"),
      simGroup
          ->add_option("--micro-batches", sim.microBatches,
                       "Micro-batches per iteration (profile without a plan)")
          ->check(CLI::PositiveNumber),
      simGroup
          ->add_option("--update", sim.update,
                       "sync | async (profile without a plan; "
                       "a plan fixes its own)")
          ->check(CLI::IsMember({"sync", "async"})),
      simGroup
          ->add_option("--link-gbps", sim.linkGbps,
                       "Host<->GPU link per GPU per direction, GB/s (default: the target's)")
          ->check(finiteNumber(true)),
      simGroup
          ->add_option("--host-uplink-gbps", sim.hostUplinkGbps,
                       "A host uplink all GPUs share, per direction, GB/s (default: none)")
          ->check(finiteNumber(true)),
      simGroup->add_option("--optimizer-ms", optimizerMs, "Host AdamW time per trainable layer, ms")
          ->check(finiteNumber(false)),
      simGroup
          ->add_option("--adamw-gbps", adamwGbps,
                       "Host AdamW throughput, GB/s of fp32 params (default 8)")
          ->check(finiteNumber(true)),
      simGroup->add_option("--gantt", sim.ganttPath, "Write an SVG Gantt chart of the run"),
      simGroup->add_flag("--compare", sim.compare,
                         "Also compare with GPipe, 1F1B, interleaved 1F1B, Looped-BFS, ZB-H1 "
                         "and Mobius on the same costs"),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  if (o.backend == "sim" && !check) {
    for (const char *name : {"--save", "--save-every", "--resume", "--log", "--eval-every", "--kernels"})
      if (app.get_option(name)->count()) {
        std::fprintf(stderr, "rp-run: error: %s is not an option of --backend sim (it simulates, "
                             "it does not train)\n", name);
        return kBadInput;
      }
    sim.planPath = o.planPath;
    sim.gpus = o.devices;
    sim.steps = o.steps > 0 ? o.steps : 3;
    sim.tracePath = o.tracePath;
    if (app.get_option("--optimizer-ms")->count())
      sim.optimizerMs = optimizerMs;
    if (app.get_option("--adamw-gbps")->count())
      sim.adamwGbps = adamwGbps;
    rp::runtime::Status status = rp::runtime::simulate(sim, stdout);
    return status.ok() ? 0 : fail(status);
  }
  for (CLI::Option *opt : simOptions)
    if (opt->count()) {
      std::fprintf(stderr, "rp-run: error: %s is an option of --backend sim\n",
                   opt->get_name().c_str());
      return kBadInput;
    }
  if (o.planPath.empty()) {
    std::fprintf(stderr, "rp-run: error: a plan file (MODEL.rpplan) is required; only "
                         "--backend sim --profile FILE runs without one\n");
    return kBadInput;
  }
  if (check) {
    rp::runtime::StatusOr<rp::runtime::LoadedPlan> loaded =
        rp::runtime::loadPlan(o.planPath, o.weightsPath);
    if (!loaded.ok())
      return fail(loaded.status());
    std::fputs(rp::runtime::describePlan(loaded.value()).c_str(), stdout);
    if (app.get_option("--backend")->count() && o.backend != "sim") {
      rp::runtime::StatusOr<std::string> decoded =
          rp::runtime::checkPlanForBackend(loaded.value().plan, o.backend);
      if (!decoded.ok())
        return fail(decoded.status());
      std::printf("%s\n", decoded.value().c_str());
    }
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
    o.seed = rp::runtime::parseSeed(seed, "--seed").value(); // validated by the parser
  o.dataFormat = rp::runtime::parseDataFormat(dataFormat).value();
  o.progress = !noProgress;
  o.stop = &stopRequested;
  installStopHandler();

  rp::runtime::StatusOr<rp::runtime::TrainSummary> result = rp::runtime::train(o, stderr);
  if (!result.ok())
    return fail(result.status());
  const rp::runtime::TrainSummary &s = result.value();
  if (s.losses.empty()) { // interrupted before the first step
    std::printf("rp-run: interrupted before step %lld; nothing trained\n",
                static_cast<long long>(s.firstStep + 1));
    return kInterrupted;
  }
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
  if (s.interrupted) {
    std::printf("rp-run: interrupted after step %lld\n",
                static_cast<long long>(s.firstStep + static_cast<int64_t>(s.losses.size())));
    return kInterrupted;
  }
  return 0;
}
