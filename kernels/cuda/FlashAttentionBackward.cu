//===- FlashAttentionBackward.cu - Tensor-core attention VJP on the GPU ---===//
//
// See FlashAttentionBackward.h. Shared memory (D = head dimension, T = storage type, tiles of
// 64 rows with the padded strides of FlashTiles.cuh; each warp owns 16 rows of every [64, *]
// buffer it writes):
//   pass 1 (query-parallel): sQ, sdO, sK, sV [64, D] T; sS, sDP [64, 64] f32; sdS [64, 64] T;
//                            sdQ [64, D] f32 (a warp's D, L rows in registers)
//   pass 2 (key-parallel):   sK, sV, sQ, sdO [64, D] T; sST, sDPT [64, 64] f32;
//                            sPT, sdST [64, 64] T; sdK, sdV [64, D] f32; sL, sD [64] f32
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/FlashAttentionBackward.h"

#include "kernels/cuda/FlashTiles.cuh"
#include "kernels/cuda/Launch.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace rp::kernels::cuda {
namespace {

using namespace flash;
using base::DType;

constexpr int kTile = kFlashRows; // 64: rows of a tile, keys of a tile

/// Pass 1, per warp: D_r = sum_d dO_rd O_rd for its 16 query rows (lanes over d), the same in
/// every lane.
template <typename T>
__device__ void warpRowDots(const Params &p, const T *sdO, const T *outRows, float (&d)[kWarpRows],
                            int w, int lane, int64_t m0) {
  const int64_t dim = p.dim, ld = tileStride(dim);
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int64_t qi = m0 + w + r;
    float acc = 0.0f;
    if (qi < p.seq)
      for (int64_t c = lane; c < dim; c += 32)
        acc += toFloat(sdO[(w + r) * ld + c]) * toFloat(outRows[qi * dim + c]);
    d[r] = warpSum(acc);
  }
}

/// Pass 1's first walk, per warp: the running max m and sum l of e^(scale s) over one tile of
/// scores in sS, for its 16 rows (lanes over keys).
__device__ void warpRowLogSumExp(const Params &p, const float *sS, int w, int lane, int64_t m0,
                                 int64_t n0, float (&m)[kWarpRows], float (&l)[kWarpRows]) {
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int64_t qi = m0 + w + r;
    const float *srow = sS + (w + r) * kScoreStride;
    const bool keep0 = keyVisible(qi, n0 + lane, p.seq, p.causal, p.window);
    const bool keep1 = keyVisible(qi, n0 + lane + 32, p.seq, p.causal, p.window);
    const float s0 = keep0 ? cappedScore(p, srow[lane]) : -INFINITY;
    const float s1 = keep1 ? cappedScore(p, srow[lane + 32]) : -INFINITY;
    const float mNew = fmaxf(m[r], warpMax(fmaxf(s0, s1)));
    if (mNew == -INFINITY)
      continue; // nothing visible yet: l stays 0
    const float sum = warpSum(expf(s0 - mNew) + expf(s1 - mNew));
    l[r] = l[r] * expf(m[r] - mNew) + sum;
    m[r] = mNew;
  }
}

