//===- RunCli.cpp - rp-run's command line: flags, modes, exit codes -------===//

#include "runtime/train/RunCli.h"

#include "base/AtomicFile.h"
#include "runtime/dist/World.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanReport.h"
#include "runtime/sim/Simulate.h"
#include "runtime/train/BackendFactory.h"
#include "runtime/train/HfExport.h"
#include "runtime/train/Progress.h"
#include "runtime/train/Trainer.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rp::runtime {

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

int fail(const Status &status) {
  std::fprintf(stderr, "rp-run: error: %s\n", status.message().c_str());
  return status.code() == StatusCode::Internal ? kFailure : kBadInput;
}

/// A data-parallel run's error that every rank found alike (train() aborts on the others):
/// rank 0 prints it.
int failOnEveryRank(const Status &status, const World &world) {
  if (world.rank() == 0)
    return fail(status);
  return status.code() == StatusCode::Internal ? kFailure : kBadInput;
}

/// The flags as parsed, before they become TrainOptions / SimulateOptions.
struct RunFlags {
  TrainOptions train;
  SimulateOptions sim;
  bool check = false, report = false, noProgress = false;
  double lr = 0, optimizerMs = 0, adamwGbps = 0, lossScale = 0;
  int nodes = 0;                                  ///< --nodes (sim)
  double nodeLinkGbps = 0, nodeLinkLatencyUs = 0; ///< --node-link-gbps, --node-link-latency-us
  std::string seed;
  std::string reportJson; ///< --report-json FILE
  std::string dataFormat = "auto";
  std::string exportDType = "f32", exportShardSize;
  double loraAlpha = 0;
  CLI::Option *lrOption = nullptr, *seedOption = nullptr, *loraAlphaOption = nullptr;
  CLI::Option *lossScaleOption = nullptr;
  std::vector<CLI::Option *> exportOptions; ///< Those of the "export" group.
  std::vector<CLI::Option *> simOptions; ///< Those of the "simulator" group.
};

