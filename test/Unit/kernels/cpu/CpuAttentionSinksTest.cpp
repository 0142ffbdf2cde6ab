//===- CpuAttentionSinksTest.cpp - attention and its VJP with sinks -------===//
//
// cpu::attention and cpu::attentionVjp with attention sinks (GPT-OSS: a per-head logit that
// joins the softmax denominator and has no value) against a naive float64 reference written
// from the definition: per row, s_j = scale q_i . k_j over the keys it sees, Z = e^(sink_h) +
// sum_j e^(s_j), P_j = e^(s_j) / Z, P_sink = e^(sink_h) / Z, y_i = sum_j P_j v_j; dP_j =
// dout_i . v_j, D_i = sum_j P_j dP_j, dS_j = P_j (dP_j - D_i), dsink_h = -sum_(b, i) P_sink D_i.
// Tolerances: f64 kF64 (rtol 1e-12, atol 1e-12); f32 forward kF32 (rtol 1e-5, atol 1e-6, as
// the sink-free attention); f32 VJP rtol 1e-5, atol 5e-6 for dq, dk, dv (as the sink-free
// VJP: the reference takes D_i from the kernel's rounded out) and atol 2e-5 for dsinks, a sum
// of B S f32-rounded terms P_sink D_i with |D_i| up to a few units (about sqrt(B S) ulps of the
// sum). The f64 dsinks is also checked against central finite differences of the forward
// kernel (step 1e-5, rtol 1e-6, atol 1e-8: the truncation error is O(step^2)).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "test/Unit/kernels/AttentionReference.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cstring>

namespace rp::kernels::cpu::test {
namespace {

constexpr Tolerance kFiniteDifference{1e-6, 1e-8};

struct Case {
  Shape q;
  int64_t kvHeads;
};

// Multi-head, grouped-query, one position (where the sink-free VJP takes a shortcut), a case
// large enough to run in parallel, and three query blocks (S = 130); causal and not; f32 and
// f64; sinks drawn in [-2, 2] and, for one case, large enough to dominate (+6).
TEST(CpuAttentionSinks, MatchesReference) {
  std::mt19937 rng(37);
  for (DType t : kFloatDTypes)
    for (Case c : {Case{{2, 4, 5, 8}, 4}, Case{{1, 4, 7, 4}, 2}, Case{{2, 2, 1, 4}, 1},
                   Case{{1, 8, 40, 16}, 1}, Case{{2, 4, 130, 32}, 2}})
      for (bool causal : {false, true}) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " q " + base::formatShape(c.q) +
                     " Hkv " + std::to_string(c.kvHeads) + (causal ? " causal" : ""));
        const Shape kv{c.q[0], c.kvHeads, c.q[2], c.q[3]}, hs{c.q[1]};
        HostTensor q = randomTensor(t, c.q, rng), k = randomTensor(t, kv, rng),
                   v = randomTensor(t, kv, rng), dout = randomTensor(t, c.q, rng);
        HostTensor sinks = c.q[2] == 40 ? randomTensor(t, hs, rng, 5.0, 7.0)
                                        : randomTensor(t, hs, rng);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
        HostTensor out = poisoned(t, c.q);
        ASSERT_OK(attention(q, k, v, scale, causal, out, &sinks));
        const AttentionReference fwd =
            attentionReference(q, k, v, dout, {scale, causal, 0, &sinks, nullptr});
        expectClose(out, fwd.out, toleranceFor(t), "out");
        HostTensor dq = poisoned(t, c.q), dk = poisoned(t, kv), dv = poisoned(t, kv),
                   dsinks = poisoned(t, hs);
        ASSERT_OK(attentionVjp(q, k, v, out, dout, scale, causal, dq, dk, dv, &sinks, &dsinks));
        const AttentionReference want =
            attentionReference(q, k, v, dout,
                               {scale, causal, 0, &sinks, t == DType::F32 ? &out : nullptr});
        expectGradsClose(t, dq, dk, dv, &dsinks, want);
      }
}

