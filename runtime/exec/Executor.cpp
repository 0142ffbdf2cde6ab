//===- Executor.cpp - Runs a plan's jobs on a backend's device pool -------===//

#include "runtime/exec/Executor.h"

#include "kernels/cpu/Kernels.h"

#include "runtime/optim/AdamW.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace rp::runtime {

namespace pb = rp::plan;

const char *queueName(Queue queue) {
  switch (queue) {
  case Queue::Compute:
    return "compute";
  case Queue::ActivationUpload:
    return "h2d activations";
  case Queue::WeightUpload:
    return "h2d weights";
  case Queue::Download:
    return "d2h";
  }
  return "?";
}

Executor::Executor(HostArena &host, Backend &backend, ExecutorOptions options)
    : host_(host), backend_(backend), plan_(host.plan()), options_(options),
      numDevices_(backend.numDevices()), numStages_(host.plan().stages_size()),
      microBatches_(host.plan().config().micro_batches()),
      globalMicroBatches_(microBatches_ * (options.ranks ? options.ranks->ranks() : 1)),
      async_(host.plan().config().update() == pb::ASYNC), nextStep_(options.firstStep),
      optimizerDone_(options.firstStep), commDone_(options.firstStep) {
  devices_.resize(static_cast<size_t>(numDevices_));
  layerHasStep_.assign(static_cast<size_t>(plan_.layers_size()), false);
  for (const pb::OptimizerStep &os : plan_.optimizer_steps())
    layerHasStep_[static_cast<size_t>(os.layer())] = true;
  for (int s = 0; s < numStages_; ++s)
    for (const pb::Step &step : plan_.stages(s).body())
      if (step.has_download() &&
          plan_.host_buffers(step.download().buffer()).kind() == pb::LOSS) {
        lossStage_ = s;
        lossBuffer_ = step.download().buffer();
      }
  for (const pb::HostBuffer &b : plan_.host_buffers()) // validated: sizes are known to fit
    bufferBytes_.push_back(tensorTypeBytes(b.type(), b.name()).value());
  copiesOf_.resize(static_cast<size_t>(plan_.params_size()));
  stepLayersOf_.resize(static_cast<size_t>(plan_.layers_size()));
  for (int l = 0; l < plan_.layers_size(); ++l)
    if (layerHasStep_[static_cast<size_t>(l)])
      stepLayersOf_[static_cast<size_t>(l)].push_back(l);
  for (int p = 0; p < plan_.params_size(); ++p) {
    const pb::Param &param = plan_.params(p);
    if (!param.trainable())
      continue;
    if (!param.has_primary()) {
      trainableByName_.push_back(p);
      continue;
    }
    copiesOf_[static_cast<size_t>(param.primary())].push_back(p); // validated: in layer order
    std::vector<int> &owners = stepLayersOf_[static_cast<size_t>(param.layer())];
    const int owner = plan_.params(param.primary()).layer();
    if (std::find(owners.begin(), owners.end(), owner) == owners.end())
      owners.push_back(owner);
  }
  gradRanges_.resize(static_cast<size_t>(numStages_));
  rangeOf_.resize(static_cast<size_t>(plan_.params_size()));
  for (int s = 0; s < numStages_; ++s) {
    const pb::Stage &st = plan_.stages(s);
    if (st.grad_bytes() > 0)
      lastGradStage_ = s;
    for (const pb::Step &step : st.body())
      if (step.has_accumulate()) {
        const int p = step.accumulate().param();
        std::vector<GradientRange> &ranges = gradRanges_[static_cast<size_t>(s)];
        rangeOf_[static_cast<size_t>(p)] = {s, static_cast<int>(ranges.size())};
        ranges.push_back(
            {plan_.params(p).grad_offset() - st.state_offset(), host_.paramElements(p)});
      }
  }
  std::sort(trainableByName_.begin(), trainableByName_.end(),
            [&](int a, int b) { return plan_.params(a).name() < plan_.params(b).name(); });
  // Async: the weights writer copies the layers as their last upload of the step completes.
  auto lastUpload = [&](int i) {
    int last = -1;
    for (int u : plan_.optimizer_steps(i).upload_stages())
      last = std::max(last, u);
    return last;
  };
  for (int i = 0; i < plan_.optimizer_steps_size(); ++i)
    writeOrder_.push_back(i);
  std::stable_sort(writeOrder_.begin(), writeOrder_.end(),
                   [&](int a, int b) { return lastUpload(a) < lastUpload(b); });
  auto firstUpload = [&](int i) {
    int first = numStages_;
    for (int u : plan_.optimizer_steps(i).upload_stages())
      first = std::min(first, u);
    return first;
  };
  adamwOrder_ = writeOrder_;
  std::iota(adamwOrder_.begin(), adamwOrder_.end(), 0);
  const int ranks = std::max(options_.ranks ? options_.ranks->ranks() : 1, backend_.modeledRanks());
  if (!async_ && ranks == 1)
    std::stable_sort(adamwOrder_.begin(), adamwOrder_.end(),
                     [&](int a, int b) { return firstUpload(a) < firstUpload(b); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (optimizer_.joinable() || weightsWriter_.joinable() || comm_.joinable())
    backend_.fail(Status(StatusCode::Internal, "the executor is shutting down"));
  if (comm_.joinable())
    comm_.join();
  if (optimizer_.joinable())
    optimizer_.join();
  if (weightsWriter_.joinable())
    weightsWriter_.join();
}

Status Executor::start() {
  if (lossStage_ < 0)
    return invalidArgument("the plan has no stage that downloads the loss");
  if (options_.ranks && !options_.hostArithmetic)
    return invalidArgument("data-parallel ranks need the optimizer's host arithmetic");
  RP_RETURN_IF_ERROR(backend_.prepare(plan_));
  RP_RETURN_IF_ERROR(backend_.registerHostMemory(host_.weights(), host_.bytes()));
  if (options_.trace)
    optimizerTrack_ = options_.trace->track("host optimizer");
  const int threads = backend_.hostOptimizerThreads();
  optimizer_ = std::thread([this, threads] {
    if (threads > 0)
      kernels::cpu::setKernelThreads(threads);
    hostLoop(optimizerQueue_, &Executor::optimizerStep);
  });
  useComm_ = options_.ranks && options_.ranks->ranks() > 1 && options_.commThread;
  if (useComm_) {
    if (options_.trace)
      commTrack_ = options_.trace->track("rank comm");
    comm_ = std::thread([this, threads] {
      if (threads > 0)
        kernels::cpu::setKernelThreads(threads);
      hostLoop(commQueue_, &Executor::commStep);
    });
  }
  if (async_) {
    if (options_.trace)
      writerTrack_ = options_.trace->track("host weights writer");
    weightsWriter_ = std::thread([this, threads] {
      if (threads > 0)
        kernels::cpu::setKernelThreads(threads);
      hostLoop(writerQueue_, &Executor::writeStepWeights);
    });
  }
  return okStatus();
}

int64_t Executor::slotOffset(int slot) const {
  return plan_.device_arena().constants() + slot * plan_.device_arena().slot();
}

int64_t Executor::setOffset(int set) const {
  const pb::DeviceArena &d = plan_.device_arena();
  return d.constants() + 2 * d.slot() + set * d.activations();
}

Executor::StepEvents Executor::makeStepEvents() {
  StepEvents ev;
  ev.jobs.resize(static_cast<size_t>(numStages_));
  for (JobEvents &j : ev.jobs) {
    j.weightsReady = backend_.newEvent();
    for (int64_t m = 0; m < microBatches_; ++m)
      j.downloaded.push_back(backend_.newEvent());
    j.uploadsDone = backend_.newEvent();
    j.gradsDownloaded = backend_.newEvent();
  }
  for (int l = 0; l < plan_.layers_size(); ++l) {
    ev.weightsWritten.push_back(backend_.newEvent());
    ev.gradsConsumed.push_back(backend_.newEvent());
    ev.gradsReduced.push_back(backend_.newEvent());
  }
  ev.finiteChecked = backend_.newEvent();
  ev.sumOverflow.assign(static_cast<size_t>(plan_.layers_size()), 0);
  ev.squares.assign(static_cast<size_t>(plan_.params_size()), 0.0);
  ev.squaresKnown.assign(static_cast<size_t>(plan_.params_size()), 0);
  return ev;
}

Executor::StepEvents &Executor::events(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = steps_.find(step);
  if (it == steps_.end())
    it = steps_.emplace(step, makeStepEvents()).first;
  return it->second;
}

Status Executor::waitInputsWritable(int64_t step) {
  if (step - 2 < options_.firstStep)
    return okStatus();
  StepEvents &ev = events(step - 2);
  for (const JobEvents &j : ev.jobs)
    RP_RETURN_IF_ERROR(backend_.hostWait(j.uploadsDone));
  return okStatus();
}

void Executor::waitWeightsVersion(int device, int64_t step, int stage) {
  if (step - 1 < options_.firstStep)
    return;
  StepEvents &prev = events(step - 1);
  const pb::Stage &st = plan_.stages(stage);
  for (int l = st.begin(); l < st.end(); ++l)
    for (int writer : stepLayersOf_[static_cast<size_t>(l)])
      backend_.wait(device, Queue::WeightUpload, prev.weightsWritten[static_cast<size_t>(writer)]);
}

void Executor::uploadWeights(int device, int slot, int64_t step, int stage, const Event &ready,
                             const std::vector<Event> *behind) {
  const pb::Stage &st = plan_.stages(stage);
  DeviceState &dev = devices_[static_cast<size_t>(device)];
  if (dev.slotFree[slot])
    backend_.wait(device, Queue::WeightUpload, dev.slotFree[slot]);
  const std::string name = st.name() + " s" + std::to_string(step) + " weights";
  const uint8_t *src = host_.weights() + st.weight_offset();
  const int64_t dst = slotOffset(slot);
  if (!behind) {
    backend_.copyToDevice(device, Queue::WeightUpload, src, dst, st.weight_bytes(), name);
  } else {
    // Byte-balanced chunks, chunk m behind micro-batch m's activation upload.
    const int64_t chunks = static_cast<int64_t>(behind->size());
    const int64_t chunk = (st.weight_bytes() + chunks - 1) / chunks;
    for (int64_t m = 0; m < chunks; ++m) {
      const int64_t begin = std::min(st.weight_bytes(), m * chunk);
      const int64_t end = std::min(st.weight_bytes(), begin + chunk);
      backend_.wait(device, Queue::WeightUpload, (*behind)[static_cast<size_t>(m)]);
      if (end > begin)
        backend_.copyToDevice(device, Queue::WeightUpload, src + begin, dst + begin, end - begin,
                              name + " chunk " + std::to_string(m));
    }
  }
  backend_.record(device, Queue::WeightUpload, ready);
}

void Executor::dispatchJob(int64_t job, int64_t step, int stage, Mode mode, StepEvents &ev,
                           int64_t segmentEnd) {
  const pb::Stage &st = plan_.stages(stage);
  const int device = static_cast<int>(job % numDevices_);
  DeviceState &dev = devices_[static_cast<size_t>(device)];
  const int slot = static_cast<int>(dev.jobs % 2);
  ++dev.jobs;
  const int parity = mode == Mode::Train ? static_cast<int>(step % 2) : 0;
  const Job j{job,
              step,
              stage,
              mode,
              ev,
              st,
              ev.jobs[static_cast<size_t>(stage)],
              device,
              slot,
              slotOffset(slot),
              parity,
              st.name() + " s" + std::to_string(step)};

  enqueueJobWeights(j);
  // The device's next job, whose weights this job prefetches chunk by chunk.
  const int64_t next = job + numDevices_;
  const int64_t nextStep = next / numStages_;
  const bool prefetch = mode == Mode::Train && nextStep < segmentEnd;
  std::vector<Event> behind; // each micro-batch's activation-upload event
  bool waitedRecords = false;
  Event lastCompute;
  for (int64_t m = 0; m < microBatches_; ++m)
    lastCompute = enqueueMicroBatch(j, m, behind, waitedRecords);
  backend_.record(device, Queue::ActivationUpload, j.events.uploadsDone);
  if (prefetch && nextStep - 1 <= step)
    prefetchNextWeights(device, next, behind);
  else if (prefetch)
    deferred_.push_back({nextStep - 1, device, next, std::move(behind)});
  enqueueGradients(j, lastCompute);
}

void Executor::enqueueJobWeights(const Job &j) {
  if (j.mode == Mode::Eval || !prefetched_.erase(j.index)) {
    if (j.mode == Mode::Train)
      waitWeightsVersion(j.device, j.step, j.stage);
    uploadWeights(j.device, j.slot, j.step, j.stage, j.events.weightsReady, nullptr);
  }
  backend_.wait(j.device, Queue::Compute, j.events.weightsReady);
}

Event Executor::enqueueMicroBatch(const Job &j, int64_t m, std::vector<Event> &behind,
                                  bool &waitedRecords) {
  DeviceState &dev = devices_[static_cast<size_t>(j.device)];
  const int set = static_cast<int>(dev.sets % 2);
  ++dev.sets;
  const MicroBatch mb{m, set, setOffset(set), host_.record(j.parity, m),
                      j.tag + " mb" + std::to_string(m)};
  Event uploaded = enqueueUploads(j, mb);
  behind.push_back(uploaded);
  Event lastCompute = enqueueCompute(j, mb, uploaded);
  enqueueDownloads(j, mb, lastCompute, waitedRecords);
  return lastCompute;
}

Event Executor::enqueueUploads(const Job &j, const MicroBatch &mb) {
  DeviceState &dev = devices_[static_cast<size_t>(j.device)];
  if (dev.setFree[mb.set])
    backend_.wait(j.device, Queue::ActivationUpload, dev.setFree[mb.set]);
  for (const pb::Step &s : j.spec.body()) {
    if (!s.has_upload())
      continue;
    const pb::Upload &u = s.upload();
    const pb::HostBuffer &b = plan_.host_buffers(u.buffer());
    if (u.after_stage() >= 0)
      backend_.wait(j.device, Queue::ActivationUpload,
                    j.stepEvents.jobs[static_cast<size_t>(u.after_stage())]
                        .downloaded[static_cast<size_t>(mb.index)]);
    backend_.copyToDevice(j.device, Queue::ActivationUpload, mb.record + b.offset(),
                          mb.setOffset + u.offset(), bufferBytes_[static_cast<size_t>(u.buffer())],
                          mb.tag + " " + b.name());
  }
  Event uploaded = backend_.newEvent();
  backend_.record(j.device, Queue::ActivationUpload, uploaded);
  return uploaded;
}

Event Executor::enqueueCompute(const Job &j, const MicroBatch &mb, const Event &uploaded) {
  backend_.wait(j.device, Queue::Compute, uploaded);
  for (const pb::Step &s : j.spec.body()) {
    if (s.has_call()) {
      CallFrame frame;
      frame.function = s.call().function();
      frame.stage = j.stage;
      frame.slotOffset = j.slotOffset;
      for (int64_t a : s.call().arg_offsets())
        frame.args.push_back(mb.setOffset + a);
      for (int64_t r : s.call().result_offsets())
        frame.results.push_back(mb.setOffset + r);
      backend_.call(j.device, std::move(frame),
                    mb.tag + " " + plan_.functions(s.call().function()).name());
    } else if (s.has_accumulate()) {
      const pb::Param &p = plan_.params(s.accumulate().param());
      const int64_t dst =
          j.slotOffset + j.spec.weight_bytes() + (p.grad_offset() - j.spec.state_offset());
      backend_.accumulate(j.device, dst, mb.setOffset + s.accumulate().offset(),
                          host_.paramElements(s.accumulate().param()), host_.computeDType(),
                          mb.index == 0, mb.tag + " accumulate " + p.name());
    }
  }
  Event lastCompute = backend_.newEvent();
  backend_.record(j.device, Queue::Compute, lastCompute);
  return lastCompute;
}

void Executor::enqueueDownloads(const Job &j, const MicroBatch &mb, const Event &lastCompute,
                                bool &waitedRecords) {
  backend_.wait(j.device, Queue::Download, lastCompute);
  for (const pb::Step &s : j.spec.body()) {
    if (!s.has_download())
      continue;
    if (!waitedRecords && j.mode == Mode::Train && j.step - 2 >= options_.firstStep) {
      // The record of this parity was last read by step - 2's uploads.
      for (const JobEvents &old : events(j.step - 2).jobs)
        backend_.wait(j.device, Queue::Download, old.uploadsDone);
      waitedRecords = true;
    }
    const pb::HostBuffer &b = plan_.host_buffers(s.download().buffer());
    backend_.copyToHost(
        j.device, Queue::Download, mb.setOffset + s.download().offset(), mb.record + b.offset(),
        bufferBytes_[static_cast<size_t>(s.download().buffer())], mb.tag + " " + b.name());
  }
  const Event &downloaded = j.events.downloaded[static_cast<size_t>(mb.index)];
  backend_.record(j.device, Queue::Download, downloaded);
  devices_[static_cast<size_t>(j.device)].setFree[mb.set] = downloaded;
}

void Executor::prefetchNextWeights(int device, int64_t next, const std::vector<Event> &behind) {
  // Enqueued after this job's uploads in program order; each chunk waits for its
  // micro-batch's upload event, so the copies run behind the activations.
  const int64_t nextStep = next / numStages_;
  const int nextSlot = static_cast<int>(devices_[static_cast<size_t>(device)].jobs % 2);
  const int nextStage = static_cast<int>(next % numStages_);
  waitWeightsVersion(device, nextStep, nextStage);
  uploadWeights(device, nextSlot, nextStep, nextStage,
                events(nextStep).jobs[static_cast<size_t>(nextStage)].weightsReady, &behind);
  prefetched_.insert(next);
}

void Executor::enqueueDeferredPrefetches(int64_t step) {
  // In dispatch order, so each device's prefetches keep their order.
  auto due = std::stable_partition(deferred_.begin(), deferred_.end(),
                                   [&](const DeferredPrefetch &d) { return d.after == step; });
  for (auto it = deferred_.begin(); it != due; ++it)
    prefetchNextWeights(it->device, it->next, it->behind);
  deferred_.erase(deferred_.begin(), due);
}

void Executor::enqueueGradients(const Job &j, const Event &lastCompute) {
  DeviceState &dev = devices_[static_cast<size_t>(j.device)];
  const pb::Stage &st = j.spec;
  if (j.mode != Mode::Train || st.grad_bytes() <= 0) {
    dev.slotFree[j.slot] = lastCompute;
    return;
  }
  if (j.step - 1 >= options_.firstStep) {
    StepEvents &prev = events(j.step - 1);
    for (int l = st.begin(); l < st.end(); ++l)
      for (int reader : stepLayersOf_[static_cast<size_t>(l)])
        backend_.wait(j.device, Queue::Download, prev.gradsConsumed[static_cast<size_t>(reader)]);
  }
  // The download squares its gradients for the norm when they are final: with ranks the
  // rank sum writes them, and a shared param's sum is squared where it is made.
  j.events.gradCheck.squaresScale = options_.ranks ? 0.0f : squaresScale(j.step);
  backend_.downloadGradients(j.device, j.slotOffset + st.weight_bytes(),
                             reinterpret_cast<uint8_t *>(host_.grads()) + st.state_offset(),
                             st.grad_bytes(), gradRanges_[static_cast<size_t>(j.stage)],
                             &j.events.gradCheck, j.tag + " grads");
  backend_.record(j.device, Queue::Download, j.events.gradsDownloaded);
  dev.slotFree[j.slot] = j.events.gradsDownloaded;
}

Status Executor::dispatch(int64_t step, int64_t segmentEnd) {
  if (step != nextStep_)
    return internal("dispatch: step " + std::to_string(step) + " out of order (expected " +
                         std::to_string(nextStep_) + ")");
  StepEvents &ev = events(step);
  enqueueDeferredPrefetches(step);
  for (int s = 0; s < numStages_; ++s)
    dispatchJob(step * numStages_ + s, step, s, Mode::Train, ev, segmentEnd);
  ++nextStep_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    optimizerQueue_.push_back(step);
    if (async_)
      writerQueue_.push_back(step);
    if (useComm_)
      commQueue_.push_back(step);
    // Events older than any wait still to be enqueued or processed.
    int64_t keep = std::min(step - 3, optimizerDone_ - 1);
    if (useComm_)
      keep = std::min(keep, commDone_ - 1);
    steps_.erase(steps_.begin(), steps_.lower_bound(keep));
  }
  cv_.notify_all();
  return okStatus();
}

StatusOr<std::vector<float>> Executor::readLosses(StepEvents &ev, int parity) {
  std::vector<float> out;
  const pb::HostBuffer &b = plan_.host_buffers(lossBuffer_);
  for (int64_t m = 0; m < microBatches_; ++m) {
    RP_RETURN_IF_ERROR(
        backend_.hostWait(ev.jobs[static_cast<size_t>(lossStage_)].downloaded[static_cast<size_t>(m)]));
    float loss;
    std::memcpy(&loss, host_.record(parity, m) + b.offset(), sizeof(float));
    out.push_back(loss);
  }
  return out;
}

StatusOr<std::vector<float>> Executor::losses(int64_t step) {
  if (!options_.ranks)
    return readLosses(events(step), static_cast<int>(step % 2));
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return globalLosses_.count(step) || stopping_; });
  auto it = globalLosses_.find(step);
  if (it == globalLosses_.end())
    return internal("the executor stopped before step " + std::to_string(step + 1) +
                    "'s losses were gathered");
  std::vector<float> out = std::move(it->second);
  globalLosses_.erase(globalLosses_.begin(), std::next(it));
  return out;
}

