//===- FlashAttention.cu - Tensor-core attention forward on the GPU -------===//
//
// See FlashAttention.h. Shared memory of a block (D = head dimension, T = storage type; row
// strides padded as FlashTiles.cuh says):
//   sQ  [64, D] T      the block's query rows (zero past S)
//   sKV [64, D] T      the current key tile, then the same tile's values
//   sS  [64, 64] f32   scores (each warp its 16 rows)
//   sP  [64, 64] T     probabilities
//   sO  [64, D] f32    output accumulators
// The running max and sum of a warp's 16 rows live in registers, the same in every lane.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/FlashAttention.h"

#include "kernels/cuda/FlashTiles.cuh"
#include "kernels/cuda/Launch.cuh"

#include <cmath>
#include <cstdint>

namespace rp::kernels::cuda {
namespace {

using namespace flash;
using base::DType;

using FlashParams = Params;

/// One warp's online-softmax step over its 16 rows of the tile at key n0 (the lanes on the
/// keys lane and lane + 32): P into sP, the running max m and sum l (the same in every lane),
/// the rows of O rescaled by e^(m - m').
template <typename T>
__device__ void warpSoftmax(const FlashParams &p, float *sS, T *sP, float *sO, float (&m)[kWarpRows],
                            float (&l)[kWarpRows], int warp, int lane, int64_t m0, int64_t n0) {
  const int64_t ldO = accStride(p.dim);
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int row = warp * kWarpRows + r;
    const int64_t qi = m0 + row;
    const float *srow = sS + row * kScoreStride;
    const bool keep0 = keyVisible(qi, n0 + lane, p.seq, p.causal, p.window);
    const bool keep1 = keyVisible(qi, n0 + lane + 32, p.seq, p.causal, p.window);
    const float s0 = keep0 ? cappedScore(p, srow[lane]) : -INFINITY;
    const float s1 = keep1 ? cappedScore(p, srow[lane + 32]) : -INFINITY;
    const float mNew = fmaxf(m[r], warpMax(fmaxf(s0, s1)));
    const float e0 = mNew == -INFINITY ? 0.0f : expf(s0 - mNew);
    const float e1 = mNew == -INFINITY ? 0.0f : expf(s1 - mNew);
    sP[row * kProbStride + lane] = toStorage<T>(e0);
    sP[row * kProbStride + lane + 32] = toStorage<T>(e1);
    const float corr = mNew == -INFINITY ? 1.0f : expf(m[r] - mNew);
    l[r] = l[r] * corr + warpSum(e0 + e1);
    m[r] = mNew;
    for (int64_t c = lane; c < p.dim; c += 32)
      sO[row * ldO + c] *= corr;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    flashAttentionKernel(FlashParams p, const T *q, const T *k, const T *v, T *out,
                         const T *sinks) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim, ld = tileStride(dim), ldO = accStride(dim);
  T *sQ = reinterpret_cast<T *>(smem);
  T *sKV = sQ + kFlashRows * ld;
  float *sS = reinterpret_cast<float *>(sKV + kFlashRows * ld);
  T *sP = reinterpret_cast<T *>(sS + kFlashRows * kScoreStride);
  float *sO = reinterpret_cast<float *>(sP + kFlashRows * kProbStride);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int w = warp * kWarpRows;
  for (int64_t blk = blockIdx.x; blk < p.blocks; blk += gridDim.x) {
    const int64_t mt = blk % p.tilesM, bh = blk / p.tilesM;
    const int64_t b = bh / p.heads, h = bh % p.heads;
    const int64_t m0 = mt * kFlashRows;
    const T *qb = q + bh * p.seq * dim;
    const int64_t kvOffset = (b * p.kvHeads + h / p.groups) * p.seq * dim;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sQ, qb, m0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < kFlashRows * ldO; i += kThreads)
      sO[i] = 0.0f;
    // The sink (when there is one) is each row's first logit: m = sink, l = e^(sink - m) = 1.
    const float sink = sinks ? toFloat<T>(sinks[h]) : -INFINITY;
    float m[kWarpRows], l[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      m[r] = sink;
      l[r] = sinks ? 1.0f : 0.0f;
    }
    const int64_t keyEnd = p.causal ? (m0 + kFlashRows < p.seq ? m0 + kFlashRows : p.seq) : p.seq;
    for (int64_t n0 = firstKeyTile(p, m0, kFlashKeys); n0 < keyEnd; n0 += kFlashKeys) {
      __syncthreads(); // sKV is free (the previous tile's P V is done)
      loadTile(sKV, k + kvOffset, n0, p.seq, dim);
      __syncthreads();
      warpABt(sQ + w * ld, sKV, sS + w * kScoreStride, dim);
      __syncwarp();
      warpSoftmax(p, sS, sP, sO, m, l, warp, lane, m0, n0);
      __syncthreads(); // every warp is done with the keys
      loadTile(sKV, v + kvOffset, n0, p.seq, dim);
      __syncthreads();
      warpAccumulateAB(sP + w * kProbStride, sKV, sO + w * ldO, dim);
    }
    __syncwarp();
    T *ob = out + bh * p.seq * dim;
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      const int64_t qi = m0 + w + r;
      if (qi < p.seq)
        for (int64_t c = lane; c < dim; c += 32)
          ob[qi * dim + c] = toStorage<T>(sO[(w + r) * ldO + c] / l[r]);
    }
  }
}