// dsinks is the derivative of L = sum dout * attention(q, k, v, sinks) (f64, central
// differences of the forward kernel).
TEST(CpuAttentionSinks, DsinksMatchesFiniteDifferences) {
  std::mt19937 rng(41);
  const DType t = DType::F64;
  const Shape qs{2, 4, 9, 8}, kv{2, 2, 9, 8}, hs{4};
  HostTensor q = randomTensor(t, qs, rng), k = randomTensor(t, kv, rng),
             v = randomTensor(t, kv, rng), dout = randomTensor(t, qs, rng),
             sinks = randomTensor(t, hs, rng);
  auto loss = [&](const HostTensor &s) {
    HostTensor out(t, qs);
    const base::Status st = attention(q, k, v, 0.35, true, out, &s);
    EXPECT_TRUE(st.ok()) << st.toString();
    double l = 0;
    for (int64_t e = 0; e < out.numElements(); ++e)
      l += get(out, e) * get(dout, e);
    return l;
  };
  HostTensor out(t, qs);
  ASSERT_OK(attention(q, k, v, 0.35, true, out, &sinks));
  HostTensor dq(t, qs), dk(t, kv), dv(t, kv), dsinks = poisoned(t, hs);
  ASSERT_OK(attentionVjp(q, k, v, out, dout, 0.35, true, dq, dk, dv, &sinks, &dsinks));
  std::vector<double> fd(4);
  const double step = 1e-5;
  for (int64_t h = 0; h < 4; ++h) {
    HostTensor up = tensor(t, hs, values(sinks)), down = tensor(t, hs, values(sinks));
    set(up, h, get(sinks, h) + step);
    set(down, h, get(sinks, h) - step);
    fd[h] = (loss(up) - loss(down)) / (2 * step);
  }
  expectClose(dsinks, fd, kFiniteDifference, "dsinks");
}

// A sink of -inf leaves the softmax as without one, bit for bit (its exponential is 0).
TEST(CpuAttentionSinks, MinusInfinityIsNoSink) {
  std::mt19937 rng(43);
  for (DType t : kFloatDTypes) {
    const Shape qs{1, 2, 70, 8}, kv{1, 1, 70, 8};
    HostTensor q = randomTensor(t, qs, rng), k = randomTensor(t, kv, rng),
               v = randomTensor(t, kv, rng);
    HostTensor sinks = tensor(t, {2}, {-INFINITY, -INFINITY});
    HostTensor a(t, qs), b(t, qs);
    ASSERT_OK(attention(q, k, v, 0.5, true, a));
    ASSERT_OK(attention(q, k, v, 0.5, true, b, &sinks));
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byteSize()), 0) << base::dtypeName(t);
  }
}

TEST(CpuAttentionSinks, Errors) {
  const DType f = DType::F32;
  HostTensor q(f, {1, 4, 3, 8}), kv(f, {1, 2, 3, 8}), dq(f, {1, 4, 3, 8}), dk(f, {1, 2, 3, 8}),
      dv(f, {1, 2, 3, 8}), sinks(f, {4}), bad(f, {2}), sinks64(DType::F64, {4});
  const auto code = base::StatusCode::InvalidArgument;
  EXPECT_ERROR(attention(q, kv, kv, 1, false, dq, &bad), code,
               "attention: sinks is f32[2], expected f32[4]");
  EXPECT_ERROR(attention(q, kv, kv, 1, false, dq, &sinks64), code, "attention: sinks");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, dv, &sinks, nullptr), code,
               "attention_vjp: sinks and dsinks come together");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, dv, nullptr, &bad), code,
               "attention_vjp: sinks and dsinks come together");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, dv, &bad, &sinks), code,
               "attention_vjp: sinks");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, dv, &sinks, &bad), code,
               "attention_vjp: dsinks");
}

} // namespace
} // namespace rp::kernels::cpu::test
