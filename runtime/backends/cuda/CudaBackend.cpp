//===- CudaBackend.cpp - The executor's devices as CUDA GPUs --------------===//

#include "runtime/backends/cuda/CudaBackend.h"

#include "base/SystemMemory.h"
#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/Gemm.h"
#include "kernels/cuda/GradientNorm.h"
#include "base/FormatBytes.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <sys/resource.h>
#include <cstdio>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

/// An event: recorded on a stream (a CUDA event, created on the recording GPU at the first
/// record; `recorded` once submitted) or signalled from the host. Flags guarded by the
/// backend's QueueThreads.
struct CudaEvent final : QueueEvent {
  cudaEvent_t event = nullptr;
  ~CudaEvent() override {
    if (event)
      cudaEventDestroy(event);
  }
};

CudaEvent &cudaEventOf(const Event &e) { return static_cast<CudaEvent &>(*e); }

/// Device allocations are rounded to this (cudaMalloc aligns to 256 bytes; the arena's
/// offsets are aligned by the plan).
constexpr int64_t kAlign = 256;
constexpr int64_t roundUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// With --cuda-graphs, functions of at least this many instructions run as graphs.
constexpr size_t kMinGraphInstructions = 2;

} // namespace

StatusOr<CudaDevices> queryCudaDevices() {
  CudaDevices d;
  const cudaError_t e = cudaGetDeviceCount(&d.count);
  if (e != cudaSuccess || d.count == 0)
    return unavailable("no CUDA device: " +
                       (e != cudaSuccess ? cudaErrorText(e) : std::string("0 devices")));
  for (int g = 0; g < d.count; ++g) {
    cudaDeviceProp prop{};
    RP_RETURN_IF_ERROR(cudaStatus(cudaGetDeviceProperties(&prop, g),
                                  "cudaGetDeviceProperties(" + std::to_string(g) + ")"));
    d.names.emplace_back(prop.name);
    d.memoryBytes.push_back(static_cast<int64_t>(prop.totalGlobalMem));
  }
  return d;
}

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::create(int workers,
                                                           CudaBackendOptions options) {
  RP_ASSIGN_OR_RETURN(CudaDevices devices, queryCudaDevices());
  std::unique_ptr<CudaBackend> backend(new CudaBackend(workers < 1 ? 1 : workers, devices.count));
  backend->options_ = options;
  return backend;
}

CudaBackend::CudaBackend(int workers, int gpus)
    : numWorkers_(workers), numGpus_(gpus),
      streams_(static_cast<size_t>(numWorkers_ * kNumQueues), nullptr),
      tracks_(static_cast<size_t>(numWorkers_ * kNumQueues), -1),
      queues_(numWorkers_ * kNumQueues) {
  workers_.resize(static_cast<size_t>(numWorkers_));
  for (int w = 0; w < numWorkers_; ++w)
    workers_[static_cast<size_t>(w)].gpu = gpuOf(w);
}

CudaBackend::~CudaBackend() {
  queues_.stop();
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i]) {
      cudaSetDevice(workers_[i / kNumQueues].gpu);
      cudaStreamSynchronize(streams_[i]);
      cudaStreamDestroy(streams_[i]);
    }
  }
  for (const Span &s : spans_) {
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.end);
  }
  for (size_t g = 0; g < timeBase_.size(); ++g)
    if (timeBase_[g])
      cudaEventDestroy(timeBase_[g]);
  for (Worker &w : workers_) {
    cudaSetDevice(w.gpu);
    for (cudaEvent_t e : w.profileEvents)
      cudaEventDestroy(e);
    w.graphs.reset();
    w.gemm.reset();
    w.sdpa.reset();
    if (w.arena)
      cudaFree(w.arena);
    if (w.scratch)
      cudaFree(w.scratch);
    if (w.nonFiniteFlag)
      cudaFree(w.nonFiniteFlag);
    if (w.squaresLanes)
      cudaFree(w.squaresLanes);
  }
  if (registered_)
    cudaHostUnregister(registered_);
}