template <typename T>
cudaError_t launchTyped(const FlashParams &params, const void *q, const void *k, const void *v,
                        void *out, const void *sinks, size_t shared, cudaStream_t stream) {
  const auto kernel = flashAttentionKernel<T>;
  if (const cudaError_t e = allowSharedBytes(kernel, shared); e != cudaSuccess)
    return e;
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  const auto blocks = static_cast<unsigned>(params.blocks < kMaxBlocks ? params.blocks : kMaxBlocks);
  kernel<<<blocks, kThreads, shared, stream>>>(params, static_cast<const T *>(q),
                                              static_cast<const T *>(k),
                                              static_cast<const T *>(v), static_cast<T *>(out),
                                              static_cast<const T *>(sinks));
  return cudaGetLastError();
}

} // namespace

bool flashAttentionFits(const AttentionPlan &plan) {
  return (plan.dtype == DType::BF16 || plan.dtype == DType::F16) && plan.dim >= 16 &&
         plan.dim <= kFlashMaxDim && plan.dim % 16 == 0 && plan.valueDim == plan.dim;
}

size_t flashAttentionSharedBytes(int64_t dim) {
  const auto rows = static_cast<size_t>(kFlashRows);
  return rows * static_cast<size_t>(tileStride(dim)) * 2 * 2 // sQ, sKV
         + rows * kScoreStride * 4 + rows * kProbStride * 2  // sS, sP
         + rows * static_cast<size_t>(accStride(dim)) * 4;   // sO
}

cudaError_t launchFlashAttention(const AttentionPlan &plan, const void *q, const void *k,
                                 const void *v, void *out, cudaStream_t stream,
                                 const void *sinks) {
  if (!flashAttentionFits(plan) || !usablePointers(16, q, k, v, static_cast<const void *>(out)))
    return cudaErrorNotSupported;
  const size_t shared = flashAttentionSharedBytes(plan.dim);
  bool fits = false;
  if (const cudaError_t e = deviceFits(shared, &fits); e != cudaSuccess)
    return e;
  if (!fits)
    return cudaErrorNotSupported;
  if (plan.rows == 0 || plan.dim == 0)
    return cudaSuccess;
  const FlashParams params = paramsOf(plan);
  return plan.dtype == DType::BF16
             ? launchTyped<__nv_bfloat16>(params, q, k, v, out, sinks, shared, stream)
             : launchTyped<__half>(params, q, k, v, out, sinks, shared, stream);
}

} // namespace rp::kernels::cuda
