//===- CpuBackend.cpp - The executor's devices as host threads ------------===//

#include "runtime/backends/cpu/CpuBackend.h"

#include "kernels/cpu/Kernels.h"

#include "runtime/optim/AdamW.h"
#include "base/HostTensor.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

/// The CPU backend's events: complete once a queue reaches their record, or signalled.
QueueEvent &cpuEvent(const Event &e) { return static_cast<QueueEvent &>(*e); }

constexpr int64_t kArenaAlignment = 4096;

} // namespace

CpuBackend::CpuBackend(int devices, std::unique_ptr<HostKernelSet> kernels)
    : numDevices_(devices < 1 ? 1 : devices), kernels_(std::move(kernels)),
      tracks_(static_cast<size_t>(numDevices_ * kNumQueues), -1),
      queues_(numDevices_ * kNumQueues) {
  memory_.resize(static_cast<size_t>(numDevices_));
  threadsPerDevice_ = std::max(1, kernels::cpu::kernelThreads() / numDevices_);
  queues_.start([this](int index, QueueThreads::Task &task) { return runTask(index, task); });
}

CpuBackend::~CpuBackend() { queues_.stop(); }

Status checkCpuPlanDType(const pb::Plan &plan) {
  if (plan.config().compute_dtype() != pb::F32)
    return invalidArgument("the CPU backend runs fp32 plans; this plan computes in " +
                           std::string(dtypeName(*fromPlanDType(plan.config().compute_dtype()))) +
                           " (compile with --dtype fp32)");
  return okStatus();
}

bool CpuBackend::setKernelProfile(KernelProfile *profile) {
  if (kernels_)
    return false;
  profile_ = profile;
  return true;
}

Status CpuBackend::prepare(const pb::Plan &plan) {
  plan_ = &plan;
  functions_.clear();
  if (profile_)
    profiled_ = profiledInstructions(plan);
  if (kernels_) {
    RP_RETURN_IF_ERROR(kernels_->prepare(plan));
  } else {
    RP_RETURN_IF_ERROR(checkCpuPlanDType(plan));
    for (const pb::Function &f : plan.functions()) {
      std::vector<Instr> body;
      for (int i = 0; i < f.body_size(); ++i) {
        const pb::Instruction &inst = f.body(i);
        StatusOr<CpuKernel> kernel = CpuKernel::decode(inst);
        if (!kernel.ok())
          return Status(kernel.status().code(), "function '" + f.name() + "', instruction " +
                                                    std::to_string(i) + ": " +
                                                    kernel.status().message());
        body.push_back(Instr{std::move(kernel).value(),
                             {inst.operands().begin(), inst.operands().end()},
                             {inst.results().begin(), inst.results().end()}});
      }
      functions_.push_back(std::move(body));
    }
  }
  const pb::DeviceArena &a = plan.device_arena();
  workspaceOffset_ = a.constants() + 2 * a.slot() + 2 * a.activations();
  const int64_t bytes = static_cast<int64_t>(deviceArenaBytes(plan));
  const int64_t rounded = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  for (int d = 0; d < numDevices_; ++d) {
    void *p = rounded ? std::aligned_alloc(kArenaAlignment, static_cast<size_t>(rounded)) : nullptr;
    if (rounded && !p)
      return resourceExhausted("cannot allocate the device arena of " + std::to_string(bytes) +
                               " bytes for CPU device " + std::to_string(d));
    if (p)
      std::memset(p, 0, static_cast<size_t>(rounded));
    memory_[static_cast<size_t>(d)].bytes = {static_cast<uint8_t *>(p), std::free};
    if (kernels_)
      memory_[static_cast<size_t>(d)].scratch.assign(static_cast<size_t>(kernels_->scratchBytes()),
                                                     0);
    for (const pb::Constant &c : plan.constants())
      if (!c.data().empty())
        std::memcpy(memory(d) + c.offset(), c.data().data(), c.data().size());
  }
  if (trace_)
    for (int d = 0; d < numDevices_; ++d)
      for (int q = 0; q < kNumQueues; ++q)
        tracks_[static_cast<size_t>(d * kNumQueues + q)] =
            trace_->track("cpu" + std::to_string(d) + " " + queueName(static_cast<Queue>(q)));
  return okStatus();
}

void CpuBackend::enqueue(int device, Queue queue, QueueThreads::Task task) {
  queues_.enqueue(device * kNumQueues + static_cast<int>(queue), std::move(task));
}

Status CpuBackend::runTask(int index, QueueThreads::Task &task) {
  // Each queue thread's kernels get their share of the cores (set once per thread).
  thread_local int threads = 0;
  if (threads != threadsPerDevice_) {
    threads = threadsPerDevice_;
    kernels::cpu::setKernelThreads(threads);
  }
  const bool traced = trace_ && !task.label.empty();
  const double start = traced ? trace_->nowUs() : 0;
  Status status = task.run();
  if (traced)
    trace_->complete(tracks_[static_cast<size_t>(index)], task.label,
                     queueName(static_cast<Queue>(index % kNumQueues)), start,
                     trace_->nowUs() - start, copyArgs(task.bytes));
  return status;
}

void CpuBackend::copyToDevice(int device, Queue queue, const void *src, int64_t dst, int64_t bytes,
                              std::string label) {
  enqueue(device, queue, {[this, device, src, dst, bytes] {
                            std::memcpy(memory(device) + dst, src, static_cast<size_t>(bytes));
                            return okStatus();
                          },
                          std::move(label), bytes});
}

