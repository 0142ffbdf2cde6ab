//===- FlashAttentionBackward.cu - Tensor-core attention VJP on the GPU ---===//
//
// See FlashAttentionBackward.h. Shared memory (D = head dimension, T = storage type, tiles of
// 64 rows; each warp owns 16 rows of every [64, *] buffer it writes):
//   pass 1 (query-parallel): sQ, sdO, sK, sV [64, D] T; sS, sDP [64, 64] f32; sdS [64, 64] T;
//                            sdQ [64, D] f32; sL, sD [64] f32
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
using runtime::DType;

constexpr int kTile = kFlashRows; // 64: rows of a tile, keys of a tile
constexpr size_t kSquare = static_cast<size_t>(kTile) * kTile;

/// D_i = sum_d dO_id O_id for the warp's 16 rows (lane pair per row), into sD.
template <typename T>
__device__ void warpRowDots(const Params &p, const T *sdO, const T *outRows, float *sD, int warp,
                            int lane, int64_t m0) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r;
  const int64_t dim = p.dim, qi = m0 + row;
  float acc = 0.0f;
  if (qi < p.seq)
    for (int64_t c = half * (dim / 2); c < (half + 1) * (dim / 2); ++c)
      acc += toFloat(sdO[row * dim + c]) * toFloat(outRows[qi * dim + c]);
  acc += __shfl_xor_sync(0xffffffffu, acc, 1);
  if (half == 0)
    sD[row] = acc;
}

/// Pass 1's first walk, for the warp's rows: the running max and sum of exp over one tile of
/// scores in sS (lane pair per row), kept in m and l (this lane's copies).
__device__ void warpRowLogSumExp(const Params &p, const float *sS, int warp, int lane,
                                 int64_t m0, int64_t n0, float &m, float &l) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r;
  const int64_t qi = m0 + row;
  const float *srow = sS + row * kTile + half * 32;
  float mx = -INFINITY;
  for (int c = 0; c < 32; ++c)
    if (keyVisible(qi, n0 + half * 32 + c, p.seq, p.causal))
      mx = fmaxf(mx, srow[c] * p.scale);
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  const float mNew = fmaxf(m, mx);
  float sum = 0.0f;
  for (int c = 0; c < 32; ++c)
    if (keyVisible(qi, n0 + half * 32 + c, p.seq, p.causal))
      sum += expf(srow[c] * p.scale - mNew);
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  l = mNew == -INFINITY ? 0.0f : l * expf(m - mNew) + sum;
  m = mNew;
}

