//===- AttentionGrad.h - The fused attention backward on the GPU -*- C++ -*-===//
//
// The GPU kernel of graph.attention_vjp, with the semantics of cpu::attentionVjp
// (kernels/cpu/AttentionGrad.h): for y = attention(q, k, v; scale, causal) (kernels/cuda/Fused.h)
// and an output gradient dout, given the forward output out (= y),
//   s_ij = scale q_i . k_j (j <= i when causal), lse_i = log sum_j e^(s_ij),
//   P_ij = e^(s_ij - lse_i), D_i = dout_i . out_i, dS_ij = P_ij (dout_i . v_j - D_i),
//   dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_(h, i) dS_ij q_i, dv_j = sum_(h, i) P_ij dout_i,
// the (h, i) sums over the query heads of k/v head j's group and their rows. q, dq [B, Hq, S,
// D]; k, dk [B, Hkv, S, D], Hkv dividing Hq; v, dv [B, Hkv, S, Dv]; out, dout [B, Hq, S, Dv]
// (the value head size Dv may differ from D). Nothing of size S x S is stored.
// With attention sinks (GPT-OSS, sinks [Hq]): lse_i also sums e^(sinks[h]), the formulas
// above hold as written, and dsinks [Hq] receives dsinks[h] = -sum_(b, i) P_sink,i D_i with
// P_sink,i = e^(sinks[h] - lse_i) (cpu::attentionVjp's). With a logit soft-cap c, s_ij is
// c tanh(t_ij), t_ij = scale q_i . k_j / c, and dS_ij is multiplied by 1 - tanh^2(t_ij)
// (attentionCapped; cpu::attentionVjp's).
//
// Algorithm: the FlashAttention-2 backward (Dao 2023, Algorithm 2) split into two launches so
// that no value is summed by two blocks (no atomics; docs/DECISIONS.md "Numerics"):
//  1. query pass, one block of kAttentionTile threads per query row (b, h, i): D_i (every
//     thread sums dout_i,c out_i,c over c in order, from shared memory); a first sweep over
//     the keys in tiles forms lse_i with the forward's online softmax (attentionRow); a second
//     sweep recomputes the tile's scores, thread t forms dS_i,(j0 + t), and thread c owns
//     dq_i,c += sum_t dS_t k[j0 + t, c] in key order. lse_i and D_i go to the device scratch.
//  2. key pass, one block per key row (b, g, j): for each query head of group g in order and
//     each tile of query rows i (i >= j when causal) in order, thread t forms P and dS of row
//     i0 + t from the scratch's lse and D, and thread c owns dk_j,c and dv_j,c.
//  3. with sinks, one block per query head h: lane t (of kAttentionSinkLanes) sums
//     P_sink,i D_i over the batch rows b ascending and, in each, rows i = t, t + lanes, ...
//     ascending, from the scratch's lse and D; then one thread sums the lanes in order and
//     stores dsinks[h] = -sum. No atomics; the order depends on nothing but the shapes.
// Every sum has a fixed order, so results are deterministic (run to run, grid to grid). Cost:
// seven products of the forward's size (S and dP are recomputed in each pass) against the
// algorithm's five; K/V (pass 1) and Q/dO (pass 2) rows are streamed once per row from L2.
// Not a tuned kernel (no tensor cores, no tiling of the rows per block): the point is to
// never materialise [B, Hq, S, S].
//
// Dtypes and numerics as Fused.h: f32 and f64 compute in double and round once when stored;
// f16 and bf16 compute in float. Shared memory per block: (2 D + 2 Dv + 2 kAttentionTile)
// compute values (key pass; the query pass takes D + Dv + max(D, Dv) + 2 kAttentionTile);
// D, Dv <= kMaxAttentionVjpHeadDim.
// Device scratch: 2 B Hq S compute values (lse, D).
//
// Host verification: the per-row bodies attentionVjpQueryRow and attentionVjpKeyRow are
// RP_HD code shared by the kernels (AttentionGrad.cu) and replay::attentionVjp (HostReplay.cpp,
// with SerialBlock), tested against cpu::attentionVjp by test/Unit/CudaAttentionGradHostTest.cpp;
// the launches by test/Unit/CudaAttentionGradTest.cpp (needs a GPU).
//
// Errors: planAttentionVjp returns InvalidArgument naming "attention_vjp", the operand, the
// expected and the actual dtype or shape (cpu::attentionVjp's messages); the launcher returns
// cudaErrorInvalidValue for a plan not from planAttentionVjp or a null or misaligned pointer,
// otherwise cudaGetLastError() after enqueueing; it never synchronizes. No device code here.
//
// Where the tensor cores apply (f16/bf16, D a multiple of 16 up to 128), launchAttentionVjp runs
// the WMMA kernel of FlashAttentionBackward.h instead (same two-pass structure, P and dS rounded
// to the storage type); the host replay keeps the row kernels' bodies, as for the forward.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ATTENTIONGRAD_H
#define RP_KERNELS_CUDA_ATTENTIONGRAD_H