size_t CudaBackend::capturedGraphs() const {
  size_t n = 0;
  for (const Worker &w : workers_)
    n += w.graphs ? w.graphs->graphs() : 0;
  return n;
}

int64_t CudaBackend::graphReplays() const {
  int64_t n = 0;
  for (const Worker &w : workers_)
    n += w.graphs ? w.graphs->replays() : 0;
  return n;
}

int64_t CudaBackend::deviceBytes(int w) const {
  const Worker &k = workers_[static_cast<size_t>(w)];
  return k.arenaBytes + k.scratchBytes;
}

Status CudaBackend::prepare(const pb::Plan &plan) {
  plan_ = &plan;
  RP_ASSIGN_OR_RETURN(CudaPlanKernels decoded, decodeCudaPlan(plan));
  functions_ = std::move(decoded.functions);
  if (profile_)
    profiled_ = profiledInstructions(plan);
  const int64_t scratch = decoded.scratchBytes;
  const pb::DeviceArena &a = plan.device_arena();
  workspaceOffset_ = a.constants() + 2 * a.slot() + 2 * a.activations();
  const int64_t arenaBytes = static_cast<int64_t>(deviceArenaBytes(plan));
  // The most lane sums one gradient download makes (a stage's accumulated params).
  int64_t lanes = 0;
  for (const pb::Stage &st : plan.stages()) {
    int64_t stageLanes = 0;
    for (const pb::Step &step : st.body())
      if (step.has_accumulate())
        stageLanes += kernels::cuda::squaresLaneCount(static_cast<int64_t>(
            elementCount(plan.params(step.accumulate().param()).type())));
    lanes = std::max(lanes, stageLanes);
  }

  int lowest = 0, highest = 0; // numerically: greatest = lowest priority
  for (int w = 0; w < numWorkers_; ++w) {
    Worker &k = workers_[static_cast<size_t>(w)];
    const std::string who =
        "CUDA worker " + std::to_string(w) + " (GPU " + std::to_string(k.gpu) + ")";
    RP_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(k.gpu), who + ": cudaSetDevice"));
    RP_RETURN_IF_ERROR(cudaStatus(cudaDeviceGetStreamPriorityRange(&lowest, &highest),
                                  who + ": cudaDeviceGetStreamPriorityRange"));
    size_t freeBytes = 0, totalBytes = 0;
    RP_RETURN_IF_ERROR(
        cudaStatus(cudaMemGetInfo(&freeBytes, &totalBytes), who + ": cudaMemGetInfo"));
    const int64_t want = roundUp(arenaBytes) + roundUp(scratch);
    if (want > static_cast<int64_t>(freeBytes))
      return resourceExhausted(who + ": the device arena (" + formatBytes(arenaBytes) +
                               ") and kernel scratch (" + formatBytes(scratch) + ") need " +
                               formatBytes(want) + " but the GPU has " +
                               formatBytes(static_cast<int64_t>(freeBytes)) + " free of " +
                               formatBytes(static_cast<int64_t>(totalBytes)));
    void *p = nullptr;
    if (arenaBytes > 0) {
      const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(roundUp(arenaBytes)));
      if (e != cudaSuccess)
        return resourceExhausted(who + ": cannot allocate the device arena of " +
                                 formatBytes(arenaBytes) + ": " + cudaErrorText(e));
      k.arena = static_cast<uint8_t *>(p);
      RP_RETURN_IF_ERROR(cudaStatus(cudaMemset(k.arena, 0, static_cast<size_t>(arenaBytes)),
                                    who + ": cudaMemset"));
    }
    k.arenaBytes = arenaBytes;
    if (scratch > 0) {
      const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(roundUp(scratch)));
      if (e != cudaSuccess)
        return resourceExhausted(who + ": cannot allocate " + formatBytes(scratch) +
                                 " of kernel scratch: " + cudaErrorText(e));
      k.scratch = static_cast<uint8_t *>(p);
    }
    k.scratchBytes = scratch;
    RP_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&p, sizeof(uint32_t)),
                                  who + ": cudaMalloc (the gradient check's flag)"));
    k.nonFiniteFlag = static_cast<uint32_t *>(p);
    if (lanes > 0) {
      RP_RETURN_IF_ERROR(
          cudaStatus(cudaMalloc(&p, static_cast<size_t>(lanes) * sizeof(double)),
                     who + ": cudaMalloc (the gradient norm's lane sums)"));
      k.squaresLanes = static_cast<double *>(p);
      k.hostLanes.resize(static_cast<size_t>(lanes));
    }
    for (const pb::Constant &c : plan.constants())
      if (!c.data().empty())
        RP_RETURN_IF_ERROR(
            cudaStatus(cudaMemcpy(k.arena + c.offset(), c.data().data(), c.data().size(),
                                  cudaMemcpyHostToDevice),
                       who + ": uploading the constant at offset " + std::to_string(c.offset())));
    RP_ASSIGN_OR_RETURN(k.gemm, kernels::cuda::GemmRunner::create());
    k.gemm->setFp16Accumulate(options_.fp16Accumulate);
    RP_RETURN_IF_ERROR(createSdpaRunner(k, w == 0));
    if (options_.graphs)
      k.graphs = std::make_unique<CallGraphCache>(graphDriver_, kMinGraphInstructions);
    // Priorities: activation uploads (the critical path) first, weight uploads last.
    const int priority[kNumQueues] = {/*Compute*/ std::min(highest + 1, lowest),
                                      /*ActivationUpload*/ highest,
                                      /*WeightUpload*/ lowest,
                                      /*Download*/ std::min(highest + 1, lowest)};
    for (int q = 0; q < kNumQueues; ++q) {
      cudaStream_t &stream = streams_[static_cast<size_t>(w * kNumQueues + q)];
      RP_RETURN_IF_ERROR(
          cudaStatus(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority[q]),
                     who + ": cudaStreamCreateWithPriority"));
    }
  }
  if (trace_)
    RP_RETURN_IF_ERROR(prepareTrace());
  for (int g = 0; g < numGpus_ && g < numWorkers_; ++g) {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaSetDevice(g) == cudaSuccess && cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
      usedBytes_ = std::max(usedBytes_, static_cast<int64_t>(totalBytes - freeBytes));
  }
  queues_.start([this](int index, QueueThreads::Task &task) { return submitTask(index, task); },
                [this](int index) {
                  const int gpu = workers_[static_cast<size_t>(index / kNumQueues)].gpu;
                  return cudaStatus(cudaSetDevice(gpu),
                                    "cudaSetDevice(" + std::to_string(gpu) + ")");
                });
  return okStatus();
}