/// dS = P (dP - D) for the warp's 16 query rows of a tile (P recomputed from the scores in sS
/// and the row's log-sum-exp), rounded into sdS.
template <typename T>
__device__ void warpQueryGradScores(const Params &p, const float *sS, const float *sDP,
                                    const float *sL, const float *sD, T *sdS, int warp, int lane,
                                    int64_t m0, int64_t n0) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r;
  const int64_t qi = m0 + row;
  for (int c = half * 32; c < half * 32 + 32; ++c) {
    const bool keep = keyVisible(qi, n0 + c, p.seq, p.causal);
    const float prob = keep ? expf(sS[row * kTile + c] * p.scale - sL[row]) : 0.0f;
    sdS[row * kTile + c] = toStorage<T>(prob * (sDP[row * kTile + c] - sD[row]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    queryPassKernel(Params p, const T *q, const T *k, const T *v, const T *out, const T *dout,
                    T *dq, float *scratchL, float *scratchD) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim;
  const size_t tile = static_cast<size_t>(kTile) * dim;
  T *sQ = reinterpret_cast<T *>(smem);
  T *sdO = sQ + tile, *sK = sdO + tile, *sV = sK + tile;
  float *sS = reinterpret_cast<float *>(sV + tile);
  float *sDP = sS + kSquare;
  T *sdS = reinterpret_cast<T *>(sDP + kSquare);
  float *sdQ = reinterpret_cast<float *>(sdS + kSquare);
  float *sL = sdQ + tile, *sD = sL + kTile;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int r = lane >> 1, half = lane & 1;
  for (int64_t blk = blockIdx.x; blk < p.blocks; blk += gridDim.x) {
    const int64_t mt = blk % p.tilesM, bh = blk / p.tilesM;
    const int64_t b = bh / p.heads, h = bh % p.heads, m0 = mt * kTile;
    const int64_t rows = bh * p.seq * dim;
    const int64_t kv = (b * p.kvHeads + h / p.groups) * p.seq * dim;
    const int64_t keyEnd = p.causal ? (m0 + kTile < p.seq ? m0 + kTile : p.seq) : p.seq;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sQ, q + rows, m0, p.seq, dim);
    loadTile(sdO, dout + rows, m0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < static_cast<int64_t>(tile); i += kThreads)
      sdQ[i] = 0.0f;
    __syncthreads();
    warpRowDots(p, sdO, out + rows, sD, warp, lane, m0);
    float m = -INFINITY, l = 0.0f;
    for (int64_t n0 = 0; n0 < keyEnd; n0 += kTile) { // walk 1: the log-sum-exp
      __syncthreads();
      loadTile(sK, k + kv, n0, p.seq, dim);
      __syncthreads();
      warpABt(sQ + warp * kWarpRows * dim, sK, sS + warp * kWarpRows * kTile, dim);
      __syncwarp();
      warpRowLogSumExp(p, sS, warp, lane, m0, n0, m, l);
    }
    if (half == 0)
      sL[warp * kWarpRows + r] = l > 0.0f ? m + logf(l) : 0.0f;
    for (int64_t n0 = 0; n0 < keyEnd; n0 += kTile) { // walk 2: dQ
      __syncthreads();
      loadTile(sK, k + kv, n0, p.seq, dim);
      loadTile(sV, v + kv, n0, p.seq, dim);
      __syncthreads();
      const int64_t w = warp * kWarpRows;
      warpABt(sQ + w * dim, sK, sS + w * kTile, dim);   // S
      warpABt(sdO + w * dim, sV, sDP + w * kTile, dim); // dP = dO V^T
      __syncwarp();
      warpQueryGradScores(p, sS, sDP, sL, sD, sdS, warp, lane, m0, n0);
      __syncwarp();
      warpAccumulateAB(sdS + w * kTile, sK, sdQ + w * dim, dim); // dQ += dS K
    }
    __syncwarp();
    for (int64_t i = lane; i < kWarpRows * dim; i += 32) {
      const int64_t rr = i / dim, c = i - rr * dim;
      const int64_t row = warp * kWarpRows + rr, qi = m0 + row;
      if (qi < p.seq)
        dq[rows + qi * dim + c] = toStorage<T>(sdQ[row * dim + c] * p.scale);
    }
    if (half == 0 && m0 + warp * kWarpRows + r < p.seq) {
      const int64_t at = bh * p.seq + m0 + warp * kWarpRows + r;
      scratchL[at] = sL[warp * kWarpRows + r];
      scratchD[at] = sD[warp * kWarpRows + r];
    }
  }
}

/// P^T and dS^T for the warp's 16 keys against a query tile: from the transposed scores in sST
/// (into P^T, f32, in place, and rounded into sPT) and, in a second call with `grads`, from
/// dP^T in sDPT into sdST.
template <typename T>
__device__ void warpKeyProbs(const Params &p, float *sST, T *sPT, const float *sL, int warp,
                             int lane, int64_t n0, int64_t m0) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r; // a key of the tile
  const int64_t kj = n0 + row;
  for (int c = half * 32; c < half * 32 + 32; ++c) { // c: a query of the tile
    const bool keep = keyVisible(m0 + c, kj, p.seq, p.causal);
    const float prob = keep ? expf(sST[row * kTile + c] * p.scale - sL[c]) : 0.0f;
    sST[row * kTile + c] = prob;
    sPT[row * kTile + c] = toStorage<T>(prob);
  }
}

