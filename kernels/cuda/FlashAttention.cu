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

#include "kernels/cuda/Launch.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

namespace rp::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using runtime::DType;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kWarpRows = kFlashRows / kWarps; // 16: one WMMA row block per warp
static_assert(kWarpRows == 16, "each warp owns one 16-row WMMA block");

struct FlashParams {
  int64_t heads, kvHeads, groups, seq, dim, tilesM, blocks;
  float scale;
  bool causal;
};

/// Copies rows [r0, r0 + 64) of a [seq, dim] row-major tile into `dst` in 16-byte vectors,
/// zeros for rows at or past `seq`.
template <typename T>
__device__ void loadTile(T *dst, const T *src, int64_t r0, int64_t seq, int64_t dim) {
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

template <typename T> __device__ T toStorage(float x);
template <> __device__ __nv_bfloat16 toStorage<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __half toStorage<__half>(float x) { return __float2half_rn(x); }

/// One warp's S = Q_w K^T (16 x 64) into its rows of sS.
template <typename T>
__device__ void warpScores(const T *sQ, const T *sK, float *sS, int warp, int64_t dim) {
  for (int nf = 0; nf < kFlashKeys / 16; ++nf) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int64_t kk = 0; kk < dim / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b; // K^T
      wmma::load_matrix_sync(a, sQ + warp * kWarpRows * dim + kk * 16, static_cast<unsigned>(dim));
      wmma::load_matrix_sync(b, sK + nf * 16 * dim + kk * 16, static_cast<unsigned>(dim));
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(sS + warp * kWarpRows * kFlashKeys + nf * 16, acc, kFlashKeys,
                            wmma::mem_row_major);
  }
}

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
    const bool keep = kj < p.seq && qi < p.seq && (!p.causal || kj <= qi);
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

/// One warp's O_w += P_w V (16 x D).
template <typename T>
__device__ void warpOutput(const T *sP, const T *sV, float *sO, int warp, int64_t dim) {
  for (int64_t df = 0; df < dim / 16; ++df) {
    float *o = sO + warp * kWarpRows * dim + df * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, o, static_cast<unsigned>(dim), wmma::mem_row_major);
    for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
      wmma::load_matrix_sync(a, sP + warp * kWarpRows * kFlashKeys + kk * 16, kFlashKeys);
      wmma::load_matrix_sync(b, sV + kk * 16 * dim + df * 16, static_cast<unsigned>(dim));
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(o, acc, static_cast<unsigned>(dim), wmma::mem_row_major);
  }
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
      warpScores(sQ, sKV, sS, warp, dim);
      __syncwarp();
      warpSoftmax(p, sS, sP, sO, sM, sL, warp, lane, m0, n0);
      __syncthreads(); // every warp is done with the keys
      loadTile(sKV, v + kvOffset, n0, p.seq, dim);
      __syncthreads();
      warpOutput(sP, sKV, sO, warp, dim);
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
  if (shared > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (e != cudaSuccess)
      return e;
  }
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
  int device = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess)
    return e;
  if (shared > static_cast<size_t>(optin))
    return cudaErrorNotSupported;
  if (plan.rows == 0 || plan.dim == 0)
    return cudaSuccess;
  FlashParams params;
  params.heads = plan.heads;
  params.kvHeads = plan.kvHeads;
  params.groups = plan.groups;
  params.seq = plan.seq;
  params.dim = plan.dim;
  params.tilesM = (plan.seq + kFlashRows - 1) / kFlashRows;
  params.blocks = plan.batch * plan.heads * params.tilesM;
  params.scale = static_cast<float>(plan.scale);
  params.causal = plan.causal;
  return plan.dtype == DType::BF16
             ? launchTyped<__nv_bfloat16>(params, q, k, v, out, shared, stream)
             : launchTyped<__half>(params, q, k, v, out, shared, stream);
}

} // namespace rp::kernels::cuda
