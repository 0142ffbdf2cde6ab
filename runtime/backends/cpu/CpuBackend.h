//===- CpuBackend.h - The executor's devices as host threads ----*- C++ -*-===//
//
// The CPU backend (runtime/exec/Backend.h): each of the N devices is a block of host memory
// laid out as the plan's device arena, and each of its four queues is a thread running its
// commands in order (runtime/exec/QueueThreads.h). Copies are memcpy, kernels are the CPU
// reference kernels (kernels/cpu, through runtime/backends/cpu/KernelDispatch.h) run on views
// into the arena, and events are flags under one mutex. It runs fp32 plans (prepare() rejects others), and
// its results do not depend on N or on thread timing: every value is computed by the same
// kernels from the same inputs, ordered by events (the executor's contract).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CPU_CPUBACKEND_H
#define RP_RUNTIME_BACKENDS_CPU_CPUBACKEND_H

#include "runtime/backends/cpu/KernelDispatch.h"
#include "runtime/exec/Backend.h"
#include "runtime/exec/InstructionProfile.h"
#include "runtime/exec/QueueThreads.h"

#include <functional>
#include <memory>
#include <vector>

namespace rp::runtime {

/// Kernels the CPU backend can run plan functions with instead of the CPU reference kernels:
/// the CUDA backend's host replay (runtime/backends/cuda/CudaHostKernels.h, `rp-run --kernels
/// cuda-host`), which runs the GPU kernels' plans and bodies on host memory.
class HostKernelSet {
public:
  virtual ~HostKernelSet() = default;
  /// "cuda-host".
  virtual std::string name() const = 0;
  /// Decodes every function of `plan` (validated). Errors: an instruction the kernels do not
  /// take, as the decoder reports it.
  virtual Status prepare(const rp::plan::Plan &plan) = 0;
  /// Scratch bytes each device needs while a function runs.
  virtual int64_t scratchBytes() const = 0;
  /// Runs function `function`, its buffers at `address(ref)`, with `scratch`.
  virtual Status run(int function,
                     const std::function<uint8_t *(const rp::plan::BufferRef &)> &address,
                     void *scratch) const = 0;
  /// The gradient accumulation (Backend::accumulate) on host memory.
  virtual Status accumulate(float *acc, const void *gradient, int64_t elements, DType dtype,
                            bool first) const = 0;
};

/// The CPU reference kernels run fp32 plans only. Errors: InvalidArgument "the CPU backend
/// runs fp32 plans; this plan computes in bf16 (compile with --dtype fp32)".
Status checkCpuPlanDType(const rp::plan::Plan &plan);

class CpuBackend final : public Backend {
public:
  /// A pool of `devices` (>= 1) host-memory devices running the CPU reference kernels, or
  /// `kernels` when given.
  explicit CpuBackend(int devices, std::unique_ptr<HostKernelSet> kernels = nullptr);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  int numDevices() const override { return numDevices_; }
  int hostOptimizerThreads() const override { return 1; }
  Status prepare(const rp::plan::Plan &plan) override;
  void copyToDevice(int device, Queue queue, const void *src, int64_t dst, int64_t bytes,
                    std::string label) override;
  void copyToHost(int device, Queue queue, int64_t src, void *dst, int64_t bytes,
                  std::string label) override;
  void downloadGradients(int device, int64_t src, void *dst, int64_t bytes,
                         std::vector<GradientRange> ranges, GradientCheck *check,
                         std::string label) override;
  void call(int device, CallFrame frame, std::string label) override;
  void accumulate(int device, int64_t dst, int64_t src, int64_t elements, DType dtype, bool first,
                  std::string label) override;
  Event newEvent() override;
  void record(int device, Queue queue, const Event &event) override;
  void wait(int device, Queue queue, const Event &event) override;
  void signal(const Event &event) override;
  Status hostWait(const Event &event) override;
  void fail(Status status) override;
  Status finish() override;
  void setTrace(TraceRecorder *trace) override { trace_ = trace; }
  /// Times each reference kernel with the steady clock; false with host-replay kernels.
  bool setKernelProfile(KernelProfile *profile) override;

private:
  struct Instr {
    CpuKernel kernel;
    std::vector<rp::plan::BufferRef> operands;
    std::vector<rp::plan::BufferRef> results;
  };
  struct DeviceMemory {
    std::unique_ptr<uint8_t, void (*)(void *)> bytes{nullptr, nullptr};
    std::vector<uint8_t> scratch; // HostKernelSet::scratchBytes()
  };

  void enqueue(int device, Queue queue, QueueThreads::Task task);
  /// Runs `task` of queue `index` (device * kNumQueues + queue), a span in the trace.
  Status runTask(int index, QueueThreads::Task &task);
  Status runCall(int device, const CallFrame &frame);
  uint8_t *memory(int device) { return memory_[static_cast<size_t>(device)].bytes.get(); }

  int numDevices_;
  /// OpenMP threads of each worker's kernels: the threads the process started with
  /// (OMP_NUM_THREADS, else the cores) split evenly among the workers, at least 1.
  int threadsPerDevice_ = 1;
  std::unique_ptr<HostKernelSet> kernels_;
  const rp::plan::Plan *plan_ = nullptr;
  TraceRecorder *trace_ = nullptr;
  KernelProfile *profile_ = nullptr;
  std::vector<std::vector<ProfiledInstruction>> profiled_; // [function][instruction]
  std::vector<std::vector<Instr>> functions_;
  std::vector<DeviceMemory> memory_;
  int64_t workspaceOffset_ = 0;

  std::vector<int> tracks_; // trace track per queue: device * kNumQueues + queue
  QueueThreads queues_;     // device * kNumQueues + queue
};

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CPU_CPUBACKEND_H
