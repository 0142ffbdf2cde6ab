//===- AttentionGrad.cpp - The fused attention backward on the CPU --------===//

#include "kernels/cpu/AttentionGrad.h"

#include "kernels/cpu/KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

namespace {

/// The dimensions of one attention_vjp and its operands (f32 or f64 data of type T).
template <typename T> struct Problem {
  int64_t batch, heads, kvHeads, groups, seq, dim;
  int64_t vdim; ///< the value head size Dv (out, dout, v, dv)
  double scale;
  bool causal;
  const T *q, *k, *v, *out, *dout;
  const T *sinks; ///< [Hq] or null
  int64_t window; ///< sliding window (>= 1, causal) or 0
  double softcap; ///< logit soft-cap (> 0) or 0
};

/// The VJP of one k/v head (b, g): for each of its query heads h (ascending) and each block of
/// kAttentionQueryBlock query rows (ascending), with the keys the block sees (with a sliding
/// window, from the first key of its first row's window):
///   P = softmaxRows(capScores(scale q k^T))  (the forward's probabilities, bit for bit; with a
///         softcap, capDeriv = the cap's derivative per score)
///   D_i = dout_i . out_i (double, c ascending, rounded to T; dP_i0 for a row that sees one
///         key, so that its dS is exactly 0)
///   dS = P (dout v^T - D)  (times capDeriv with a softcap)
///   dq_blk = scale dS k,  dk += scale dS^T q_blk,  dv += P^T dout_blk
/// (GEMMs on the calling thread). dk and dv start at 0 and sum heads, then blocks, in that fixed
/// order; a task owns its head's dk, dv and its query heads' dq, so the bits do not depend on
/// the thread count. prob, ds (and capDeriv with a softcap): scratch of kAttentionQueryBlock *
/// seq. With sinks, also
/// dsinkPart[h] = -sum_i P_sink,i D_i (double, rows ascending) for the group's query heads h
/// (dsinkPart: this batch row's [Hq] partial sums); sinkProb: scratch of kAttentionQueryBlock.
template <typename T>
void kvHeadVjp(const Problem<T> &p, int64_t b, int64_t g, T *dq, T *dk, T *dv, T *prob, T *ds,
               T *capDeriv, T *sinkProb, double *dsinkPart) {
  const int64_t seq = p.seq, dim = p.dim, vdim = p.vdim;
  const int64_t kvRow = (b * p.kvHeads + g) * seq;
  const T *ks = p.k + kvRow * dim, *vs = p.v + kvRow * vdim;
  T *dks = dk + kvRow * dim, *dvs = dv + kvRow * vdim;
  std::fill(dks, dks + seq * dim, T(0));
  std::fill(dvs, dvs + seq * vdim, T(0));
  const T scale = static_cast<T>(p.scale);
  for (int64_t h = g * p.groups; h < (g + 1) * p.groups; ++h) {
    const T *sink = p.sinks ? p.sinks + h : nullptr;
    double dsink = 0.0;
    for (int64_t i0 = 0; i0 < seq; i0 += kAttentionQueryBlock) {
      const int64_t rows = seq - i0 < kAttentionQueryBlock ? seq - i0 : kAttentionQueryBlock;
      const int64_t k0 = attentionFirstKey(i0, p.causal, p.window);
      const int64_t keys = (p.causal ? i0 + rows : seq) - k0;
      const int64_t row0 = (b * p.heads + h) * seq + i0;
      const T *qs = p.q + row0 * dim, *dos = p.dout + row0 * vdim, *os = p.out + row0 * vdim;
      const T *kb = ks + k0 * dim, *vb = vs + k0 * vdim;
      gemm(false, true, rows, keys, dim, scale, qs, dim, kb, dim, T(0), prob, keys);
      capScores(prob, rows * keys, p.softcap, capDeriv);
      softmaxRows(prob, rows, keys, i0, p.causal, sink, sinkProb, k0, p.window);
      gemm(false, true, rows, keys, vdim, T(1), dos, vdim, vb, vdim, T(0), ds, keys);
      for (int64_t r = 0; r < rows; ++r) {
        double delta = 0.0;
        for (int64_t c = 0; c < vdim; ++c)
          delta += static_cast<double>(dos[r * vdim + c]) * static_cast<double>(os[r * vdim + c]);
        // A row that sees one key (P = 1, out = v_0): D = dP_i0 exactly, so dS = 0, as in exact
        // arithmetic (the GEMM's dP and this D would differ by rounding). A sink takes a share
        // of the row, so then P < 1 and D is computed as for any row.
        const int64_t first = attentionFirstKey(i0 + r, p.causal, p.window) - k0;
        const bool oneKey = !sink && (p.causal ? i0 + r + 1 - k0 : keys) - first == 1;
        const T d = oneKey ? ds[r * keys + first] : static_cast<T>(delta);
        if (sink)
          dsink -= static_cast<double>(sinkProb[r]) * static_cast<double>(d);
        T *dsr = ds + r * keys;
        const T *pr = prob + r * keys;
        for (int64_t j = 0; j < keys; ++j)
          dsr[j] = pr[j] * (dsr[j] - d);
        if (p.softcap != 0.0)
          for (int64_t j = 0; j < keys; ++j)
            dsr[j] *= capDeriv[r * keys + j];
      }
      gemm(false, false, rows, dim, keys, scale, ds, keys, kb, dim, T(0), dq + row0 * dim, dim);
      gemm(true, false, keys, dim, rows, scale, ds, keys, qs, dim, T(1), dks + k0 * dim, dim);
      gemm(true, false, keys, vdim, rows, T(1), prob, keys, dos, vdim, T(1), dvs + k0 * vdim,
           vdim);
    }
    if (sink)
      dsinkPart[h] = dsink;
  }
}

/// Runs kvHeadVjp per k/v head in parallel; with sinks, dsinks[h] sums the batch rows'
/// partials in ascending order afterwards (0 when there is nothing to attend).
template <typename T>
void attentionVjpLoop(const Problem<T> &p, HostTensor &dq, HostTensor &dk, HostTensor &dv,
                      HostTensor *dsinks) {
  if (dsinks)
    for (int64_t h = 0; h < p.heads; ++h)
      dsinks->data<T>()[h] = T(0);
  if (p.batch * p.kvHeads * p.seq == 0)
    return; // no key row: dq, dk, dv are empty
  std::vector<double> dsinkParts(dsinks ? static_cast<size_t>(p.batch * p.heads) : 0, 0.0);
  const int64_t tasks = p.batch * p.kvHeads;
  const bool parallel =
      tasks > 1 && p.batch * p.heads * p.seq * p.seq * p.dim >= kParallelMinElements;
  T *pdq = dq.data<T>(), *pdk = dk.data<T>(), *pdv = dv.data<T>();
#pragma omp parallel if (parallel)
  {
    std::vector<T> prob(static_cast<size_t>(kAttentionQueryBlock * p.seq)),
        ds(static_cast<size_t>(kAttentionQueryBlock * p.seq)),
        capDeriv(p.softcap != 0.0 ? static_cast<size_t>(kAttentionQueryBlock * p.seq) : 0),
        sinkProb(static_cast<size_t>(kAttentionQueryBlock));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t b = t / p.kvHeads;
      kvHeadVjp(p, b, t % p.kvHeads, pdq, pdk, pdv, prob.data(), ds.data(), capDeriv.data(),
                sinkProb.data(), dsinks ? dsinkParts.data() + b * p.heads : nullptr);
    }
  }
  if (!dsinks)
    return;
  for (int64_t h = 0; h < p.heads; ++h) {
    double sum = 0.0;
    for (int64_t b = 0; b < p.batch; ++b)
      sum += dsinkParts[b * p.heads + h];
    dsinks->data<T>()[h] = static_cast<T>(sum);
  }
}

} // namespace

