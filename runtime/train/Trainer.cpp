//===- Trainer.cpp - A training run of a compiled plan (rp-run) -----------===//

#include "runtime/train/Trainer.h"

#include "kernels/cpu/Cast.h"
#include "runtime/backends/cpu/CpuBackend.h"
#if RP_HAVE_CUDA
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/CudaHostKernels.h"
#endif
#include "runtime/data/BatchSampler.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/optim/AdamW.h"
#include "runtime/plan/PlanInputs.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/MetricsLog.h"
#include "runtime/train/Progress.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
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

/// The data-fed inputs of a plan: token ids (required) and labels (optional).
struct Feed {
  PlanInput tokens;
  std::optional<PlanInput> labels;
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
    } else {
      return unimplemented("model input '" + in.name +
                           "' is neither token ids (the indices of an embedding gather) nor "
                           "labels (of the cross-entropy loss); rp-run --data feeds those only");
    }
  }
  if (!haveTokens)
    return unimplemented("the plan has no token-id input (an input used as the indices of an "
                         "embedding gather); rp-run --data cannot feed it");
  if (feed.tokens.shape.size() != 2)
    return unimplemented("token input '" + feed.tokens.name + "' has shape " +
                         formatShape(feed.tokens.shape) + "; rp-run feeds [batch, seq]");
  for (const PlanInput *in : {&feed.tokens, feed.labels ? &*feed.labels : nullptr})
    if (in && in->dtype != DType::I64 && in->dtype != DType::I32)
      return unimplemented("input '" + in->name + "' holds " + dtypeName(in->dtype) +
                           " ids; rp-run feeds i64 or i32");
  if (feed.labels && feed.labels->shape != feed.tokens.shape)
    return unimplemented("labels input '" + feed.labels->name + "' has shape " +
                         formatShape(feed.labels->shape) + ", the token input " +
                         formatShape(feed.tokens.shape) + "; rp-run feeds both as [batch, seq]");
  return feed;
}

/// Tensors of a checkpoint (owning copies where the arena holds another dtype).
struct CheckpointTensors {
  std::vector<std::vector<uint8_t>> scratch;
  CheckpointData data;
};

SafetensorsTensor tensorOf(const std::string &name, DType dtype, const pb::TensorType &type,
                           const void *data, int64_t elements) {
  return SafetensorsTensor{name, fromRuntimeDType(dtype),
                           std::vector<int64_t>(type.shape().begin(), type.shape().end()), data,
                           static_cast<size_t>(elements) * dtypeSize(dtype)};
}

StatusOr<std::unique_ptr<CheckpointTensors>> checkpointOf(HostArena &host, int64_t step,
                                                          uint64_t seed) {
  const pb::Plan &plan = host.plan();
  auto out = std::make_unique<CheckpointTensors>();
  out->data.step = step;
  const bool async = plan.config().update() == pb::ASYNC;
  out->data.metadata = {{"producer", "rp-run"},
                        {"update", async ? "async" : "sync"},
                        {"seed", std::to_string(seed)},
                        {"micro_batches", std::to_string(plan.config().micro_batches())},
                        {"compute_dtype", dtypeName(host.computeDType())}};
  for (int i = 0; i < plan.params_size(); ++i) {
    const pb::Param &p = plan.params(i);
    const int64_t n = host.paramElements(i);
    const DType stored = fromPlanDType(p.type().dtype()).value_or(DType::F32);
    uint8_t *weights = host.weights() + p.weight_offset();
    if (p.trainable()) {
      const int64_t at = p.state_offset() / 4;
      out->data.model.push_back(tensorOf(p.name(), DType::F32, p.type(), host.master() + at, n));
      out->data.optimizer.push_back(
          tensorOf("m." + p.name(), DType::F32, p.type(), host.moment1() + at, n));
      out->data.optimizer.push_back(
          tensorOf("v." + p.name(), DType::F32, p.type(), host.moment2() + at, n));
      if (async) // the compute weights the next iteration uses (one step behind the master)
        out->data.optimizer.push_back(
            tensorOf("weights." + p.name(), host.computeDType(), p.type(), weights, n));
    } else if (!isFloat(stored) || host.computeDType() == stored) {
      out->data.model.push_back(tensorOf(p.name(), stored, p.type(), weights, n));
    } else {
      out->scratch.emplace_back(static_cast<size_t>(n) * dtypeSize(stored));
      RP_RETURN_IF_ERROR(kernels::cpu::cast(weights, host.computeDType(),
                                            out->scratch.back().data(), stored, n));
      out->data.model.push_back(
          tensorOf(p.name(), stored, p.type(), out->scratch.back().data(), n));
    }
  }
  return out;
}