Status CudaBackend::createSdpaRunner(Worker &k, bool first) {
  if (options_.attentionKernel == kernels::cuda::AttentionKernel::Flash)
    return okStatus();
  std::string why;
  RP_ASSIGN_OR_RETURN(k.sdpa,
                      kernels::cuda::CudnnSdpaRunner::create(options_.attentionKernel, &why));
  if (!k.sdpa) {
    if (first)
      std::fprintf(stderr, "cudnn-sdpa: not used (%s); attention runs on rpc's kernels\n",
                   why.c_str());
    return okStatus();
  }
  // The cuDNN graphs of every attention instruction, built now rather than in the loop.
  const CudaContext ctx{nullptr, k.gemm.get(), k.scratch, k.sdpa.get()};
  for (const std::vector<CudaInstr> &body : functions_)
    for (const CudaInstr &i : body)
      RP_RETURN_IF_ERROR(i.kernel.prepare(ctx));
  return okStatus();
}

Status CudaBackend::prepareTrace() {
  timeBase_.assign(static_cast<size_t>(numGpus_), nullptr);
  timeBaseUs_.assign(static_cast<size_t>(numGpus_), 0);
  for (int g = 0; g < numGpus_ && g < numWorkers_; ++g) {
    RP_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(g), "cudaSetDevice"));
    RP_RETURN_IF_ERROR(
        cudaStatus(cudaEventCreate(&timeBase_[static_cast<size_t>(g)]), "cudaEventCreate"));
    RP_RETURN_IF_ERROR(
        cudaStatus(cudaEventRecord(timeBase_[static_cast<size_t>(g)]), "cudaEventRecord"));
    RP_RETURN_IF_ERROR(cudaStatus(cudaEventSynchronize(timeBase_[static_cast<size_t>(g)]),
                                  "cudaEventSynchronize"));
    timeBaseUs_[static_cast<size_t>(g)] = trace_->nowUs();
  }
  for (int w = 0; w < numWorkers_; ++w)
    for (int q = 0; q < kNumQueues; ++q)
      tracks_[static_cast<size_t>(w * kNumQueues + q)] =
          trace_->track("cuda" + std::to_string(w) + " " + queueName(static_cast<Queue>(q)));
  return okStatus();
}

