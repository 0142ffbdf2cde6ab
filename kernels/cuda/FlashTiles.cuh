//===- FlashTiles.cuh - Tiles and WMMA steps of the flash attention kernels -*- C++ -*-===//
//
// What the tensor-core attention forward (FlashAttention.cu) and backward
// (FlashAttentionBackward.cu) share: tiles of 64 rows copied into shared memory in 16-byte
// vectors, padded row strides, the storage conversions, warp reductions and the
// 16-row-per-warp WMMA products. D is a multiple of 16; every fragment pointer is 32-byte
// aligned. Element-wise work walks a row with the lanes on consecutive columns, so a warp's
// shared-memory accesses do not conflict.
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
  int64_t window; ///< sliding window (>= 1, causal) or 0
  float softcap;  ///< logit soft-cap (> 0) or 0
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
  p.window = plan.window;
  p.softcap = static_cast<float>(plan.softcap);
  return p;
}

/// The scaled score s = raw * scale after the soft-cap: softcap tanh(s / softcap), or s
/// without one; `slope` (when not null) receives the cap's derivative 1 - tanh^2(s / softcap)
/// (1 without one).
__device__ inline float cappedScore(const Params &p, float raw, float *slope = nullptr) {
  const float s = raw * p.scale;
  if (p.softcap == 0.0f) {
    if (slope)
      *slope = 1.0f;
    return s;
  }
  const float t = tanhf(s / p.softcap);
  if (slope)
    *slope = 1.0f - t * t;
  return p.softcap * t;
}

/// Row strides of the shared-memory tiles, padded so that the rows of a WMMA fragment, and the
/// lanes of a warp walking a column, fall in different banks: [64, D] 16-bit tiles take D + 8
/// elements (272 bytes at D = 128), [64, D] float accumulators D + 4 floats, [64, 64] float
/// scores 68 floats, [64, 64] 16-bit probabilities 72 elements. Every stride keeps the 16-row
/// fragments 32-byte aligned, as WMMA needs.
__host__ __device__ inline int64_t tileStride(int64_t dim) { return dim + 8; }
__host__ __device__ inline int64_t accStride(int64_t dim) { return dim + 4; }
inline constexpr int64_t kScoreStride = kFlashKeys + 4;
inline constexpr int64_t kProbStride = kFlashKeys + 8;

/// Copies rows [r0, r0 + 64) of a [seq, dim] row-major matrix into `dst` (row stride
/// tileStride(dim)) in 16-byte vectors, zeros for rows at or past `seq`. Called by every
/// thread of the block.
template <typename T>
__device__ inline void loadTile(T *dst, const T *src, int64_t r0, int64_t seq, int64_t dim) {
  const int perRow = static_cast<int>(dim / 8); // 8 16-bit values per 16-byte vector
  const int vectors = kFlashRows * perRow;
  const int64_t ld = tileStride(dim);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int i = static_cast<int>(threadIdx.x); i < vectors; i += kThreads) {
    const int r = i / perRow, c = i - r * perRow;
    const int64_t row = r0 + r;
    reinterpret_cast<uint4 *>(dst + r * ld)[c] =
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

/// The largest and the sum of x over the warp's lanes, in every lane (a fixed butterfly).
__device__ inline float warpMax(float x) {
  for (int o = 16; o > 0; o /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ inline float warpSum(float x) {
  for (int o = 16; o > 0; o /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

/// out (16 x 64 floats, row stride kScoreStride) = A (16 x dim) B^T, B being 64 rows of dim;
/// A and B with row stride tileStride(dim): a warp's scores against a tile of 64 rows.
template <typename T>
__device__ inline void warpABt(const T *a, const T *b, float *out, int64_t dim) {
  const auto ld = static_cast<unsigned>(tileStride(dim));
  for (int nf = 0; nf < kFlashKeys / 16; ++nf) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int64_t kk = 0; kk < dim / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb; // B^T
      wmma::load_matrix_sync(fa, a + kk * 16, ld);
      wmma::load_matrix_sync(fb, b + nf * 16 * ld + kk * 16, ld);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + nf * 16, acc, kScoreStride, wmma::mem_row_major);
  }
}

/// acc (16 x dim floats, row stride accStride(dim)) += A (16 x 64, row stride kProbStride) B,
/// B being 64 rows of dim (row stride tileStride(dim)).
template <typename T>
__device__ inline void warpAccumulateAB(const T *a, const T *b, float *acc, int64_t dim) {
  const auto ldb = static_cast<unsigned>(tileStride(dim));
  const auto ldc = static_cast<unsigned>(accStride(dim));
  for (int64_t df = 0; df < dim / 16; ++df) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(c, acc + df * 16, ldc, wmma::mem_row_major);
    for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
      wmma::load_matrix_sync(fa, a + kk * 16, kProbStride);
      wmma::load_matrix_sync(fb, b + kk * 16 * ldb + df * 16, ldb);
      wmma::mma_sync(c, fa, fb, c);
    }
    wmma::store_matrix_sync(acc + df * 16, c, ldc, wmma::mem_row_major);
  }
}

/// Whether key `kj` takes part in query `qi`'s softmax (with a sliding `window` >= 1, only
/// the keys qi - window < kj <= qi).
__device__ inline bool keyVisible(int64_t qi, int64_t kj, int64_t seq, bool causal,
                                  int64_t window = 0) {
  return kj < seq && qi < seq && (!causal || kj <= qi) && (window == 0 || qi - kj < window);
}

/// The first key tile (a multiple of `tile`) that query rows from m0 on see: the tile of key
/// m0 - window + 1 with a sliding window, 0 without one (the tiles before are wholly masked).
__host__ __device__ inline int64_t firstKeyTile(const Params &p, int64_t m0, int64_t tile) {
  const int64_t first = p.causal && p.window > 0 ? m0 - p.window + 1 : 0;
  return first > 0 ? first / tile * tile : 0;
}

/// One past the last query that key tile n0 (of `tile` keys) is seen by: with a sliding window
/// n0 + tile - 1 + window (at most seq), seq without one.
__host__ __device__ inline int64_t queryEnd(const Params &p, int64_t n0, int64_t tile) {
  const int64_t end = p.causal && p.window > 0 ? n0 + tile - 1 + p.window : p.seq;
  return end < p.seq ? end : p.seq;
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
