//===- CpuAttentionGradTest.cpp - attention_vjp on the CPU ----------------===//
//
// cpu::attentionVjp against a naive float64 reference written from the decomposed VJP (the
// rule graph.attention had before the fused op: materialise P = softmax(q k^T * scale + mask)
// per head, dP = dout v^T, dS = P (dP - rowsum(dP P)), dq = scale dS k, dk = scale dS^T q,
// dv = P^T dout, dk and dv summed over each group of query heads). f64: the kernel is given
// the forward output of cpu::attention and must match the reference to kF64 (rtol 1e-12,
// atol 1e-12). f32: the reference takes D_i = dout_i . out_i from the same rounded out the
// kernel gets (the kernel's definition) and the kernel must match to rtol 1e-5, atol 5e-6:
// the kernel computes f32 in f32 (sgemm, expF32), and dk and dv sum up to G S terms of size up
// to |dout| in f32, an error growing like sqrt(G S) ulps (about 1.4e-6 at S = 130, G = 2; the
// kernel computed in double before, within kF32 = 1e-5 / 1e-6).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

/// f32: the f32 kernel against the float64 reference (file comment).
constexpr Tolerance kVjpF32{1e-5, 5e-6};

struct Grads {
  std::vector<double> dq, dk, dv;
};

/// The decomposed VJP in double. `deltaFromOut`: D_i = dout_i . out_i (the fused kernel's
/// form); otherwise D_i = sum_j dP_ij P_ij (the decomposition's).
Grads refVjp(const HostTensor &q, const HostTensor &k, const HostTensor &v, const HostTensor &out,
             const HostTensor &dout, double scale, bool causal, bool deltaFromOut) {
  const Shape &qs = q.shape(), &ks = k.shape();
  const int64_t B = qs[0], H = qs[1], S = qs[2], D = qs[3], Hkv = ks[1], G = H / Hkv;
  Grads g{std::vector<double>(q.numElements()), std::vector<double>(k.numElements()),
          std::vector<double>(k.numElements())};
  auto at = [](const HostTensor &t, int64_t b, int64_t h, int64_t i, int64_t c) {
    return get(t, ravel({b, h, i, c}, t.shape()));
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / G;
      std::vector<double> p(S * S, 0.0), dp(S * S, 0.0);
      for (int64_t i = 0; i < S; ++i) {
        double m = -INFINITY, sum = 0, delta = 0;
        for (int64_t j = 0; j <= (causal ? i : S - 1); ++j) {
          double s = 0;
          for (int64_t c = 0; c < D; ++c)
            s += at(q, b, h, i, c) * at(k, b, hk, j, c);
          p[i * S + j] = s * scale;
          m = std::max(m, s * scale);
          for (int64_t c = 0; c < D; ++c)
            dp[i * S + j] += at(dout, b, h, i, c) * at(v, b, hk, j, c);
        }
        for (int64_t j = 0; j <= (causal ? i : S - 1); ++j)
          sum += (p[i * S + j] = std::exp(p[i * S + j] - m));
        for (int64_t j = 0; j <= (causal ? i : S - 1); ++j) {
          p[i * S + j] /= sum;
          delta += p[i * S + j] * dp[i * S + j];
        }
        if (deltaFromOut) {
          delta = 0;
          for (int64_t c = 0; c < D; ++c)
            delta += at(dout, b, h, i, c) * at(out, b, h, i, c);
        }
        for (int64_t j = 0; j <= (causal ? i : S - 1); ++j) {
          const double ds = p[i * S + j] * (dp[i * S + j] - delta);
          for (int64_t c = 0; c < D; ++c) {
            g.dq[ravel({b, h, i, c}, qs)] += scale * ds * at(k, b, hk, j, c);
            g.dk[ravel({b, hk, j, c}, ks)] += scale * ds * at(q, b, h, i, c);
            g.dv[ravel({b, hk, j, c}, ks)] += p[i * S + j] * at(dout, b, h, i, c);
          }
        }
      }
    }
  return g;
}

struct Case {
  Shape q;
  int64_t kvHeads;
};

// Multi-head, grouped-query (2 and 3 query heads per k/v head), multi-query, one position
// (S = 1), a case large enough to run in parallel, and one of three query blocks (S = 130,
// the last partial); causal and not; f32 and f64.
TEST(CpuAttentionGrad, MatchesDecomposedReference) {
  std::mt19937 rng(29);
  for (DType t : kFloatDTypes)
    for (Case c : {Case{{2, 4, 5, 8}, 4}, Case{{1, 4, 7, 4}, 2}, Case{{2, 6, 3, 2}, 2},
                   Case{{1, 2, 1, 4}, 2}, Case{{2, 3, 1, 3}, 1}, Case{{1, 8, 40, 16}, 1},
                   Case{{1, 4, 130, 32}, 2}})
      for (bool causal : {false, true}) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " q " + base::formatShape(c.q) +
                     " Hkv " + std::to_string(c.kvHeads) + (causal ? " causal" : ""));
        const Shape kv{c.q[0], c.kvHeads, c.q[2], c.q[3]};
        HostTensor q = randomTensor(t, c.q, rng), k = randomTensor(t, kv, rng),
                   v = randomTensor(t, kv, rng), dout = randomTensor(t, c.q, rng);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
        HostTensor out = poisoned(t, c.q);
        ASSERT_OK(attention(q, k, v, scale, causal, out));
        HostTensor dq = poisoned(t, c.q), dk = poisoned(t, kv), dv = poisoned(t, kv);
        ASSERT_OK(attentionVjp(q, k, v, out, dout, scale, causal, dq, dk, dv));
        const Grads want = refVjp(q, k, v, out, dout, scale, causal, t == DType::F32);
        const Tolerance tol = t == DType::F32 ? kVjpF32 : kF64;
        expectClose(dq, want.dq, tol, "dq");
        expectClose(dk, want.dk, tol, "dk");
        expectClose(dv, want.dv, tol, "dv");
      }
}

