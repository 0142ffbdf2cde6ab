//===- Fused.h - Fused transformer-block ops on the GPU ---------*- C++ -*-===//
//
// The GPU kernels of graph.swiglu, graph.rope and graph.attention, with the semantics of the
// CPU reference kernels (kernels/cpu/Fused.h):
//
//   swiglu     y = silu(gate) * up = gate * sigmoid(gate) * up, elementwise (Shazeer 2020,
//              "GLU Variants Improve Transformer"). gate, up, out: one shape.
//   rope       y = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) over the
//              halves of the last dimension D (even) (RoFormer, Su et al. 2021; HF
//              apply_rotary_pos_emb); interleaved (GPT-J's rotate_every_two): the pairs
//              (x[2i], x[2i + 1]) rotate to (-x[2i + 1], x[2i]). cos and sin: one shape with a last dimension of D that
//              broadcasts to x's (numpy rules: [S, D], [B, 1, S, D], ...); out: x's shape.
//   attention  y[b, h, i] = sum_j p_j v[b, h / G, j],
//              p = softmax_j(q[b, h, i] . k[b, h / G, j] * scale), j <= i when `causal`
//              (and i - j < window with a sliding window: the row and tensor-core kernels
//              start at the window's first key, or its tile)
//              (Vaswani et al. 2017; torch scaled_dot_product_attention with enable_gqa).
//              q [B, Hq, S, D]; k [B, Hkv, S, D] with Hkv dividing Hq, G = Hq / Hkv; v
//              [B, Hkv, S, Dv] and out [B, Hq, S, Dv], the value head size Dv any (multi-head
//              latent attention: Dv != D).
//              With attention sinks (GPT-OSS; [Hq], q's dtype): head h's softmax has one more
//              logit sinks[h] in its max and denominator, attached to no value,
//              p_j = e^(s_j) / (e^(sinks[h]) + sum_j' e^(s_j')) (cpu::attention's).
//              With a logit soft-cap c (Gemma-2) each score is c tanh(s / c) (attentionCap).
//
// Dtypes: f32, f64, f16 or bf16, one dtype for every operand of an op (the caller checks that
// its buffers have the plan's dtype). Numerics (kernels/cuda/Strided.h): f32 and f64 compute
// in double and round once when stored, as the CPU kernels; f16 and bf16 load to float,
// compute in float and round once (RNE) to the format.
//
// Algorithms.
//  - swiglu, rope: one grid-stride thread per output element; the per-element bodies
//    swigluAt and ropeAt are the CPU kernels' expressions in the same order (the logistic
//    function without overflow: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below). rope reads
//    cos/sin at broadcast strides through a StridedIter over x's leading dimensions.
//  - attention: one thread block of kAttentionTile threads per query row (b, h, i), a
//    FlashAttention-style online softmax (Dao et al. 2022, sec. 3.1; Milakov & Gimelshein
//    2018) over tiles of kAttentionTile keys taken in key order: thread t scores key
//    j0 + t (a sequential dot product over D, then * scale); every thread reads the tile's
//    scores to form the running max m' = max(m, max_t s_t), rescales by e^(m - m'), adds
//    p_t = e^(s_t - m') to the running sum l in key order, and thread c owns output column
//    c (c = tid, tid + 128, ...) with acc_c = acc_c * e^(m - m') + sum_t p_t v[j0 + t, c] in
//    key order. y_c = acc_c / l. With sinks the running max starts at m = sinks[h] and the
//    running sum at l = 1 (= e^(sinks[h] - m)), so the sink joins the max and the
//    denominator before the first key. Every sum has a fixed order, so results are deterministic
//    (run to run, grid to grid); they differ from the CPU's two-pass softmax only by
//    rounding (the rescaling products), far below the 1e-5 the tests allow.
//    Cost: O(B Hq S^2 D) multiply-adds (about half when causal); each block streams the
//    K and V rows of its (b, kv head) once per query row, so consecutive blocks (the rows of
//    one head) reuse them from L2. It is the fallback next to cuDNN SDPA, not a tuned kernel.
//    Shared memory: (D + Dv + 2 kAttentionTile) compute values; D, Dv <= kMaxAttentionHeadDim.
//
// Host verification. The per-element bodies (swigluAt, ropeAt) and the per-row body of
// attention (attentionRow, written against a "Block" that provides forEach/sync) are
// RP_HOST_DEVICE code shared by the __global__ kernels (Fused.cu) and the host test
// (test/Unit/CudaFusedHostTest.cpp, which loops them over every index, with SerialBlock as the
// block). Only the launch geometry, the shared-memory carving, the device block (thread
// striding, __syncthreads) and the device math library (exp) are exercised by the device test
// alone (test/Unit/CudaFusedTest.cpp).
//
// Errors: the plan functions return InvalidArgument naming the op, the operand, the expected
// and the actual dtype or shape (the CPU kernels' messages); the launchers return
// cudaErrorInvalidValue for a null or misaligned pointer with elements to write, otherwise
// cudaGetLastError() after enqueueing; they never synchronize. This header contains no device
// code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_FUSED_H
#define RP_KERNELS_CUDA_FUSED_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace rp::kernels::cuda {