template <typename T>
__device__ void warpKeyGradScores(const float *sPTf, const float *sDPT, const float *sD, T *sdST,
                                  int warp, int lane) {
  const int r = lane >> 1, half = lane & 1;
  const int row = warp * kWarpRows + r;
  for (int c = half * 32; c < half * 32 + 32; ++c)
    sdST[row * kTile + c] = toStorage<T>(sPTf[row * kTile + c] * (sDPT[row * kTile + c] - sD[c]));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    keyPassKernel(Params p, int64_t keyBlocks, const T *q, const T *k, const T *v, const T *dout,
                  const float *scratchL, const float *scratchD, T *dk, T *dv) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t dim = p.dim;
  const size_t tile = static_cast<size_t>(kTile) * dim;
  T *sK = reinterpret_cast<T *>(smem);
  T *sV = sK + tile, *sQ = sV + tile, *sdO = sQ + tile;
  float *sST = reinterpret_cast<float *>(sdO + tile);
  float *sDPT = sST + kSquare;
  T *sPT = reinterpret_cast<T *>(sDPT + kSquare);
  T *sdST = sPT + kSquare;
  float *sdK = reinterpret_cast<float *>(sdST + kSquare);
  float *sdV = sdK + tile, *sL = sdV + tile, *sD = sL + kTile;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t w = warp * kWarpRows;
  for (int64_t blk = blockIdx.x; blk < keyBlocks; blk += gridDim.x) {
    const int64_t nt = blk % p.tilesM, bhk = blk / p.tilesM;
    const int64_t b = bhk / p.kvHeads, hk = bhk % p.kvHeads, n0 = nt * kTile;
    const int64_t kv = bhk * p.seq * dim;
    __syncthreads(); // the previous block's rows are written out
    loadTile(sK, k + kv, n0, p.seq, dim);
    loadTile(sV, v + kv, n0, p.seq, dim);
    for (int64_t i = threadIdx.x; i < static_cast<int64_t>(tile); i += kThreads)
      sdK[i] = sdV[i] = 0.0f;
    for (int64_t g = 0; g < p.groups; ++g) {
      const int64_t bh = b * p.heads + hk * p.groups + g;
      const int64_t rows = bh * p.seq * dim;
      for (int64_t m0 = p.causal ? n0 : 0; m0 < p.seq; m0 += kTile) {
        __syncthreads(); // sQ, sdO, sL, sD are free
        loadTile(sQ, q + rows, m0, p.seq, dim);
        loadTile(sdO, dout + rows, m0, p.seq, dim);
        if (threadIdx.x < kTile) {
          const int64_t qi = m0 + threadIdx.x;
          sL[threadIdx.x] = qi < p.seq ? scratchL[bh * p.seq + qi] : 0.0f;
          sD[threadIdx.x] = qi < p.seq ? scratchD[bh * p.seq + qi] : 0.0f;
        }
        __syncthreads();
        warpABt(sK + w * dim, sQ, sST + w * kTile, dim); // S^T = K Q^T
        __syncwarp();
        warpKeyProbs(p, sST, sPT, sL, warp, lane, n0, m0);
        __syncwarp();
        warpAccumulateAB(sPT + w * kTile, sdO, sdV + w * dim, dim); // dV += P^T dO
        warpABt(sV + w * dim, sdO, sDPT + w * kTile, dim);          // dP^T = V dO^T
        __syncwarp();
        warpKeyGradScores(sST, sDPT, sD, sdST, warp, lane);
        __syncwarp();
        warpAccumulateAB(sdST + w * kTile, sQ, sdK + w * dim, dim); // dK += dS^T Q
      }
    }
    __syncwarp();
    for (int64_t i = lane; i < kWarpRows * dim; i += 32) {
      const int64_t rr = i / dim, c = i - rr * dim;
      const int64_t row = w + rr, kj = n0 + row;
      if (kj < p.seq) {
        dk[kv + kj * dim + c] = toStorage<T>(sdK[row * dim + c] * p.scale);
        dv[kv + kj * dim + c] = toStorage<T>(sdV[row * dim + c]);
      }
    }
  }
}

template <typename T>
cudaError_t launchTyped(const AttentionPlan &plan, const void *q, const void *k, const void *v,
                        const void *out, const void *dout, void *dq, void *dk, void *dv,
                        void *scratch, cudaStream_t stream) {
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
                    static_cast<const T *>(dout), static_cast<T *>(dq), scratchL, scratchD);
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
  const auto tile = static_cast<size_t>(kTile) * static_cast<size_t>(dim);
  return tile * 2 * 4            // sQ, sdO, sK, sV
         + kSquare * (4 + 4 + 2) // sS, sDP, sdS
         + tile * 4              // sdQ
         + kTile * 2 * 4;        // sL, sD
}

size_t flashBackwardKeySharedBytes(int64_t dim) {
  const auto tile = static_cast<size_t>(kTile) * static_cast<size_t>(dim);
  return tile * 2 * 4                // sK, sV, sQ, sdO
         + kSquare * (4 + 4 + 2 + 2) // sST, sDPT, sPT, sdST
         + tile * 4 * 2              // sdK, sdV
         + kTile * 2 * 4;            // sL, sD
}

cudaError_t launchFlashAttentionBackward(const AttentionPlan &plan, const void *q, const void *k,
                                         const void *v, const void *out, const void *dout,
                                         void *dq, void *dk, void *dv, void *scratch,
                                         cudaStream_t stream) {
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
             ? launchTyped<__nv_bfloat16>(plan, q, k, v, out, dout, dq, dk, dv, scratch, stream)
             : launchTyped<__half>(plan, q, k, v, out, dout, dq, dk, dv, scratch, stream);
}

} // namespace rp::kernels::cuda