Status Executor::gatherStepLosses(int64_t step, StepEvents &ev) {
  RP_ASSIGN_OR_RETURN(std::vector<float> mine, readLosses(ev, static_cast<int>(step % 2)));
  std::vector<float> all(static_cast<size_t>(globalMicroBatches_));
  RP_RETURN_IF_ERROR(options_.ranks->allGather(mine.data(), microBatches_, all.data()));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    globalLosses_[step] = std::move(all);
  }
  cv_.notify_all();
  return okStatus();
}

Status Executor::reduceLayerGradients(int64_t step, StepEvents &ev,
                                      const pb::OptimizerStep &os) {
  const double t0 = options_.trace ? options_.trace->nowUs() : 0;
  std::vector<int> params;
  int64_t total = 0;
  for (int p : plan_.layers(os.layer()).params())
    if (plan_.params(p).trainable() && !plan_.params(p).has_primary()) {
      params.push_back(p);
      total += host_.paramElements(p);
    }
  if (total == 0)
    return okStatus();
  reduceScratch_.resize(static_cast<size_t>(total));
  float *at = reduceScratch_.data();
  for (int p : params) {
    const int64_t n = host_.paramElements(p);
    std::memcpy(at, host_.grads() + plan_.params(p).grad_offset() / 4, sizeof(float) * n);
    at += n;
  }
  RP_RETURN_IF_ERROR(options_.ranks->sumInRankOrder(reduceScratch_.data(), total));
  at = reduceScratch_.data();
  bool finite = true;
  const float scale = squaresScale(step); // the rank sums are the final gradients
  for (int p : params) {
    const int64_t n = host_.paramElements(p);
    const size_t i = static_cast<size_t>(p);
    finite = copyCheckingFinite(host_.grads() + plan_.params(p).grad_offset() / 4, at, n, scale,
                                scale > 0 ? &ev.squares[i] : nullptr) &&
             finite;
    ev.squaresKnown[i] = scale > 0;
    at += n;
  }
  if (!finite)
    ev.sumOverflow[static_cast<size_t>(os.layer())] = 1;
  traceSpan(useComm_ ? commTrack_ : optimizerTrack_, t0,
            "s" + std::to_string(step) + " reduce " + plan_.layers(os.layer()).name());
  return okStatus();
}

