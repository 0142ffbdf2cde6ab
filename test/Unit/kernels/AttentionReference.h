//===- AttentionReference.h - attention and its VJP from the definition ---===//
//
// A naive float64 reference of graph.attention and graph.attention_vjp for the CPU kernel
// tests, materialising each row's masked softmax: s_j = scale q_i . k_j for every key j, -inf
// where the mask drops it (j > i when causal; i - j >= window with a sliding window), an
// optional sink logit sink_h in the max and the denominator Z = e^(sink_h) + sum_j e^(s_j)
// (GPT-OSS), P_j = e^(s_j) / Z, P_sink = e^(sink_h) / Z, y_i = sum_j P_j v_j; dP_j = dout_i .
// v_j, D_i = sum_j P_j dP_j, dS_j = P_j (dP_j - D_i), dq/dk from scale dS, dv = P^T dout,
// dsink_h = -sum_(b, i) P_sink D_i. q, dout [B, Hq, S, D]; k, v [B, Hkv, S, D]; sinks [Hq].
//
//===----------------------------------------------------------------------===//

#ifndef RP_TEST_UNIT_ATTENTIONREFERENCE_H
#define RP_TEST_UNIT_ATTENTIONREFERENCE_H

#include "test/Unit/kernels/KernelTestUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rp::kernels::cpu::test {

/// The reference's results, row-major in the shapes of out, dq, dk, dv and dsinks.
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
};

/// The forward and VJP from the definition (file comment), in double.
inline AttentionReference attentionReference(const HostTensor &q, const HostTensor &k,
                                             const HostTensor &v, const HostTensor &dout,
                                             const AttentionReferenceOptions &o) {
  const Shape &qs = q.shape(), &ks = k.shape();
  const int64_t B = qs[0], H = qs[1], S = qs[2], D = qs[3], G = H / ks[1];
  AttentionReference r{std::vector<double>(q.numElements()),
                       std::vector<double>(q.numElements()),
                       std::vector<double>(k.numElements()),
                       std::vector<double>(k.numElements()), std::vector<double>(H)};
  auto at = [](const HostTensor &t, int64_t b, int64_t h, int64_t i, int64_t c) {
    return get(t, ravel({b, h, i, c}, t.shape()));
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / G;
        const double sink = o.sinks ? get(*o.sinks, h) : -INFINITY;
        std::vector<double> p(S), dp(S, 0.0);
        double m = sink;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t c = 0; c < D; ++c)
            s += at(q, b, h, i, c) * at(k, b, hk, j, c);
          const bool kept = (!o.causal || j <= i) && (o.window <= 0 || i - j < o.window);
          p[j] = kept ? s * o.scale : -INFINITY;
          m = std::max(m, p[j]);
          for (int64_t c = 0; c < D; ++c)
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
          for (int64_t c = 0; c < D; ++c)
            r.out[ravel({b, h, i, c}, qs)] += p[j] * at(v, b, hk, j, c);
        }
        if (o.out) {
          delta = 0;
          for (int64_t c = 0; c < D; ++c)
            delta += at(dout, b, h, i, c) * at(*o.out, b, h, i, c);
        }
        r.dsinks[h] -= pSink * delta;
        for (int64_t j = 0; j < S; ++j) {
          const double ds = p[j] * (dp[j] - delta);
          for (int64_t c = 0; c < D; ++c) {
            r.dq[ravel({b, h, i, c}, qs)] += o.scale * ds * at(k, b, hk, j, c);
            r.dk[ravel({b, hk, j, c}, ks)] += o.scale * ds * at(q, b, h, i, c);
            r.dv[ravel({b, hk, j, c}, ks)] += p[j] * at(dout, b, h, i, c);
          }
        }
      }
  return r;
}

} // namespace rp::kernels::cpu::test

#endif // RP_TEST_UNIT_ATTENTIONREFERENCE_H
