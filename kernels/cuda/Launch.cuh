//===- Launch.cuh - Launch geometry and checks shared by the CUDA kernels -*- C++ -*-===//
//
// Grid-stride launches (karpathy/llm.c style): kBlockSize threads per block, at most
// kMaxBlocks blocks; each thread loops over i = tid, tid + stride, ... < n. And what the
// families' launchers check alike (usablePointer); the plans check their operands with
// kernels/KernelChecks.h, as the CPU kernels do. For .cu files only.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_LAUNCH_CUH
#define RP_KERNELS_CUDA_LAUNCH_CUH

#include "kernels/KernelChecks.h"
#include "kernels/cuda/Strided.h"
#include "base/Status.h"

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

/// A thread block as the row bodies see it (Fused.h's attentionRow, AttentionGrad.h's passes;
/// the host tests use SerialBlock instead): forEach strides over the block's threads (index t
/// on thread t % blockDim.x), sync is __syncthreads(). The host branch (never taken: the
/// kernels are device code) runs serially like SerialBlock.
struct ThreadBlock {
  template <typename Fn> RP_HD void forEach(int64_t n, Fn &&fn) const {
#if defined(__CUDA_ARCH__)
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x)
      fn(t);
#else
    for (int64_t t = 0; t < n; ++t)
      fn(t);
#endif
  }
  RP_HD void sync() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
};

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

// The plans' argument checks (a dtype, negative dimensions, an axis out of range, a shape
// other than the expected one) are the CPU kernels' (kernels/KernelChecks.h).

/// The float dtypes of the elementwise-style kernels (swiglu, rope, attention, the scatters).
inline constexpr std::initializer_list<base::DType> kGpuFloatTypes = {
    base::DType::F32, base::DType::F64, base::DType::F16, base::DType::BF16};
} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_LAUNCH_CUH