Status Executor::commStep(int64_t step) {
  StepEvents &ev = events(step);
  RP_RETURN_IF_ERROR(gatherStepLosses(step, ev));
  // The finiteness check waits for the step's last gradient download: made just before the
  // first layer that reads it, so the layers before are reduced while the backward runs.
  bool checked = false;
  for (const pb::OptimizerStep &os : plan_.optimizer_steps()) {
    if (!checked && readsStage(os, lastGradStage_)) {
      RP_RETURN_IF_ERROR(checkStepFinite(ev));
      checked = true;
    }
    RP_RETURN_IF_ERROR(waitStepGradients(ev, os));
    sumSharedGradients(ev, os, 0); // the rank sum below makes the squares
    RP_RETURN_IF_ERROR(reduceLayerGradients(step, ev, os));
    backend_.signal(ev.gradsReduced[static_cast<size_t>(os.layer())]);
  }
  if (!checked)
    RP_RETURN_IF_ERROR(checkStepFinite(ev));
  return okStatus();
}

bool Executor::readsStage(const pb::OptimizerStep &os, int stage) {
  if (os.grads_stage() == stage)
    return true;
  for (int s : os.shared_grads_stages())
    if (s == stage)
      return true;
  return false;
}

Status Executor::checkStepFinite(StepEvents &ev) {
  float nonFinite = 0;
  for (int s = 0; s < numStages_; ++s) {
    if (plan_.stages(s).grad_bytes() <= 0)
      continue;
    const JobEvents &job = ev.jobs[static_cast<size_t>(s)];
    RP_RETURN_IF_ERROR(backend_.hostWait(job.gradsDownloaded));
    if (job.gradCheck.nonFinite)
      nonFinite = 1;
  }
  if (options_.ranks && options_.ranks->ranks() > 1) {
    std::vector<float> all(static_cast<size_t>(options_.ranks->ranks()));
    RP_RETURN_IF_ERROR(options_.ranks->allGather(&nonFinite, 1, all.data()));
    for (float f : all)
      if (f != 0)
        nonFinite = 1;
  }
  ev.nonFinite = nonFinite != 0;
  backend_.signal(ev.finiteChecked);
  return okStatus();
}

