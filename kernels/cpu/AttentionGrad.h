//===- AttentionGrad.h - The fused attention backward on the CPU -*- C++ -*-===//
//
// The kernel of graph.attention_vjp: the gradients of scaled dot-product attention
// (kernels/cpu/Fused.h, cpu::attention) without materialising the [B, Hq, S, S] scores, the
// FlashAttention-2 backward (Dao 2023, "FlashAttention-2", Algorithm 2) with the rows'
// log-sum-exp recomputed instead of saved by the forward.
//
// Numerics: in the dtype of the tensors (f32 or f64), with GEMMs (OpenBLAS on the calling
// thread) and the forward's softmax (kernels/cpu/KernelSupport.h softmaxRows), as
// cpu::attention; D_i in double. Deterministic: every sum runs in a fixed order (query heads,
// then blocks of query rows, ascending) whatever the OpenMP thread count; no value is
// accumulated by two threads.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_ATTENTIONGRAD_H
#define RP_KERNELS_CPU_ATTENTIONGRAD_H

#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// dq, dk, dv of y = attention(q, k, v; scale, causal) (cpu::attention) for the output
/// gradient dout, given the forward output out (= y). With s_ij = scale q_i . k_j (j <= i
/// when `causal`), lse_i = log sum_j e^(s_ij), P_ij = e^(s_ij - lse_i), dP_ij = dout_i . v_j,
/// D_i = sum_d dout_i,d out_i,d (dP_i0 for a row that sees a single key, where out_i = v_0:
/// its dS is then exactly 0) and dS_ij = P_ij (dP_ij - D_i):
///   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_(h, i) dS_ij q_i,  dv_j = sum_(h, i) P_ij dout_i,
/// the (h, i) sums running over the query heads h of k/v head j's group (grouped-query) and
/// their rows i. One task per k/v head (b, g), in parallel: for each query head of its group
/// and each block of 64 query rows, P (recomputed as the forward does), dP = dout v^T and
/// dS by GEMMs over the keys the block sees, then dq_block = scale dS k, dk += scale dS^T q,
/// dv += P^T dout. Memory: two [64, S] blocks per thread besides the tensors.
///
/// With `sinks` (attention sinks, GPT-OSS, [Hq]; cpu::attention's), lse_i also sums
/// e^(sinks[h]), the formulas above hold as written (the single-key shortcut is off), and
/// `dsinks` [Hq] receives dsinks[h] = -sum_(b, i) P_sink,i D_i with P_sink,i =
/// e^(sinks[h] - lse_i) (per row in double, rows ascending, then batch rows ascending).
///
/// Shapes: q, dq [B, Hq, S, D]; k, dk [B, Hkv, S, D] with Hkv dividing Hq; v, dv [B, Hkv, S,
/// Dv]; out, dout [B, Hq, S, Dv] (the value head size Dv may differ from D).
/// Dtype f32 or f64, one for all tensors. Errors: InvalidArgument naming
/// "attention_vjp", the operand, what was expected and what was found; sinks without dsinks
/// or the reverse; a negative window or a window without `causal`.
///
/// With a sliding `window` (>= 1, with `causal`; cpu::attention's; 0 is none), the sums run
/// over i - window < j <= i only, and each block's GEMMs start at the first key its first
/// row sees (the single-key shortcut holds for every row when window is 1).
///
/// With a `softcap` (> 0; cpu::attention's; 0 is none) s_ij above is the capped score
/// softcap * tanh(t_ij), t_ij = scale q_i . k_j / softcap (capScores, the forward's bits), and
/// dS_ij is multiplied by the cap's derivative 1 - tanh^2(t_ij) (rounded to the dtype) before
/// dq and dk are formed. Memory: a third [64, S] block per thread.
base::Status attentionVjp(const base::HostTensor &q, const base::HostTensor &k,
                             const base::HostTensor &v, const base::HostTensor &out,
                             const base::HostTensor &dout, double scale, bool causal,
                             base::HostTensor &dq, base::HostTensor &dk,
                             base::HostTensor &dv, const base::HostTensor *sinks = nullptr,
                             base::HostTensor *dsinks = nullptr, int64_t window = 0,
                             double softcap = 0.0);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_ATTENTIONGRAD_H