Status CudaBackend::registerHostMemory(void *base, int64_t bytes) {
  if (!base || bytes <= 0 || registered_)
    return okStatus();
  const cudaError_t e =
      cudaHostRegister(base, static_cast<size_t>(bytes), cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    struct rlimit limit {};
    const bool known = ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0;
    const std::string lockLimit =
        !known ? "unknown"
        : limit.rlim_cur == RLIM_INFINITY ? "unlimited"
                                          : formatBytes(static_cast<uint64_t>(limit.rlim_cur));
    return resourceExhausted(
        "cannot page-lock the host arena with cudaHostRegister: it needs " + formatBytes(bytes) +
        "; this machine has " + formatBytes(physicalMemoryBytes()) +
        " of memory and a locked-memory limit (ulimit -l) of " + lockLimit + ": " +
        cudaErrorText(e) + " (raise the limit, or free memory)");
  }
  registered_ = base;
  return okStatus();
}

void CudaBackend::enqueue(int device, Queue queue, Submit submit, std::string label,
                          int64_t bytes) {
  const int index = device * kNumQueues + static_cast<int>(queue);
  queues_.enqueue(index, {[this, index, submit = std::move(submit)] {
                            return submit(streams_[static_cast<size_t>(index)]);
                          },
                          std::move(label), bytes});
}

Status CudaBackend::submitTask(int index, QueueThreads::Task &task) {
  const cudaStream_t stream = streams_[static_cast<size_t>(index)];
  const int gpu = workers_[static_cast<size_t>(index / kNumQueues)].gpu;
  const bool timed = trace_ && !task.label.empty();
  Status status;
  cudaEvent_t start = nullptr, end = nullptr;
  if (timed &&
      (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess ||
       cudaEventRecord(start, stream) != cudaSuccess))
    status = internal("cannot create the trace events of '" + task.label + "'");
  if (status.ok())
    status = task.run();
  if (timed && status.ok()) {
    const cudaError_t e = cudaEventRecord(end, stream);
    std::lock_guard<std::mutex> spanLock(spansMutex_);
    if (e == cudaSuccess)
      spans_.push_back(Span{tracks_[static_cast<size_t>(index)], task.label,
                            queueName(static_cast<Queue>(index % kNumQueues)), start, end, gpu,
                            task.bytes});
  } else if (timed) {
    if (start)
      cudaEventDestroy(start);
    if (end)
      cudaEventDestroy(end);
  }
  if (!status.ok()) // name the worker and what it ran ("<stage> s<step> mb<m> <what>")
    status = Status(status.code(),
                    "CUDA worker " + std::to_string(index / kNumQueues) + " (GPU " +
                        std::to_string(gpu) + ")" +
                        (task.label.empty() ? std::string() : ", " + task.label) + ": " +
                        status.message());
  return status;
}

