//===- AttentionReference.h - attention and its VJP from the definition ---===//
//
// A naive float64 reference of graph.attention and graph.attention_vjp for the CPU kernel
// tests, materialising each row's masked softmax: s_j = scale q_i . k_j for every key j
// (with a soft-cap c: c tanh(s_j / c)), -inf where the mask drops it (j > i when causal;
// i - j >= window with a sliding window), an optional sink logit sink_h in the max and the
// denominator Z = e^(sink_h) + sum_j e^(s_j) (GPT-OSS), P_j = e^(s_j) / Z, P_sink = e^(sink_h)
// / Z, y_i = sum_j P_j v_j; dP_j = dout_i . v_j, D_i = sum_j P_j dP_j, dS_j = P_j (dP_j - D_i)
// (times the cap's derivative 1 - tanh^2 with a soft-cap), dq/dk from scale dS, dv = P^T
// dout, dsink_h = -sum_(b, i) P_sink D_i. q [B, Hq, S, D]; k [B, Hkv, S, D]; v [B, Hkv, S,
// Dv]; dout [B, Hq, S, Dv]; sinks [Hq].
//
//===----------------------------------------------------------------------===//

#ifndef RP_TEST_UNIT_ATTENTIONREFERENCE_H
#define RP_TEST_UNIT_ATTENTIONREFERENCE_H

#include "test/Unit/kernels/KernelTestUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rp::kernels::cpu::test {

/// f32 kernels' VJP against the reference (which takes D_i from the kernel's rounded out): dk
/// and dv sum up to G S f32 terms; dsinks sums B S f32-rounded terms P_sink D_i.
inline constexpr Tolerance kAttentionVjpF32{1e-5, 5e-6};
inline constexpr Tolerance kAttentionDsinkF32{1e-5, 2e-5};

/// The reference's results, row-major in the shapes of out ([B, Hq, S, Dv]), dq, dk, dv and
/// dsinks.
struct AttentionReference {
  std::vector<double> out, dq, dk, dv, dsinks;
};

/// The masks and options of one reference call: `sinks` may be null (no sink); a `window` of
/// 0 is none (it applies with `causal`); `out` (when not null) gives D_i = dout_i . out_i from
/// that tensor (the fused kernel's definition) instead of the reference's own probabilities.
struct AttentionReferenceOptions {
  double scale = 1.0;
  bool causal = false;
  int64_t window = 0;
  const HostTensor *sinks = nullptr;
  const HostTensor *out = nullptr;
  double softcap = 0.0; ///< 0: none
};

/// The forward and VJP from the definition (file comment), in double.
inline AttentionReference attentionReference(const HostTensor &q, const HostTensor &k,
                                             const HostTensor &v, const HostTensor &dout,
                                             const AttentionReferenceOptions &o) {
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const int64_t B = qs[0], H = qs[1], S = qs[2], D = qs[3], Dv = vs[3], G = H / ks[1];
  const Shape os{B, H, S, Dv};
  AttentionReference r{std::vector<double>(B * H * S * Dv),
                       std::vector<double>(q.numElements()),
                       std::vector<double>(k.numElements()),
                       std::vector<double>(v.numElements()), std::vector<double>(H)};
  auto at = [](const HostTensor &t, int64_t b, int64_t h, int64_t i, int64_t c) {
    return get(t, ravel({b, h, i, c}, t.shape()));
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / G;
        const double sink = o.sinks ? get(*o.sinks, h) : -INFINITY;
        std::vector<double> p(S), dp(S, 0.0), slope(S, 1.0);
        double m = sink;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t c = 0; c < D; ++c)
            s += at(q, b, h, i, c) * at(k, b, hk, j, c);
          s *= o.scale;
          if (o.softcap > 0) {
            const double t = std::tanh(s / o.softcap);
            s = o.softcap * t;
            slope[j] = 1 - t * t;
          }
          const bool kept = (!o.causal || j <= i) && (o.window <= 0 || i - j < o.window);
          p[j] = kept ? s : -INFINITY;
          m = std::max(m, p[j]);
          for (int64_t c = 0; c < Dv; ++c)
            dp[j] += at(dout, b, h, i, c) * at(v, b, hk, j, c);
        }
        double z = std::exp(sink - m);
        for (int64_t j = 0; j < S; ++j)
          z += (p[j] = std::exp(p[j] - m));
        const double pSink = std::exp(sink - m) / z;
        double delta = 0;
        for (int64_t j = 0; j < S; ++j) {
          p[j] /= z;
          delta += p[j] * dp[j];
          for (int64_t c = 0; c < Dv; ++c)
            r.out[ravel({b, h, i, c}, os)] += p[j] * at(v, b, hk, j, c);
        }
        if (o.out) {
          delta = 0;
          for (int64_t c = 0; c < Dv; ++c)
            delta += at(dout, b, h, i, c) * at(*o.out, b, h, i, c);
        }
        r.dsinks[h] -= pSink * delta;
        for (int64_t j = 0; j < S; ++j) {
          const double ds = p[j] * (dp[j] - delta) * slope[j];
          for (int64_t c = 0; c < D; ++c) {
            r.dq[ravel({b, h, i, c}, qs)] += o.scale * ds * at(k, b, hk, j, c);
            r.dk[ravel({b, hk, j, c}, ks)] += o.scale * ds * at(q, b, h, i, c);
          }
          for (int64_t c = 0; c < Dv; ++c)
            r.dv[ravel({b, hk, j, c}, vs)] += p[j] * at(dout, b, h, i, c);
        }
      }
  return r;
}

/// A kernel's dq, dk, dv (and dsinks, when not null) of dtype `t` against the reference:
/// kAttentionVjpF32 (dsinks kAttentionDsinkF32) for f32, kF64 for f64.
inline void expectGradsClose(DType t, const HostTensor &dq, const HostTensor &dk,
                             const HostTensor &dv, const HostTensor *dsinks,
                             const AttentionReference &want) {
  const bool f32 = t == DType::F32;
  expectClose(dq, want.dq, f32 ? kAttentionVjpF32 : kF64, "dq");
  expectClose(dk, want.dk, f32 ? kAttentionVjpF32 : kF64, "dk");
  expectClose(dv, want.dv, f32 ? kAttentionVjpF32 : kF64, "dv");
  if (dsinks)
    expectClose(*dsinks, want.dsinks, f32 ? kAttentionDsinkF32 : kF64, "dsinks");
}

} // namespace rp::kernels::cpu::test

#endif // RP_TEST_UNIT_ATTENTIONREFERENCE_H