Status Executor::collectLayerGradients(int64_t step, StepEvents &ev,
                                       const pb::OptimizerStep &os) {
  if (useComm_) // the communication thread waited, summed and reduced
    return backend_.hostWait(ev.gradsReduced[static_cast<size_t>(os.layer())]);
  RP_RETURN_IF_ERROR(waitStepGradients(ev, os));
  sumSharedGradients(ev, os, options_.ranks ? 0.0f : squaresScale(step));
  if (options_.ranks)
    RP_RETURN_IF_ERROR(reduceLayerGradients(step, ev, os));
  return okStatus();
}

Status Executor::drain() {
  // Prefetches still deferred belong to steps an interrupt will never dispatch: their jobs
  // upload their own weights if they ever run.
  deferred_.clear();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] {
      return (optimizerDone_ >= nextStep_ && (!useComm_ || commDone_ >= nextStep_)) || stopping_;
    });
  }
  return backend_.finish();
}

StatusOr<std::vector<float>> Executor::evaluate() {
  StepEvents ev = makeStepEvents();
  for (int s = 0; s < numStages_; ++s) {
    if (plan_.stages(s).kind() == pb::BACKWARD)
      continue;
    dispatchJob(evalJobs_++, -1, s, Mode::Eval, ev, 0);
  }
  StatusOr<std::vector<float>> out = readLosses(ev, 0);
  RP_RETURN_IF_ERROR(backend_.finish());
  return out;
}