void CudaBackend::copyToDevice(int device, Queue queue, const void *src, int64_t dst, int64_t bytes,
                               std::string label) {
  enqueue(
      device, queue,
      [this, device, src, dst, bytes](cudaStream_t stream) {
        return cudaStatus(cudaMemcpyAsync(workers_[static_cast<size_t>(device)].arena + dst, src,
                                          static_cast<size_t>(bytes), cudaMemcpyHostToDevice,
                                          stream),
                          "cudaMemcpyAsync host to device");
      },
      std::move(label), bytes);
}

void CudaBackend::copyToHost(int device, Queue queue, int64_t src, void *dst, int64_t bytes,
                             std::string label) {
  enqueue(
      device, queue,
      [this, device, src, dst, bytes](cudaStream_t stream) {
        return cudaStatus(cudaMemcpyAsync(dst, workers_[static_cast<size_t>(device)].arena + src,
                                          static_cast<size_t>(bytes), cudaMemcpyDeviceToHost,
                                          stream),
                          "cudaMemcpyAsync device to host");
      },
      std::move(label), bytes);
}

void CudaBackend::downloadGradients(int device, int64_t src, void *dst, int64_t bytes,
                                    std::vector<GradientRange> ranges, GradientCheck *check,
                                    std::string label) {
  enqueue(
      device, Queue::Download,
      [this, device, src, dst, bytes, ranges = std::move(ranges), check](cudaStream_t stream) {
        Worker &k = workers_[static_cast<size_t>(device)];
        const uint8_t *from = k.arena + src;
        const float scale = check->squaresScale;
        check->squares.clear();
        // The flag and the norm's lane sums first: the copies into pageable memory return
        // once the kernels have run (they are short); the bulk copy then runs asynchronously.
        RP_RETURN_IF_ERROR(cudaStatus(cudaMemsetAsync(k.nonFiniteFlag, 0, sizeof(uint32_t), stream),
                                      "cudaMemsetAsync (gradient check)"));
        int64_t lanes = 0;
        for (const GradientRange &r : ranges) {
          const float *x = reinterpret_cast<const float *>(from + r.offset);
          RP_RETURN_IF_ERROR(cudaStatus(
              kernels::cuda::launchFlagNonFinite(x, r.elements, k.nonFiniteFlag, stream),
              "gradient check"));
          if (scale > 0) {
            RP_RETURN_IF_ERROR(cudaStatus(kernels::cuda::launchSquaresLanes(
                                              x, r.elements, scale, k.squaresLanes + lanes, stream),
                                          "gradient norm"));
            lanes += kernels::cuda::squaresLaneCount(r.elements);
          }
        }
        if (lanes > 0)
          RP_RETURN_IF_ERROR(cudaStatus(
              cudaMemcpyAsync(k.hostLanes.data(), k.squaresLanes,
                              static_cast<size_t>(lanes) * sizeof(double), cudaMemcpyDeviceToHost,
                              stream),
              "cudaMemcpyAsync (gradient norm lane sums)"));
        RP_RETURN_IF_ERROR(cudaStatus(cudaMemcpyAsync(&check->nonFinite, k.nonFiniteFlag,
                                                      sizeof(uint32_t),
                                                      cudaMemcpyDeviceToHost, stream),
                                      "cudaMemcpyAsync (gradient check flag)"));
        if (scale > 0) { // each range's sum from its lanes, in the norm's order
          const double *at = k.hostLanes.data();
          for (const GradientRange &r : ranges) {
            check->squares.push_back(kernels::cuda::sumSquaresLanes(at, r.elements));
            at += kernels::cuda::squaresLaneCount(r.elements);
          }
        }
        return cudaStatus(cudaMemcpyAsync(dst, from, static_cast<size_t>(bytes),
                                          cudaMemcpyDeviceToHost, stream),
                          "cudaMemcpyAsync device to host");
      },
      std::move(label), bytes);
}

