//===- Launch.cuh - Launch geometry and checks shared by the CUDA kernels -*- C++ -*-===//
//
// Grid-stride launches (karpathy/llm.c style): kBlockSize threads per block, at most
// kMaxBlocks blocks; each thread loops over i = tid, tid + stride, ... < n. And what the
// families' plans and launchers check alike: the launchers' pointer check (usablePointer) and
// the plans' operand checks with the CPU kernels' messages (a dtype, negative dimensions, an
// axis out of range, a shape other than the expected one). For .cu files only.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_LAUNCH_CUH
#define RP_KERNELS_CUDA_LAUNCH_CUH

#include "kernels/cuda/Strided.h"
#include "runtime/core/Status.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rp::kernels::cuda {

inline constexpr int kBlockSize = 256;
/// Enough resident threads to saturate HBM on any sm_80+ part; grid-stride loops cover more.
inline constexpr int64_t kMaxBlocks = 8192;

/// Blocks for a grid-stride loop over n points (at least 1).
inline unsigned gridFor(int64_t n) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(kMaxBlocks, (n + kBlockSize - 1) / kBlockSize)));
}

/// The first index and the stride of this thread's grid-stride loop.
__device__ inline int64_t gridThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

/// True when `p` is non-null and aligned to `bytes`: a device pointer a kernel may access
/// elements of that size through. The launchers return cudaErrorInvalidValue, before touching
/// the device, for a pointer they would use that is not.
inline bool usablePointer(const void *p, size_t bytes) {
  return p != nullptr && reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// usablePointer for every one of `ptrs`.
template <typename... P> inline bool usablePointers(size_t bytes, P... ptrs) {
  return (usablePointer(ptrs, bytes) && ...);
}

//===--- plan checks (host code; the CPU kernels' messages) ---------------===//

/// InvalidArgument "<op>: <what> has dtype <d>, expected f32, f64, f16 or bf16" unless it is
/// one of those.
inline runtime::Status checkFloatDType(const std::string &op, const char *what,
                                       runtime::DType dtype) {
  using runtime::DType;
  if (dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 || dtype == DType::BF16)
    return runtime::okStatus();
  return runtime::invalidArgument(op + ": " + what + " has dtype " + runtime::dtypeName(dtype) +
                                  ", expected f32, f64, f16 or bf16");
}

/// InvalidArgument "<op>: <what> has a negative dimension: <shape>" when one is.
inline runtime::Status checkNoNegativeDim(const std::string &op, const char *what,
                                          const Shape &shape) {
  for (int64_t d : shape)
    if (d < 0)
      return runtime::invalidArgument(op + ": " + what +
                                      " has a negative dimension: " + formatShape(shape));
  return runtime::okStatus();
}

/// InvalidArgument "<op>: axis <axis> is out of range, expected [0, <rank>)" unless
/// 0 <= axis < rank.
inline runtime::Status checkAxisInRange(const std::string &op, int64_t axis, int64_t rank) {
  if (axis >= 0 && axis < rank)
    return runtime::okStatus();
  return runtime::invalidArgument(op + ": axis " + std::to_string(axis) +
                                  " is out of range, expected [0, " + std::to_string(rank) + ")");
}

/// InvalidArgument "<op>: <what> is <dtype><got>, expected <dtype><want>" unless got == want.
inline runtime::Status checkShapeIs(const std::string &op, const char *what, runtime::DType dtype,
                                    const Shape &got, const Shape &want) {
  if (got == want)
    return runtime::okStatus();
  const std::string type = runtime::dtypeName(dtype);
  return runtime::invalidArgument(op + ": " + what + " is " + type + formatShape(got) +
                                  ", expected " + type + formatShape(want));
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_LAUNCH_CUH