void CpuBackend::copyToHost(int device, Queue queue, int64_t src, void *dst, int64_t bytes,
                            std::string label) {
  enqueue(device, queue, {[this, device, src, dst, bytes] {
                            std::memcpy(dst, memory(device) + src, static_cast<size_t>(bytes));
                            return okStatus();
                          },
                          std::move(label), bytes});
}

void CpuBackend::downloadGradients(int device, int64_t src, void *dst, int64_t bytes,
                                   std::vector<GradientRange> ranges, GradientCheck *check,
                                   std::string label) {
  enqueue(device, Queue::Download,
          {[this, device, src, dst, ranges = std::move(ranges), check] {
             // Only the params' ranges: the host reads nothing else of the region.
             const uint8_t *from = memory(device) + src;
             const float scale = check->squaresScale;
             check->squares.assign(scale > 0 ? ranges.size() : 0, 0.0);
             bool finite = true;
             for (size_t i = 0; i < ranges.size(); ++i) {
               const GradientRange &r = ranges[i];
               finite &= copyCheckingFinite(
                   reinterpret_cast<float *>(static_cast<uint8_t *>(dst) + r.offset),
                   reinterpret_cast<const float *>(from + r.offset), r.elements, scale,
                   scale > 0 ? &check->squares[i] : nullptr);
             }
             check->nonFinite = finite ? 0 : 1;
             return okStatus();
           },
           std::move(label), bytes});
}

void CpuBackend::call(int device, CallFrame frame, std::string label) {
  enqueue(device, Queue::Compute,
          {[this, device, frame = std::move(frame)] { return runCall(device, frame); },
           std::move(label)});
}

Status CpuBackend::runCall(int device, const CallFrame &frame) {
  uint8_t *base = memory(device);
  auto address = [&](const pb::BufferRef &ref) -> uint8_t * {
    const int64_t offset = bufferOffset(*plan_, frame, workspaceOffset_, ref);
    return offset < 0 ? nullptr : base + offset;
  };
  if (kernels_) {
    Status s = kernels_->run(frame.function, address,
                             memory_[static_cast<size_t>(device)].scratch.data());
    if (!s.ok())
      return Status(s.code(), "function '" + plan_->functions(frame.function).name() + "', " +
                                  s.message());
    return okStatus();
  }
  auto view = [&](const pb::BufferRef &ref) {
    std::vector<int64_t> shape(ref.type().shape().begin(), ref.type().shape().end());
    return HostTensor::view(*fromPlanDType(ref.type().dtype()), std::move(shape), address(ref));
  };
  const std::vector<Instr> &body = functions_[static_cast<size_t>(frame.function)];
  std::vector<HostTensor> operands, results;
  std::vector<const HostTensor *> in;
  std::vector<HostTensor *> out;
  for (size_t i = 0; i < body.size(); ++i) {
    operands.clear();
    results.clear();
    in.clear();
    out.clear();
    for (const pb::BufferRef &r : body[i].operands)
      operands.push_back(view(r));
    for (const pb::BufferRef &r : body[i].results)
      results.push_back(view(r));
    for (const HostTensor &t : operands)
      in.push_back(&t);
    for (HostTensor &t : results)
      out.push_back(&t);
    const auto t0 =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status s = body[i].kernel.run(in, out);
    if (profile_)
      profile_->add(profiled_[static_cast<size_t>(frame.function)][i],
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!s.ok())
      return Status(s.code(), "function '" + plan_->functions(frame.function).name() +
                                  "', instruction " + std::to_string(i) + ": " + s.message());
  }
  return okStatus();
}

void CpuBackend::accumulate(int device, int64_t dst, int64_t src, int64_t elements, DType dtype,
                            bool first, std::string label) {
  enqueue(device, Queue::Compute,
          {[this, device, dst, src, elements, dtype, first]() -> Status {
             auto *acc = reinterpret_cast<float *>(memory(device) + dst);
             const uint8_t *g = memory(device) + src;
             if (kernels_)
               return kernels_->accumulate(acc, g, elements, dtype, first);
             if (dtype != DType::F32)
               return unimplemented("the CPU backend accumulates fp32 gradients only");
             accumulateGradient(acc, reinterpret_cast<const float *>(g), elements, first);
             return okStatus();
           },
           std::move(label)});
}

Event CpuBackend::newEvent() { return std::make_shared<QueueEvent>(); }

void CpuBackend::record(int device, Queue queue, const Event &event) {
  enqueue(device, queue,
          {[this, event] {
             queues_.markRecorded(cpuEvent(event));
             return okStatus();
           },
           ""});
}

void CpuBackend::wait(int device, Queue queue, const Event &event) {
  enqueue(device, queue,
          {[this, event] {
             (void)queues_.waitEvent(cpuEvent(event));
             return okStatus();
           },
           ""});
}

void CpuBackend::signal(const Event &event) { queues_.markSignalled(cpuEvent(event)); }

Status CpuBackend::hostWait(const Event &event) {
  return queues_.waitEvent(cpuEvent(event)).status;
}

void CpuBackend::fail(Status status) { queues_.fail(std::move(status)); }

Status CpuBackend::finish() { return queues_.waitIdle(); }

} // namespace rp::runtime
