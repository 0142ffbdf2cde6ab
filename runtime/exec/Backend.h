//===- Backend.h - What the executor needs from a device pool ---*- C++ -*-===//
//
// The executor (runtime/exec/Executor.h) is written once against this interface; the CPU
// backend (threads and host memory), the CUDA backend (streams, events, device memory)
// and the simulator (a virtual clock) implement it.
//
// Model (CUDA's): each device has a linear device arena (the plan's `DeviceArena` layout:
// [constants | slot 0 | slot 1 | activations 0 | activations 1 | workspace], byte offsets) and
// four in-order queues. Commands enqueued on one queue run in order; commands on different
// queues or devices are ordered only by events. Enqueueing never blocks on the device.
//
//   Compute           kernels of the layer functions, gradient accumulation
//   ActivationUpload  host -> device activations (the critical path; highest priority)
//   WeightUpload      host -> device weights (prefetched behind activation uploads)
//   Download          device -> host activations, losses, gradients
//
// Events: `newEvent()` makes an unsignalled event. `record(d, q, e)` completes it when queue q
// of device d reaches that point; `signal(e)` completes it from the host (the optimizer).
// `wait(d, q, e)` makes queue q wait for e; `hostWait(e)` blocks the calling host thread.
// An event completes once and stays complete. Ordering contract, as CUDA requires: a queue's
// wait on a recorded event is enqueued after the record() call (in the caller's program
// order); host-signalled events may be waited before they are signalled. hostWait() may be
// called before record() from another thread: it blocks until the event is recorded and
// complete.
//
// Errors: a failing command (a kernel error) puts the backend in a failed state: later
// commands are skipped, every wait returns, and hostWait()/finish() return the first error.
//
// Host work: the executor's optimizer thread reports each piece of host work it has just done
// with hostWork() (AdamW of a layer, writing a layer's compute weights, the clipping norm).
// Real backends ignore it; the simulator (runtime/sim/) advances the calling thread's
// virtual clock by the modelled cost, so a later signal() is stamped after the work.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_BACKEND_H
#define RP_RUNTIME_EXEC_BACKEND_H

#include "base/DType.h"
#include "base/Status.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rp::runtime {

class TraceRecorder;
class KernelProfile;

/// The queues of a device (see the file comment).
enum class Queue { Compute = 0, ActivationUpload = 1, WeightUpload = 2, Download = 3 };
inline constexpr int kNumQueues = 4;

/// "compute", "h2d activations", "h2d weights", "d2h".
const char *queueName(Queue queue);

/// Host work the executor reports to its backend (see the file comment).
enum class HostTask {
  AdamW,        ///< AdamW on the fp32 state of one layer's trainable params.
  WriteWeights, ///< The master weights of one layer written into the compute weights.
  GradNorm,     ///< The global gradient norm for clipping (every trainable param; layer -1).
};

/// An event of a backend (opaque; shared by the commands that record or wait on it).
class BackendEvent {
public:
  virtual ~BackendEvent() = default;
};
using Event = std::shared_ptr<BackendEvent>;

/// The fp32 accumulators of one param inside a gradient slot: `elements` floats from byte
/// `offset` of the slot's gradient region.
struct GradientRange {
  int64_t offset = 0;
  int64_t elements = 0;
};

/// What a gradient download learns about the gradients it copies, in the same pass.
struct GradientCheck {
  /// In: the scale of the squares wanted (the step's gradScale before clipping), or 0 for
  /// none.
  float squaresScale = 0;
  /// Out: 1 when any gradient of the ranges is inf or NaN, else 0.
  uint32_t nonFinite = 0;
  /// Out, when squaresScale > 0 and the backend computes them (left empty otherwise): per
  /// range, runtime/optim's sumOfSquares(range, squaresScale), bit for bit, so that the
  /// global norm needs no host pass over these gradients.
  std::vector<double> squares;
};

/// One call of a plan function: where its arguments and results live in the device arena.
struct CallFrame {
  int function = 0;               ///< Index into Plan.functions.
  int stage = 0;                  ///< The job's stage (PARAM refs resolve in its weight slot).
  int64_t slotOffset = 0;         ///< Device-arena offset of the job's weight slot.
  std::vector<int64_t> args;      ///< Device-arena offsets of the arguments.
  std::vector<int64_t> results;   ///< Device-arena offsets of the results.
};

/// The device-arena byte offset of buffer `ref` in a call of `frame`: an argument or result
/// (the frame's offsets), the function's workspace (from `workspaceOffset`), a param (in the
/// job's weight slot) or a constant. -1 for a reference of no known space (the plan validator
/// rejects those).
inline int64_t bufferOffset(const rp::plan::Plan &plan, const CallFrame &frame,
                            int64_t workspaceOffset, const rp::plan::BufferRef &ref) {
  namespace pb = rp::plan;
  switch (ref.space()) {
  case pb::BufferRef::ARG:
    return frame.args[static_cast<size_t>(ref.index())];
  case pb::BufferRef::RESULT:
    return frame.results[static_cast<size_t>(ref.index())];
  case pb::BufferRef::WORKSPACE:
    return workspaceOffset + ref.offset();
  case pb::BufferRef::PARAM:
    return frame.slotOffset + (plan.params(static_cast<int>(ref.index())).weight_offset() -
                               plan.stages(frame.stage).weight_offset());
  case pb::BufferRef::CONSTANT:
    return plan.constants(static_cast<int>(ref.index())).offset();
  default:
    return -1;
  }
}