Status attentionVjp(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                    const HostTensor &out, const HostTensor &dout, double scale, bool causal,
                    HostTensor &dq, HostTensor &dk, HostTensor &dv, const HostTensor *sinks,
                    HostTensor *dsinks, int64_t window, double softcap) {
  const char *op = "attention_vjp";
  RP_RETURN_IF_ERROR(checkDType(op, "q", q, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAttentionQuery(q.shape(), op));
  RP_RETURN_IF_ERROR(checkSameDType(op, "q", q, "k", k));
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  RP_RETURN_IF_ERROR(checkAttentionKey(qs, ks, op));
  RP_RETURN_IF_ERROR(checkSameDType(op, "q", q, "v", v));
  RP_RETURN_IF_ERROR(checkAttentionValue(ks, vs, op));
  const Shape os = attentionOutShape(qs, vs);
  RP_RETURN_IF_ERROR(checkType(op, "out", out, q.dtype(), os));
  RP_RETURN_IF_ERROR(checkType(op, "dout", dout, q.dtype(), os));
  RP_RETURN_IF_ERROR(checkType(op, "dq", dq, q.dtype(), qs));
  RP_RETURN_IF_ERROR(checkType(op, "dk", dk, q.dtype(), ks));
  RP_RETURN_IF_ERROR(checkType(op, "dv", dv, q.dtype(), vs));
  if ((sinks == nullptr) != (dsinks == nullptr))
    return base::invalidArgument(std::string(op) + ": sinks and dsinks come together");
  if (sinks) {
    RP_RETURN_IF_ERROR(checkType(op, "sinks", *sinks, q.dtype(), Shape{qs[1]}));
    RP_RETURN_IF_ERROR(checkType(op, "dsinks", *dsinks, q.dtype(), Shape{qs[1]}));
  }
  RP_RETURN_IF_ERROR(checkAttentionWindow(op, causal, window));
  RP_RETURN_IF_ERROR(checkAttentionSoftcap(op, softcap));
  visitFloat(q.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Problem<T> p{qs[0], qs[1], ks[1], qs[1] / ks[1], qs[2], qs[3], vs[3], scale, causal,
                       q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), dout.data<T>(),
                       sinks ? sinks->data<T>() : nullptr, window, softcap};
    attentionVjpLoop(p, dq, dk, dv, dsinks);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
