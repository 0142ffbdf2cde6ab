//===- CpuAttentionWindowTest.cpp - attention and its VJP with a sliding window -===//
//
// cpu::attention and cpu::attentionVjp with a sliding window (Mistral, Gemma-2/3, GPT-OSS's
// sliding layers: query i sees keys i - w < j <= i) against a naive float64 reference that
// materialises the masked softmax: per row, s_j = scale q_i . k_j for every key j, -inf
// outside the band, an optional sink logit, P = softmax, y_i = sum_j P_j v_j; dP_j = dout_i .
// v_j, D_i = sum_j P_j dP_j, dS_j = P_j (dP_j - D_i), dsink_h = -sum_(b, i) P_sink D_i.
// Windows 3, 63, 64, 65 and S - 1 over S = 130 (three query blocks of 64, so a block's keys
// start inside the sequence) and 1, 2, 3, 6 over short sequences, grouped-query heads, with
// and without sinks. Tolerances as the sink tests: f64 kF64 (rtol 1e-12, atol 1e-12); f32
// forward kF32 (rtol 1e-5, atol 1e-6); f32 VJP rtol 1e-5, atol 5e-6 (the reference takes D_i
// from the kernel's rounded out), dsinks atol 2e-5. A window of at least S is causal attention
// bit for bit; bad windows are errors.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "test/Unit/kernels/AttentionReference.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cstring>

namespace rp::kernels::cpu::test {
namespace {


struct Case {
  Shape q;
  int64_t kvHeads, window;
};

/// Runs the forward and the VJP of one case and checks them against the reference.
void checkCase(DType t, const Case &c, bool withSinks, std::mt19937 &rng) {
  SCOPED_TRACE(std::string(base::dtypeName(t)) + " q " + base::formatShape(c.q) + " Hkv " +
               std::to_string(c.kvHeads) + " window " + std::to_string(c.window) +
               (withSinks ? " sinks" : ""));
  const Shape kv{c.q[0], c.kvHeads, c.q[2], c.q[3]}, hs{c.q[1]};
  HostTensor q = randomTensor(t, c.q, rng), k = randomTensor(t, kv, rng),
             v = randomTensor(t, kv, rng), dout = randomTensor(t, c.q, rng),
             sinks = randomTensor(t, hs, rng);
  const HostTensor *s = withSinks ? &sinks : nullptr;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
  HostTensor out = poisoned(t, c.q);
  ASSERT_OK(attention(q, k, v, scale, true, out, s, c.window));
  expectClose(out, attentionReference(q, k, v, dout, {scale, true, c.window, s, nullptr}).out,
              toleranceFor(t), "out");
  HostTensor dq = poisoned(t, c.q), dk = poisoned(t, kv), dv = poisoned(t, kv),
             dsinks = poisoned(t, hs);
  ASSERT_OK(attentionVjp(q, k, v, out, dout, scale, true, dq, dk, dv, s,
                         withSinks ? &dsinks : nullptr, c.window));
  const AttentionReference want = attentionReference(
      q, k, v, dout, {scale, true, c.window, s, t == DType::F32 ? &out : nullptr});
  expectGradsClose(t, dq, dk, dv, withSinks ? &dsinks : nullptr, want);
}

TEST(CpuAttentionWindow, MatchesMaskedReference) {
  std::mt19937 rng(53);
  for (DType t : kFloatDTypes)
    for (Case c : {Case{{2, 4, 5, 8}, 2, 1}, Case{{2, 4, 5, 8}, 2, 2}, Case{{1, 2, 7, 4}, 1, 3},
                   Case{{1, 2, 7, 4}, 2, 6}, Case{{1, 4, 130, 16}, 2, 3},
                   Case{{1, 2, 130, 8}, 1, 63},
                   Case{{1, 2, 130, 16}, 1, 64}, Case{{2, 2, 130, 8}, 2, 65},
                   Case{{1, 2, 130, 8}, 1, 129}})
      for (bool withSinks : {false, true})
        checkCase(t, c, withSinks, rng);
}

// A window that reaches key 0 from every row (w >= S) is causal attention, bit for bit.
TEST(CpuAttentionWindow, WideWindowIsCausal) {
  std::mt19937 rng(59);
  for (DType t : kFloatDTypes) {
    const Shape qs{1, 2, 70, 8}, kv{1, 1, 70, 8};
    HostTensor q = randomTensor(t, qs, rng), k = randomTensor(t, kv, rng),
               v = randomTensor(t, kv, rng), dout = randomTensor(t, qs, rng);
    HostTensor a(t, qs), b(t, qs);
    ASSERT_OK(attention(q, k, v, 0.5, true, a));
    for (int64_t w : {70, 71, 1000}) {
      ASSERT_OK(attention(q, k, v, 0.5, true, b, nullptr, w));
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byteSize()), 0) << base::dtypeName(t) << w;
      HostTensor dq0(t, qs), dk0(t, kv), dv0(t, kv), dq1(t, qs), dk1(t, kv), dv1(t, kv);
      ASSERT_OK(attentionVjp(q, k, v, a, dout, 0.5, true, dq0, dk0, dv0));
      ASSERT_OK(attentionVjp(q, k, v, a, dout, 0.5, true, dq1, dk1, dv1, nullptr, nullptr, w));
      EXPECT_EQ(std::memcmp(dq0.raw(), dq1.raw(), dq0.byteSize()), 0) << "dq " << w;
      EXPECT_EQ(std::memcmp(dk0.raw(), dk1.raw(), dk0.byteSize()), 0) << "dk " << w;
      EXPECT_EQ(std::memcmp(dv0.raw(), dv1.raw(), dv0.byteSize()), 0) << "dv " << w;
    }
  }
}