#include "kernels/cuda/Fused.h"

namespace rp::kernels::cuda {

/// The largest head dimension D (and value head size Dv) attention_vjp takes (shared memory:
/// 2 D + 2 Dv + 2 kAttentionTile compute values, 34.8 KB for double at D = Dv = 1024, under
/// the 48 KB default).
inline constexpr int64_t kMaxAttentionVjpHeadDim = 1024;

/// The geometry of one attention_vjp. Query row r = (b, h, i) = (r / (Hq S), r / S % Hq,
/// r % S); key row kr = (b, g, j) = (kr / (Hkv S), kr / S % Hkv, kr % S).
struct AttentionVjpPlan {
  /// The forward's plan (planAttention of q, k, v): the geometry (dtype, batch, heads, kvHeads,
  /// groups, seq, dim, rows = B * Hq * S query rows, scale, causal) and the tensor-core
  /// kernel's.
  AttentionPlan forward;
  int64_t keyRows = 0; ///< B * Hkv * S key rows.
  /// Keys (pass 1) or query rows (pass 2) per tile (kAttentionTile; host tests vary it).
  int64_t tile = kAttentionTile;
  /// Shared memory per block: (2 dim + 2 valueDim + 2 tile) compute values.
  size_t sharedBytes = 0;
  /// Device scratch: lse then D, `rows` compute values each (and at least what the
  /// tensor-core kernel takes).
  size_t scratchBytes = 0;
  /// f16/bf16 with a head dimension the tensor-core backward takes (FlashAttention.h,
  /// FlashAttentionBackward.h): launchAttentionVjp runs that kernel when the device and the
  /// pointers allow it. Tests clear it to run the row kernels of this file.
  bool tensorCores = false;
};

/// Checks attention_vjp's operands as cpu::attentionVjp does: dtype f32, f64, f16 or bf16 (one
/// for all); q, dq [B, Hq, S, D]; k, dk [B, Hkv, S, D] with Hkv > 0 dividing Hq; v, dv
/// [B, Hkv, S, Dv]; out, dout [B, Hq, S, Dv]; D, Dv <= kMaxAttentionVjpHeadDim; `window` and
/// `softcap` as planAttention's.
/// Errors: InvalidArgument, e.g.
/// "attention_vjp: q is [2, 3], expected [B, Hq, S, D]", "attention_vjp: dk is ...",
/// "attention_vjp: head dimension 2048 exceeds the GPU kernel's limit of 1024".
base::StatusOr<AttentionVjpPlan>
planAttentionVjp(base::DType dtype, const Shape &q, const Shape &k, const Shape &v,
                 const Shape &out, const Shape &dout, double scale, bool causal, const Shape &dq,
                 const Shape &dk, const Shape &dv, int64_t window = 0, double softcap = 0.0);

/// Enqueues the backward on `stream`: with plan.tensorCores the tensor-core kernel of
/// FlashAttentionBackward.h where it applies (f16/bf16, D in 16..128 by 16, 16-byte aligned
/// pointers, enough shared memory; it rounds P and dS to the storage type, so its results are
/// not the row kernels'), otherwise the two row passes of this file. `scratch` is device
/// memory of plan.scratchBytes, aligned to 8 bytes. With plan.forward.sinks (set by
/// planAttentionSinks), `sinks` [Hq] and `dsinks` [Hq] of the plan's dtype are given and pass 3
/// (the sink gradient, attentionVjpSinkHead) follows either path; otherwise both are null.
/// Returns as launchAttention (cudaErrorInvalidValue also for a null scratch, or sinks/dsinks
/// not matching plan.forward.sinks). Never synchronizes.
cudaError_t launchAttentionVjp(const AttentionVjpPlan &plan, const void *q, const void *k,
                               const void *v, const void *out, const void *dout, void *dq,
                               void *dk, void *dv, void *scratch, cudaStream_t stream,
                               const void *sinks = nullptr, void *dsinks = nullptr);

/// Lanes (threads) of the sink-gradient pass; the partial sums of its fixed order.
inline constexpr int64_t kAttentionSinkLanes = kAttentionTile;

/// log(x) in the compute type (host: libm; device: the CUDA math library).
RP_HD inline double attentionLog(double x) { return ::log(x); }
RP_HD inline float attentionLog(float x) { return ::logf(x); }

/// sum_c a[c] b[c] over c ascending, a in the compute type, b loaded from `p` at `base`.
template <base::DType D>
RP_HD inline typename DTypeTraits<D>::Compute
attentionDot(const typename DTypeTraits<D>::Compute *a, const void *p, int64_t base, int64_t dim) {
  using C = typename DTypeTraits<D>::Compute;
  C s = C(0);
  for (int64_t c = 0; c < dim; ++c)
    s += a[c] * static_cast<C>(loadAs<D>(p, base + c));
  return s;
}

/// Pass 1 for query row `row` (see the file comment): dq row, lse[row], delta[row]. `block`
/// and the block-shared `shared` ((dim + valueDim + max(dim, valueDim) + 2 tile) compute
/// values) as attentionRow's; `sinks`
/// [Hq] when plan.forward.sinks (lse then includes the sink), otherwise null.
template <base::DType D, typename Block>
RP_HD inline void attentionVjpQueryRow(const AttentionVjpPlan &plan, const void *q, const void *k,
                                       const void *v, const void *out, const void *dout, void *dq,
                                       typename DTypeTraits<D>::Compute *lse,
                                       typename DTypeTraits<D>::Compute *delta, int64_t row,
                                       const Block &block, typename DTypeTraits<D>::Compute *shared,
                                       const void *sinks = nullptr) {
  using C = typename DTypeTraits<D>::Compute;
  const AttentionPlan &f = plan.forward;
  const int64_t dim = f.dim, vdim = f.valueDim, tile = plan.tile;
  // acc holds the out row (vdim) until D_i is formed, then the dq row (dim).
  C *sq = shared, *sdo = sq + dim, *acc = sdo + vdim, *score = acc + (dim > vdim ? dim : vdim),
    *ds = score + tile;
  const int64_t i = row % f.seq, bh = row / f.seq;
  const int64_t b = bh / f.heads, h = bh % f.heads;
  const int64_t kvRow = (b * f.kvHeads + h / f.groups) * f.seq;
  const int64_t qBase = row * dim, oBase = row * vdim, keys = f.causal ? i + 1 : f.seq;
  const int64_t first = attentionRowFirstKey(f, i);
  const C scale = static_cast<C>(f.scale);

  block.sync(); // the previous row of this block is done with the shared memory
  block.forEach(dim, [&](int64_t c) { sq[c] = loadAs<D>(q, qBase + c); });
  block.forEach(vdim, [&](int64_t c) {
    sdo[c] = loadAs<D>(dout, oBase + c);
    acc[c] = loadAs<D>(out, oBase + c); // out, until D_i is formed
  });
  block.sync();
  C dsum = C(0);
  for (int64_t c = 0; c < vdim; ++c)
    dsum += sdo[c] * acc[c];
  block.sync();
  block.forEach(dim, [&](int64_t c) { acc[c] = C(0); });
  // Sweep 1: lse_i by the online softmax (attentionRow's running max and sum, from the sink).
  C m = sinks ? static_cast<C>(loadAs<D>(sinks, h)) : -static_cast<C>(INFINITY);
  C l = sinks ? C(1) : C(0);
  for (int64_t j0 = first; j0 < keys; j0 += tile) {
    const int64_t n = keys - j0 < tile ? keys - j0 : tile;
    block.forEach(n, [&](int64_t t) {
      score[t] =
          attentionCapped(f, attentionDot<D>(sq, k, (kvRow + j0 + t) * dim, dim) * scale).value;
    });
    block.sync();
    C mNew = m;
    for (int64_t t = 0; t < n; ++t)
      mNew = score[t] > mNew ? score[t] : mNew;
    const C corr = fusedExp(m - mNew);
    block.forEach(n, [&](int64_t t) { ds[t] = fusedExp(score[t] - mNew); });
    block.sync();
    l *= corr;
    for (int64_t t = 0; t < n; ++t)
      l += ds[t];
    m = mNew;
    block.sync(); // ds is rewritten by the next tile
  }
  const C L = m + attentionLog(l);
  // Sweep 2: dS of each key, dq_c += dS_t k[j0 + t, c] in key order.
  for (int64_t j0 = first; j0 < keys; j0 += tile) {
    const int64_t n = keys - j0 < tile ? keys - j0 : tile;
    block.forEach(n, [&](int64_t t) {
      const int64_t key = kvRow + j0 + t;
      const CappedScore<C> s = attentionCapped(f, attentionDot<D>(sq, k, key * dim, dim) * scale);
      const C p = fusedExp(s.value - L);
      ds[t] = p * (attentionDot<D>(sdo, v, key * vdim, vdim) - dsum) * s.slope;
    });
    block.sync();
    block.forEach(dim, [&](int64_t c) {
      C a = acc[c];
      for (int64_t t = 0; t < n; ++t)
        a += ds[t] * static_cast<C>(loadAs<D>(k, (kvRow + j0 + t) * dim + c));
      acc[c] = a;
    });
    block.sync(); // ds is rewritten by the next tile
  }
  block.forEach(dim, [&](int64_t c) { storeAs<D>(dq, qBase + c, scale * acc[c]); });
  block.forEach(1, [&](int64_t) {
    lse[row] = L;
    delta[row] = dsum;
  });
}

/// Pass 2 for key row `krow` (see the file comment): dk and dv rows from lse and delta of
/// pass 1. `shared`: (2 dim + 2 valueDim + 2 tile) compute values.
template <base::DType D, typename Block>
RP_HD inline void attentionVjpKeyRow(const AttentionVjpPlan &plan, const void *q, const void *k,
                                     const void *v, const void *dout, void *dk, void *dv,
                                     const typename DTypeTraits<D>::Compute *lse,
                                     const typename DTypeTraits<D>::Compute *delta, int64_t krow,
                                     const Block &block, typename DTypeTraits<D>::Compute *shared) {
  using C = typename DTypeTraits<D>::Compute;
  const AttentionPlan &f = plan.forward;
  const int64_t dim = f.dim, vdim = f.valueDim, tile = plan.tile, seq = f.seq;
  C *sk = shared, *sv = sk + dim, *accK = sv + vdim, *accV = accK + dim, *p = accV + vdim,
    *ds = p + tile;
  const int64_t j = krow % seq, bg = krow / seq;
  const int64_t b = bg / f.kvHeads, g = bg % f.kvHeads;
  const int64_t kBase = krow * dim, vBase = krow * vdim;
  const C scale = static_cast<C>(f.scale);

  block.sync();
  block.forEach(dim, [&](int64_t c) {
    sk[c] = loadAs<D>(k, kBase + c);
    accK[c] = C(0);
  });
  block.forEach(vdim, [&](int64_t c) {
    sv[c] = loadAs<D>(v, vBase + c);
    accV[c] = C(0);
  });
  block.sync();
  for (int64_t h = g * f.groups; h < (g + 1) * f.groups; ++h) {
    const int64_t rowBase = (b * f.heads + h) * seq;
    // With a sliding window, key j is seen by queries j .. j + window - 1 only.
    const int64_t end = f.window > 0 && j + f.window < seq ? j + f.window : seq;
    for (int64_t i0 = f.causal ? j : 0; i0 < end; i0 += tile) {
      const int64_t n = end - i0 < tile ? end - i0 : tile;
      block.forEach(n, [&](int64_t t) {
        const int64_t row = rowBase + i0 + t;
        // q_i . k_j with q loaded and k from shared: the products and order of pass 1.
        C s = C(0);
        for (int64_t c = 0; c < dim; ++c)
          s += static_cast<C>(loadAs<D>(q, row * dim + c)) * sk[c];
        C dp = C(0);
        for (int64_t c = 0; c < vdim; ++c)
          dp += static_cast<C>(loadAs<D>(dout, row * vdim + c)) * sv[c];
        const CappedScore<C> capped = attentionCapped(f, s * scale);
        p[t] = fusedExp(capped.value - lse[row]);
        ds[t] = p[t] * (dp - delta[row]) * capped.slope;
      });
      block.sync();
      block.forEach(dim, [&](int64_t c) {
        C aK = accK[c];
        for (int64_t t = 0; t < n; ++t)
          aK += ds[t] * static_cast<C>(loadAs<D>(q, (rowBase + i0 + t) * dim + c));
        accK[c] = aK;
      });
      block.forEach(vdim, [&](int64_t c) {
        C aV = accV[c];
        for (int64_t t = 0; t < n; ++t)
          aV += p[t] * static_cast<C>(loadAs<D>(dout, (rowBase + i0 + t) * vdim + c));
        accV[c] = aV;
      });
      block.sync(); // p and ds are rewritten by the next tile
    }
  }
  block.forEach(dim, [&](int64_t c) { storeAs<D>(dk, kBase + c, scale * accK[c]); });
  block.forEach(vdim, [&](int64_t c) { storeAs<D>(dv, vBase + c, accV[c]); });
}

/// Pass 3 for query head `h` (see the file comment): dsinks[h] = -sum_(b, i)
/// e^(sinks[h] - lse[b, h, i]) delta[b, h, i] from pass 1's lse and delta (either path's: the
/// tensor-core pass 1 stores them in the same layout, as float). `f`: the forward plan;
/// `shared`: kAttentionSinkLanes values of the compute type S.
template <base::DType D, typename S, typename Block>
RP_HD inline void attentionVjpSinkHead(const AttentionPlan &f, const void *sinks, void *dsinks,
                                       const S *lse, const S *delta, int64_t h,
                                       const Block &block, S *shared) {
  const S sink = static_cast<S>(loadAs<D>(sinks, h));
  block.sync(); // the previous head of this block is done with the shared lanes
  block.forEach(kAttentionSinkLanes, [&](int64_t t) {
    S acc = S(0);
    for (int64_t b = 0; b < f.batch; ++b) {
      const int64_t base = (b * f.heads + h) * f.seq;
      for (int64_t i = t; i < f.seq; i += kAttentionSinkLanes)
        acc += fusedExp(sink - lse[base + i]) * delta[base + i];
    }
    shared[t] = acc;
  });
  block.sync();
  block.forEach(1, [&](int64_t) {
    S sum = S(0);
    for (int64_t t = 0; t < kAttentionSinkLanes; ++t)
      sum += shared[t];
    storeAs<D>(dsinks, h, S(0) - sum); // +0 when nothing attends, as the CPU kernel
  });
}

namespace replay {
/// launchAttentionVjp's work on the host: pass 1 over every query row, then pass 2 over every
/// key row, then (with sinks) pass 3 over every head, with SerialBlock; `scratch` holds
/// plan.scratchBytes.
void attentionVjp(const AttentionVjpPlan &plan, const void *q, const void *k, const void *v,
                  const void *out, const void *dout, void *dq, void *dk, void *dv, void *scratch,
                  const void *sinks = nullptr, void *dsinks = nullptr);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ATTENTIONGRAD_H
