//===- CudaKernelTable.h - Kernel ids onto the CUDA kernels -----*- C++ -*-===//
//
// The CUDA backend's one table from kernel id (kernels/Registry.h) to its implementation: a
// builder that runs the kernel family's planner (kernels/cuda/*.h) on the instruction's
// shapes and attributes, read from a checked Decoder (runtime/exec/InstructionDecoder.h), and
// binds the plan to the family's launcher (the GPU) and to its host replay
// (kernels/cuda/HostReplay.h). The registry gives each id its counts, attributes and dtype
// rule; an entry here adds only the planner, the launcher and the replay.
//
// Runtime world: no LLVM/MLIR. Host C++ (compiled by the C++ compiler, not nvcc).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CUDA_CUDAKERNELTABLE_H
#define RP_RUNTIME_BACKENDS_CUDA_CUDAKERNELTABLE_H

#include "runtime/backends/cuda/CudaKernel.h"
#include "runtime/exec/InstructionDecoder.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace rp::runtime {

/// A decoded instruction's work: its GPU launch, its host replay, and the device scratch it
/// needs (bytes).
struct CudaBuilt {
  CudaKernel::Body body;
  CudaKernel::HostBody hostBody;
  int64_t scratchBytes = 0;
  /// Which implementation may run it, when a kernel has several (attention: "cudnn-sdpa
  /// candidate", "flash (cuDNN SDPA declines: ...)" or "flash (this build has no cuDNN
  /// frontend)"); "" otherwise. --check reports it.
  std::string variant;
  /// Device work before the first launch, run once per worker at plan load (CudaKernel::
  /// prepare); null for most kernels. Attention builds its cuDNN graphs here.
  std::function<Status(const CudaContext &ctx)> prepare;
};

/// Plans one instruction from its checked Decoder. Errors: InvalidArgument from the family's
/// planner (shapes, naming the op) or from Decoder::fail (attribute values).
using CudaBuilder = std::function<StatusOr<CudaBuilt>(const decode::Decoder &)>;

/// The CUDA builder of kernel id `id`, or null when the CUDA backend does not implement it.
const CudaBuilder *findCudaBuilder(std::string_view id);

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CUDA_CUDAKERNELTABLE_H