/// A device pool. Methods are called by one dispatching thread, except hostWait() and signal(),
/// which the optimizer thread also calls.
class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu", "cuda", "sim".
  virtual std::string name() const = 0;
  virtual int numDevices() const = 0;

  /// Allocates every device's arena (`plan.device_arena` layout), uploads the constants and
  /// prepares the functions (the CPU backend decodes their kernels). Called once, first.
  /// Errors: InvalidArgument for a plan the backend cannot run (naming why),
  /// ResourceExhausted when an arena does not fit.
  virtual Status prepare(const rp::plan::Plan &plan) = 0;

  /// The host memory the copies read and write (the executor's host arena, `bytes` from
  /// `base`), announced once after prepare(). The CUDA backend page-locks it so that copies
  /// are asynchronous DMA. Errors: the backend's (a registration failure). Default: nothing.
  virtual Status registerHostMemory(void *base, int64_t bytes) {
    (void)base;
    (void)bytes;
    return okStatus();
  }

  /// Queue `queue` of `device` copies `bytes` from host `src` to device offset `dst`.
  virtual void copyToDevice(int device, Queue queue, const void *src, int64_t dst, int64_t bytes,
                            std::string label) = 0;
  /// Queue `queue` of `device` copies `bytes` from device offset `src` to host `dst`.
  virtual void copyToHost(int device, Queue queue, int64_t src, void *dst, int64_t bytes,
                          std::string label) = 0;
  /// The Download queue of `device` copies a stage's fp32 gradient slot (`bytes` from device
  /// offset `src`) to host `dst`, like copyToHost, and fills `*check` before the queue's next
  /// recorded event completes: nonFinite = 1 when any gradient of `ranges` (the params'
  /// accumulators; the padding between them holds stale bytes) is inf or NaN, else 0, and,
  /// when asked and the backend can, each range's sum of squares. Both are made where the
  /// gradients are, riding on the download (the CPU backend copies each range and checks and
  /// squares it in the same pass; the CUDA backend runs a flag kernel and the squares' lane
  /// kernel on the device), so the host makes no pass over the gradients for them.
  virtual void downloadGradients(int device, int64_t src, void *dst, int64_t bytes,
                                 std::vector<GradientRange> ranges, GradientCheck *check,
                                 std::string label) = 0;
  /// The compute queue runs plan function `frame.function`.
  virtual void call(int device, CallFrame frame, std::string label) = 0;
  /// The compute queue folds a gradient into fp32 accumulators: `elements` values of `dtype`
  /// at device offset `src` are converted to fp32 and copied (`first`) or added to the fp32
  /// values at device offset `dst` (elementwise, in order; `acc = acc + g` in fp32).
  virtual void accumulate(int device, int64_t dst, int64_t src, int64_t elements, DType dtype,
                          bool first, std::string label) = 0;

  virtual Event newEvent() = 0;
  virtual void record(int device, Queue queue, const Event &event) = 0;
  virtual void wait(int device, Queue queue, const Event &event) = 0;
  /// Completes a host event. Thread-safe.
  virtual void signal(const Event &event) = 0;
  /// Blocks until `event` is complete (see the file comment). Thread-safe. Errors: the
  /// backend's first error when it has failed (the event may never complete then).
  virtual Status hostWait(const Event &event) = 0;
  /// The calling host thread has just done `task` for `layer` (-1: every layer) of iteration
  /// `step`. Thread-safe. Default: nothing (real backends measure real time).
  virtual void hostWork(HostTask task, int64_t step, int layer) {
    (void)task;
    (void)step;
    (void)layer;
  }
  /// Puts the backend in the failed state with `status` (the optimizer's errors), waking
  /// every waiter. Thread-safe; the first error wins.
  virtual void fail(Status status) = 0;

  /// Blocks until every queue of every device is idle. Errors: the first error.
  virtual Status finish() = 0;

  /// Data-parallel ranks the backend models by itself, without a RankReducer (the simulator's
  /// nodes, which cost each layer's reduction before its AdamW); the executor orders its host
  /// work as for that many ranks. Default 1.
  virtual int modeledRanks() const { return 1; }

  /// OpenMP threads for the host optimizer's threads (AdamW, the weights writer), or 0 for
  /// the OpenMP default (one per core). The CPU backend's workers compute on the host's cores:
  /// it answers 1, so that AdamW's parallel regions do not oversubscribe the cores the
  /// workers use (a team thread that waits for a core holds its whole region back).
  virtual int hostOptimizerThreads() const { return 0; }

  /// Device memory in use after prepare() (bytes; the most over the devices), or -1 when the
  /// backend has no such measure (cpu, sim).
  virtual int64_t deviceMemoryBytes() const { return -1; }

  /// Where the backend records its commands' spans (null: no trace). Set before prepare().
  virtual void setTrace(TraceRecorder *trace) = 0;
  /// Times every instruction the backend runs into `profile` (runtime/trace/KernelProfile.h);
  /// call before prepare(). Returns false when the backend cannot (the simulator, the CPU
  /// backend's host replay of the CUDA kernels); nothing is recorded then.
  virtual bool setKernelProfile(KernelProfile *profile) {
    (void)profile;
    return false;
  }
};

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_BACKEND_H