void Executor::hostLoop(std::deque<int64_t> &queue, Status (Executor::*work)(int64_t)) {
  for (;;) {
    int64_t step;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue.empty(); });
      if (stopping_)
        return;
      step = queue.front();
      queue.pop_front();
    }
    Status status = (this->*work)(step);
    if (!status.ok()) {
      backend_.fail(status);
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      cv_.notify_all();
      return;
    }
    if (&queue == &optimizerQueue_ || &queue == &commQueue_) {
      std::lock_guard<std::mutex> lock(mutex_);
      (&queue == &optimizerQueue_ ? optimizerDone_ : commDone_) = step + 1;
    }
    cv_.notify_all();
  }
}

Status Executor::applyAdamW(int64_t step, int layer, float gradScale, bool writeWeights) {
  if (!options_.hostArithmetic)
    return okStatus();
  const pb::AdamW &o = plan_.config().optimizer();
  AdamWConfig config{learningRate(options_.schedule, step), o.beta1(), o.beta2(),
                     o.eps(), o.weight_decay()};
  for (int p : plan_.layers(layer).params()) {
    const pb::Param &param = plan_.params(p);
    if (!param.trainable() || param.has_primary()) // a copy: its owner's step updates it
      continue;
    const int64_t at = param.state_offset() / 4;
    float *grad = host_.grads() + param.grad_offset() / 4;
    if (writeWeights)
      RP_RETURN_IF_ERROR(adamwStepWritingWeights(
          host_.master() + at, host_.moment1() + at, host_.moment2() + at, grad,
          host_.paramElements(p), config, step + 1, gradScale, host_.computeDType(),
          host_.weights() + param.weight_offset()));
    else
      adamwStep(host_.master() + at, host_.moment1() + at, host_.moment2() + at, grad,
                host_.paramElements(p), config, step + 1, gradScale);
  }
  return okStatus();
}