// S = 1 causal: P = 1, so dv = dout summed over the group, and dS = dP - D = 0 when out = v
// (the forward of one position copies v): dq = dk = 0 exactly.
TEST(CpuAttentionGrad, OnePosition) {
  HostTensor q = tensor(DType::F64, {1, 2, 1, 2}, {1, 2, 3, 4});
  HostTensor k = tensor(DType::F64, {1, 1, 1, 2}, {0.5, -1});
  HostTensor v = tensor(DType::F64, {1, 1, 1, 2}, {3, 5});
  HostTensor out = tensor(DType::F64, {1, 2, 1, 2}, {3, 5, 3, 5});
  HostTensor dout = tensor(DType::F64, {1, 2, 1, 2}, {1, -2, 0.25, 4});
  HostTensor dq = poisoned(DType::F64, {1, 2, 1, 2}), dk = poisoned(DType::F64, {1, 1, 1, 2}),
             dv = poisoned(DType::F64, {1, 1, 1, 2});
  ASSERT_OK(attentionVjp(q, k, v, out, dout, 0.7, true, dq, dk, dv));
  expectClose(dq, {0, 0, 0, 0}, kF64, "dq");
  expectClose(dk, {0, 0}, kF64, "dk");
  expectClose(dv, {1.25, 2}, kF64, "dv");
}

// Two runs give the same bits (the sums have a fixed order).
TEST(CpuAttentionGrad, Deterministic) {
  std::mt19937 rng(31);
  const Shape qs{2, 8, 33, 16}, kv{2, 2, 33, 16};
  HostTensor q = randomTensor(DType::F32, qs, rng), k = randomTensor(DType::F32, kv, rng),
             v = randomTensor(DType::F32, kv, rng), out = randomTensor(DType::F32, qs, rng),
             dout = randomTensor(DType::F32, qs, rng);
  HostTensor a[3] = {poisoned(DType::F32, qs), poisoned(DType::F32, kv), poisoned(DType::F32, kv)};
  HostTensor b[3] = {poisoned(DType::F32, qs), poisoned(DType::F32, kv), poisoned(DType::F32, kv)};
  ASSERT_OK(attentionVjp(q, k, v, out, dout, 0.25, true, a[0], a[1], a[2]));
  ASSERT_OK(attentionVjp(q, k, v, out, dout, 0.25, true, b[0], b[1], b[2]));
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(std::memcmp(a[r].raw(), b[r].raw(), a[r].byteSize()), 0) << "result " << r;
}

TEST(CpuAttentionGrad, Errors) {
  const DType f = DType::F32;
  HostTensor q(f, {1, 4, 3, 8}), kv(f, {1, 2, 3, 8}), dq(f, {1, 4, 3, 8}), dk(f, {1, 2, 3, 8}),
      dv(f, {1, 2, 3, 8});
  const auto code = base::StatusCode::InvalidArgument;
  HostTensor qi(DType::I64, {1, 4, 3, 8});
  EXPECT_ERROR(attentionVjp(qi, kv, kv, q, q, 1, false, dq, dk, dv), code,
               "attention_vjp: q has dtype i64");
  HostTensor q2(f, {4, 3, 8});
  EXPECT_ERROR(attentionVjp(q2, kv, kv, q2, q2, 1, false, q2, dk, dv), code,
               "attention_vjp: q is [4, 3, 8], expected [B, Hq, S, D]");
  HostTensor k3(f, {1, 3, 3, 8});
  EXPECT_ERROR(attentionVjp(q, k3, k3, q, q, 1, false, dq, k3, k3), code,
               "attention_vjp: k is [1, 3, 3, 8], expected [1, Hkv, 3, 8] with Hkv dividing 4");
  HostTensor v64(DType::F64, {1, 2, 3, 8});
  EXPECT_ERROR(attentionVjp(q, kv, v64, q, q, 1, false, dq, dk, dv), code, "attention_vjp: v");
  HostTensor short_(f, {1, 4, 2, 8});
  EXPECT_ERROR(attentionVjp(q, kv, kv, short_, q, 1, false, dq, dk, dv), code,
               "attention_vjp: out");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, short_, 1, false, dq, dk, dv), code,
               "attention_vjp: dout");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, short_, dk, dv), code,
               "attention_vjp: dq");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, q, dv), code, "attention_vjp: dk");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, q), code, "attention_vjp: dv");
}

} // namespace
} // namespace rp::kernels::cpu::test