/// Pass 1, per warp: dS = P (dP - D) for its 16 query rows of a tile (P from the scores in sS
/// and the rows' log-sum-exp L; with a soft-cap, times the cap's derivative), rounded into sdS.
template <typename T>
__device__ void warpQueryGradScores(const Params &p, const float *sS, const float *sDP,
                                    const float (&lse)[kWarpRows], const float (&d)[kWarpRows],
                                    T *sdS, int w, int lane, int64_t m0, int64_t n0) {
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int row = w + r;
    const int64_t qi = m0 + row;
    for (int c = lane; c < kTile; c += 32) {
      const bool keep = keyVisible(qi, n0 + c, p.seq, p.causal, p.window);
      float slope = 1.0f;
      const float s = cappedScore(p, sS[row * kScoreStride + c], &slope);
      const float prob = keep ? expf(s - lse[r]) : 0.0f;
      sdS[row * kProbStride + c] =
          toStorage<T>(prob * (sDP[row * kScoreStride + c] - d[r]) * slope);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    queryPassKernel(Params p, const T *q, const T *k, const T *v, const T *out, const T *dout,
                    T *dq, float *scratchL, float *scratchD, const T *sinks) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim, ld = tileStride(dim), ldA = accStride(dim);
  const int64_t tile = kTile * ld;
  T *sQ = reinterpret_cast<T *>(smem);
  T *sdO = sQ + tile, *sK = sdO + tile, *sV = sK + tile;
  float *sS = reinterpret_cast<float *>(sV + tile);
  float *sDP = sS + kTile * kScoreStride;
  T *sdS = reinterpret_cast<T *>(sDP + kTile * kScoreStride);
  float *sdQ = reinterpret_cast<float *>(sdS + kTile * kProbStride);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int w = warp * kWarpRows;
  for (int64_t blk = blockIdx.x; blk < p.blocks; blk += gridDim.x) {
    const int64_t mt = blk % p.tilesM, bh = blk / p.tilesM;
    const int64_t b = bh / p.heads, h = bh % p.heads, m0 = mt * kTile;
    const int64_t rows = bh * p.seq * dim;
    const int64_t kv = (b * p.kvHeads + h / p.groups) * p.seq * dim;
    const int64_t keyEnd = p.causal ? (m0 + kTile < p.seq ? m0 + kTile : p.seq) : p.seq;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sQ, q + rows, m0, p.seq, dim);
    loadTile(sdO, dout + rows, m0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < kTile * ldA; i += kThreads)
      sdQ[i] = 0.0f;
    __syncthreads();
    float d[kWarpRows], m[kWarpRows], l[kWarpRows];
    warpRowDots(p, sdO, out + rows, d, w, lane, m0);
    // The sink (when there is one) is each row's first logit: m = sink, l = e^(sink - m) = 1.
    const float sink = sinks ? toFloat<T>(sinks[h]) : -INFINITY;
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      m[r] = sink;
      l[r] = sinks ? 1.0f : 0.0f;
    }
    // walk 1: the log-sum-exp
    for (int64_t n0 = firstKeyTile(p, m0, kTile); n0 < keyEnd; n0 += kTile) {
      __syncthreads();
      loadTile(sK, k + kv, n0, p.seq, dim);
      __syncthreads();
      warpABt(sQ + w * ld, sK, sS + w * kScoreStride, dim);
      __syncwarp();
      warpRowLogSumExp(p, sS, w, lane, m0, n0, m, l);
    }
    float lse[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r)
      lse[r] = l[r] > 0.0f ? m[r] + logf(l[r]) : 0.0f;
    for (int64_t n0 = firstKeyTile(p, m0, kTile); n0 < keyEnd; n0 += kTile) { // walk 2: dQ
      __syncthreads();
      loadTile(sK, k + kv, n0, p.seq, dim);
      loadTile(sV, v + kv, n0, p.seq, dim);
      __syncthreads();
      warpABt(sQ + w * ld, sK, sS + w * kScoreStride, dim);   // S
      warpABt(sdO + w * ld, sV, sDP + w * kScoreStride, dim); // dP = dO V^T
      __syncwarp();
      warpQueryGradScores(p, sS, sDP, lse, d, sdS, w, lane, m0, n0);
      __syncwarp();
      warpAccumulateAB(sdS + w * kProbStride, sK, sdQ + w * ldA, dim); // dQ += dS K
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      const int64_t qi = m0 + w + r;
      if (qi >= p.seq)
        continue;
      for (int64_t c = lane; c < dim; c += 32)
        dq[rows + qi * dim + c] = toStorage<T>(sdQ[(w + r) * ldA + c] * p.scale);
      if (lane == 0) {
        scratchL[bh * p.seq + qi] = lse[r];
        scratchD[bh * p.seq + qi] = d[r];
      }
    }
  }
}

/// The probability of key kj (a row of the transposed tile) for query m0 + c from its raw
/// score in sST, and the soft-cap's derivative there.
__device__ inline float keyProb(const Params &p, const float *sST, const float *sL, int row,
                                int c, int64_t kj, int64_t m0, float *slope) {
  const bool keep = keyVisible(m0 + c, kj, p.seq, p.causal, p.window);
  const float s = cappedScore(p, sST[row * kScoreStride + c], slope);
  return keep ? expf(s - sL[c]) : 0.0f;
}

/// Pass 2, per warp: P^T for its 16 keys against a query tile (lanes over the queries), from
/// the transposed scores in sST (f32), rounded into sPT. Without a soft-cap P replaces the
/// scores in sST; with one the scores stay for warpKeyGradScores' derivative.
template <typename T>
__device__ void warpKeyProbs(const Params &p, float *sST, T *sPT, const float *sL, int w, int lane,
                             int64_t n0, int64_t m0) {
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int row = w + r; // a key of the tile
    const int64_t kj = n0 + row;
    for (int c = lane; c < kTile; c += 32) { // c: a query of the tile
      float slope = 1.0f;
      const float prob = keyProb(p, sST, sL, row, c, kj, m0, &slope);
      if (p.softcap == 0.0f)
        sST[row * kScoreStride + c] = prob;
      sPT[row * kProbStride + c] = toStorage<T>(prob);
    }
  }
}

