//===- CallGraphs.h - CUDA graphs for plan-function calls -------*- C++ -*-===//
//
// `rp-run --backend cuda --cuda-graphs`: a plan function's call is a fixed list of kernel
// launches whose addresses depend only on the call frame (the job's weight slot and the
// micro-batch's activation set, runtime/exec/Backend.h CallFrame). A worker alternates two
// slots and two sets, so the same frames come back every micro-batch and every step. The
// first call of a frame is captured into a CUDA graph (cudaStreamBeginCapture ...
// cudaGraphInstantiate) and every later call of that frame replays it with one
// cudaGraphLaunch: the per-launch host cost (argument packing, driver submission, about
// 2-5 us per kernel) is paid once, which is what pays for small models and short sequences
// whose kernels run for microseconds. A graph runs the same kernels on the same addresses in
// the same order as the launches it captured, so results are bit-identical either way.
//
// The cache policy (which calls replay, when to capture) is plain C++ over a GraphDriver, so
// it is tested without a GPU with a fake driver; CudaGraphDriver is the CUDA one.
//
// Runtime world: no LLVM/MLIR. Host C++.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CUDA_CALLGRAPHS_H
#define RP_RUNTIME_BACKENDS_CUDA_CALLGRAPHS_H

#include "base/Status.h"
#include "runtime/exec/Backend.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace rp::runtime {

/// What identifies a captured call: the function and every device-arena offset its frame
/// resolves (the workspace and constants are fixed per worker).
struct CallGraphKey {
  int function = 0;
  int64_t slotOffset = 0;
  std::vector<int64_t> args, results;

  static CallGraphKey of(const CallFrame &frame) {
    return {frame.function, frame.slotOffset, frame.args, frame.results};
  }
  bool operator<(const CallGraphKey &o) const {
    if (function != o.function)
      return function < o.function;
    if (slotOffset != o.slotOffset)
      return slotOffset < o.slotOffset;
    if (args != o.args)
      return args < o.args;
    return results < o.results;
  }
};

/// Captures and replays executable graphs on a stream (CudaGraphDriver; a fake in tests).
class GraphDriver {
public:
  using Graph = void *; ///< an executable graph (cudaGraphExec_t), opaque to the cache
  virtual ~GraphDriver() = default;
  /// Captures what `enqueue` submits to `stream` into an executable graph; nothing runs.
  /// The stream is out of capture mode when this returns, also on error. Errors: enqueue's,
  /// or the driver's (Internal naming the CUDA call).
  virtual StatusOr<Graph> capture(cudaStream_t stream, const std::function<Status()> &enqueue) = 0;
  /// Enqueues one run of `graph` on `stream`. Errors: the driver's.
  virtual Status launch(Graph graph, cudaStream_t stream) = 0;
  virtual void destroy(Graph graph) = 0;
};

/// The graph driver of the CUDA runtime: relaxed-mode stream capture (the kernels' launchers
/// may set function attributes while captured), cudaGraphInstantiate, cudaGraphLaunch.
class CudaGraphDriver final : public GraphDriver {
public:
  StatusOr<Graph> capture(cudaStream_t stream, const std::function<Status()> &enqueue) override;
  Status launch(Graph graph, cudaStream_t stream) override;
  void destroy(Graph graph) override;
};

/// One worker's graphs, used by its compute feeder thread only (not thread-safe).
class CallGraphCache {
public:
  /// Functions of fewer than `minInstructions` instructions run as plain launches (a graph
  /// of one launch saves nothing). `driver` outlives the cache.
  CallGraphCache(GraphDriver &driver, size_t minInstructions)
      : driver_(driver), minInstructions_(minInstructions) {}
  ~CallGraphCache();
  CallGraphCache(const CallGraphCache &) = delete;
  CallGraphCache &operator=(const CallGraphCache &) = delete;

  /// Runs one call of a function of `instructions` instructions whose launches `enqueue`
  /// submits to `stream`: directly when the function is below the threshold, else by
  /// replaying the graph of `key`, captured from `enqueue` on its first call. Errors:
  /// enqueue's or the driver's; a call whose capture failed is not cached (the next call of
  /// the frame captures again and fails the same way).
  Status run(const CallGraphKey &key, size_t instructions, cudaStream_t stream,
             const std::function<Status()> &enqueue);

  /// Graphs captured so far, and calls served by replaying one (captures included).
  size_t graphs() const { return graphs_.size(); }
  int64_t replays() const { return replays_; }

private:
  GraphDriver &driver_;
  size_t minInstructions_;
  std::map<CallGraphKey, GraphDriver::Graph> graphs_;
  int64_t replays_ = 0;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CUDA_CALLGRAPHS_H