//===--- shared math -----------------------------------------------------===//

/// e^x in the compute type (host: libm; device: the CUDA math library, <= 1 ulp for double
/// and <= 2 ulp for float).
RP_HD inline double fusedExp(double x) { return ::exp(x); }
RP_HD inline float fusedExp(float x) { return ::expf(x); }
/// tanh(x) in the compute type (host: libm; device: the CUDA math library).
RP_HD inline double fusedTanh(double x) { return ::tanh(x); }
RP_HD inline float fusedTanh(float x) { return ::tanhf(x); }

/// The logistic function without overflow for large |x| (the CPU kernels' formula).
template <typename C> RP_HD inline C fusedSigmoid(C x) {
  if (x >= C(0))
    return C(1) / (C(1) + fusedExp(-x));
  const C e = fusedExp(x);
  return e / (C(1) + e);
}

//===--- swiglu ----------------------------------------------------------===//

/// The geometry of one swiglu: `numel` elements of `dtype` in gate, up and out.
struct SwigluPlan {
  base::DType dtype = base::DType::F32;
  int64_t numel = 0;
};

/// Checks swiglu's operands as cpu::swiglu does: dtype f32, f64, f16 or bf16 (shared by gate,
/// up and out); up and out of gate's shape. Errors: InvalidArgument "swiglu: gate has dtype
/// i64, expected f32, f64, f16 or bf16", "swiglu: up is f32[2, 4], expected f32[2, 3]".
base::StatusOr<SwigluPlan> planSwiglu(base::DType dtype, const Shape &gate, const Shape &up,
                                         const Shape &out);

/// Enqueues out = silu(gate) * up on `stream` (device pointers, contiguous, aligned to the
/// element size). Returns cudaErrorInvalidValue for a null or misaligned pointer when
/// numel > 0 (nothing launched), cudaSuccess for numel == 0 (nothing launched), otherwise
/// cudaGetLastError(). Never synchronizes.
cudaError_t launchSwiglu(const SwigluPlan &plan, const void *gate, const void *up, void *out,
                         cudaStream_t stream);

/// Output element i of swiglu (the kernel's body; also run on the host by the tests).
template <base::DType D>
RP_HD inline void swigluAt(const SwigluPlan &, const void *gate, const void *up, void *out,
                           int64_t i) {
  using C = typename DTypeTraits<D>::Compute;
  const C g = loadAs<D>(gate, i);
  storeAs<D>(out, i, g * fusedSigmoid(g) * static_cast<C>(loadAs<D>(up, i)));
}

/// Checks swiglu_vjp's operands as cpu::swigluVjp does (gate, up, g, dgate, dup of one dtype
/// and shape); the plan is swiglu's. Errors: InvalidArgument naming "swiglu_vjp".
base::StatusOr<SwigluPlan> planSwigluVjp(base::DType dtype, const Shape &gate, const Shape &up,
                                         const Shape &g, const Shape &dgate, const Shape &dup);

