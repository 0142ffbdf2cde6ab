//===- FlopRules.h - Floating-point operations of a kernel call -*- C++ -*-===//
//
// The FLOPs one call of a kernel id (kernels/Registry.h) executes, from its operand and result
// shapes: the contractions only, which dominate a transformer step (the convention of
// Kaplan et al. 2020, §2.1, and of PaLM's model FLOPs utilisation, Chowdhery et al. 2022,
// App. B: a multiply-add is 2 FLOPs; elementwise ops, norms, softmax and reductions are not
// counted). runtime/plan/Instruction.h (instructionFlops) maps a plan instruction onto them:
// the plan report, the paper FLOPs and the simulator's roofline all count with it.
//
//   matmul     A [..., M, K] x B [..., K, N] -> C [..., M, N] (ONNX MatMul broadcasting; a 1-D
//              operand is a vector): 2 * elements(C) * K, K = the last dim of A.
//   attention  q [B, Hq, S, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv] (grouped-query: Hq a
//              multiple of Hk): 2 * B * Hq * P * (D + Dv), P the (query, key) pairs computed:
//              S * Sk, or with `causal` the pairs on or below the diagonal, sum over query i
//              of min(i + 1, Sk), as the CPU and CUDA kernels skip the masked keys (QK^T and
//              PV; the softmax is not counted). An optional fourth operand, attention sinks
//              [Hq], adds one softmax term per row and no FLOPs to the count. With a sliding
//              `window` w (causal), P counts only the pairs in the band, i - w < j <= i
//              (windowPairs), as the kernels skip the keys outside it.
//   attention_vjp  q, k, v, out, dout as attention's q, k, v: 2.5 times attention's count, the
//              five products of the backward (S = QK^T, dP = dO V^T, dV = P^T dO, dQ = dS K,
//              dK = dS^T Q) against the forward's two (Dao 2023). The kernels also recompute S
//              and dP in their second pass (seven products executed); the count is the
//              algorithm's, as FlashAttention reports it.
//   linear_cross_entropy  hidden [N, H], weight [V, H]: 2 N H V (the logits; the softmax and
//              loss are not counted).
//   linear_cross_entropy_vjp  the same operands: 6 N H V, the logits once plus dhidden = G W
//              and dweight = G^T hidden (the head's forward and backward; the logits are never
//              recomputed).
//   grouped_matmul  rows [R, K], weights [E, K, N] (or [E, N, K]) -> [R, N]: 2 R K N (each
//              row meets one expert's matrix; the routed rows R = T * k are all counted).
//   grouped_matmul_wgrad  lhs [R, K], rhs [R, N] -> [E, K, N]: 2 R K N.
//   any other  0.
//
// Plain C++17, no dependency: part of rp_kernel_registry.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_FLOPRULES_H
#define RP_KERNELS_FLOPRULES_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace rp::kernels {

/// A tensor shape (dims, outermost first).
using Shape = std::vector<int64_t>;

/// The FLOPs of one call of kernel `id` with these operand and result shapes; `causal` and
/// `window` (0: none) are the attention kernels' attributes, `transposeA` the matmul's
/// `transpose_a` (its first operand read with the last two dims swapped: K is then its
/// second-to-last dim); each is ignored by the other kernels. 0 for kernels that do no
/// contraction and for a call whose shapes do not fit the rule (too few operands or dims).
/// Returned as a double: exact up to 2^53 (9.0e15) FLOPs per call.
double kernelFlops(std::string_view id, const std::vector<Shape> &operands,
                   const std::vector<Shape> &results, bool causal, bool transposeA = false,
                   int64_t window = 0);

/// The (query, key) pairs a causal attention over `queries` queries and `keys` keys computes:
/// sum over i < queries of min(i + 1, keys); queries * (queries + 1) / 2 when keys >= queries.
double causalPairs(int64_t queries, int64_t keys);

/// The (query, key) pairs a causal attention with sliding window `window` computes: sum over
/// i < queries of the keys j < keys with i - window < j <= i; causalPairs when window is 0 or
/// at least `queries` (every row's window then reaches key 0). For queries = keys = S and
/// w < S: w (w + 1) / 2 + (S - w) w.
double windowPairs(int64_t queries, int64_t keys, int64_t window);

} // namespace rp::kernels

#endif // RP_KERNELS_FLOPRULES_H
