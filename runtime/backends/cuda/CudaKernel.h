//===- CudaKernel.h - Plan instructions onto the CUDA kernels ---*- C++ -*-===//
//
// The CUDA backend runs a plan function as a list of instructions (runtime/plan/plan.proto),
// each naming a kernel of the registry (kernels/Registry.h) by id. CudaKernel decodes one
// instruction once, when the plan is loaded: the shared checks (runtime/exec/InstructionDecoder.h:
// types, attributes, the dtype rule; f32, f16 and bf16 float tensors), then the kernel
// family's planner (kernels/cuda/*.h), which checks the shapes as the CPU kernels do and
// computes the launch geometry. Running it is one or a few kernel launches on a stream: no
// string, map or shape work in the training loop. Decoding needs no GPU (tests decode whole
// plans on a machine without one).
//
// Kernel ids and their GPU families: CudaKernelTable.h, one entry per id.
//
// Runtime world: no LLVM/MLIR. Host C++ (compiled by the C++ compiler, not nvcc).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CUDA_CUDAKERNEL_H
#define RP_RUNTIME_BACKENDS_CUDA_CUDAKERNEL_H

#include "base/Status.h"
#include "runtime/exec/InstructionDecoder.h"
#include "runtime/plan/plan.pb.h"

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

namespace rp::kernels::cuda {
class GemmRunner;
class CudnnSdpaRunner;
}

namespace rp::runtime {

/// What a running instruction gets from its worker.
struct CudaContext {
  cudaStream_t stream = nullptr;
  kernels::cuda::GemmRunner *gemm = nullptr; ///< the worker's cuBLASLt runner
  void *scratch = nullptr;                   ///< device scratch of scratchBytes() (or more)
  /// The worker's cuDNN SDPA runner; null: attention runs on rpc's kernels.
  kernels::cuda::CudnnSdpaRunner *sdpa = nullptr;
};

/// A plan instruction decoded for the GPU. Copyable.
class CudaKernel {
public:
  /// Decodes `instruction`. Errors (InvalidArgument "kernel '<id>' at <location>: <what>"):
  /// an id not in the registry or without a GPU implementation; counts, attributes or dtypes
  /// the registry or the kernel does not accept; shapes the kernel's planner rejects.
  static StatusOr<CudaKernel> decode(const rp::plan::Instruction &instruction);

  /// Enqueues the kernel on ctx.stream: `operands` and `results` are device pointers to
  /// tensors of exactly the instruction's types, in its order. Errors: Internal naming the
  /// kernel, its location and the CUDA or cuBLASLt error of a failed launch (asynchronous
  /// kernel faults surface later, at a synchronisation).
  Status launch(const std::vector<const void *> &operands, const std::vector<void *> &results,
                const CudaContext &ctx) const;

  /// Runs the same planned work on the host (kernels/cuda/HostReplay.h): the kernels' bodies
  /// over every point, on host memory, with `scratch` (scratchBytes() bytes) as the device
  /// scratch. For testing the GPU code without a GPU (`rp-run --kernels cuda-host`). Errors:
  /// InvalidArgument for wrong counts.
  Status runOnHost(const std::vector<const void *> &operands, const std::vector<void *> &results,
                   void *scratch) const;

  const std::string &id() const { return id_; }
  const std::string &location() const { return location_; }
  /// Device scratch the kernel needs while it runs (bytes; 0 for most).
  int64_t scratchBytes() const { return scratchBytes_; }
  /// Per-worker device preparation at plan load, before any launch (CudaBuilt::prepare; cuDNN
  /// graphs of attention): ctx carries the worker's runners, not a stream. OK when the kernel
  /// has none. Errors: the kernel's (e.g. a case cuDNN refuses under --attention-kernel cudnn).
  Status prepare(const CudaContext &ctx) const { return prepare_ ? prepare_(ctx) : okStatus(); }
  /// Which implementation may run it where a kernel has several (CudaBuilt::variant), or "".
  const std::string &variant() const { return variant_; }
  const std::vector<TensorSig> &operandTypes() const { return operandTypes_; }
  const std::vector<TensorSig> &resultTypes() const { return resultTypes_; }

  using Body = std::function<Status(const std::vector<const void *> &operands,
                                    const std::vector<void *> &results, const CudaContext &ctx)>;
  using HostBody = std::function<Status(const std::vector<const void *> &operands,
                                        const std::vector<void *> &results, void *scratch)>;

private:
  CudaKernel() = default;
  /// InvalidArgument unless the counts are the instruction's.
  Status checkCounts(size_t operands, size_t results) const;

  std::string id_, location_, where_;
  std::vector<TensorSig> operandTypes_, resultTypes_;
  int64_t scratchBytes_ = 0;
  std::string variant_;
  std::function<Status(const CudaContext &ctx)> prepare_;
  Body body_;
  HostBody hostBody_;
};

/// An instruction with its buffer references (resolved to device addresses per call).
struct CudaInstr {
  CudaKernel kernel;
  std::vector<rp::plan::BufferRef> operands, results;
};

/// Runs fn(instruction.kernel, operands, results) for every instruction of `body` in order,
/// each buffer at address(ref) (device pointers for launches, host pointers for replays).
/// Errors: the first error of fn, prefixed with "instruction <k>: ".
template <typename Address, typename Fn>
Status forEachInstruction(const std::vector<CudaInstr> &body, const Address &address, Fn &&fn) {
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t i = 0; i < body.size(); ++i) {
    in.clear();
    out.clear();
    for (const rp::plan::BufferRef &r : body[i].operands)
      in.push_back(address(r));
    for (const rp::plan::BufferRef &r : body[i].results)
      out.push_back(address(r));
    Status s = fn(body[i].kernel, in, out);
    if (!s.ok())
      return Status(s.code(), "instruction " + std::to_string(i) + ": " + s.message());
  }
  return okStatus();
}

/// Decodes every instruction of `function`, in order. Errors: the first decode error,
/// prefixed with "function '<name>' instruction <k>: ".
StatusOr<std::vector<CudaInstr>> decodeCudaFunction(const rp::plan::Function &function);

/// Every function of a plan decoded for the GPU (plan.functions() order), and the device
/// scratch the most demanding instruction needs (bytes; 0 when none needs any).
struct CudaPlanKernels {
  std::vector<std::vector<CudaInstr>> functions;
  int64_t scratchBytes = 0;
};

/// Decodes every function of `plan` (decodeCudaFunction). Errors: the first decode error.
StatusOr<CudaPlanKernels> decodeCudaPlan(const rp::plan::Plan &plan);

/// "cudaErrorInvalidValue: invalid argument".
std::string cudaErrorText(cudaError_t error);

/// Ok for cudaSuccess; otherwise Internal "<what>: <cudaErrorText>".
Status cudaStatus(cudaError_t error, const std::string &what);

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CUDA_CUDAKERNEL_H