/// Enqueues dgate = g * up * s * (1 + gate (1 - s)), dup = g * gate * s (s = sigmoid(gate)) on
/// `stream`. Returns as launchSwiglu.
cudaError_t launchSwigluVjp(const SwigluPlan &plan, const void *gate, const void *up,
                            const void *g, void *dgate, void *dup, cudaStream_t stream);

/// Element i of swiglu_vjp (the kernel's body; also run on the host by the tests).
template <base::DType D>
RP_HD inline void swigluVjpAt(const SwigluPlan &, const void *gate, const void *up, const void *g,
                              void *dgate, void *dup, int64_t i) {
  using C = typename DTypeTraits<D>::Compute;
  const C a = loadAs<D>(gate, i), gi = loadAs<D>(g, i);
  const C s = fusedSigmoid(a);
  storeAs<D>(dgate, i, gi * static_cast<C>(loadAs<D>(up, i)) * s * (C(1) + a * (C(1) - s)));
  storeAs<D>(dup, i, gi * a * s);
}

//===--- rope ------------------------------------------------------------===//

/// The geometry of one rope: x and out hold `numel` elements, rows of `dim` (D) values;
/// `rows` iterates x's leading dimensions (all but the last) and gives the element offset of
/// each row's cos/sin row (broadcast strides; the last dimension of cos/sin is contiguous).
struct RopePlan {
  base::DType dtype = base::DType::F32;
  int64_t numel = 0;
  int64_t dim = 0;
  int64_t half = 0;
  /// GPT-J's rotation of adjacent pairs instead of the halves (cpu::rope's `interleaved`).
  bool interleaved = false;
  /// rope_vjp: the transposed rotation, dx = g * cos + R^T(g * sin) (cpu::ropeVjp), with g
  /// in x's place.
  bool transposed = false;
  StridedIter<1> rows;
};

/// Checks rope's operands as cpu::rope does: dtype f32, f64, f16 or bf16; x of rank >= 1 with
/// an even last dimension D; cos of rank >= 1 with a last dimension of D that broadcasts to
/// x; sin of cos's shape; out of x's shape. Errors: InvalidArgument, e.g. "rope: x is
/// [3, 5], expected rank >= 1 with an even last dimension", "rope: cos is [4, 6],
/// expected a last dimension of 8", "rope: cos of shape [3, 8] does not broadcast to [2, 5,
/// 8]", "rope: sin is ...", "rope: out is ...", or (from makeIter) more than 8 leading
/// dimensions left after merging.
base::StatusOr<RopePlan> planRope(base::DType dtype, const Shape &x, const Shape &cos,
                                     const Shape &sin, const Shape &out,
                                     bool interleaved = false);

/// Enqueues out = x * cos + rotate(x) * sin on `stream` (rotate_half, or the rotation of
/// adjacent pairs when plan.interleaved). Returns as launchSwiglu.
cudaError_t launchRope(const RopePlan &plan, const void *x, const void *cos, const void *sin,
                       void *out, cudaStream_t stream);

/// Checks rope_vjp's operands as cpu::ropeVjp does (rope's checks with g in x's place and dx
/// as out; messages name "rope_vjp"); the plan is rope's with `transposed`.
base::StatusOr<RopePlan> planRopeVjp(base::DType dtype, const Shape &g, const Shape &cos,
                                     const Shape &sin, const Shape &dx, bool interleaved = false);