Status Executor::waitStepGradients(StepEvents &ev, const pb::OptimizerStep &os) {
  RP_RETURN_IF_ERROR(
      backend_.hostWait(ev.jobs[static_cast<size_t>(os.grads_stage())].gradsDownloaded));
  for (int s : os.shared_grads_stages())
    RP_RETURN_IF_ERROR(backend_.hostWait(ev.jobs[static_cast<size_t>(s)].gradsDownloaded));
  return okStatus();
}

void Executor::sumSharedGradients(StepEvents &ev, const pb::OptimizerStep &os,
                                  float squaresScale) {
  if (!options_.hostArithmetic)
    return;
  for (int p : plan_.layers(os.layer()).params()) {
    const std::vector<int> &copies = copiesOf_[static_cast<size_t>(p)];
    if (copies.empty())
      continue;
    float *sum = host_.grads() + plan_.params(p).grad_offset() / 4;
    bool finite = true;
    for (size_t k = 0; k < copies.size(); ++k) { // the rule rp-ref --train sums with too
      const bool last = k + 1 == copies.size() && squaresScale > 0;
      finite = addCheckingFinite(sum, host_.grads() + plan_.params(copies[k]).grad_offset() / 4,
                                 host_.paramElements(p), squaresScale,
                                 last ? &ev.squares[static_cast<size_t>(p)] : nullptr) &&
               finite;
    }
    ev.squaresKnown[static_cast<size_t>(p)] = squaresScale > 0;
    if (!finite)
      ev.sumOverflow[static_cast<size_t>(os.layer())] = 1;
  }
}

void Executor::traceSpan(int track, double start, const std::string &name) {
  if (options_.trace)
    options_.trace->complete(track, name, track == commTrack_ ? "comm" : "optimizer", start,
                             options_.trace->nowUs() - start);
}