/// Pass 2, per warp: dS^T = P^T (dP^T - D) for its 16 keys (with a soft-cap, P^T recomputed
/// from the scores and dS^T times the cap's derivative), rounded into sdST.
template <typename T>
__device__ void warpKeyGradScores(const Params &p, const float *sST, const float *sDPT,
                                  const float *sL, const float *sD, T *sdST, int w, int lane,
                                  int64_t n0, int64_t m0) {
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    const int row = w + r;
    for (int c = lane; c < kTile; c += 32) {
      float slope = 1.0f;
      const float prob = p.softcap == 0.0f
                             ? sST[row * kScoreStride + c]
                             : keyProb(p, sST, sL, row, c, n0 + row, m0, &slope);
      sdST[row * kProbStride + c] =
          toStorage<T>(prob * (sDPT[row * kScoreStride + c] - sD[c]) * slope);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    keyPassKernel(Params p, int64_t keyBlocks, const T *q, const T *k, const T *v, const T *dout,
                  const float *scratchL, const float *scratchD, T *dk, T *dv) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim, ld = tileStride(dim), ldA = accStride(dim);
  const int64_t tile = kTile * ld;
  T *sK = reinterpret_cast<T *>(smem);
  T *sV = sK + tile, *sQ = sV + tile, *sdO = sQ + tile;
  float *sST = reinterpret_cast<float *>(sdO + tile);
  float *sDPT = sST + kTile * kScoreStride;
  T *sPT = reinterpret_cast<T *>(sDPT + kTile * kScoreStride);
  T *sdST = sPT + kTile * kProbStride;
  float *sdK = reinterpret_cast<float *>(sdST + kTile * kProbStride);
  float *sdV = sdK + kTile * ldA, *sL = sdV + kTile * ldA, *sD = sL + kTile;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int w = warp * kWarpRows;
  for (int64_t blk = blockIdx.x; blk < keyBlocks; blk += gridDim.x) {
    const int64_t nt = blk % p.tilesM, bhk = blk / p.tilesM;
    const int64_t b = bhk / p.kvHeads, hk = bhk % p.kvHeads, n0 = nt * kTile;
    const int64_t kv = bhk * p.seq * dim;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sK, k + kv, n0, p.seq, dim);
    loadTile(sV, v + kv, n0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < kTile * ldA; i += kThreads)
      sdK[i] = sdV[i] = 0.0f;
    for (int64_t g = 0; g < p.groups; ++g) {
      const int64_t bh = b * p.heads + hk * p.groups + g;
      const int64_t rows = bh * p.seq * dim;
      for (int64_t m0 = p.causal ? n0 : 0; m0 < queryEnd(p, n0, kTile); m0 += kTile) {
        __syncthreads(); // sQ, sdO, sL, sD are free
        loadTile(sQ, q + rows, m0, p.seq, dim);
        loadTile(sdO, dout + rows, m0, p.seq, dim);
        if (threadIdx.x < kTile) {
          const int64_t qi = m0 + threadIdx.x;
          sL[threadIdx.x] = qi < p.seq ? scratchL[bh * p.seq + qi] : 0.0f;
          sD[threadIdx.x] = qi < p.seq ? scratchD[bh * p.seq + qi] : 0.0f;
        }
        __syncthreads();
        warpABt(sK + w * ld, sQ, sST + w * kScoreStride, dim); // S^T = K Q^T
        __syncwarp();
        warpKeyProbs(p, sST, sPT, sL, w, lane, n0, m0);
        __syncwarp();
        warpAccumulateAB(sPT + w * kProbStride, sdO, sdV + w * ldA, dim); // dV += P^T dO
        warpABt(sV + w * ld, sdO, sDPT + w * kScoreStride, dim);          // dP^T = V dO^T
        __syncwarp();
        warpKeyGradScores(p, sST, sDPT, sL, sD, sdST, w, lane, n0, m0);
        __syncwarp();
        warpAccumulateAB(sdST + w * kProbStride, sQ, sdK + w * ldA, dim); // dK += dS^T Q
      }
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
      const int64_t kj = n0 + w + r;
      if (kj < p.seq)
        for (int64_t c = lane; c < dim; c += 32) {
          dk[kv + kj * dim + c] = toStorage<T>(sdK[(w + r) * ldA + c] * p.scale);
          dv[kv + kj * dim + c] = toStorage<T>(sdV[(w + r) * ldA + c]);
        }
    }
  }
}

