//===- FlashAttentionBackward.h - Tensor-core attention VJP on the GPU -*- C++ -*-===//
//
// The VJP of graph.attention for f16 and bf16 on the tensor cores, FlashAttention-2's backward
// (Dao 2023, Algorithm 2) split in two deterministic passes instead of its atomic dQ:
//   1. query-parallel (a block of 4 warps per 64 query rows of one (batch, head)):
//      D_i = sum_d dO_id O_id; the row's log-sum-exp L_i from a first walk over the key tiles;
//      then per key tile P = exp(scale S - L), dP = dO V^T, dS = P (dP - D),
//      dQ += scale dS K. Writes dQ, and L and D to the scratch.
//   2. key-parallel (a block per 64 keys of one (batch, kv head)): for each query head of the
//      group and each query tile, in order, P^T, dV += P^T dO, dP^T = V dO^T,
//      dS^T = P^T (dP^T - D), dK += scale dS^T Q. Writes dK, dV.
// GEMM tiles are WMMA 16x16x16 with fp32 accumulation; P and dS are rounded to the storage
// type before they enter a product (as in FlashAttention). Every sum runs in a fixed order: the
// results are bit-reproducible and independent of the launch geometry of other kernels. No
// [S, S] buffer.
//
// Operands: q, out, dout [B, Hq, S, D]; k, v [B, Hkv, S, D] (Hkv dividing Hq); results dq
// [B, Hq, S, D], dk, dv [B, Hkv, S, D]; all of the plan's dtype, contiguous, 16-byte aligned.
// Scratch: flashAttentionBackwardScratchBytes(plan) device bytes (L and D, fp32).
// With attention sinks (GPT-OSS, [Hq]) pass 1's walk starts at m = sinks[h], l = 1, so L
// includes the sink and P, dS and the gradients follow; dsinks is left to the caller
// (launchAttentionVjp's pass 3, from L and D in the scratch).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_FLASHATTENTIONBACKWARD_H
#define RP_KERNELS_CUDA_FLASHATTENTIONBACKWARD_H

#include "kernels/cuda/FlashAttention.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace rp::kernels::cuda {

/// Device scratch of launchFlashAttentionBackward: 2 * B * Hq * S floats (bytes).
size_t flashAttentionBackwardScratchBytes(const AttentionPlan &plan);

/// Dynamic shared memory of a block of pass 1 and of pass 2 for head dimension `dim` (bytes).
size_t flashBackwardQuerySharedBytes(int64_t dim);
size_t flashBackwardKeySharedBytes(int64_t dim);

/// Enqueues dq, dk, dv = VJP of attention(q, k, v) at dout (`out` is the forward's result).
/// Returns cudaErrorNotSupported (enqueuing nothing) when the plan does not fit
/// (flashAttentionFits), a pointer is not 16-byte aligned, or the device has too little shared
/// memory per block (pass 1 takes 144 KiB and pass 2 186.5 KiB at D = 128, 96 and 122.5 KiB
/// at D = 64: sm_90 takes both, sm_80 (163 KiB) pass 2 only up to D = 96, sm_86/sm_89
/// (99 KiB) only small D);
/// cudaErrorInvalidValue for a null scratch when one is needed.
cudaError_t launchFlashAttentionBackward(const AttentionPlan &plan, const void *q, const void *k,
                                         const void *v, const void *out, const void *dout,
                                         void *dq, void *dk, void *dv, void *scratch,
                                         cudaStream_t stream, const void *sinks = nullptr);

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_FLASHATTENTIONBACKWARD_H