Status Executor::waitLayerUploads(StepEvents &ev, const pb::OptimizerStep &os) {
  for (int u : os.upload_stages())
    RP_RETURN_IF_ERROR(backend_.hostWait(ev.jobs[static_cast<size_t>(u)].weightsReady));
  return okStatus();
}

Status Executor::writeLayerWeights(int64_t step, const pb::OptimizerStep &os, bool fused) {
  StepEvents &ev = events(step);
  // Async: W_step is the master after the previous step's AdamW of the layer (the optimizer
  // thread's). Sync: this thread ran it.
  if (async_ && step > options_.firstStep)
    RP_RETURN_IF_ERROR(
        backend_.hostWait(events(step - 1).gradsConsumed[static_cast<size_t>(os.layer())]));
  RP_RETURN_IF_ERROR(waitLayerUploads(ev, os));
  // The span is the copy alone: the waits above are idle time, not the writer's work.
  const double t0 = options_.trace ? options_.trace->nowUs() : 0;
  for (int p : plan_.layers(os.layer()).params()) {
    if (!options_.hostArithmetic || !plan_.params(p).trainable() || plan_.params(p).has_primary())
      continue;
    if (!fused)
      RP_RETURN_IF_ERROR(host_.writeComputeWeights(p));
    for (int c : copiesOf_[static_cast<size_t>(p)]) // the copies other stages upload
      RP_RETURN_IF_ERROR(host_.writeComputeWeights(c));
  }
  backend_.hostWork(HostTask::WriteWeights, step, os.layer());
  backend_.signal(ev.weightsWritten[static_cast<size_t>(os.layer())]);
  traceSpan(async_ ? writerTrack_ : optimizerTrack_, t0,
            "s" + std::to_string(step) + " copy " + plan_.layers(os.layer()).name());
  return okStatus();
}

Status Executor::writeStepWeights(int64_t step) {
  for (int i : writeOrder_)
    RP_RETURN_IF_ERROR(writeLayerWeights(step, plan_.optimizer_steps(i)));
  return okStatus();
}

bool Executor::needsGlobalNorm() const {
  return plan_.config().optimizer().grad_clip() > 0 || options_.lossScale.enabled;
}

std::optional<double> Executor::gradDivisor(int64_t step) {
  double divisor = static_cast<double>(globalMicroBatches_);
  if (options_.lossScale.enabled) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = outcomes_.find(step);
    if (it == outcomes_.end())
      return std::nullopt;
    divisor *= it->second.lossScale;
  }
  return divisor;
}

float Executor::squaresScale(int64_t step) {
  if (!options_.hostArithmetic || !needsGlobalNorm())
    return 0;
  const std::optional<double> divisor = gradDivisor(step);
  return divisor ? static_cast<float>(1.0 / *divisor) : 0.0f;
}

double Executor::paramSquares(StepEvents &ev, int param, float scale) {
  const size_t p = static_cast<size_t>(param);
  if (ev.squaresKnown[p])
    return ev.squares[p];
  // The download's squares are this gradient's when no host sum rewrote it (none did: the
  // shared and rank sums mark squaresKnown) and they were made at this scale.
  const RangeAt at = rangeOf_[p];
  if (at.stage >= 0) {
    const GradientCheck &check = ev.jobs[static_cast<size_t>(at.stage)].gradCheck;
    if (check.squaresScale == scale && static_cast<size_t>(at.index) < check.squares.size())
      return check.squares[static_cast<size_t>(at.index)];
  }
  return sumOfSquares(host_.grads() + plan_.params(param).grad_offset() / 4,
                      host_.paramElements(param), scale);
}

StatusOr<std::optional<float>> Executor::stepGradScale(int64_t step, StepEvents &ev) {
  if (ev.nonFinite) // a gradient download found inf or NaN: skip the step whole
    return std::optional<float>();
  const bool scaling = options_.lossScale.enabled;
  const std::optional<double> divisor = gradDivisor(step);
  if (!divisor)
    return internal("step " + std::to_string(step + 1) +
                    " was dispatched without its loss scale (call lossScale first)");
  float gradScale = static_cast<float>(1.0 / *divisor);
  const double clip = plan_.config().optimizer().grad_clip();
  if (!needsGlobalNorm())
    return std::optional<float>(gradScale);
  for (const pb::OptimizerStep &os : plan_.optimizer_steps())
    RP_RETURN_IF_ERROR(collectLayerGradients(step, ev, os));
  // In name order, in double. Each param's share was made by the pass that wrote its final
  // gradient (the download, a shared or rank sum) where that pass could; a host pass else.
  const double t0 = options_.trace ? options_.trace->nowUs() : 0; // after the waits above
  double sum = 0; // without host arithmetic: a zero norm (no clipping, no overflow)
  if (options_.hostArithmetic)
    for (int p : trainableByName_)
      sum += paramSquares(ev, p, gradScale);
  backend_.hostWork(HostTask::GradNorm, step, -1);
  traceSpan(optimizerTrack_, t0, "s" + std::to_string(step) + " norm");
  if (!std::isfinite(sum)) // a shared or rank sum overflowed: skip (and back the scale off)
    return std::optional<float>();
  if (clip <= 0)
    return std::optional<float>(gradScale);
  if (!scaling) {
    RP_ASSIGN_OR_RETURN(gradScale, clippedGradScale(sum, clip, globalMicroBatches_, step + 1));
    return std::optional<float>(gradScale);
  }
  return std::optional<float>(static_cast<float>(clipFactor(std::sqrt(sum), clip) / *divisor));
}