/// Output element i of rope, or of rope_vjp when plan.transposed (the kernel's body; also run
/// on the host by the tests).
template <base::DType D>
RP_HD inline void ropeAt(const RopePlan &plan, const void *x, const void *cos, const void *sin,
                         void *out, int64_t i) {
  using C = typename DTypeTraits<D>::Compute;
  const int64_t row = i / plan.dim, j = i % plan.dim;
  int64_t off[1];
  plan.rows.offsets(row, off);
  const int64_t c = off[0] + j;
  // The partner of j: its pair's other element (interleaved) or the other half's.
  const bool first = plan.interleaved ? j % 2 == 0 : j < plan.half;
  const int64_t step = plan.interleaved ? 1 : plan.half;
  if (plan.transposed) { // dx[j] = g[j] cos[j] +- g[p] sin[p]
    const int64_t p = first ? j + step : j - step;
    const C rot = static_cast<C>(loadAs<D>(x, first ? i + step : i - step)) *
                  static_cast<C>(loadAs<D>(sin, off[0] + p));
    storeAs<D>(out, i, static_cast<C>(loadAs<D>(x, i)) * static_cast<C>(loadAs<D>(cos, c)) +
                           (first ? rot : -rot));
    return;
  }
  const C rot = first ? -static_cast<C>(loadAs<D>(x, i + step))
                      : static_cast<C>(loadAs<D>(x, i - step));
  storeAs<D>(out, i,
             static_cast<C>(loadAs<D>(x, i)) * static_cast<C>(loadAs<D>(cos, c)) +
                 rot * static_cast<C>(loadAs<D>(sin, c)));
}

//===--- attention -------------------------------------------------------===//

/// Keys per online-softmax tile, and threads per block of the attention kernel.
inline constexpr int kAttentionTile = 128;
/// The largest head dimension D (and value head size Dv) the attention kernel takes (its
/// shared memory holds D + Dv + 2 kAttentionTile compute values: 34.8 KB for double at D = Dv
/// = 2048, under the 48 KB default).
inline constexpr int64_t kMaxAttentionHeadDim = 2048;

/// The geometry of one attention: `rows` = B * Hq * S query rows of `dim` values (output rows
/// of `valueDim` values); query row r is (b, h, i) = (r / (Hq S), r / S % Hq, r % S) and
/// reads the keys and values of kv head h / groups.
struct AttentionPlan {
  base::DType dtype = base::DType::F32;
  int64_t batch = 0, heads = 0, kvHeads = 0, groups = 0, seq = 0, dim = 0;
  int64_t valueDim = 0; ///< Dv: the head size of v and out (dim unless latent attention)
  int64_t rows = 0;
  double scale = 1.0;
  bool causal = false;
  /// Keys per tile (kAttentionTile; the host tests may pick another to exercise tiling).
  int64_t tile = kAttentionTile;
  /// Scratch per row (shared memory on the device): dim + valueDim + 2 * tile compute values.
  size_t scratchBytes = 0;
  /// f16/bf16 with a head dimension the tensor-core kernel takes (FlashAttention.h):
  /// launchAttention runs that kernel when the device and the pointers allow it. Tests clear
  /// it to run the row kernel below.
  bool tensorCores = false;
  /// Attention sinks (GPT-OSS): the launchers take a sinks [Hq] pointer (planAttentionSinks).
  bool sinks = false;
  /// Sliding window (>= 1, with causal): query i sees keys i - window < j <= i; 0 is none.
  int64_t window = 0;
  /// Logit soft-cap (> 0): each score s becomes softcap * tanh(s / softcap); 0 is none.
  double softcap = 0.0;
};

/// Checks attention's operands as cpu::attention does: dtype f32, f64, f16 or bf16; q of rank
/// 4 [B, Hq, S, D]; k of rank 4 [B, Hkv, S, D] with Hkv > 0 dividing Hq; v [B, Hkv, S, Dv];
/// out [B, Hq, S, Dv]; and D, Dv <= kMaxAttentionHeadDim (a limit of this kernel). Errors:
/// InvalidArgument, e.g. "attention: q is [2, 3], expected [B, Hq, S, D]", "attention: k
/// is [1, 3, 4, 8], expected [1, Hkv, 4, 8] with Hkv dividing 4", "attention: v is ...",
/// "attention: out is ...", "attention: head dimension 4096 exceeds the GPU kernel's limit of
/// 2048". `window`: a sliding window (>= 1, with causal; 0 is none; cpu::attention's), else
/// "attention: window -1 is negative", "attention: a sliding window (4) needs causal
/// attention". `softcap`: a logit soft-cap (> 0; 0 is none; cpu::attention's), else
/// "attention: softcap -1.000000 is not positive and finite".
base::StatusOr<AttentionPlan> planAttention(base::DType dtype, const Shape &q, const Shape &k,
                                               const Shape &v, double scale, bool causal,
                                               const Shape &out, int64_t window = 0,
                                               double softcap = 0.0);

