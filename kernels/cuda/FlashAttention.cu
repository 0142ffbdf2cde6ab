//===- FlashAttention.cu - Tensor-core attention forward on the GPU -------===//
//
// See FlashAttention.h. Shared memory of a block (D = head dimension, T = storage type):
//   sQ  [64, D] T      the block's query rows (zero past S)
//   sKV [64, D] T      the current key tile, then the same tile's values
//   sS  [64, 64] f32   scores (each warp its 16 rows)
//   sP  [64, 64] T     probabilities
//   sO  [64, D] f32    output accumulators
//   sM, sL [64] f32    running max and sum per row
// Every WMMA pointer is 32-byte aligned: rows of D (a multiple of 16) 16-bit values or of 64
// floats, fragments at multiples of 16 rows and columns.
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
using runtime::DType;

using FlashParams = Params;

/// One warp's online-softmax step over its 16 rows of the tile at key n0: lane pair (2r, 2r+1)
/// owns row r, 32 keys each. Writes P, updates m and l, rescales the row's O by e^(m - m').
template <typename T>
__device__ void warpSoftmax(const FlashParams &p, float *sS, T *sP, float *sO, float *sM,
                            float *sL, int warp, int lane, int64_t m0, int64_t n0) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r;
  const int64_t qi = m0 + row;
  float *srow = sS + row * kFlashKeys + half * 32;
  T *prow = sP + row * kFlashKeys + half * 32;
  float mx = -INFINITY;
  for (int c = 0; c < 32; ++c) {
    const int64_t kj = n0 + half * 32 + c;
    const bool keep = keyVisible(qi, kj, p.seq, p.causal);
    const float s = keep ? srow[c] * p.scale : -INFINITY;
    srow[c] = s;
    mx = fmaxf(mx, s);
  }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  const float mOld = sM[row];
  const float mNew = fmaxf(mOld, mx);
  float sum = 0.0f;
  for (int c = 0; c < 32; ++c) {
    const float e = mNew == -INFINITY ? 0.0f : expf(srow[c] - mNew);
    prow[c] = toStorage<T>(e);
    sum += e;
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  const float corr = mNew == -INFINITY ? 1.0f : expf(mOld - mNew);
  __syncwarp(); // both lanes of the pair have read sM[row]
  if (half == 0) {
    sM[row] = mNew;
    sL[row] = sL[row] * corr + sum;
  }
  float *orow = sO + row * p.dim + half * (p.dim / 2);
  for (int64_t c = 0; c < p.dim / 2; ++c)
    orow[c] *= corr;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    flashAttentionKernel(FlashParams p, const T *q, const T *k, const T *v, T *out) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim;
  T *sQ = reinterpret_cast<T *>(smem);
  T *sKV = sQ + kFlashRows * dim;
  float *sS = reinterpret_cast<float *>(sKV + kFlashRows * dim);
  T *sP = reinterpret_cast<T *>(sS + kFlashRows * kFlashKeys);
  float *sO = reinterpret_cast<float *>(sP + kFlashRows * kFlashKeys);
  float *sM = sO + kFlashRows * dim;
  float *sL = sM + kFlashRows;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t blk = blockIdx.x; blk < p.blocks; blk += gridDim.x) {
    const int64_t mt = blk % p.tilesM, bh = blk / p.tilesM;
    const int64_t b = bh / p.heads, h = bh % p.heads;
    const int64_t m0 = mt * kFlashRows;
    const T *qb = q + bh * p.seq * dim;
    const int64_t kvOffset = (b * p.kvHeads + h / p.groups) * p.seq * dim;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sQ, qb, m0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < kFlashRows * dim; i += kThreads)
      sO[i] = 0.0f;
    if (threadIdx.x < kFlashRows) {
      sM[threadIdx.x] = -INFINITY;
      sL[threadIdx.x] = 0.0f;
    }
    const int64_t keyEnd = p.causal ? (m0 + kFlashRows < p.seq ? m0 + kFlashRows : p.seq) : p.seq;
    for (int64_t n0 = 0; n0 < keyEnd; n0 += kFlashKeys) {
      __syncthreads(); // sKV is free (the previous tile's P V is done)
      loadTile(sKV, k + kvOffset, n0, p.seq, dim);
      __syncthreads();
      warpABt(sQ + warp * kWarpRows * dim, sKV, sS + warp * kWarpRows * kFlashKeys, dim);
      __syncwarp();
      warpSoftmax(p, sS, sP, sO, sM, sL, warp, lane, m0, n0);
      __syncthreads(); // every warp is done with the keys
      loadTile(sKV, v + kvOffset, n0, p.seq, dim);
      __syncthreads();
      warpAccumulateAB(sP + warp * kWarpRows * kFlashKeys, sKV, sO + warp * kWarpRows * dim,
                       dim);
    }
    __syncwarp();
    T *ob = out + bh * p.seq * dim;
    for (int64_t i = lane; i < kWarpRows * dim; i += 32) {
      const int64_t r = i / dim, c = i - r * dim;
      const int64_t row = warp * kWarpRows + r, qi = m0 + row;
      if (qi < p.seq)
        ob[qi * dim + c] = toStorage<T>(sO[row * dim + c] / sL[row]);
    }
  }
}

template <typename T>
cudaError_t launchTyped(const FlashParams &params, const void *q, const void *k, const void *v,
                        void *out, size_t shared, cudaStream_t stream) {
  const auto kernel = flashAttentionKernel<T>;
  if (const cudaError_t e = allowSharedBytes(kernel, shared); e != cudaSuccess)
    return e;
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  const auto blocks = static_cast<unsigned>(params.blocks < kMaxBlocks ? params.blocks : kMaxBlocks);
  kernel<<<blocks, kThreads, shared, stream>>>(params, static_cast<const T *>(q),
                                              static_cast<const T *>(k),
                                              static_cast<const T *>(v), static_cast<T *>(out));
  return cudaGetLastError();
}

} // namespace

bool flashAttentionFits(const AttentionPlan &plan) {
  return (plan.dtype == DType::BF16 || plan.dtype == DType::F16) && plan.dim >= 16 &&
         plan.dim <= kFlashMaxDim && plan.dim % 16 == 0;
}

size_t flashAttentionSharedBytes(int64_t dim) {
  const auto d = static_cast<size_t>(dim);
  return kFlashRows * d * 2 * 2                 // sQ, sKV
         + kFlashRows * kFlashKeys * (4 + 2)    // sS, sP
         + kFlashRows * d * 4                   // sO
         + kFlashRows * 2 * 4;                  // sM, sL
}

cudaError_t launchFlashAttention(const AttentionPlan &plan, const void *q, const void *k,
                                 const void *v, void *out, cudaStream_t stream) {
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
             ? launchTyped<__nv_bfloat16>(params, q, k, v, out, shared, stream)
             : launchTyped<__half>(params, q, k, v, out, shared, stream);
}

} // namespace rp::kernels::cuda