/// The plan and the training and --check flags (in --help's order).
void addTrainFlags(CLI::App &app, RunFlags &f) {
  TrainOptions &o = f.train;
  app.add_option("plan", o.planPath,
                 "The plan file (MODEL.rpplan); required except for --backend sim --profile");
  app.add_option("--weights", o.weightsPath,
                 "Initial weights (default: the safetensors file the plan names, beside it): a "
                 "safetensors file, a sharded checkpoint's model.safetensors.index.json, or a "
                 "Hugging Face checkpoint directory; F32, F16 or BF16, keyed by param name");
  app.add_flag("--allow-extra-weights", o.allowExtraWeights,
               "Ignore --weights tensors that no param of the plan names (default: refuse them)");
  app.add_flag("--check", f.check, "Validate the plan and its weights, print a summary, and exit");
  app.add_flag("--report", f.report,
               "With --check (implied): also print the plan report (FLOPs, bytes moved and "
               "device memory per stage and step)");
  app.add_option("--report-json", f.reportJson,
                 "With --check (implied): write the plan report as JSON to FILE");
  app.add_option("--data", o.dataPath,
                 "Training data: an llm.c token file (uint16/uint32 ids), raw text as byte "
                 "tokens (--data-format text, or a .txt name), or nanoGPT's headerless uint16 "
                 "ids (--data-format nanogpt)");
  app.add_option("--data-format", f.dataFormat,
                 "auto | tokens (llm.c) | text (bytes) | nanogpt (headerless uint16)")
      ->check(CLI::IsMember({"auto", "tokens", "text", "nanogpt"}));
  app.add_option("--steps", o.steps,
                 "Training steps to run (--backend sim: iterations to simulate, default 3)")
      ->check(CLI::PositiveNumber);
  f.lrOption = app.add_option("--lr", f.lr, "Peak learning rate (default: the plan's)")
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
  app.add_option("--gemm-accumulate", o.gemmAccumulate,
                 "--backend cuda, fp16 plans: GEMM accumulation, fp32 (default) or fp16 "
                 "(cuBLASLt compute type 16F: faster on consumer GPUs, less precise)")
      ->check(CLI::IsMember({"fp32", "fp16"}));
  app.add_flag("--cuda-graphs", o.cudaGraphs,
               "--backend cuda: capture each plan function's call into a CUDA graph at its "
               "first call and replay it afterwards (saves the per-kernel launch cost; same "
               "results; not with --profile-kernels)");
  app.add_option("--attention-kernel", o.attentionKernel,
                 "--backend cuda, f16/bf16 attention: auto (default: cuDNN's fused SDPA where it "
                 "takes the case, else rpc's flash kernels), cudnn (cuDNN only: a case it "
                 "declines is an error) or flash (rpc's kernels only)")
      ->check(CLI::IsMember({"auto", "cudnn", "flash"}));
  app.add_option("--gpus", o.devices, "Pool size: workers (default: the plan's)")
      ->check(CLI::Range(1, kMaxWorkers));
  f.seedOption = app.add_option("--seed", f.seed, "Data sampling seed, 0 to 2^64 - 1 (default 0)")
                     ->check(CLI::Validator(
                         [](std::string &text) -> std::string {
                           if (parseSeed(text, "--seed").ok())
                             return "";
                           return "must be an integer from 0 to 2^64 - 1, not '" + text + "'";
                         },
                         "UINT64"));
  app.add_option("--save", o.saveDir, "Write a checkpoint to DIR at the end");
  app.add_option("--save-every", o.saveEvery, "Also write a checkpoint every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", o.resumeDir, "Resume from the checkpoint in DIR");
  app.add_option("--log", o.logPath, "Write metrics as JSON lines to FILE");
  app.add_option("--trace", o.tracePath,
                 "Write a Chrome trace (Perfetto) of the run (or the simulated run) to FILE");
  app.add_option("--profile-kernels", o.profileKernelsPath,
                 "Time every plan instruction and write the totals per kernel, kernel and types, "
                 "and instruction as JSON to FILE (cuda, or cpu with the reference kernels; the "
                 "cuda backend then waits for each call, so step times are not the pipeline's)");
  app.add_option("--eval-every", o.evalEvery, "Evaluate on held-out windows every K steps")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-progress", f.noProgress, "No progress bar or progress lines");
  f.lossScaleOption =
      app.add_option("--loss-scale", f.lossScale,
                     "Dynamic loss scaling from this initial scale (default for fp16 plans: "
                     "32768; growth x2 every --loss-scale-growth-interval good steps, x0.5 and "
                     "the step skipped on a non-finite gradient)")
          ->check(finiteNumber(true));
  app.add_flag("--no-loss-scale", o.noLossScale, "No loss scaling (also for fp16 plans)");
  app.add_option("--loss-scale-growth-interval", o.lossScaleGrowthInterval,
                 "Consecutive good steps before the loss scale doubles (default 2000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--inject-failure-step", o.injectFailureStep,
                 "Testing: fail with an error when step K is dispatched (under mpirun: this "
                 "rank fails and every rank stops)")
      ->check(CLI::PositiveNumber);
  app.add_option("--inject-nonfinite-step", o.injectNonFiniteStep,
                 "Testing: step K's backward seeds are +inf (a gradient overflow; with loss "
                 "scaling the step is skipped)")
      ->check(CLI::PositiveNumber);
}