/// planAttention's checks and plan for the operands q, k, v, out of op `op` (its name in the
/// messages) whose kernel takes head dimensions up to `maxHeadDim` (planAttentionVjp's
/// forward, AttentionGrad.h).
base::StatusOr<AttentionPlan> planAttentionFor(const char *op, base::DType dtype,
                                                  const Shape &q, const Shape &k, const Shape &v,
                                                  double scale, bool causal, const Shape &out,
                                                  int64_t maxHeadDim, int64_t window = 0,
                                                  double softcap = 0.0);

/// The first key query row i sees: i - window + 1 (at least 0) with a sliding window, else 0.
RP_HD inline int64_t attentionRowFirstKey(const AttentionPlan &plan, int64_t i) {
  return plan.causal && plan.window > 0 && i - plan.window + 1 > 0 ? i - plan.window + 1 : 0;
}

/// A scaled score s after the plan's soft-cap, with the cap's derivative: (softcap tanh(s /
/// softcap), 1 - tanh^2(s / softcap)), or (s, 1) without a soft-cap.
template <typename C> struct CappedScore {
  C value, slope;
};
template <typename C>
RP_HD inline CappedScore<C> attentionCapped(const AttentionPlan &plan, C s) {
  if (plan.softcap == 0.0)
    return {s, C(1)};
  const C c = static_cast<C>(plan.softcap);
  const C t = fusedTanh(s / c);
  return {c * t, C(1) - t * t};
}

/// Checks an attention(_vjp)'s sinks operand against `plan` (from planAttention(For)) as
/// cpu::attention does: plan.dtype and shape [Hq]; then sets plan.sinks. Errors:
/// InvalidArgument "attention: sinks is f32[3], expected f32[4]" (`op` names the op).
base::Status planAttentionSinks(const char *op, AttentionPlan &plan, base::DType dtype,
                                   const Shape &sinks);

/// Enqueues out = attention(q, k, v) on `stream`: with plan.tensorCores the tensor-core kernel
/// of FlashAttention.h where it applies, otherwise one block of kAttentionTile threads per
/// query row (a grid-stride loop over rows past 2^20 blocks) with plan.scratchBytes of
/// dynamic shared memory. `sinks` ([Hq], plan's dtype): given exactly when plan.sinks.
/// Returns as launchSwiglu (cudaErrorInvalidValue also for sinks given without plan.sinks or
/// the reverse).
cudaError_t launchAttention(const AttentionPlan &plan, const void *q, const void *k, const void *v,
                            void *out, cudaStream_t stream, const void *sinks = nullptr);

/// The host's stand-in for a thread block in attentionRow: forEach runs every index of a
/// phase, in order, before the next phase starts; sync() has nothing to wait for.
struct SerialBlock {
  template <typename Fn> RP_HD void forEach(int64_t n, Fn &&fn) const {
    for (int64_t t = 0; t < n; ++t)
      fn(t);
  }
  RP_HD void sync() const {}
};