void Executor::recordOutcome(int64_t step, bool skipped) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outcomes_[step].skipped = skipped;
    if (options_.lossScale.enabled) {
      auto prev = scaleAfter_.find(step - 1);
      const LossScaleState before =
          prev != scaleAfter_.end() ? prev->second : options_.lossScaleStart;
      scaleAfter_[step] = nextLossScale(before, !skipped, options_.lossScale);
      // Older states are no longer read (lossScale reads step - 2 at most).
      scaleAfter_.erase(scaleAfter_.begin(), scaleAfter_.lower_bound(step - 4));
    }
    // Older outcomes are no longer read (the trainer reads each step's once, in order).
    outcomes_.erase(outcomes_.begin(), outcomes_.lower_bound(step - 4));
  }
  cv_.notify_all();
}

Status Executor::overflowError(int64_t step, int layer) const {
  return internal("step " + std::to_string(step + 1) + ": a sum of layer '" +
                  plan_.layers(layer).name() +
                  "''s gradients over its readers or ranks overflowed to inf after earlier "
                  "layers were updated, so the step cannot be skipped whole (a compile with "
                  "--grad-clip checks every sum before any update); try a lower --lr");
}

Status Executor::optimizerStep(int64_t step) {
  StepEvents &ev = events(step);
  // Before the first layer's gradients (the loss stage downloads first); with the
  // communication thread, that thread gathers.
  if (options_.ranks && !useComm_)
    RP_RETURN_IF_ERROR(gatherStepLosses(step, ev));
  // Whether any gradient of the step is inf or NaN, decided before any AdamW (every rank
  // alike): such a step is skipped whole, in every dtype.
  if (useComm_)
    RP_RETURN_IF_ERROR(backend_.hostWait(ev.finiteChecked));
  else
    RP_RETURN_IF_ERROR(checkStepFinite(ev));
  // A shared param's gradient is the sum of its readers' slots (and, with ranks, of every
  // rank's): with a global norm (stepGradScale) every sum is made before it; otherwise each
  // layer's step makes its own.
  RP_ASSIGN_OR_RETURN(const std::optional<float> gradScale, stepGradScale(step, ev));
  for (int i : adamwOrder_) {
    const pb::OptimizerStep &os = plan_.optimizer_steps(i);
    if (!needsGlobalNorm()) {
      RP_RETURN_IF_ERROR(collectLayerGradients(step, ev, os));
      if (gradScale && ev.sumOverflow[static_cast<size_t>(os.layer())])
        return overflowError(step, os.layer());
    }
    if (async_) // the weights writer has copied W_step into the compute weights
      RP_RETURN_IF_ERROR(backend_.hostWait(ev.weightsWritten[static_cast<size_t>(os.layer())]));
    else // sync: AdamW writes the compute weights step + 1 uploads, once step's have read them
      RP_RETURN_IF_ERROR(waitLayerUploads(ev, os));
    const double t0 = options_.trace ? options_.trace->nowUs() : 0;
    if (gradScale) { // a skipped step (loss scaling: an overflow) updates nothing
      RP_RETURN_IF_ERROR(applyAdamW(step, os.layer(), *gradScale, /*writeWeights=*/!async_));
      backend_.hostWork(HostTask::AdamW, step, os.layer());
    }
    backend_.signal(ev.gradsConsumed[static_cast<size_t>(os.layer())]);
    traceSpan(optimizerTrack_, t0,
              "s" + std::to_string(step) + (gradScale ? " adamw " : " skipped ") +
                  plan_.layers(os.layer()).name());
    if (!async_) // the copies of shared params (and every write of a skipped step)
      RP_RETURN_IF_ERROR(writeLayerWeights(step, os, /*fused=*/gradScale.has_value()));
  }
  recordOutcome(step, !gradScale);
  return okStatus();
}

StatusOr<double> Executor::lossScale(int64_t step) {
  if (!options_.lossScale.enabled)
    return 1.0;
  // Sync: the state after step - 1; async: after step - 2 (the file comment).
  const int64_t source = step - 1 - (async_ ? 1 : 0);
  std::unique_lock<std::mutex> lock(mutex_);
  LossScaleState state = options_.lossScaleStart;
  if (source >= options_.firstStep) {
    cv_.wait(lock, [&] { return scaleAfter_.count(source) || stopping_; });
    if (!scaleAfter_.count(source))
      return internal("the executor stopped before step " + std::to_string(source + 1) +
                      "'s optimizer step");
    state = scaleAfter_.at(source);
  }
  outcomes_[step].lossScale = state.scale;
  return state.scale;
}

StatusOr<StepOutcome> Executor::outcome(int64_t step) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return optimizerDone_ > step || stopping_; });
  if (optimizerDone_ <= step)
    return internal("the executor stopped before step " + std::to_string(step + 1) +
                    "'s optimizer step");
  auto it = outcomes_.find(step);
  return it != outcomes_.end() ? it->second : StepOutcome{};
}

LossScaleState Executor::lossScaleState() {
  std::lock_guard<std::mutex> lock(mutex_);
  return scaleAfter_.empty() ? options_.lossScaleStart : scaleAfter_.rbegin()->second;
}

} // namespace rp::runtime