/// --export-hf and its options (runtime/train/HfExport.h), in their group.
void addExportFlags(CLI::App &app, RunFlags &f) {
  HfExportOptions &e = f.train.exportHf;
  auto *group = app.add_option_group(
      "export", "--export-hf: the weights in the Hugging Face layout (after training, or "
                "without --data/--steps: the plan's --weights or the --resume checkpoint)");
  f.exportOptions = {
      group->add_option("--export-dtype", f.exportDType,
                        "f32 (default: the fp32 master weights exactly) | bf16 | f16"),
      group->add_option("--export-shard-size", f.exportShardSize,
                        "Largest shard: bytes or 5GB, 500MB, 2GiB, ... (default 50GB, as "
                        "transformers); larger models are written as model-0000k-of-0000n "
                        "shards with model.safetensors.index.json"),
      group->add_option("--hf-config", e.configPath, "A config.json to copy into the export"),
      group->add_flag("--export-merged", e.merged,
                      "LoRA plans: write the merged full model (W + alpha/r B A) instead of "
                      "the PEFT adapters"),
      f.loraAlphaOption = group->add_option("--lora-alpha", f.loraAlpha,
                                            "LoRA plans: the alpha the plan was compiled with")
                              ->check(finiteNumber(true)),
      group->add_option("--base-model", e.baseModel,
                        "LoRA adapters: base_model_name_or_path in adapter_config.json"),
      group->add_flag("--export-force", e.force, "Replace a non-empty --export-hf directory"),
  };
  group->add_option("--export-hf", e.dir,
                    "Write the weights to DIR as transformers' from_pretrained loads them "
                    "(LoRA plans: PEFT adapters)");
}

/// Completes f.train.exportHf from the flags. Errors: bad --export-dtype / --export-shard-size,
/// an export option without --export-hf.
Status resolveExportFlags(const CLI::App &app, RunFlags &f) {
  HfExportOptions &e = f.train.exportHf;
  if (e.dir.empty()) {
    for (CLI::Option *opt : f.exportOptions)
      if (opt->count())
        return invalidArgument(opt->get_name() + " is an option of --export-hf DIR");
    return okStatus();
  }
  StatusOr<HfExportDType> dtype = parseHfExportDType(f.exportDType);
  if (!dtype.ok())
    return invalidArgument("--export-dtype: " + dtype.status().message());
  e.dtype = dtype.value();
  if (app.get_option("--export-shard-size")->count()) {
    StatusOr<uint64_t> bytes = parseByteSize(f.exportShardSize);
    if (!bytes.ok())
      return invalidArgument("--export-shard-size: " + bytes.status().message());
    e.maxShardBytes = bytes.value();
  }
  if (f.loraAlphaOption->count())
    e.loraAlpha = f.loraAlpha;
  return okStatus();
}

/// The export alone (--export-hf without --data and --steps): no training flags.
int runExportOnly(const CLI::App &app, RunFlags &f) {
  for (const char *name : {"--save", "--save-every", "--log", "--trace", "--eval-every",
                           "--lr", "--warmup", "--seed", "--kernels", "--gpus", "--backend"})
    if (app.get_option(name)->count()) {
      std::fprintf(stderr,
                   "rp-run: error: %s is a training option; --export-hf without --data and "
                   "--steps only converts the weights\n",
                   name);
      return kBadInput;
    }
  const TrainOptions &o = f.train;
  Status status = exportWeights(o.planPath, o.weightsPath, o.allowExtraWeights, o.resumeDir,
                                o.exportHf, stdout);
  return status.ok() ? 0 : fail(status);
}

