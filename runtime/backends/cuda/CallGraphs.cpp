//===- CallGraphs.cpp - CUDA graphs for plan-function calls ---------------===//

#include "runtime/backends/cuda/CallGraphs.h"

#include "runtime/backends/cuda/CudaKernel.h"

namespace rp::runtime {

StatusOr<GraphDriver::Graph> CudaGraphDriver::capture(cudaStream_t stream,
                                                      const std::function<Status()> &enqueue) {
  RP_RETURN_IF_ERROR(cudaStatus(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                                "cudaStreamBeginCapture"));
  const Status launched = enqueue();
  cudaGraph_t graph = nullptr;
  // Always end the capture, so the stream is usable (and reports the error) afterwards.
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!launched.ok() || ended != cudaSuccess) {
    if (graph)
      (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError(); // clear the capture's error: the next call reports its own
    return launched.ok() ? cudaStatus(ended, "cudaStreamEndCapture") : launched;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  RP_RETURN_IF_ERROR(cudaStatus(made, "cudaGraphInstantiate"));
  return static_cast<Graph>(exec);
}

Status CudaGraphDriver::launch(Graph graph, cudaStream_t stream) {
  return cudaStatus(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream),
                    "cudaGraphLaunch");
}

void CudaGraphDriver::destroy(Graph graph) {
  (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

CallGraphCache::~CallGraphCache() {
  for (auto &entry : graphs_)
    driver_.destroy(entry.second);
}

Status CallGraphCache::run(const CallGraphKey &key, size_t instructions, cudaStream_t stream,
                           const std::function<Status()> &enqueue) {
  if (instructions < minInstructions_)
    return enqueue();
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    RP_ASSIGN_OR_RETURN(GraphDriver::Graph graph, driver_.capture(stream, enqueue));
    it = graphs_.emplace(key, graph).first;
  }
  ++replays_;
  return driver_.launch(it->second, stream);
}

} // namespace rp::runtime