/// Copies checkpoint tensor `name` of `file` (dtype, shape checked) to `dst`.
Status restoreTensor(const SafetensorsFile &file, const std::string &name, DType dtype,
                     const pb::TensorType &type, void *dst) {
  const SafetensorsTensorView *t = file.find(name);
  if (!t)
    return invalidArgument(file.path() + ": the checkpoint has no tensor '" + name +
                           "' (a checkpoint of another plan?)");
  std::vector<int64_t> shape(type.shape().begin(), type.shape().end());
  if (toRuntimeDType(t->dtype) != dtype || t->shape != shape)
    return invalidArgument(file.path() + ": tensor '" + name + "' is " +
                           safetensorsDTypeName(t->dtype) + formatShape(t->shape) +
                           "; the plan expects " + dtypeName(dtype) + formatShape(shape));
  if (t->size)
    std::memcpy(dst, t->data, t->size);
  return okStatus();
}

Status restoreCheckpoint(HostArena &host, const LoadedCheckpoint &ckpt) {
  const pb::Plan &plan = host.plan();
  const bool async = plan.config().update() == pb::ASYNC;
  auto meta = ckpt.metadata.find("update");
  if (meta != ckpt.metadata.end() && meta->second != (async ? "async" : "sync"))
    return invalidArgument("the checkpoint was written by a run with " + meta->second +
                           " updates; this plan uses " + (async ? "async" : "sync"));
  for (int i = 0; i < plan.params_size(); ++i) {
    const pb::Param &p = plan.params(i);
    const DType stored = fromPlanDType(p.type().dtype()).value_or(DType::F32);
    uint8_t *weights = host.weights() + p.weight_offset();
    if (!p.trainable()) {
      std::vector<uint8_t> value(static_cast<size_t>(host.paramElements(i)) * dtypeSize(stored));
      RP_RETURN_IF_ERROR(restoreTensor(ckpt.model, p.name(), stored, p.type(), value.data()));
      RP_RETURN_IF_ERROR(kernels::cpu::cast(value.data(), stored, weights,
                                            isFloat(stored) ? host.computeDType() : stored,
                                            host.paramElements(i)));
      continue;
    }
    const int64_t at = p.state_offset() / 4;
    RP_RETURN_IF_ERROR(restoreTensor(ckpt.model, p.name(), DType::F32, p.type(), host.master() + at));
    RP_RETURN_IF_ERROR(
        restoreTensor(ckpt.optimizer, "m." + p.name(), DType::F32, p.type(), host.moment1() + at));
    RP_RETURN_IF_ERROR(
        restoreTensor(ckpt.optimizer, "v." + p.name(), DType::F32, p.type(), host.moment2() + at));
    if (async)
      RP_RETURN_IF_ERROR(restoreTensor(ckpt.optimizer, "weights." + p.name(), host.computeDType(),
                                       p.type(), weights));
    else
      RP_RETURN_IF_ERROR(host.writeComputeWeights(i));
  }
  return okStatus();
}

