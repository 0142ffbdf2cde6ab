//===- RowReduce.cuh - Device side of the deterministic row reduction -*- C++ -*-===//
//
// The three ways a row kernel maps rows onto threads (RowMode) and the fixed-order combine
// of a row's partials (rowAllReduce), as RowReduce.h describes; for .cu files only.
//
//   RowMode::Thread  P = 1: blocks of kRowBlockThreads threads, one row per thread,
//                    grid-stride over the rows;
//   RowMode::Warp    P = 32: blocks of kRowBlockThreads threads, one row per warp;
//   RowMode::Block   P = blockDim.x (64..1024, a multiple of 32): one row per block.
//
// In every mode the row loop (forEachRow) is uniform over the threads that share a row, so the
// __syncthreads() of rowAllReduce (Block mode) is reached by the whole block. launchRows
// enqueues a row kernel in the mode and grid rowGrid picks; rowFloatDType is the dtype test of
// the float families.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ROWREDUCE_CUH
#define RP_KERNELS_CUDA_ROWREDUCE_CUH

#include "kernels/cuda/Launch.cuh"
#include "kernels/cuda/RowReduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace rp::kernels::cuda {

enum class RowMode { Thread, Warp, Block };

/// Threads per block in the Thread and Warp modes (the Thread mode's grid is gridFor's).
inline constexpr int kRowBlockThreads = 256;
static_assert(kRowBlockThreads == kBlockSize, "the Thread mode launches gridFor(rows) blocks");
/// The grid cap of the Warp and Block modes (their row loops are grid-stride).
inline constexpr int64_t kMaxRowBlocks = 65536;

/// Launch geometry of `rows` rows with `threadsPerRow` threads each (valid per
/// validThreadsPerRow; rows > 0).
struct RowGrid {
  RowMode mode;
  unsigned blocks, threads;
};
inline RowGrid rowGrid(int64_t rows, int threadsPerRow) {
  if (threadsPerRow == 1)
    return {RowMode::Thread, gridFor(rows), static_cast<unsigned>(kRowBlockThreads)};
  if (threadsPerRow == kWarpSize) {
    const int64_t perBlock = kRowBlockThreads / kWarpSize;
    return {RowMode::Warp,
            static_cast<unsigned>(std::min(kMaxRowBlocks, (rows + perBlock - 1) / perBlock)),
            static_cast<unsigned>(kRowBlockThreads)};
  }
  return {RowMode::Block, static_cast<unsigned>(std::min(kMaxRowBlocks, rows)),
          static_cast<unsigned>(threadsPerRow)};
}

/// This thread's place in the row loop of mode M: for (row = first(); row < rows; row +=
/// step()), as thread lane() of threads() sharing the row.
template <RowMode M> struct RowSlot {
  __device__ static int threads() {
    return M == RowMode::Thread ? 1 : M == RowMode::Warp ? kWarpSize : static_cast<int>(blockDim.x);
  }
  __device__ static int lane() {
    return M == RowMode::Thread ? 0
           : M == RowMode::Warp ? static_cast<int>(threadIdx.x % kWarpSize)
                                : static_cast<int>(threadIdx.x);
  }
  __device__ static int64_t first() {
    if (M == RowMode::Thread)
      return gridThread();
    if (M == RowMode::Warp)
      return static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    return blockIdx.x;
  }
  __device__ static int64_t step() {
    if (M == RowMode::Thread)
      return gridStride();
    if (M == RowMode::Warp)
      return static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
    return gridDim.x;
  }
};

/// The row loop of a row kernel in mode M: calls body(row, lane, threads) for every row
/// this thread shares (RowSlot's loop), as thread `lane` of the `threads` sharing it.
template <RowMode M, typename Body> __device__ inline void forEachRow(int64_t rows, Body &&body) {
  const int lane = RowSlot<M>::lane(), threads = RowSlot<M>::threads();
  for (int64_t row = RowSlot<M>::first(); row < rows; row += RowSlot<M>::step())
    body(row, lane, threads);
}

__device__ inline double shflXor(double v, int mask) {
  return __shfl_xor_sync(0xFFFFFFFFu, v, mask);
}
__device__ inline float shflXor(float v, int mask) { return __shfl_xor_sync(0xFFFFFFFFu, v, mask); }
__device__ inline int64_t shflXor(int64_t v, int mask) {
  return static_cast<int64_t>(__shfl_xor_sync(0xFFFFFFFFu, static_cast<long long>(v), mask));
}
__device__ inline double shflFirst(double v) { return __shfl_sync(0xFFFFFFFFu, v, 0); }
__device__ inline float shflFirst(float v) { return __shfl_sync(0xFFFFFFFFu, v, 0); }
__device__ inline int64_t shflFirst(int64_t v) {
  return static_cast<int64_t>(__shfl_sync(0xFFFFFFFFu, static_cast<long long>(v), 0));
}

/// Every lane gets lane 0's result of the xor butterfly (RowReduce.h, step 2).
template <typename A, typename Op> __device__ inline A warpAllReduce(A v, Op op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = op(v, shflXor(v, offset));
  return shflFirst(v);
}

/// Combines the partials of the threads sharing a row (RowReduce.h, step 2); every one of
/// them gets the result. `shared`: kWarpSize slots of block shared memory (Block mode; free
/// again when this returns).
template <RowMode M, typename A, typename Op>
__device__ inline A rowAllReduce(A v, Op op, A identity, A *shared) {
  if constexpr (M == RowMode::Thread) {
    return v;
  } else {
    v = warpAllReduce(v, op);
    if constexpr (M == RowMode::Block) {
      const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
      if (lane == 0)
        shared[warp] = v;
      __syncthreads();
      v = lane < static_cast<int>(blockDim.x / kWarpSize) ? shared[lane] : identity;
      v = warpAllReduce(v, op);
      __syncthreads(); // every warp has read `shared` before the next rowAllReduce writes it
    }
    return v;
  }
}

/// Launches kernel<Mode> on `grid`: `launch` is a generic lambda taking a
/// std::integral_constant<RowMode, M> and enqueuing the kernel instantiated for M.
template <typename Launch> inline void launchRowMode(RowMode mode, Launch &&launch) {
  switch (mode) {
  case RowMode::Thread:
    launch(std::integral_constant<RowMode, RowMode::Thread>{});
    break;
  case RowMode::Warp:
    launch(std::integral_constant<RowMode, RowMode::Warp>{});
    break;
  case RowMode::Block:
    launch(std::integral_constant<RowMode, RowMode::Block>{});
    break;
  }
}

/// Enqueues a row kernel over `rows` rows of `threadsPerRow` threads each on `stream`, in the
/// grid of rowGrid: `kernelFor` is a generic lambda taking a std::integral_constant<RowMode, M>
/// and returning the kernel instantiated for M, which is launched with `args`.
template <typename KernelFor, typename... Args>
inline void launchRows(int64_t rows, int threadsPerRow, cudaStream_t stream, KernelFor &&kernelFor,
                       const Args &...args) {
  const RowGrid g = rowGrid(rows, threadsPerRow);
  launchRowMode(g.mode, [&](auto mode) {
    const auto kernel = kernelFor(mode);
    kernel<<<g.blocks, g.threads, 0, stream>>>(args...);
  });
}

/// The float dtypes of the softmax, norm and cross-entropy kernels.
inline constexpr std::initializer_list<base::DType> kRowFloatTypes = {
    base::DType::F32, base::DType::F16, base::DType::BF16, base::DType::F64};
inline bool rowFloatDType(base::DType d) { return dtypeIn(d, kRowFloatTypes); }

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ROWREDUCE_CUH