/// --backend sim's own flags (runtime/sim/Simulate.h, docs/SIMULATOR.md), in their group.
void addSimFlags(CLI::App &app, RunFlags &f) {
  SimulateOptions &sim = f.sim;
  auto *simGroup = app.add_option_group("simulator", "--backend sim: a plan or a layer profile "
                                                     "on N virtual GPUs (default --steps 3)");
  f.simOptions = {
      simGroup->add_option("--profile", sim.profilePath,
                           "Layer profile JSON (the partitioner's format): kernel times instead "
                           "of the roofline; without a plan, simulate the profile alone"),
      simGroup->add_option("--target", sim.target,
                           "GPU: rtx4090, rtx5090, h100 (presets), a target JSON file or "
                           "name=..,peak_tflops=..,hbm_gbps=..,pcie_gbps=..,memory_bytes=.. "
                           "(default: rtx4090, 165 TFLOP/s, 1008 GB/s, 25 GB/s PCIe)"),
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
      simGroup
          ->add_option("--optimizer-ms", f.optimizerMs, "Host AdamW time per trainable layer, ms")
          ->check(finiteNumber(false)),
      simGroup
          ->add_option("--adamw-gbps", f.adamwGbps,
                       "Host AdamW throughput, GB/s of fp32 params (default 8)")
          ->check(finiteNumber(true)),
      simGroup->add_option("--nodes", f.nodes,
                           "R nodes in data parallelism, each running this schedule on its own "
                           "GPUs and data; each layer's gradient is reduced over the node link "
                           "before its host AdamW (default 1)"),
      simGroup->add_option("--node-link-gbps", f.nodeLinkGbps,
                           "Link between nodes, per node per direction, in Gb/s = gigaBITS per "
                           "second (a NIC's rating: 25, 100), unlike --link-gbps (GB/s); "
                           "required with --nodes R > 1"),
      simGroup->add_option("--node-link-latency-us", f.nodeLinkLatencyUs,
                           "Latency per message on the node link, microseconds (default 0)"),
      simGroup->add_option("--node-reduction", sim.nodeReduction,
                           "chain (default, rp-run's: a rank-order chain in 4 MiB chunks, then "
                           "a broadcast) | allgather (R - 1 messages of a layer's gradient) | "
                           "ring (reduce-scatter + allgather)"),
      simGroup->add_flag("--node-reduce-on-optimizer", sim.nodeReduceOnOptimizer,
                         "Reductions on the host optimizer thread, each before its layer's "
                         "AdamW (default: on a thread of their own, overlapping the previous "
                         "layer's AdamW, as rp-run)"),
      simGroup->add_option("--gantt", sim.ganttPath, "Write an SVG Gantt chart of the run"),
      simGroup->add_flag("--compare", sim.compare,
                         "Also compare with GPipe, 1F1B, interleaved 1F1B, Looped-BFS, ZB-H1 "
                         "and Mobius on the same costs"),
  };
}

/// --backend sim (without --check): refuses the training-only flags, then simulates.
int runSimulation(const CLI::App &app, RunFlags &f) {
  for (const char *name :
       {"--save", "--save-every", "--resume", "--log", "--eval-every", "--kernels",
        "--profile-kernels", "--cuda-graphs"})
    if (app.get_option(name)->count()) {
      std::fprintf(stderr,
                   "rp-run: error: %s is not an option of --backend sim (it simulates, "
                   "it does not train)\n",
                   name);
      return kBadInput;
    }
  SimulateOptions &sim = f.sim;
  sim.planPath = f.train.planPath;
  sim.gpus = f.train.devices;
  sim.steps = f.train.steps > 0 ? f.train.steps : 3;
  sim.tracePath = f.train.tracePath;
  if (app.get_option("--optimizer-ms")->count())
    sim.optimizerMs = f.optimizerMs;
  if (app.get_option("--adamw-gbps")->count())
    sim.adamwGbps = f.adamwGbps;
  if (app.get_option("--nodes")->count())
    sim.nodes = f.nodes;
  if (app.get_option("--node-link-gbps")->count())
    sim.nodeLinkGbps = f.nodeLinkGbps;
  if (app.get_option("--node-link-latency-us")->count())
    sim.nodeLinkLatencyUs = f.nodeLinkLatencyUs;
  Status status = simulate(sim, stdout);
  return status.ok() ? 0 : fail(status);
}

