//===- FlashTiles.cuh - Tiles and WMMA steps of the flash attention kernels -*- C++ -*-===//
//
// What the tensor-core attention forward (FlashAttention.cu) and backward
// (FlashAttentionBackward.cu) share: tiles of 64 rows copied into shared memory in 16-byte
// vectors, the storage conversions, and the 16-row-per-warp WMMA products. Row-major
// [rows, D] tiles of 16-bit values, D a multiple of 16; every fragment pointer 32-byte aligned.
// For .cu files only.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_FLASHTILES_CUH
#define RP_KERNELS_CUDA_FLASHTILES_CUH

#include "kernels/cuda/FlashAttention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

namespace rp::kernels::cuda::flash {

namespace wmma = nvcuda::wmma;

inline constexpr int kWarps = 4;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kWarpRows = 16; ///< one WMMA row block per warp
static_assert(kFlashRows == kWarps * kWarpRows && kFlashKeys == kFlashRows,
              "a block owns 64 rows, 16 per warp, and tiles are square");

/// The kernels' view of an AttentionPlan (by value into the kernels).
struct Params {
  int64_t heads, kvHeads, groups, seq, dim, tilesM, blocks;
  float scale;
  bool causal;
};

/// Params of `plan`; blocks = B * Hq * tilesM (one per 64 query rows of a head).
inline Params paramsOf(const AttentionPlan &plan) {
  Params p;
  p.heads = plan.heads;
  p.kvHeads = plan.kvHeads;
  p.groups = plan.groups;
  p.seq = plan.seq;
  p.dim = plan.dim;
  p.tilesM = (plan.seq + kFlashRows - 1) / kFlashRows;
  p.blocks = plan.batch * plan.heads * p.tilesM;
  p.scale = static_cast<float>(plan.scale);
  p.causal = plan.causal;
  return p;
}

/// Copies rows [r0, r0 + 64) of a [seq, dim] row-major matrix into `dst` in 16-byte vectors,
/// zeros for rows at or past `seq`. Called by every thread of the block.
template <typename T>
__device__ inline void loadTile(T *dst, const T *src, int64_t r0, int64_t seq, int64_t dim) {
  const int64_t perRow = dim / 8; // 8 16-bit values per 16-byte vector
  const int64_t vectors = kFlashRows * perRow;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t i = threadIdx.x; i < vectors; i += kThreads) {
    const int64_t r = i / perRow, c = i - r * perRow;
    const int64_t row = r0 + r;
    reinterpret_cast<uint4 *>(dst)[i] =
        row < seq ? reinterpret_cast<const uint4 *>(src + row * dim)[c] : zero;
  }
}

template <typename T> __device__ inline T toStorage(float x);
template <> __device__ inline __nv_bfloat16 toStorage<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ inline __half toStorage<__half>(float x) { return __float2half_rn(x); }
template <typename T> __device__ inline float toFloat(T x);
template <> __device__ inline float toFloat<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <> __device__ inline float toFloat<__half>(__half x) { return __half2float(x); }

/// out (16 x 64 floats, row stride 64) = A (16 x dim, row stride dim) B^T, B being 64 rows of
/// dim (row stride dim): the warp's scores against a tile of 64 rows.
template <typename T>
__device__ inline void warpABt(const T *a, const T *b, float *out, int64_t dim) {
  for (int nf = 0; nf < kFlashKeys / 16; ++nf) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int64_t kk = 0; kk < dim / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb; // B^T
      wmma::load_matrix_sync(fa, a + kk * 16, static_cast<unsigned>(dim));
      wmma::load_matrix_sync(fb, b + nf * 16 * dim + kk * 16, static_cast<unsigned>(dim));
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + nf * 16, acc, kFlashKeys, wmma::mem_row_major);
  }
}

/// acc (16 x dim floats, row stride dim) += A (16 x 64, row stride 64) B, B being 64 rows of
/// dim (row stride dim).
template <typename T>
__device__ inline void warpAccumulateAB(const T *a, const T *b, float *acc, int64_t dim) {
  for (int64_t df = 0; df < dim / 16; ++df) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(c, acc + df * 16, static_cast<unsigned>(dim), wmma::mem_row_major);
    for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
      wmma::load_matrix_sync(fa, a + kk * 16, kFlashKeys);
      wmma::load_matrix_sync(fb, b + kk * 16 * dim + df * 16, static_cast<unsigned>(dim));
      wmma::mma_sync(c, fa, fb, c);
    }
    wmma::store_matrix_sync(acc + df * 16, c, static_cast<unsigned>(dim), wmma::mem_row_major);
  }
}

/// Whether key `kj` takes part in query `qi`'s softmax.
__device__ inline bool keyVisible(int64_t qi, int64_t kj, int64_t seq, bool causal) {
  return kj < seq && qi < seq && (!causal || kj <= qi);
}

/// Sets the largest dynamic shared memory of `kernel` when over the 48 KiB default.
template <typename K> inline cudaError_t allowSharedBytes(K kernel, size_t bytes) {
  if (bytes <= 48 * 1024)
    return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

/// cudaSuccess and *fits when the current device gives a block `bytes` of shared memory.
inline cudaError_t deviceFits(size_t bytes, bool *fits) {
  int device = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  *fits = e == cudaSuccess && bytes <= static_cast<size_t>(optin);
  return e;
}

} // namespace rp::kernels::cuda::flash

#endif // RP_KERNELS_CUDA_FLASHTILES_CUH