void CudaBackend::call(int device, CallFrame frame, std::string label) {
  enqueue(
      device, Queue::Compute,
      [this, device, frame = std::move(frame)](cudaStream_t stream) {
        return runCall(device, frame, stream);
      },
      std::move(label));
}

Status CudaBackend::runCall(int device, const CallFrame &frame, cudaStream_t stream) {
  if (profile_)
    return runProfiledCall(device, frame, stream);
  Worker &k = workers_[static_cast<size_t>(device)];
  uint8_t *base = k.arena;
  auto address = [&](const pb::BufferRef &ref) -> uint8_t * {
    const int64_t offset = bufferOffset(*plan_, frame, workspaceOffset_, ref);
    return offset < 0 ? nullptr : base + offset;
  };
  const CudaContext ctx{stream, k.gemm.get(), k.scratch, k.sdpa.get()};
  const std::vector<CudaInstr> &body = functions_[static_cast<size_t>(frame.function)];
  auto launchAll = [&] {
    return forEachInstruction(
        body, address,
        [&ctx](const CudaKernel &kernel, const std::vector<const void *> &in,
               const std::vector<void *> &out) { return kernel.launch(in, out, ctx); });
  };
  Status s = k.graphs ? k.graphs->run(CallGraphKey::of(frame), body.size(), stream, launchAll)
                      : launchAll();
  if (!s.ok())
    return Status(s.code(),
                  "function '" + plan_->functions(frame.function).name() + "', " + s.message());
  return okStatus();
}

Status CudaBackend::runProfiledCall(int device, const CallFrame &frame, cudaStream_t stream) {
  Worker &k = workers_[static_cast<size_t>(device)];
  const std::vector<CudaInstr> &body = functions_[static_cast<size_t>(frame.function)];
  std::vector<cudaEvent_t> &ev = k.profileEvents; // only this worker's compute feeder runs here
  while (ev.size() < body.size() + 1) {
    cudaEvent_t e = nullptr;
    RP_RETURN_IF_ERROR(cudaStatus(cudaEventCreate(&e), "cudaEventCreate (kernel profile)"));
    ev.push_back(e);
  }
  uint8_t *base = k.arena;
  auto address = [&](const pb::BufferRef &ref) -> uint8_t * {
    const int64_t offset = bufferOffset(*plan_, frame, workspaceOffset_, ref);
    return offset < 0 ? nullptr : base + offset;
  };
  const CudaContext ctx{stream, k.gemm.get(), k.scratch, k.sdpa.get()};
  RP_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(ev[0], stream), "cudaEventRecord"));
  size_t launched = 0;
  Status s = forEachInstruction(
      body, address,
      [&](const CudaKernel &kernel, const std::vector<const void *> &in,
          const std::vector<void *> &out) -> Status {
        RP_RETURN_IF_ERROR(kernel.launch(in, out, ctx));
        return cudaStatus(cudaEventRecord(ev[++launched], stream), "cudaEventRecord");
      });
  if (s.ok())
    s = cudaStatus(cudaEventSynchronize(ev[launched]), "cudaEventSynchronize (kernel profile)");
  if (!s.ok())
    return Status(s.code(),
                  "function '" + plan_->functions(frame.function).name() + "', " + s.message());
  const std::vector<ProfiledInstruction> &names = profiled_[static_cast<size_t>(frame.function)];
  for (size_t i = 0; i < launched; ++i) {
    float ms = 0;
    RP_RETURN_IF_ERROR(cudaStatus(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]),
                                  "cudaEventElapsedTime (kernel profile)"));
    profile_->add(names[i], ms / 1e3);
  }
  return okStatus();
}

