//===- BackendFactory.h - The backend of a training run (rp-run) -*- C++ -*-===//
//
// Which backends this build of rp-run has, and the one place that makes them: --backend cpu
// (runtime/backends/cpu/CpuBackend.h) with the CPU reference kernels or, with --kernels
// cuda-host, the CUDA backend's kernels replayed on the host
// (runtime/backends/cuda/CudaHostKernels.h); --backend cuda
// (runtime/backends/cuda/CudaBackend.h). Builds without nvcc (RP_HAVE_CUDA=0) refuse the CUDA
// choices with Unimplemented. Every other file of the trainer is the same in both builds.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_BACKENDFACTORY_H
#define RP_RUNTIME_TRAIN_BACKENDFACTORY_H

#include "base/Status.h"
#include "runtime/exec/Backend.h"
#include "runtime/train/Trainer.h"

#include <cstdio>
#include <memory>
#include <string>

namespace rp::runtime {

/// Makes the backend of a training run (TrainOptions::backend, kernels, progress).
class BackendFactory {
public:
  /// Refuses --backend cuda in a build without CUDA: Unimplemented "this rp-run was built
  /// without the CUDA backend (...); use --backend cpu". OK for every other backend name.
  static Status checkBuilt(const TrainOptions &options);

  /// Checks --kernels (InvalidArgument for an unknown name, or cuda-host on another backend
  /// than cpu; --cuda-graphs without --backend cuda or with --profile-kernels; Unimplemented for cuda-host in a build without CUDA),
  /// --attention-kernel (InvalidArgument for an unknown name or a non-auto choice without
  /// --backend cuda; Unimplemented for cudnn in a build without the cuDNN frontend) and, for --backend cuda,
  /// queries the GPUs (Unavailable without one), so that a missing GPU is reported before
  /// anything is loaded. `options.backend` is cpu or cuda.
  static StatusOr<BackendFactory> probe(const TrainOptions &options);

  /// A pool of `devices` (>= 1) workers: a CudaBackend for --backend cuda (with progress, its
  /// "cuda: N workers on P GPU(s), ..." line on `out`), else a CpuBackend with the reference
  /// or the cuda-host kernels. Errors: CudaBackend::create's.
  StatusOr<std::unique_ptr<Backend>> create(int devices, std::FILE *out) const;

private:
  BackendFactory() = default;

  std::string kernels_ = "reference";
  bool progress_ = true;
  bool fp16Accumulate_ = false; ///< --gemm-accumulate fp16 (CUDA only).
  bool cudaGraphs_ = false;     ///< --cuda-graphs (CUDA only).
  std::string attentionKernel_ = "auto"; ///< --attention-kernel (CUDA only).
  bool cuda_ = false;    ///< --backend cuda (the GPUs below were queried).
  int gpus_ = 0;         ///< Visible GPUs.
  std::string firstGpu_; ///< The name of GPU 0.
};

/// rp-run --check --backend B: decodes every instruction of `plan` for backend `backend`
/// ("cpu" or "cuda") as prepare() would, without running anything (the CUDA decoder needs no
/// GPU), and returns a summary ("cuda: 812 instructions in 9 functions decode for
/// the GPU kernels"), for cuda followed by one line per kernel with several implementations
/// and the one --attention-kernel auto may pick ("  28 x attention: cudnn-sdpa candidate"). Errors: the first instruction the backend cannot run (InvalidArgument,
/// naming the function, instruction, kernel and location); Unimplemented for "cuda" in a
/// build without CUDA.
StatusOr<std::string> checkPlanForBackend(const rp::plan::Plan &plan, const std::string &backend);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_BACKENDFACTORY_H