/// Output row `row` of attention (the kernel's body; see the file comment). `block` runs the
/// data-parallel phases: block.forEach(n, fn) calls fn(t) for t in [0, n), split among the
/// block's threads (index t always on the same thread for a given n), and block.sync() is a
/// barrier. `scratch` holds dim + valueDim + 2 * tile compute values shared by the block (the
/// device's dynamic shared memory). Code outside forEach runs on every thread of the block
/// with the same values (the running max and sum are computed redundantly by each thread, in
/// key order, from the shared scores). `sinks`: [Hq] when plan.sinks, otherwise null.
template <base::DType D, typename Block>
RP_HD inline void attentionRow(const AttentionPlan &plan, const void *q, const void *k,
                               const void *v, void *out, int64_t row, const Block &block,
                               typename DTypeTraits<D>::Compute *scratch,
                               const void *sinks = nullptr) {
  using C = typename DTypeTraits<D>::Compute;
  const int64_t dim = plan.dim, vdim = plan.valueDim, tile = plan.tile;
  C *sq = scratch;        // q row, [dim]
  C *acc = sq + dim;      // output accumulators, [vdim]
  C *score = acc + vdim;  // scaled scores of the tile, [tile]
  C *prob = score + tile; // e^(score - m'), [tile]
  const int64_t i = row % plan.seq, bh = row / plan.seq;
  const int64_t b = bh / plan.heads, h = bh % plan.heads;
  const int64_t kvRow = (b * plan.kvHeads + h / plan.groups) * plan.seq;
  const int64_t qBase = row * dim;
  const int64_t keys = plan.causal ? i + 1 : plan.seq;
  const int64_t first = attentionRowFirstKey(plan, i); // the sliding window's first key
  const C scale = static_cast<C>(plan.scale);

  block.sync(); // the previous row of this block is done with the scratch
  block.forEach(dim, [&](int64_t c) { sq[c] = loadAs<D>(q, qBase + c); });
  block.forEach(vdim, [&](int64_t c) { acc[c] = C(0); });
  block.sync();
  // The sink (when there is one) is the softmax's first logit: m = sink, l = e^(sink - m) = 1.
  C m = sinks ? static_cast<C>(loadAs<D>(sinks, h)) : -static_cast<C>(INFINITY);
  C l = sinks ? C(1) : C(0);
  for (int64_t j0 = first; j0 < keys; j0 += tile) {
    const int64_t n = keys - j0 < tile ? keys - j0 : tile;
    block.forEach(n, [&](int64_t t) {
      const int64_t kb = (kvRow + j0 + t) * dim;
      C dot = C(0);
      for (int64_t c = 0; c < dim; ++c)
        dot += sq[c] * static_cast<C>(loadAs<D>(k, kb + c));
      score[t] = attentionCapped(plan, dot * scale).value;
    });
    block.sync();
    C mNew = m;
    for (int64_t t = 0; t < n; ++t)
      mNew = score[t] > mNew ? score[t] : mNew;
    const C corr = fusedExp(m - mNew); // 0 on the first tile without a sink (m = -inf)
    block.forEach(n, [&](int64_t t) { prob[t] = fusedExp(score[t] - mNew); });
    block.sync();
    l *= corr;
    for (int64_t t = 0; t < n; ++t)
      l += prob[t];
    block.forEach(vdim, [&](int64_t c) {
      C a = acc[c] * corr;
      for (int64_t t = 0; t < n; ++t)
        a += prob[t] * static_cast<C>(loadAs<D>(v, (kvRow + j0 + t) * vdim + c));
      acc[c] = a;
    });
    m = mNew;
    // No barrier here: the next tile writes `score` (read above only before the last sync)
    // and then, after its first sync, `prob`; each acc[c] stays with one thread.
  }
  block.forEach(vdim, [&](int64_t c) { storeAs<D>(out, row * vdim + c, acc[c] / l); });
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void swiglu(const SwigluPlan &plan, const void *gate, const void *up, void *out);
void swigluVjp(const SwigluPlan &plan, const void *gate, const void *up, const void *g,
               void *dgate, void *dup);
void rope(const RopePlan &plan, const void *x, const void *cos, const void *sin, void *out);
void attention(const AttentionPlan &plan, const void *q, const void *k, const void *v, void *out,
               const void *sinks = nullptr);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_FUSED_H
