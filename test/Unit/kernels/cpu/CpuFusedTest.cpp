//===- CpuFusedTest.cpp - swiglu, rope and attention ----------------------===//
//
// Against naive float64 references written from the composed definitions
// (silu(gate) * up; x * cos + concat(-x2, x1) * sin with numpy broadcasting of
// cos/sin; softmax(q k^T * scale + mask) v per head); tolerances kF32 (rtol 1e-5, atol 1e-6) for f32 and kF64 (rtol
// 1e-12, atol 1e-12) for f64.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "kernels/cpu/KernelSupport.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

std::vector<double> refSwiglu(const HostTensor &gate, const HostTensor &up) {
  std::vector<double> out;
  for (int64_t i = 0; i < gate.numElements(); ++i) {
    const double a = get(gate, i);
    out.push_back(a / (1.0 + std::exp(-a)) * get(up, i));
  }
  return out;
}

/// x * cos + rotate(x) * sin: rotate_half, or with `interleaved` (GPT-J's rotate_every_two)
/// rotate(x)[2i] = -x[2i + 1], rotate(x)[2i + 1] = x[2i].
std::vector<double> refRope(const HostTensor &x, const HostTensor &cos, const HostTensor &sin,
                            bool interleaved = false) {
  const Shape &shape = x.shape();
  std::vector<double> out;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    const Shape idx = unravel(i, shape);
    const auto [partner, first] = ropePartner(idx, shape.back(), interleaved);
    const double rot = (first ? -1.0 : 1.0) * get(x, ravel(partner, shape));
    const int64_t c = broadcastSource(idx, cos.shape());
    out.push_back(get(x, i) * get(cos, c) + rot * get(sin, c));
  }
  return out;
}

// swiglu on a few shapes (one large enough to run in parallel), f32 and f64.
/// |got - want| in units of the f32 spacing at want (ulps of the correctly rounded result).
double ulpError(float got, double want) {
  const float w = static_cast<float>(want);
  const double spacing =
      static_cast<double>(std::nextafter(std::fabs(w), INFINITY)) - std::fabs(double(w));
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

// expF32 (kernels/cpu/KernelSupport.h) over [-87, 88.7] every 1e-4 (1.76 million points):
// within 2 ulp of e^x computed in double; +inf above FLT_MAX's log, 0 far below, NaN kept; and
// sigmoidF32 within 3 ulp of the logistic function in double.
TEST(CpuFused, ExpF32) {
  using detail::expF32;
  using detail::sigmoidF32;
  double worst = 0.0, worstSigmoid = 0.0;
  for (int64_t i = 0; i <= 1757000; ++i) {
    const float x = static_cast<float>(-87.0 + 1e-4 * static_cast<double>(i));
    worst = std::max(worst, ulpError(expF32(x), std::exp(static_cast<double>(x))));
    const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    if (sig > 1e-30)
      worstSigmoid = std::max(worstSigmoid, ulpError(sigmoidF32(x), sig));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_LE(worstSigmoid, 3.0);
  EXPECT_EQ(expF32(0.0f), 1.0f);
  EXPECT_EQ(expF32(89.0f), INFINITY);
  EXPECT_EQ(expF32(INFINITY), INFINITY);
  EXPECT_EQ(expF32(-110.0f), 0.0f);
  EXPECT_EQ(expF32(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(expF32(NAN)));
  EXPECT_EQ(sigmoidF32(-200.0f), 0.0f);
  EXPECT_EQ(sigmoidF32(200.0f), 1.0f);
  EXPECT_EQ(sigmoidF32(0.0f), 0.5f);
}

TEST(CpuFused, SwigluMatchesReference) {
  std::mt19937 rng(7);
  for (DType t : kFloatDTypes)
    for (const Shape &shape : {Shape{5}, Shape{2, 3, 7}, Shape{4, 64, 172}}) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + base::formatShape(shape));
      HostTensor a = randomTensor(t, shape, rng, -6, 6);
      HostTensor u = randomTensor(t, shape, rng);
      HostTensor out = poisoned(t, shape);
      ASSERT_OK(swiglu(a, u, out));
      expectClose(out, refSwiglu(a, u), toleranceFor(t), "swiglu");
    }
}

// Large |gate|: sigmoid neither overflows nor loses the product (silu(-800) = -0, silu(800) =
// 800).
TEST(CpuFused, SwigluExtremeGate) {
  HostTensor a = tensor(DType::F64, {4}, {-800, 800, 0, -1});
  HostTensor u = tensor(DType::F64, {4}, {2, 0.5, 3, 1});
  HostTensor out = poisoned(DType::F64, {4});
  ASSERT_OK(swiglu(a, u, out));
  expectClose(out, {0.0, 400.0, 0.0, -1.0 / (1.0 + std::exp(1.0))}, kF64, "extreme");
}

// rope with cos/sin [S, D], [B, 1, S, D], [1, 1, S, D] and same-shape; f32 and f64.
TEST(CpuFused, RopeMatchesReference) {
  std::mt19937 rng(11);
  const Shape x{2, 3, 5, 8};
  for (DType t : kFloatDTypes)
    for (const Shape &cs : {Shape{5, 8}, Shape{2, 1, 5, 8}, Shape{1, 1, 5, 8}, x}) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " cos " + base::formatShape(cs));
      HostTensor in = randomTensor(t, x, rng);
      HostTensor c = randomTensor(t, cs, rng, -1, 1);
      HostTensor s = randomTensor(t, cs, rng, -1, 1);
      HostTensor out = poisoned(t, x);
      ASSERT_OK(rope(in, c, s, out));
      expectClose(out, refRope(in, c, s), toleranceFor(t), "rope");
    }
  // Large enough to run in parallel.
  const Shape big{2, 8, 64, 64};
  HostTensor in = randomTensor(DType::F32, big, rng);
  HostTensor c = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor s = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor out = poisoned(DType::F32, big);
  ASSERT_OK(rope(in, c, s, out));
  expectClose(out, refRope(in, c, s), kF32, "rope parallel");
}