void CudaBackend::accumulate(int device, int64_t dst, int64_t src, int64_t elements, DType dtype,
                             bool first, std::string label) {
  enqueue(
      device, Queue::Compute,
      [this, device, dst, src, elements, dtype, first](cudaStream_t stream) {
        uint8_t *arena = workers_[static_cast<size_t>(device)].arena;
        return cudaStatus(kernels::cuda::launchAccumulate(dtype, arena + src,
                                                          reinterpret_cast<float *>(arena + dst),
                                                          elements, first, stream),
                          std::string("gradient accumulation (") + dtypeName(dtype) + ")");
      },
      std::move(label));
}

Event CudaBackend::newEvent() { return std::make_shared<CudaEvent>(); }

void CudaBackend::record(int device, Queue queue, const Event &event) {
  enqueue(
      device, queue,
      [this, event](cudaStream_t stream) -> Status {
        CudaEvent &e = cudaEventOf(event);
        if (!e.event)
          RP_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&e.event, cudaEventDisableTiming),
                                        "cudaEventCreateWithFlags"));
        RP_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(e.event, stream), "cudaEventRecord"));
        queues_.markRecorded(e);
        return okStatus();
      },
      "");
}

void CudaBackend::wait(int device, Queue queue, const Event &event) {
  enqueue(
      device, queue,
      [this, event](cudaStream_t stream) -> Status {
        CudaEvent &e = cudaEventOf(event);
        if (!queues_.waitEvent(e).recorded)
          return okStatus(); // host-signalled, or failed (skipped)
        return cudaStatus(cudaStreamWaitEvent(stream, e.event, 0), "cudaStreamWaitEvent");
      },
      "");
}

void CudaBackend::signal(const Event &event) { queues_.markSignalled(cudaEventOf(event)); }

Status CudaBackend::hostWait(const Event &event) {
  CudaEvent &e = cudaEventOf(event);
  const QueueThreads::EventWait waited = queues_.waitEvent(e);
  if (waited.failed)
    return waited.status;
  if (!waited.recorded)
    return okStatus();
  const cudaError_t err = cudaEventSynchronize(e.event);
  if (err != cudaSuccess) {
    queues_.fail(cudaStatus(err, "a GPU command failed"));
    return queues_.status();
  }
  return queues_.status();
}

void CudaBackend::fail(Status status) { queues_.fail(std::move(status)); }

Status CudaBackend::resolveSpans() {
  std::vector<Span> spans;
  {
    std::lock_guard<std::mutex> lock(spansMutex_);
    spans.swap(spans_);
  }
  for (const Span &s : spans) {
    float startMs = 0, endMs = 0;
    const cudaEvent_t base = timeBase_[static_cast<size_t>(s.gpu)];
    if (cudaEventElapsedTime(&startMs, base, s.start) == cudaSuccess &&
        cudaEventElapsedTime(&endMs, base, s.end) == cudaSuccess)
      trace_->complete(s.track, s.name, s.category,
                       timeBaseUs_[static_cast<size_t>(s.gpu)] + 1e3 * startMs,
                       1e3 * static_cast<double>(endMs - startMs), copyArgs(s.bytes));
    cudaEventDestroy(s.start);
    cudaEventDestroy(s.end);
  }
  return okStatus();
}

Status CudaBackend::finish() {
  bool failed = false;
  if (Status idle = queues_.waitIdle(&failed); failed)
    return idle;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const int gpu = workers_[i / kNumQueues].gpu;
    cudaError_t e = cudaSetDevice(gpu);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(streams_[i]);
    if (e != cudaSuccess) {
      fail(cudaStatus(e, "GPU " + std::to_string(gpu) + " " +
                             queueName(static_cast<Queue>(i % kNumQueues))));
      return queues_.status();
    }
  }
  if (trace_)
    RP_RETURN_IF_ERROR(resolveSpans());
  return okStatus();
}

} // namespace rp::runtime