/// --check: loads and validates the plan and its weights, prints the summary (with --report,
/// the plan report) and, with an explicit --backend, decodes the plan for it; then refuses,
/// with the sizes, a plan whose host memory this machine lacks for training on the backend
/// (the CPU backend also keeps a device arena per worker in host memory; the simulator needs
/// none).
int checkPlan(const CLI::App &app, const RunFlags &f) {
  const TrainOptions &o = f.train;
  StatusOr<LoadedPlan> loaded = loadPlan(o.planPath, o.weightsPath, o.allowExtraWeights);
  if (!loaded.ok())
    return fail(loaded.status());
  std::fputs(describePlan(loaded.value()).c_str(), stdout);
  const rp::plan::Plan &plan = loaded.value().plan;
  if (f.report)
    std::fputs(formatPlanReport(computePlanReport(plan), plan).c_str(), stdout);
  if (!f.reportJson.empty()) {
    const std::string json = formatPlanReportJson(computePlanReport(plan), plan);
    if (Status s = writeFileAtomic(f.reportJson, json.data(), json.size()); !s.ok())
      return fail(s);
    std::printf("rp-run: wrote the plan report to %s\n", f.reportJson.c_str());
  }
  if (app.get_option("--backend")->count() && o.backend != "sim") {
    StatusOr<std::string> decoded = checkPlanForBackend(loaded.value().plan, o.backend);
    if (!decoded.ok())
      return fail(decoded.status());
    std::printf("%s\n", decoded.value().c_str());
  }
  if (o.backend != "sim") {
    const int workers = o.devices > 0 ? o.devices : static_cast<int>(plan.config().gpus());
    if (Status fits = checkPlanFitsInMemory(plan, o.backend == "cuda" ? 0 : workers);
        !fits.ok()) {
      std::fprintf(stderr, "rp-run: error: %s is valid, but it cannot train here on --backend %s: %s\n",
                   o.planPath.c_str(), o.backend.c_str(), fits.message().c_str());
      return kBadInput;
    }
  }
  std::printf("rp-run: %s is valid\n", o.planPath.c_str());
  return 0;
}

/// The result lines of a training run on stdout; kInterrupted when it was stopped early.
int printTrainSummary(const TrainSummary &s, const TrainOptions &o) {
  const std::string &backend = o.backend;
  if (s.losses.empty()) { // interrupted before the first step
    std::printf("rp-run: interrupted before step %lld; nothing trained\n",
                static_cast<long long>(s.firstStep + 1));
    return kInterrupted;
  }
  const double tokens = static_cast<double>(s.tokensPerStep) * static_cast<double>(s.losses.size());
  const std::string ranks =
      s.ranks > 1 ? " (" + std::to_string(s.ranks) + " data-parallel ranks)" : std::string();
  std::printf("rp-run: trained steps %lld..%lld on %s x %d%s: loss %.4f -> %.4f, %.0f tokens/s "
              "(%s)\n",
              static_cast<long long>(s.firstStep + 1),
              static_cast<long long>(s.firstStep + static_cast<int64_t>(s.losses.size())),
              backend.c_str(), s.devices, ranks.c_str(), s.losses.front(), s.losses.back(),
              s.seconds > 0 ? tokens / s.seconds : 0.0, formatDuration(s.seconds).c_str());
  if (s.skippedSteps > 0)
    std::printf("rp-run: %lld steps skipped by loss scaling (non-finite gradients)\n",
                static_cast<long long>(s.skippedSteps));
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
  if (s.interrupted && !o.exportHf.dir.empty())
    std::printf("rp-run: not exported to %s (the run was interrupted; --resume its checkpoint "
                "with --export-hf to convert it)\n",
                o.exportHf.dir.c_str());
  if (s.interrupted) {
    std::printf("rp-run: interrupted after step %lld\n",
                static_cast<long long>(s.firstStep + static_cast<int64_t>(s.losses.size())));
    return kInterrupted;
  }
  return 0;
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

/// Training: needs --data and --steps; stops cleanly on the first SIGINT / SIGTERM (under
/// mpirun with several ranks, the launcher's signal ends every rank instead).
int runTraining(RunFlags &f) {
  TrainOptions &o = f.train;
  if (o.dataPath.empty() || o.steps == 0) {
    std::fprintf(stderr, "rp-run: error: training needs --data FILE and --steps N "
                         "(or --check to validate the plan)\n");
    return kBadInput;
  }
  StatusOr<std::unique_ptr<World>> world = startWorld();
  if (!world.ok())
    return fail(world.status());
  o.world = world.value().get();
  if (f.lrOption->count())
    o.lr = f.lr;
  if (f.lossScaleOption->count())
    o.lossScale = f.lossScale;
  if (f.seedOption->count())
    o.seed = parseSeed(f.seed, "--seed").value(); // validated by the parser
  o.dataFormat = parseDataFormat(f.dataFormat).value();
  o.progress = !f.noProgress;
  // Several ranks cannot agree on the step a signal stops at without talking on the main
  // thread: there, mpirun's forwarded signal ends the job (docs/MULTI_NODE.md).
  if (!o.world || o.world->ranks() == 1) {
    o.stop = &stopRequested;
    installStopHandler();
  }

  StatusOr<TrainSummary> result = train(o, stderr);
  if (!result.ok())
    return o.world ? failOnEveryRank(result.status(), *o.world) : fail(result.status());
  if (o.world && o.world->rank() != 0)
    return result.value().interrupted ? kInterrupted : 0;
  return printTrainSummary(result.value(), o);
}

/// The modes other than training run in one process: refuse them under an MPI launch of
/// several processes.
Status checkSingleProcessMode(const char *mode) {
  const std::optional<MpiLaunch> launch = detectMpiLaunch();
  if (launch && launch->size > 1)
    return invalidArgument(std::string(mode) + " runs in one process, not under an MPI launch "
                           "of " + std::to_string(launch->size) + " (" + launch->variable +
                           "); only training is data-parallel");
  return okStatus();
}

} // namespace