// The interleaved form (GPT-J) on the same broadcasts, f32 and f64, and in parallel.
TEST(CpuFused, RopeInterleavedMatchesReference) {
  std::mt19937 rng(13);
  const Shape x{2, 3, 5, 8};
  for (DType t : kFloatDTypes)
    for (const Shape &cs : {Shape{5, 8}, Shape{2, 1, 5, 8}, x}) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " cos " + base::formatShape(cs));
      HostTensor in = randomTensor(t, x, rng);
      HostTensor c = randomTensor(t, cs, rng, -1, 1);
      HostTensor s = randomTensor(t, cs, rng, -1, 1);
      HostTensor out = poisoned(t, x);
      ASSERT_OK(rope(in, c, s, out, /*interleaved=*/true));
      expectClose(out, refRope(in, c, s, true), toleranceFor(t), "rope interleaved");
    }
  const Shape big{2, 8, 64, 64};
  HostTensor in = randomTensor(DType::F32, big, rng);
  HostTensor c = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor s = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor out = poisoned(DType::F32, big);
  ASSERT_OK(rope(in, c, s, out, /*interleaved=*/true));
  expectClose(out, refRope(in, c, s, true), kF32, "rope interleaved parallel");
}

// Interleaved, the pairs are adjacent: (x0, x1) rotates by theta, (x2, x3) stays.
TEST(CpuFused, RopeInterleavedRotatesAdjacentPairs) {
  HostTensor in = tensor(DType::F64, {1, 4}, {1, 2, 3, 4});
  const double th = 0.3;
  HostTensor c = tensor(DType::F64, {1, 4}, {std::cos(th), std::cos(th), 1, 1});
  HostTensor s = tensor(DType::F64, {1, 4}, {std::sin(th), std::sin(th), 0, 0});
  HostTensor out = poisoned(DType::F64, {1, 4});
  ASSERT_OK(rope(in, c, s, out, /*interleaved=*/true));
  expectClose(out,
              {std::cos(th) - 2 * std::sin(th), 2 * std::cos(th) + std::sin(th), 3, 4}, kF64,
              "adjacent pairs");
}

// A rotation by angle theta per pair (cos = cos theta, sin = sin theta) keeps each pair's norm.
TEST(CpuFused, RopeRotatesPairs) {
  HostTensor in = tensor(DType::F64, {1, 4}, {1, 2, 3, 4});
  const double th = 0.3;
  HostTensor c = tensor(DType::F64, {1, 4}, {std::cos(th), 1, std::cos(th), 1});
  HostTensor s = tensor(DType::F64, {1, 4}, {std::sin(th), 0, std::sin(th), 0});
  HostTensor out = poisoned(DType::F64, {1, 4});
  ASSERT_OK(rope(in, c, s, out));
  // pair (x0, x2) = (1, 3) rotates by theta; pair (x1, x3) = (2, 4) stays.
  expectClose(out,
              {std::cos(th) - 3 * std::sin(th), 2, 3 * std::cos(th) + std::sin(th), 4}, kF64,
              "pairs");
}

