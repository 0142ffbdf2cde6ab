//===- FlashAttention.h - Tensor-core attention forward on the GPU -*- C++ -*-===//
//
// graph.attention for f16 and bf16 on the tensor cores: FlashAttention-2's forward (Dao 2023,
// "FlashAttention-2", Algorithm 1). A block of 4 warps owns 64 query rows of one (batch, head);
// it walks the key/value tiles of 64 keys (up to the diagonal when causal), and each warp
//   S = Q_w K^T                      16 x 64, WMMA 16x16x16, fp32 accumulation
//   m' = max(m, rowmax(S)),  P = exp(S - m')  (masked keys: 0), rounded to the storage type
//   l = l e^(m - m') + rowsum(P),    O = O e^(m - m') + P V   (O in fp32, shared memory)
// and writes O / l, rounded once. The [S, S] scores are never materialised. With attention
// sinks (GPT-OSS, [Hq]) each row starts at m = sinks[h], l = 1 (the sink's e^(sinks[h] - m)),
// so the sink joins the max and the denominator and adds nothing to O.
//
// Numerics differ from the row kernel of kernels/cuda/Fused.h (f16/bf16 scores and sums in
// float there, the probabilities never rounded): P is rounded to the storage type before the
// P V product (as in FlashAttention), so an output differs from the exact one by up to about
// 2^-8 (bf16) or 2^-11 (f16) of max |v| over its keys. Deterministic: every sum in a fixed
// order, no atomics. The host replay (rp-run --kernels cuda-host) keeps the row kernel's
// order, as it keeps a plain dot product for cuBLASLt's GEMMs.
//
// Applies to f16/bf16, head dimension D a multiple of 16 up to 128 and the value head size
// equal to it (multi-head latent attention's Dv != D runs the row kernels), 16-byte aligned
// operands and a device with enough shared memory per block (93 KiB at D = 128, 61 KiB at
// D = 64); launchAttention (Fused.h) falls back to the row kernel otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_FLASHATTENTION_H
#define RP_KERNELS_CUDA_FLASHATTENTION_H

#include "kernels/cuda/Fused.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace rp::kernels::cuda {

/// Query rows per block, keys per tile.
inline constexpr int kFlashRows = 64;
inline constexpr int kFlashKeys = 64;
inline constexpr int64_t kFlashMaxDim = 128;

/// Whether `plan` (from planAttention) is one the tensor-core kernel takes: f16 or bf16, D a
/// multiple of 16 in [16, 128], the value head size D too (the row kernels take Dv != D).
/// Host only; alignment and the device are checked at launch.
bool flashAttentionFits(const AttentionPlan &plan);

/// Dynamic shared memory of one block for head dimension `dim` (bytes).
size_t flashAttentionSharedBytes(int64_t dim);

/// Enqueues out = attention(q, k, v) on the tensor cores. Returns cudaErrorNotSupported
/// (enqueuing nothing) when the plan does not fit (flashAttentionFits), a pointer is not
/// 16-byte aligned, or the current device has too little shared memory per block; the caller
/// then runs the row kernel. Otherwise as launchAttention. `sinks`: [Hq] of the plan's dtype
/// when plan.sinks, otherwise null (launchAttention checks that).
cudaError_t launchFlashAttention(const AttentionPlan &plan, const void *q, const void *k,
                                 const void *v, void *out, cudaStream_t stream,
                                 const void *sinks = nullptr);

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_FLASHATTENTION_H