// A window of 1: every row attends to itself only, so out = v (its own position) and the
// gradients of q and k are exactly 0 (the single-key rows' dS is 0).
TEST(CpuAttentionWindow, WindowOfOneCopiesValues) {
  std::mt19937 rng(61);
  const DType t = DType::F32;
  const Shape qs{1, 2, 9, 4};
  HostTensor q = randomTensor(t, qs, rng), k = randomTensor(t, qs, rng),
             v = randomTensor(t, qs, rng), dout = randomTensor(t, qs, rng);
  HostTensor out = poisoned(t, qs), dq = poisoned(t, qs), dk = poisoned(t, qs),
             dv = poisoned(t, qs);
  ASSERT_OK(attention(q, k, v, 0.5, true, out, nullptr, 1));
  expectClose(out, values(v), Tolerance{0, 0}, "out");
  ASSERT_OK(attentionVjp(q, k, v, out, dout, 0.5, true, dq, dk, dv, nullptr, nullptr, 1));
  expectClose(dq, std::vector<double>(dq.numElements(), 0.0), Tolerance{0, 0}, "dq");
  expectClose(dk, std::vector<double>(dk.numElements(), 0.0), Tolerance{0, 0}, "dk");
  expectClose(dv, values(dout), Tolerance{0, 0}, "dv");
}

TEST(CpuAttentionWindow, Errors) {
  const DType f = DType::F32;
  HostTensor q(f, {1, 4, 3, 8}), kv(f, {1, 2, 3, 8}), dq(f, {1, 4, 3, 8}), dk(f, {1, 2, 3, 8}),
      dv(f, {1, 2, 3, 8});
  const auto code = base::StatusCode::InvalidArgument;
  EXPECT_ERROR(attention(q, kv, kv, 1, true, dq, nullptr, -1), code,
               "attention: window -1 is negative");
  EXPECT_ERROR(attention(q, kv, kv, 1, false, dq, nullptr, 2), code,
               "attention: a sliding window (2) needs causal attention");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, true, dq, dk, dv, nullptr, nullptr, -3), code,
               "attention_vjp: window -3 is negative");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, false, dq, dk, dv, nullptr, nullptr, 2), code,
               "attention_vjp: a sliding window (2) needs causal attention");
}

} // namespace
} // namespace rp::kernels::cpu::test