std::vector<double> refAttention(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                                 double scale, bool causal) {
  const int64_t B = q.shape()[0], H = q.shape()[1], S = q.shape()[2], D = q.shape()[3];
  const int64_t G = H / k.shape()[1];
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(S, -INFINITY);
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (causal && j > i)
            continue;
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot += get(q, ravel({b, h, i, c}, q.shape())) * get(k, ravel({b, h / G, j, c}, k.shape()));
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        for (double &x : s) {
          x = std::exp(x - m);
          sum += x;
        }
        for (int64_t c = 0; c < D; ++c) {
          double y = 0;
          for (int64_t j = 0; j < S; ++j)
            y += s[j] / sum * get(v, ravel({b, h / G, j, c}, v.shape()));
          out.push_back(y);
        }
      }
  return out;
}

// attention with and without the causal mask, multi-head and grouped-query (Hq = 2 and 4
// Hkv), f32 and f64; one case large enough to run in parallel.
TEST(CpuFused, AttentionMatchesReference) {
  std::mt19937 rng(13);
  struct C {
    Shape q;
    int64_t kvHeads;
  };
  for (DType t : kFloatDTypes)
    for (C c : {C{{2, 4, 5, 8}, 4}, C{{1, 4, 6, 4}, 2}, C{{2, 8, 3, 2}, 2}, C{{1, 8, 64, 16}, 1}})
      for (bool causal : {false, true}) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " q " + base::formatShape(c.q) +
                     " Hkv " + std::to_string(c.kvHeads) + (causal ? " causal" : ""));
        Shape kv{c.q[0], c.kvHeads, c.q[2], c.q[3]};
        HostTensor q = randomTensor(t, c.q, rng), k = randomTensor(t, kv, rng),
                   v = randomTensor(t, kv, rng);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
        HostTensor out = poisoned(t, c.q);
        ASSERT_OK(attention(q, k, v, scale, causal, out));
        expectClose(out, refAttention(q, k, v, scale, causal), toleranceFor(t), "attention");
      }
}

// The first causal row attends to key 0 only: it copies v[0].
TEST(CpuFused, AttentionCausalFirstRow) {
  HostTensor q = tensor(DType::F64, {1, 1, 2, 2}, {100, -100, 1, 2});
  HostTensor k = tensor(DType::F64, {1, 1, 2, 2}, {1, 0, 0, 1});
  HostTensor v = tensor(DType::F64, {1, 1, 2, 2}, {3, 4, 5, 6});
  HostTensor out = poisoned(DType::F64, {1, 1, 2, 2});
  ASSERT_OK(attention(q, k, v, 1.0, true, out));
  const double p0 = 1.0 / (1.0 + std::exp(1.0)); // row 1: scores 1 and 2
  expectClose(out, {3, 4, 3 * p0 + 5 * (1 - p0), 4 * p0 + 6 * (1 - p0)}, kF64, "causal");
}

TEST(CpuFused, Errors) {
  HostTensor a(DType::F32, {2, 4}), u64(DType::F64, {2, 4}), u3(DType::F32, {2, 3});
  HostTensor out(DType::F32, {2, 4});
  EXPECT_ERROR(swiglu(a, u64, out), base::StatusCode::InvalidArgument, "swiglu: up");
  EXPECT_ERROR(swiglu(a, u3, out), base::StatusCode::InvalidArgument, "swiglu: up");
  HostTensor i(DType::I64, {2, 4});
  EXPECT_ERROR(swiglu(i, i, i), base::StatusCode::InvalidArgument, "swiglu: gate");

  HostTensor odd(DType::F32, {2, 3}), oddOut(DType::F32, {2, 3});
  EXPECT_ERROR(rope(odd, u3, u3, oddOut), base::StatusCode::InvalidArgument, "even");
  HostTensor c2(DType::F32, {2}), c3(DType::F32, {3, 4}), c4(DType::F32, {4});
  EXPECT_ERROR(rope(a, c2, c2, out), base::StatusCode::InvalidArgument, "last dimension");
  EXPECT_ERROR(rope(a, c3, c3, out), base::StatusCode::InvalidArgument, "rope");
  EXPECT_ERROR(rope(a, c4, c2, out), base::StatusCode::InvalidArgument, "rope: sin");

  HostTensor q(DType::F32, {1, 4, 3, 2}), kv3(DType::F32, {1, 3, 3, 2}), kv2(DType::F32, {1, 2, 3, 2});
  HostTensor qOut(DType::F32, {1, 4, 3, 2});
  EXPECT_ERROR(attention(q, kv3, kv3, 1.0, false, qOut), base::StatusCode::InvalidArgument,
               "Hkv dividing 4");
  EXPECT_ERROR(attention(q, kv2, kv3, 1.0, false, qOut), base::StatusCode::InvalidArgument,
               "attention: v");
  EXPECT_ERROR(attention(a, a, a, 1.0, false, out), base::StatusCode::InvalidArgument,
               "expected [B, Hq, S, D]");
}

} // namespace
} // namespace rp::kernels::cpu::test