template <typename T>
cudaError_t launchTyped(const AttentionPlan &plan, const void *q, const void *k, const void *v,
                        const void *out, const void *dout, void *dq, void *dk, void *dv,
                        void *scratch, const void *sinks, cudaStream_t stream) {
  const Params p = paramsOf(plan);
  float *scratchL = static_cast<float *>(scratch);
  float *scratchD = scratchL + plan.batch * plan.heads * plan.seq;
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  const size_t shared1 = flashBackwardQuerySharedBytes(plan.dim);
  const auto pass1 = queryPassKernel<T>;
  if (const cudaError_t e = allowSharedBytes(pass1, shared1); e != cudaSuccess)
    return e;
  pass1<<<static_cast<unsigned>(p.blocks < kMaxBlocks ? p.blocks : kMaxBlocks), kThreads, shared1,
          stream>>>(p, static_cast<const T *>(q), static_cast<const T *>(k),
                    static_cast<const T *>(v), static_cast<const T *>(out),
                    static_cast<const T *>(dout), static_cast<T *>(dq), scratchL, scratchD,
                    static_cast<const T *>(sinks));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return e;
  const size_t shared2 = flashBackwardKeySharedBytes(plan.dim);
  const auto pass2 = keyPassKernel<T>;
  if (const cudaError_t e = allowSharedBytes(pass2, shared2); e != cudaSuccess)
    return e;
  const int64_t keyBlocks = plan.batch * plan.kvHeads * p.tilesM;
  pass2<<<static_cast<unsigned>(keyBlocks < kMaxBlocks ? keyBlocks : kMaxBlocks), kThreads,
          shared2, stream>>>(p, keyBlocks, static_cast<const T *>(q), static_cast<const T *>(k),
                             static_cast<const T *>(v), static_cast<const T *>(dout), scratchL,
                             scratchD, static_cast<T *>(dk), static_cast<T *>(dv));
  return cudaGetLastError();
}

} // namespace

size_t flashAttentionBackwardScratchBytes(const AttentionPlan &plan) {
  return static_cast<size_t>(2 * plan.batch * plan.heads * plan.seq) * sizeof(float);
}

size_t flashBackwardQuerySharedBytes(int64_t dim) {
  const auto rows = static_cast<size_t>(kTile);
  return rows * static_cast<size_t>(tileStride(dim)) * 2 * 4  // sQ, sdO, sK, sV
         + rows * kScoreStride * 4 * 2 + rows * kProbStride * 2 // sS, sDP, sdS
         + rows * static_cast<size_t>(accStride(dim)) * 4;      // sdQ
}

size_t flashBackwardKeySharedBytes(int64_t dim) {
  const auto rows = static_cast<size_t>(kTile);
  return rows * static_cast<size_t>(tileStride(dim)) * 2 * 4      // sK, sV, sQ, sdO
         + rows * kScoreStride * 4 * 2 + rows * kProbStride * 2 * 2 // sST, sDPT, sPT, sdST
         + rows * static_cast<size_t>(accStride(dim)) * 4 * 2       // sdK, sdV
         + rows * 2 * 4;                                            // sL, sD
}

cudaError_t launchFlashAttentionBackward(const AttentionPlan &plan, const void *q, const void *k,
                                         const void *v, const void *out, const void *dout,
                                         void *dq, void *dk, void *dv, void *scratch,
                                         cudaStream_t stream, const void *sinks) {
  if (!flashAttentionFits(plan) ||
      !usablePointers(16, q, k, v, out, dout, static_cast<const void *>(dq),
                      static_cast<const void *>(dk), static_cast<const void *>(dv)))
    return cudaErrorNotSupported;
  bool fits = false;
  const size_t shared =
      std::max(flashBackwardQuerySharedBytes(plan.dim), flashBackwardKeySharedBytes(plan.dim));
  if (const cudaError_t e = flash::deviceFits(shared, &fits); e != cudaSuccess)
    return e;
  if (!fits)
    return cudaErrorNotSupported;
  if (plan.rows == 0 || plan.dim == 0)
    return cudaSuccess;
  if (!usablePointer(scratch, sizeof(float)))
    return cudaErrorInvalidValue;
  return plan.dtype == DType::BF16
             ? launchTyped<__nv_bfloat16>(plan, q, k, v, out, dout, dq, dk, dv, scratch, sinks,
                                          stream)
             : launchTyped<__half>(plan, q, k, v, out, dout, dq, dk, dv, scratch, sinks, stream);
}

} // namespace rp::kernels::cuda
