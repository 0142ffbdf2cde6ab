//===- CudaBackend.h - The executor's devices as CUDA GPUs ------*- C++ -*-===//
//
// The CUDA backend (runtime/exec/Backend.h; arXiv 2604.27085 §4): N logical
// workers, worker w on visible GPU w mod P (P = cudaGetDeviceCount), so a pool of 2 or 4
// workers runs on one GPU with the same protocol ("logical devices"). Each worker
// has
//   - a static device arena (cudaMalloc) laid out as the plan's DeviceArena, the constants
//     uploaded once, plus the scratch its kernels need (cross-entropy row losses);
//   - four CUDA streams, one per queue, created with priorities: activation uploads highest,
//     then compute and downloads, weight uploads lowest (cudaDeviceGetStreamPriorityRange);
//     the executor itself issues each weight chunk behind one activation upload (prefetch);
//   - a cuBLASLt runner (kernels/cuda/Gemm.h) used by the compute queue only.
// The host arena is page-locked with cudaHostRegister (registerHostMemory), so every copy is
// an asynchronous DMA.
//
// Queues: each (worker, queue) has a host feeder thread (runtime/exec/QueueThreads.h) that
// takes the executor's commands in order and submits them to its stream; submitting never
// waits for the GPU. A wait on an event recorded by another queue blocks only that feeder
// until the record has been submitted, then becomes cudaStreamWaitEvent (cross-device when
// the queues are on different GPUs); a wait on a host-signalled event (the optimizer's) blocks
// the feeder until signal(). hostWait() blocks until the record is submitted, then
// cudaEventSynchronize. So the GPU sees exactly the executor's event graph, and no host
// thread spins.
//
// Errors: a CUDA error from any call or kernel (surfacing at the next call or synchronize on
// that device) puts the backend in the failed state (Backend.h): commands are skipped, waits
// return, hostWait()/finish() return the first error with the CUDA error name and the
// command's label.
//
// Trace: with a TraceRecorder, every labelled command is bracketed by two timing events on its
// stream; finish() converts them to spans on "cuda<w> <queue>" tracks (GPU time, aligned to
// the host clock at prepare()).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
#define RP_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H

#include "runtime/backends/cuda/CallGraphs.h"
#include "runtime/backends/cuda/CudaKernel.h"
#include "runtime/exec/Backend.h"
#include "runtime/exec/InstructionProfile.h"
#include "runtime/exec/QueueThreads.h"

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/CudnnAttention.h"

namespace rp::kernels::cuda {
class GemmRunner;
}

namespace rp::runtime {

/// The GPUs this process sees: count and names. Errors: Unavailable when the CUDA runtime
/// finds no device (the message carries cudaGetDeviceCount's error).
struct CudaDevices {
  int count = 0;
  std::vector<std::string> names;
  std::vector<int64_t> memoryBytes;
};
StatusOr<CudaDevices> queryCudaDevices();

/// How a CudaBackend runs its kernels.
struct CudaBackendOptions {
  /// f16 GEMMs accumulate in fp16 (cuBLASLt CUBLAS_COMPUTE_16F; opt-in, kernels/cuda/Gemm.h).
  bool fp16Accumulate = false;
  /// Each call of a function of two or more instructions replays a CUDA graph captured at its
  /// first call with the same frame (CallGraphs.h); off: every kernel is launched.
  bool graphs = false;
  /// graph.attention(_vjp): cuDNN's fused SDPA where it takes the case (Auto), always (Cudnn:
  /// a decline is an error), or never (Flash: rpc's kernels); kernels/cuda/CudnnAttention.h.
  kernels::cuda::AttentionKernel attentionKernel = kernels::cuda::AttentionKernel::Auto;
};

class CudaBackend final : public Backend {
public:
  /// A pool of `workers` (>= 1) logical devices on the visible GPUs. Errors: Unavailable
  /// without a GPU.
  static StatusOr<std::unique_ptr<CudaBackend>> create(int workers,
                                                       CudaBackendOptions options = {});
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  int numDevices() const override { return numWorkers_; }
  /// Decodes every function (CudaKernel), allocates the arenas and streams, uploads the
  /// constants. Errors: InvalidArgument for an instruction the GPU kernels do not take;
  /// ResourceExhausted naming the worker, GPU and sizes when an arena does not fit.
  Status prepare(const rp::plan::Plan &plan) override;
  Status registerHostMemory(void *base, int64_t bytes) override;
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
  /// Brackets every launch with CUDA events and synchronises the stream after each call (a
  /// profiled run serialises each worker: kernel times are right, step times are not).
  /// Returns false with graphs on (a graph's launches cannot be timed one by one).
  bool setKernelProfile(KernelProfile *profile) override {
    if (options_.graphs)
      return false;
    profile_ = profile;
    return true;
  }
  /// cudaMemGetInfo's used bytes (total - free, every process) on the busiest GPU, read at the
  /// end of prepare(); the backend allocates nothing afterwards.
  int64_t deviceMemoryBytes() const override { return usedBytes_; }