double mean(const std::vector<float> &values) {
  double sum = 0;
  for (float v : values)
    sum += static_cast<double>(v);
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
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

StatusOr<std::string> checkPlanForBackend(const pb::Plan &plan, const std::string &backend) {
  if (backend == "cpu")
    RP_RETURN_IF_ERROR(checkCpuPlanDType(plan));
  int64_t instructions = 0;
  for (const pb::Function &f : plan.functions()) {
    if (backend == "cpu") {
      RP_RETURN_IF_ERROR(decodeFunction(f));
    } else if (backend == "cuda") {
#if RP_HAVE_CUDA
      RP_RETURN_IF_ERROR(decodeCudaFunction(f));
#else
      return unimplemented("this rp-run was built without the CUDA backend (no nvcc at build "
                           "time, or -DRP_ENABLE_CUDA=OFF)");
#endif
    } else {
      return invalidArgument("--check decodes plans for the cpu and cuda backends, not '" +
                             backend + "'");
    }
    instructions += f.body_size();
  }
  return backend + ": " + std::to_string(instructions) + " instructions in " +
         std::to_string(plan.functions_size()) + " functions decode for the " +
         (backend == "cuda" ? "GPU" : "CPU") + " kernels";
}

StatusOr<TrainSummary> train(const TrainOptions &options, std::FILE *out) {
  if (options.steps < 1)
    return invalidArgument("--steps must be at least 1 (got " + std::to_string(options.steps) +
                           ")");
#if !RP_HAVE_CUDA
  if (options.backend == "cuda")
    return unimplemented("this rp-run was built without the CUDA backend (no nvcc at build "
                         "time, or -DRP_ENABLE_CUDA=OFF); use --backend cpu");
#endif
  if (options.backend == "sim")
    return invalidArgument("the simulator backend does not train: rp-run --backend sim "
                           "simulates the plan (runtime/sim/Simulate.h)");
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
  if (options.logPath == options.tracePath && !options.logPath.empty())
    return invalidArgument("--log and --trace name the same file " + options.logPath);
  RP_RETURN_IF_ERROR(checkOutputFile(options.logPath, "--log",
                                     {options.planPath, options.weightsPath, options.dataPath}));
  RP_RETURN_IF_ERROR(checkOutputFile(options.tracePath, "--trace",
                                     {options.planPath, options.weightsPath, options.dataPath}));
  if (options.kernels != "reference" && options.kernels != "cuda-host")
    return invalidArgument("unknown --kernels '" + options.kernels +
                           "' (expected reference or cuda-host)");
  if (options.kernels == "cuda-host" && options.backend != "cpu")
    return invalidArgument("--kernels cuda-host runs on the CPU backend (--backend cpu)");
#if !RP_HAVE_CUDA
  if (options.kernels == "cuda-host")
    return unimplemented("--kernels cuda-host needs the CUDA backend's kernels, which this "
                         "rp-run was built without (no nvcc at build time)");
#else
  // A missing GPU is reported before anything is loaded.
  std::optional<CudaDevices> gpus;
  if (options.backend == "cuda") {
    RP_ASSIGN_OR_RETURN(CudaDevices found, queryCudaDevices());
    gpus = std::move(found);
  }
#endif

  RP_ASSIGN_OR_RETURN(LoadedPlan loaded, loadPlan(options.planPath, options.weightsPath));
  const pb::Plan &plan = loaded.plan;
  RP_ASSIGN_OR_RETURN(Feed feed, planFeed(plan));
  RP_ASSIGN_OR_RETURN(TokenData data, readTokens(options.dataPath, options.dataFormat));
  int64_t vocab = feed.tokens.vocabSize;
  if (feed.labels && feed.labels->vocabSize < vocab)
    vocab = feed.labels->vocabSize;
  RP_RETURN_IF_ERROR(checkVocabulary(data, vocab));

  std::optional<LoadedCheckpoint> ckpt;
  uint64_t seed = options.seed.value_or(0);
  if (!options.resumeDir.empty()) {
    RP_ASSIGN_OR_RETURN(LoadedCheckpoint c, loadCheckpoint(options.resumeDir));
    ckpt = std::move(c);
    auto s = ckpt->metadata.find("seed");
    if (!options.seed && s != ckpt->metadata.end()) {
      RP_ASSIGN_OR_RETURN(seed, parseSeed(s->second, options.resumeDir));
    }
    if (ckpt->step > kMaxSteps - options.steps)
      return invalidArgument(options.resumeDir + ": the checkpoint's step " +
                             std::to_string(ckpt->step) + " + --steps " +
                             std::to_string(options.steps) + " is more than the " +
                             std::to_string(kMaxSteps) + " steps rp-run counts");
    auto m = ckpt->metadata.find("micro_batches");
    if (m != ckpt->metadata.end() && m->second != std::to_string(plan.config().micro_batches()))
      std::fprintf(out,
                   "rp-run: note: the checkpoint was written with %s micro-batches per step, "
                   "this plan has %lld: the data order differs from an uninterrupted run\n",
                   m->second.c_str(), static_cast<long long>(plan.config().micro_batches()));
  }
  const int64_t batch = feed.tokens.shape[0], seq = feed.tokens.shape[1];
  RP_ASSIGN_OR_RETURN(BatchSampler sampler, BatchSampler::create(data, batch, seq, seed));
  if (options.evalEvery > 0 && sampler.evalBatches() == 0)
    return invalidArgument("--eval-every needs held-out data: " + options.dataPath + " holds " +
                           std::to_string(data.tokens.size()) +
                           " tokens, too few for a 10% evaluation split of windows of " +
                           std::to_string(seq + 1) + " tokens");

  const int devices = options.devices > 0 ? options.devices
                                          : static_cast<int>(plan.config().gpus());
  if (devices > kMaxWorkers)
    return invalidArgument("the plan's pool of " + std::to_string(devices) +
                           " workers is more than " + std::to_string(kMaxWorkers) +
                           "; pass --gpus N");
  // The CPU backend keeps each worker's device arena in host memory too.
  const bool onGpu = options.backend == "cuda";
  RP_RETURN_IF_ERROR(checkPlanFitsInMemory(plan, onGpu ? 0 : devices));
  RP_ASSIGN_OR_RETURN(HostArena host, HostArena::create(plan));
  if (ckpt)
    RP_RETURN_IF_ERROR(restoreCheckpoint(host, *ckpt));
  else
    RP_RETURN_IF_ERROR(host.loadWeights(loaded.weights));
  const int64_t firstStep = ckpt ? ckpt->step : 0;
  ckpt.reset();

  TraceRecorder trace(!options.tracePath.empty());
  std::unique_ptr<Backend> backendOwner;
#if RP_HAVE_CUDA
  if (gpus) {
    RP_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> gpu, CudaBackend::create(devices));
    if (options.progress)
      std::fprintf(out, "cuda: %d workers on %d GPU(s), worker w on GPU w mod %d; GPU 0: %s\n",
                   devices, gpus->count, gpus->count, gpus->names[0].c_str());
    backendOwner = std::move(gpu);
  } else if (options.kernels == "cuda-host") {
    backendOwner = std::make_unique<CpuBackend>(devices, makeCudaHostKernels());
  }
#endif
  if (!backendOwner)
    backendOwner = std::make_unique<CpuBackend>(devices);
  Backend &backend = *backendOwner;
  if (trace.enabled())
    backend.setTrace(&trace);
  ExecutorOptions exec;
  exec.lr = options.lr.value_or(plan.config().optimizer().lr());
  exec.warmup = options.warmup;
  exec.firstStep = firstStep;
  exec.trace = trace.enabled() ? &trace : nullptr;
  Executor executor(host, backend, exec);
  RP_RETURN_IF_ERROR(executor.start());

  // Output files are opened only once every input has been checked.
  if (!options.saveDir.empty())
    RP_RETURN_IF_ERROR(checkCheckpointDir(options.saveDir));
  std::optional<MetricsLog> log;
  if (!options.logPath.empty()) {
    RP_ASSIGN_OR_RETURN(MetricsLog l, MetricsLog::open(options.logPath));
    log = std::move(l);
  }

  TrainSummary summary;
  summary.firstStep = firstStep;
  summary.devices = devices;
  summary.tokensPerStep = plan.config().micro_batches() * batch * seq;
  const int64_t M = plan.config().micro_batches();
  const int64_t end = firstStep + options.steps;
  std::optional<ProgressBar> bar;
  if (options.progress)
    bar.emplace(out, end, firstStep);

  const Clock::time_point start = Clock::now();
  Clock::time_point lastReport = start;
  // A step's micro-batch losses, read from its host records (read them before an evaluation,
  // which reuses the records).
  auto lossesOf = [&](int64_t step) -> StatusOr<std::vector<float>> {
    StatusOr<std::vector<float>> losses = executor.losses(step);
    if (!losses.ok())
      return trainingError(step, losses.status());
    return losses;
  };
  auto report = [&](int64_t step, const std::vector<float> &losses,
                    std::optional<double> evalLoss) -> Status {
    const double loss = mean(losses);
    summary.losses.push_back(loss);
    const double stepSeconds = std::chrono::duration<double>(Clock::now() - lastReport).count();
    lastReport = Clock::now();
    const double elapsed = secondsSince(start);
    const double tokensPerSecond =
        elapsed > 0 ? static_cast<double>(summary.tokensPerStep) *
                          static_cast<double>(summary.losses.size()) / elapsed
                    : 0;
    if (log) {
      StepMetrics m{step + 1, loss, learningRate(exec.lr, exec.warmup, step),
                    summary.tokensPerStep, stepSeconds, tokensPerSecond, evalLoss, std::nullopt};
      if (backend.deviceMemoryBytes() >= 0)
        m.gpuMemoryBytes = backend.deviceMemoryBytes();
      RP_RETURN_IF_ERROR(log->write(m));
    }
    if (bar)
      bar->update(step + 1, loss, tokensPerSecond);
    // A non-finite loss means the run diverged: fail once it is logged (exit 1), so that no
    // checkpoint of NaN weights is written.
    if (!std::isfinite(loss))
      return trainingError(step,
                           internal(std::string("the loss of step ") + std::to_string(step + 1) +
                                    " is " + (std::isnan(loss) ? "nan" : "inf") +
                                    "; the run diverged (try a lower --lr)"));
    return okStatus();
  };
  // Where a micro-batch's inputs go in its host record. The labels of a plan without a labels
  // input go to `unusedLabels` (the sampler always writes both); labels may have another
  // integer dtype than the token ids.
  std::vector<uint8_t> unusedLabels(static_cast<size_t>(batch * seq) * 8);
  const DType labelDType = feed.labels ? feed.labels->dtype : feed.tokens.dtype;
  auto tokensIn = [&](uint8_t *record) {
    return record + plan.host_buffers(feed.tokens.buffer).offset();
  };
  auto labelsIn = [&](uint8_t *record) -> void * {
    return feed.labels ? record + plan.host_buffers(feed.labels->buffer).offset()
                       : unusedLabels.data();
  };
  auto evaluate = [&]() -> StatusOr<double> {
    const int64_t groups = std::max<int64_t>(1, std::min<int64_t>(4, sampler.evalBatches() / M));
    std::vector<float> all;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t m = 0; m < M; ++m) {
        uint8_t *record = executor.record(0, m);
        RP_RETURN_IF_ERROR(sampler.fillEval((g * M + m) % sampler.evalBatches(), feed.tokens.dtype,
                                            tokensIn(record), labelDType, labelsIn(record)));
      }
      RP_ASSIGN_OR_RETURN(std::vector<float> losses, executor.evaluate());
      all.insert(all.end(), losses.begin(), losses.end());
    }
    return mean(all);
  };
  auto save = [&](int64_t steps) -> Status {
    RP_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointTensors> c, checkpointOf(host, steps, seed));
    RP_RETURN_IF_ERROR(saveCheckpoint(options.saveDir, c->data));
    summary.checkpointDir = options.saveDir;
    if (bar)
      bar->message("saved checkpoint of step " + std::to_string(steps) + " to " +
                   options.saveDir);
    return okStatus();
  };

  auto nextBoundary = [&](int64_t step, int64_t every) {
    return every > 0 ? (step / every + 1) * every : end;
  };
  auto stopRequested = [&] {
    return options.stop && options.stop->load(std::memory_order_relaxed);
  };
  int64_t savedAt = firstStep; // the step of the newest checkpoint (or the resumed one)
  for (int64_t step = firstStep; step < end;) {
    const int64_t segmentEnd = std::min(
        {end, nextBoundary(step, options.evalEvery), nextBoundary(step, options.saveEvery)});
    // An interrupt stops dispatching; the steps dispatched finish, then a checkpoint is saved.
    int64_t k = step;
    for (; k < segmentEnd && !stopRequested(); ++k) {
      Status s = executor.waitInputsWritable(k);
      for (int64_t m = 0; m < M && s.ok(); ++m) {
        uint8_t *record = executor.record(k, m);
        s = sampler.fillTrain(k, m, feed.tokens.dtype, tokensIn(record), labelDType,
                              labelsIn(record));
      }
      if (s.ok())
        s = executor.dispatch(k, segmentEnd);
      if (!s.ok())
        return trainingError(k, s);
      if (k > step) {
        RP_ASSIGN_OR_RETURN(std::vector<float> losses, lossesOf(k - 1));
        RP_RETURN_IF_ERROR(report(k - 1, losses, std::nullopt));
      }
    }
    if (k < segmentEnd) {
      summary.interrupted = true;
      if (bar)
        bar->message("interrupted: finishing step " + std::to_string(k) +
                     (options.saveDir.empty() ? std::string() : " and saving a checkpoint") +
                     " (interrupt again to abort)");
    }
    if (Status s = executor.drain(); !s.ok())
      return trainingError(k - 1, s);
    if (k == step) { // interrupted before this segment's first step
      if (!options.saveDir.empty() && savedAt != step)
        if (Status s = save(step); !s.ok())
          return trainingError(step - 1, s);
      break;
    }
    const int64_t done = k; // steps completed: [0, done)
    RP_ASSIGN_OR_RETURN(std::vector<float> losses, lossesOf(done - 1));
    std::optional<double> evalLoss;
    if (!summary.interrupted && options.evalEvery > 0 && segmentEnd % options.evalEvery == 0) {
      StatusOr<double> e = evaluate();
      if (!e.ok())
        return trainingError(segmentEnd - 1, e.status());
      evalLoss = e.value();
      summary.evalLoss = evalLoss;
      if (bar) {
        char text[64];
        std::snprintf(text, sizeof text, "step %lld: eval loss %.4f",
                      static_cast<long long>(segmentEnd), *evalLoss);
        bar->message(text);
      }
    }
    RP_RETURN_IF_ERROR(report(done - 1, losses, evalLoss));
    if (!options.saveDir.empty() &&
        (summary.interrupted || (options.saveEvery > 0 && done % options.saveEvery == 0) ||
         done == end)) {
      if (Status s = save(done); !s.ok())
        return trainingError(done - 1, s);
      savedAt = done;
    }
    if (summary.interrupted)
      break;
    step = segmentEnd;
  }
  summary.seconds = secondsSince(start);
  if (bar)
    bar->finish();
  if (trace.enabled()) {
    if (Status s = trace.write(options.tracePath); !s.ok())
      return internal("cannot write the trace: " + s.message());
    summary.tracePath = options.tracePath;
  }
  return summary;
}

} // namespace rp::runtime
