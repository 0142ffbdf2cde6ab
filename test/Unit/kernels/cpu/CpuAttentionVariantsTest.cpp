//===- CpuAttentionVariantsTest.cpp - soft-capped attention, value head sizes ===//
//
// cpu::attention and cpu::attentionVjp with a logit soft-cap (Gemma-2, Grok: each score s
// becomes c tanh(s / c) before the mask and the softmax) and with a value head size Dv other
// than the query/key head size D (multi-head latent attention, DeepSeek-V2/V3) against the
// naive float64 reference of AttentionReference.h, which materialises each row's capped,
// masked softmax and multiplies dS by the cap's derivative 1 - tanh^2. Caps of 0.5 and 1.5
// (inputs in [-2, 2] with scale 1/sqrt(D) give scores well past the bend) and 30 (nearly the
// identity); Dv below and above D; causal and not, grouped-query heads, S = 130 (three query
// blocks of 64), with sinks and a sliding window.
// Tolerances as the window and sink tests: f64 kF64 (rtol 1e-12, atol 1e-12); f32 forward kF32
// (rtol 1e-5, atol 1e-6); f32 VJP rtol 1e-5, atol 5e-6 (the reference takes D_i from the
// kernel's rounded out), dsinks atol 2e-5. A negative or infinite cap is an error.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "test/Unit/kernels/AttentionReference.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cmath>
#include <limits>

namespace rp::kernels::cpu::test {
namespace {


struct Case {
  Shape q;
  int64_t kvHeads;
  bool causal;
  double softcap;
  int64_t window = 0;
  bool sinks = false;
  int64_t valueDim = 0; ///< 0: D
};

/// Runs the forward and the VJP of one case and checks them against the reference.
void checkCase(DType t, const Case &c, std::mt19937 &rng) {
  SCOPED_TRACE(std::string(base::dtypeName(t)) + " q " + base::formatShape(c.q) + " Hkv " +
               std::to_string(c.kvHeads) + (c.causal ? " causal" : "") + " softcap " +
               std::to_string(c.softcap) + " window " + std::to_string(c.window) +
               (c.sinks ? " sinks" : "") + " Dv " + std::to_string(c.valueDim));
  const Shape kv{c.q[0], c.kvHeads, c.q[2], c.q[3]}, hs{c.q[1]},
      vs{c.q[0], c.kvHeads, c.q[2], c.valueDim > 0 ? c.valueDim : c.q[3]},
      os{c.q[0], c.q[1], c.q[2], vs[3]};
  HostTensor q = randomTensor(t, c.q, rng), k = randomTensor(t, kv, rng),
             v = randomTensor(t, vs, rng), dout = randomTensor(t, os, rng),
             sinks = randomTensor(t, hs, rng);
  const HostTensor *s = c.sinks ? &sinks : nullptr;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
  HostTensor out = poisoned(t, os);
  ASSERT_OK(attention(q, k, v, scale, c.causal, out, s, c.window, c.softcap));
  AttentionReferenceOptions o{scale, c.causal, c.window, s, nullptr, c.softcap};
  expectClose(out, attentionReference(q, k, v, dout, o).out, toleranceFor(t), "out");
  HostTensor dq = poisoned(t, c.q), dk = poisoned(t, kv), dv = poisoned(t, vs),
             dsinks = poisoned(t, hs);
  ASSERT_OK(attentionVjp(q, k, v, out, dout, scale, c.causal, dq, dk, dv, s,
                         c.sinks ? &dsinks : nullptr, c.window, c.softcap));
  o.out = t == DType::F32 ? &out : nullptr;
  expectGradsClose(t, dq, dk, dv, c.sinks ? &dsinks : nullptr,
                   attentionReference(q, k, v, dout, o));
}

TEST(CpuAttentionVariants, SoftcapMatchesReference) {
  std::mt19937 rng(67);
  for (DType t : kFloatDTypes)
    for (const Case &c : {Case{{2, 4, 5, 8}, 2, false, 0.5}, Case{{2, 4, 5, 8}, 2, true, 1.5},
                          Case{{1, 2, 7, 4}, 1, true, 30.0}, Case{{1, 4, 130, 16}, 2, true, 1.5},
                          Case{{1, 2, 130, 8}, 2, false, 0.5},
                          Case{{2, 4, 9, 8}, 2, true, 1.5, 3, false},
                          Case{{2, 4, 9, 8}, 1, true, 0.5, 0, true},
                          Case{{1, 2, 130, 8}, 1, true, 1.5, 65, true}})
      checkCase(t, c, rng);
}

TEST(CpuAttentionVariants, ValueDimMatchesReference) {
  std::mt19937 rng(71);
  for (DType t : kFloatDTypes)
    for (const Case &c : {Case{{2, 4, 5, 12}, 2, true, 0, 0, false, 8},
                          Case{{2, 4, 5, 8}, 4, false, 0, 0, false, 16},
                          Case{{1, 4, 130, 12}, 1, true, 0, 0, false, 8},
                          Case{{2, 2, 9, 6}, 2, true, 0, 3, true, 4},
                          Case{{1, 4, 70, 12}, 2, true, 1.5, 0, true, 8}})
      checkCase(t, c, rng);
}

TEST(CpuAttentionVariants, ValueShapeErrors) {
  const DType f = DType::F32;
  HostTensor q(f, {1, 4, 3, 8}), k(f, {1, 2, 3, 8}), v(f, {1, 1, 3, 4}), v4(f, {1, 2, 3, 4}),
      out(f, {1, 4, 3, 8});
  const auto code = base::StatusCode::InvalidArgument;
  EXPECT_ERROR(attention(q, k, v, 1, true, out), code,
               "attention: v is [1, 1, 3, 4], expected [1, 2, 3, Dv]");
  EXPECT_ERROR(attention(q, k, v4, 1, true, out), code,
               "attention: out is f32[1, 4, 3, 8], expected f32[1, 4, 3, 4]");
}

TEST(CpuAttentionVariants, SoftcapErrors) {
  const DType f = DType::F32;
  HostTensor q(f, {1, 4, 3, 8}), kv(f, {1, 2, 3, 8}), dq(f, {1, 4, 3, 8}), dk(f, {1, 2, 3, 8}),
      dv(f, {1, 2, 3, 8});
  const auto code = base::StatusCode::InvalidArgument;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_ERROR(attention(q, kv, kv, 1, true, dq, nullptr, 0, -1.0), code,
               "attention: softcap -1.000000 is not positive and finite");
  EXPECT_ERROR(attentionVjp(q, kv, kv, q, q, 1, true, dq, dk, dv, nullptr, nullptr, 0, inf),
               code, "attention_vjp: softcap inf is not positive and finite");
}

} // namespace
} // namespace rp::kernels::cpu::test