  /// Device memory of worker `w` (arena + scratch), bytes; valid after prepare().
  int64_t deviceBytes(int w) const;
  /// The GPU of worker `w`.
  int gpuOf(int w) const { return w % numGpus_; }
  /// CUDA graphs captured so far over the workers, and calls that replayed one (0 without
  /// --cuda-graphs). Read after finish().
  size_t capturedGraphs() const;
  int64_t graphReplays() const;

private:
  /// Submits a command's work to `stream` (runs on the queue's feeder thread, its GPU current).
  using Submit = std::function<Status(cudaStream_t stream)>;
  struct Worker {
    int gpu = 0;
    uint8_t *arena = nullptr;
    uint8_t *scratch = nullptr;
    uint32_t *nonFiniteFlag = nullptr; ///< downloadGradients' device flag (one word)
    /// downloadGradients' lane sums of the norm's squares (kernels/cuda/GradientNorm.h):
    /// room for the largest stage's, on the device and (pageable) on the host.
    double *squaresLanes = nullptr;
    std::vector<double> hostLanes;
    int64_t arenaBytes = 0, scratchBytes = 0;
    std::unique_ptr<kernels::cuda::GemmRunner> gemm;
    /// cuDNN SDPA (null under AttentionKernel::Flash or when cuDNN is not loadable).
    std::unique_ptr<kernels::cuda::CudnnSdpaRunner> sdpa;
    std::vector<cudaEvent_t> profileEvents; ///< --profile-kernels: one per launch boundary
    std::unique_ptr<CallGraphCache> graphs; ///< --cuda-graphs: this worker's captured calls
  };
  struct Span {
    int track;
    std::string name, category;
    cudaEvent_t start, end;
    int gpu;
    int64_t bytes;
  };

  CudaBackend(int workers, int gpus);
  /// prepare() with a trace: each GPU's time base (an event synchronized against the host
  /// clock) and the "cuda<w> <queue>" tracks.
  Status prepareTrace();
  /// k.sdpa under options_.attentionKernel (none under Flash), then every instruction's
  /// CudaKernel::prepare with it (the cuDNN graphs, built at load); under Auto, when cuDNN
  /// cannot be used, the first worker (`first`) prints why once. Errors: the runner's (a
  /// refusal under Cudnn), naming the graph.
  Status createSdpaRunner(Worker &k, bool first);
  /// Appends a command to (device, queue): `label` empty: not traced (waits, records);
  /// `bytes`: copies, bytes moved (a trace argument).
  void enqueue(int device, Queue queue, Submit submit, std::string label, int64_t bytes = -1);
  /// The feeder of queue `index` (worker * kNumQueues + queue): submits `task` to the queue's
  /// stream, bracketed by timing events when traced.
  Status submitTask(int index, QueueThreads::Task &task);
  Status runCall(int device, const CallFrame &frame, cudaStream_t stream);
  /// runCall with every instruction timed into profile_ (waits for the call to finish).
  Status runProfiledCall(int device, const CallFrame &frame, cudaStream_t stream);
  Status resolveSpans();

  int numWorkers_;
  int numGpus_;
  CudaBackendOptions options_;
  CudaGraphDriver graphDriver_;
  const rp::plan::Plan *plan_ = nullptr;
  TraceRecorder *trace_ = nullptr;
  KernelProfile *profile_ = nullptr;
  std::vector<std::vector<ProfiledInstruction>> profiled_; // [function][instruction]
  std::vector<std::vector<CudaInstr>> functions_;
  std::vector<Worker> workers_;
  int64_t workspaceOffset_ = 0;
  void *registered_ = nullptr;
  int64_t usedBytes_ = -1;
  std::vector<cudaEvent_t> timeBase_; // per GPU (trace)
  std::vector<double> timeBaseUs_;

  // Per queue, worker * kNumQueues + queue: its stream (prepare()) and trace track.
  std::vector<cudaStream_t> streams_;
  std::vector<int> tracks_;
  std::mutex spansMutex_; // guards spans_
  std::vector<Span> spans_;
  QueueThreads queues_; // the feeders, started at the end of prepare()
};

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
