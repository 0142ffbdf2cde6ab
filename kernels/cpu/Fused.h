//===- Fused.h - Fused transformer-block ops on the CPU ----------*- C++ -*-===//
//
// The kernels of the graph dialect's fused ops (formed by the rp-fuse-* passes):
// graph.swiglu (the gated MLP activation of Llama / Qwen), graph.rope (rotary
// position embedding, HF `apply_rotary_pos_emb`'s rotate-half form) and
// graph.attention (scaled dot-product attention).
//
// Numerics: rope, and swiglu and attention on f64, compute in double and round
// once when stored. On f32, swiglu computes in f32 with expF32 (a vectorised e^x
// within 2 ulp, kernels/cpu/KernelSupport.h) and attention in f32 with sgemm (see
// attention): the f32 arithmetic that PyTorch's CPU kernels use, several times
// faster than double here (docs/PERFORMANCE.md, "CPU backend").
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_FUSED_H
#define RP_KERNELS_CPU_FUSED_H

#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// y = silu(gate) * up = gate * sigmoid(gate) * up, elementwise (Shazeer 2020,
/// "GLU Variants Improve Transformer"). gate is f32 or f64; up and out have
/// gate's dtype and shape. Errors: InvalidArgument for a bad dtype or shape.
base::Status swiglu(const base::HostTensor &gate, const base::HostTensor &up,
                       base::HostTensor &out);

/// y = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) with x1,
/// x2 the halves of the last dimension (RoFormer, Su et al. 2021; HF
/// apply_rotary_pos_emb). x is f32 or f64 of rank >= 1 with an even last
/// dimension D ([B, H, S, D] in attention); cos and sin have x's dtype, the
/// same shape, a last dimension of D, and broadcast to x's shape (numpy rules:
/// [S, D], [B, 1, S, D], ...); out has x's dtype and shape. With `interleaved`
/// the rotation pairs adjacent elements instead (GPT-J, Cohere: HF
/// rotate_every_two): rotate(x)[2i] = -x[2i + 1], rotate(x)[2i + 1] = x[2i].
/// Errors: InvalidArgument for a bad dtype or shape.
base::Status rope(const base::HostTensor &x, const base::HostTensor &cos,
                     const base::HostTensor &sin, base::HostTensor &out,
                     bool interleaved = false);

/// The VJP of swiglu (graph.swiglu_vjp), elementwise with s = sigmoid(gate):
///   dgate = g * up * s * (1 + gate * (1 - s)),   dup = g * gate * s.
/// gate is f32 or f64; up, g, dgate and dup have gate's dtype and shape. Computed in double,
/// rounded once when stored. Errors: InvalidArgument for a bad dtype or shape.
base::Status swigluVjp(const base::HostTensor &gate, const base::HostTensor &up,
                       const base::HostTensor &g, base::HostTensor &dgate,
                       base::HostTensor &dup);

/// The VJP of rope with respect to x (graph.rope_vjp): rope is linear in x, y = x * cos +
/// R(x) * sin with R the rotation (rotate_half, or the interleaved pairs'), so
///   dx = g * cos + R^T(g * sin),  R^T(u)[j] = u[p] for the first element j of a pair and
///   -u[p] for the second (p: j's partner),
/// one pass with rope's shapes and dtypes (g in place of x). Computed in double, rounded once.
/// Errors: as rope's.
base::Status ropeVjp(const base::HostTensor &g, const base::HostTensor &cos,
                     const base::HostTensor &sin, base::HostTensor &dx,
                     bool interleaved = false);

/// Scaled dot-product attention with grouped-query heads (Vaswani et al. 2017;
/// torch.nn.functional.scaled_dot_product_attention with enable_gqa):
///   y[b, h, i] = sum_j p_j v[b, h / G, j],  p = softmax_j(q[b, h, i] . k[b, h / G, j] * scale)
/// with G = Hq / Hkv and, when `causal`, only j <= i. q is f32 or f64
/// [B, Hq, S, D]; k has q's dtype and shape [B, Hkv, S, D] with Hkv dividing Hq;
/// v has q's dtype and shape [B, Hkv, S, Dv], its head size Dv any (multi-head latent
/// attention); out has q's dtype and shape [B, Hq, S, Dv]. Per block of 64 query rows of a
/// head: scores = scale q k^T by one GEMM (sgemm / dgemm on the calling thread)
/// over the keys the block sees, softmax in place (exponentials by expF32 for
/// f32, std::exp for f64; their sum in double in key order), y = P v by one
/// GEMM. Blocks are independent tasks: the bits do not depend on the thread
/// count. With `sinks` (attention sinks, GPT-OSS; q's dtype, [Hq]): head h's
/// softmax has one more logit sinks[h] that joins the max and the denominator
/// and has no value, p_j = e^(s_j) / (e^(sinks[h]) + sum_j' e^(s_j')).
/// With a sliding `window` (>= 1, with `causal`; 0 is none): only keys j with
/// i - window < j <= i; a block's GEMMs start at the first key its first row sees.
/// With a `softcap` (> 0; 0 is none; Gemma-2's logit soft-capping) the scores are
/// softcap * tanh(s / softcap) before the mask and the softmax (capScores, in double).
/// Errors: InvalidArgument for a bad dtype or shape, a negative window or a window without
/// `causal`, a softcap that is negative or not finite.
base::Status attention(const base::HostTensor &q, const base::HostTensor &k,
                          const base::HostTensor &v, double scale, bool causal,
                          base::HostTensor &out, const base::HostTensor *sinks = nullptr,
                          int64_t window = 0, double softcap = 0.0);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_FUSED_H