int runRpRun(int argc, char **argv) {
  CLI::App app{"rp-run: train with a compiled RoundPipe plan (rpc-compile -o MODEL.rpplan), or "
               "simulate it or a layer profile on N virtual GPUs (--backend sim)"};
  app.set_version_flag("--version", std::string("rp-run ") + RP_VERSION);
  RunFlags f;
  addTrainFlags(app, f);
  addExportFlags(app, f);
  addSimFlags(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  f.check = f.check || f.report || !f.reportJson.empty(); // --report(-json) imply --check
  if (f.train.backend == "sim" && !f.check && f.train.exportHf.dir.empty()) {
    if (Status s = checkSingleProcessMode("--backend sim"); !s.ok())
      return fail(s);
    return runSimulation(app, f);
  }
  if (Status s = resolveExportFlags(app, f); !s.ok())
    return fail(s);
  for (CLI::Option *opt : f.simOptions)
    if (opt->count()) {
      std::fprintf(stderr, "rp-run: error: %s is an option of --backend sim\n",
                   opt->get_name().c_str());
      return kBadInput;
    }
  if (f.train.planPath.empty()) {
    std::fprintf(stderr, "rp-run: error: a plan file (MODEL.rpplan) is required; only "
                         "--backend sim --profile FILE runs without one\n");
    return kBadInput;
  }
  if (f.check) {
    if (!f.train.exportHf.dir.empty()) {
      std::fprintf(stderr,
                   "rp-run: error: --check validates (and --report reports); it does not export\n");
      return kBadInput;
    }
    if (Status s = checkSingleProcessMode("--check"); !s.ok())
      return fail(s);
    return checkPlan(app, f);
  }
  if (!f.train.exportHf.dir.empty() && f.train.dataPath.empty() &&
      !app.get_option("--steps")->count()) {
    if (Status s = checkSingleProcessMode("--export-hf without training"); !s.ok())
      return fail(s);
    return runExportOnly(app, f);
  }
  return runTraining(f);
}

} // namespace rp::runtime
