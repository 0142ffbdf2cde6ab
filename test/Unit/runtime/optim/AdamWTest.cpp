//===- AdamWTest.cpp - AdamW, clipping, warmup, compute weights -----------===//
//
// runtime/optim/AdamW.h against a float64 reference of the same formula (tolerance 1e-6
// relative), the exact float contract on a few elements, weight decay and bias correction
// alone, thread independence (1 vs 4 OpenMP threads, identical bytes), sumOfSquares and its
// summation contract, the checked passes' squares (the bits of sumOfSquares), the fused
// compute-weight copy (the bits of the two passes), clipFactor, learningRate and the bf16 /
// f16 weight copies.
//
//===----------------------------------------------------------------------===//

#include "runtime/optim/AdamW.h"

#include "base/Float16.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace rp::runtime {
namespace {

std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> x(n);
  for (float &v : x)
    v = dist(rng);
  return x;
}

/// The AdamW formula of the header in double (torch.optim.AdamW, single-tensor path).
/// mAbs runs m's recurrence on |g|: the size of the terms m sums (they can cancel), which
/// bounds m's float rounding error.
void referenceStep(std::vector<double> &p, std::vector<double> &m, std::vector<double> &v,
                   std::vector<double> &mAbs, const std::vector<float> &grad,
                   const AdamWConfig &c, int64_t t, double gradScale) {
  const double bc1 = 1 - std::pow(c.beta1, double(t)), bc2 = 1 - std::pow(c.beta2, double(t));
  for (size_t i = 0; i < p.size(); ++i) {
    const double g = double(grad[i]) * gradScale;
    p[i] *= 1 - c.lr * c.weightDecay;
    m[i] = c.beta1 * m[i] + (1 - c.beta1) * g;
    mAbs[i] = c.beta1 * mAbs[i] + (1 - c.beta1) * std::fabs(g);
    v[i] = c.beta2 * v[i] + (1 - c.beta2) * g * g;
    p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
  }
}

const AdamWConfig kConfig{1e-3, 0.9, 0.95, 1e-8, 0.1};

TEST(AdamWTest, MatchesFloat64ReferenceOverThreeSteps) {
  const size_t n = 5000;
  std::vector<float> p = uniform(n, 1), m(n, 0.f), v(n, 0.f);
  std::vector<double> rp(p.begin(), p.end()), rm(n, 0.0), rv(n, 0.0), rmAbs(n, 0.0);
  const float scale = 0.25f;
  for (int64_t t = 1; t <= 3; ++t) {
    std::vector<float> g = uniform(n, 100 + uint32_t(t), -2.f, 2.f);
    adamwStep(p.data(), m.data(), v.data(), g.data(), int64_t(n), kConfig, t, scale);
    referenceStep(rp, rm, rv, rmAbs, g, kConfig, t, scale);
  }
  // Float rounding of a few operations per step: 1e-6 relative to the value (for the weights
  // at least lr, the size of one update; for m the size of the terms it sums).
  for (size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(p[i], rp[i], 1e-6 * std::max(std::fabs(rp[i]), kConfig.lr)) << i;
    EXPECT_NEAR(m[i], rm[i], 1e-6 * rmAbs[i]) << i;
    EXPECT_NEAR(v[i], rv[i], 1e-6 * std::fabs(rv[i]) + 1e-15) << i;
  }
}

/// The float contract of the header, written out for one element of kConfig's step t: p, m
/// and v become what adamwStep must leave.
void contractStep(float &p, float &m, float &v, float g0, float scale, int64_t t) {
  const float decay = float(1 - kConfig.lr * kConfig.weightDecay);
  const float stepSize = float(kConfig.lr / (1 - std::pow(kConfig.beta1, double(t))));
  const float bc2Sqrt = float(std::sqrt(1 - std::pow(kConfig.beta2, double(t))));
  volatile float g = g0 * scale; // volatile: each operation rounds, as in the contract
  volatile float pp = p * decay;
  volatile float a = float(kConfig.beta1) * m, b = float(1 - kConfig.beta1) * g;
  volatile float mm = a + b;
  volatile float gg = g * g;
  volatile float c = float(kConfig.beta2) * v, d = float(1 - kConfig.beta2) * gg;
  volatile float vv = c + d;
  volatile float root = std::sqrt(float(vv));
  volatile float den = root / bc2Sqrt + float(kConfig.eps);
  volatile float q = mm / den;
  volatile float upd = stepSize * q;
  volatile float expected = pp - upd;
  p = expected;
  m = mm;
  v = vv;
}

TEST(AdamWTest, FollowsTheFloatContract) {
  float p = 0.75f, m = 0.01f, v = 0.0004f, ep = p, em = m, ev = v;
  const float g0 = -0.3f, scale = 0.5f;
  adamwStep(&p, &m, &v, &g0, 1, kConfig, 4, scale);
  contractStep(ep, em, ev, g0, scale, 4);
  EXPECT_EQ(m, em);
  EXPECT_EQ(v, ev);
  EXPECT_EQ(p, ep);
}

// Every element of a vectorised step (the loop runs as wide as the CPU allows) has the bits
// of the contract's scalar operations.
TEST(AdamWTest, VectorisedStepFollowsTheFloatContract) {
  const size_t n = 4099;
  std::vector<float> p = uniform(n, 61), m = uniform(n, 62, -0.1f, 0.1f),
                     v = uniform(n, 63, 0.f, 0.01f), g = uniform(n, 64, -3.f, 3.f);
  const std::vector<float> p0 = p, m0 = m, v0 = v;
  const int64_t t = 3;
  const float scale = 0.75f;
  adamwStep(p.data(), m.data(), v.data(), g.data(), int64_t(n), kConfig, t, scale);
  for (size_t i = 0; i < n; ++i) {
    float ep = p0[i], em = m0[i], ev = v0[i];
    contractStep(ep, em, ev, g[i], scale, t);
    ASSERT_EQ(m[i], em) << i;
    ASSERT_EQ(v[i], ev) << i;
    ASSERT_EQ(p[i], ep) << i;
  }
}

TEST(AdamWTest, ZeroGradientOnlyDecays) {
  std::vector<float> p = {1.f, -2.f, 0.5f, 0.f}, m(4, 0.f), v(4, 0.f), g(4, 0.f);
  const std::vector<float> before = p;
  const AdamWConfig c{0.01, 0.9, 0.999, 1e-8, 0.5};
  adamwStep(p.data(), m.data(), v.data(), g.data(), 4, c, 1, 1.f);
  const float decay = float(1 - 0.01 * 0.5);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p[i], before[i] * decay);
    EXPECT_EQ(m[i], 0.f);
    EXPECT_EQ(v[i], 0.f);
  }
}

// At t = 1 the bias corrections make m_hat = g and v_hat = g^2: the update is lr * sign(g).
TEST(AdamWTest, BiasCorrectionAtStepOne) {
  std::vector<float> p = {0.f, 1.f, -1.f}, m(3, 0.f), v(3, 0.f), g = {0.5f, -3.f, 1e-2f};
  const AdamWConfig c{0.1, 0.9, 0.999, 1e-8, 0.0};
  adamwStep(p.data(), m.data(), v.data(), g.data(), 3, c, 1, 1.f);
  EXPECT_NEAR(p[0], -0.1f, 1e-6);
  EXPECT_NEAR(p[1], 1.1f, 1e-6);
  EXPECT_NEAR(p[2], -1.1f, 1e-5); // eps / |g| = 1e-6 of the step
}

TEST(AdamWTest, ThreadCountDoesNotChangeBytes) {
  const size_t n = 1000003; // not a multiple of either block size
  const std::vector<float> p0 = uniform(n, 5), g = uniform(n, 6);
  const int saved = omp_get_max_threads();
  std::vector<float> out[2][3];
  double sums[2];
  const int threads[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    omp_set_num_threads(threads[k]);
    std::vector<float> p = p0, m(n, 0.f), v(n, 0.f);
    for (int64_t t = 1; t <= 2; ++t)
      adamwStep(p.data(), m.data(), v.data(), g.data(), int64_t(n), kConfig, t, 0.5f);
    out[k][0] = p;
    out[k][1] = m;
    out[k][2] = v;
    sums[k] = sumOfSquares(g.data(), int64_t(n), 0.5f);
  }
  omp_set_num_threads(saved);
  for (int j = 0; j < 3; ++j)
    EXPECT_EQ(std::memcmp(out[0][j].data(), out[1][j].data(), n * sizeof(float)), 0) << j;
  EXPECT_EQ(std::memcmp(&sums[0], &sums[1], sizeof(double)), 0);
}

TEST(AdamWTest, SumOfSquaresMatchesDoubleLoop) {
  const size_t n = 200000;
  const std::vector<float> g = uniform(n, 9);
  double ref = 0;
  for (float x : g) {
    const double y = double(x * 0.125f);
    ref += y * y;
  }
  EXPECT_NEAR(sumOfSquares(g.data(), int64_t(n), 0.125f), ref, 1e-12 * ref);
  EXPECT_EQ(sumOfSquares(g.data(), 0, 1.f), 0.0);
  const float three[3] = {1.f, -2.f, 3.f};
  EXPECT_EQ(sumOfSquares(three, 3, 1.f), 14.0);
}

// The summation order of the header's contract, written out: 16 lanes per block of 65536
// (element j to lane j mod 16), the lanes in order, then the blocks in order.
TEST(AdamWTest, SumOfSquaresFollowsItsContract) {
  const size_t n = 2 * 65536 + 37;
  const std::vector<float> g = uniform(n, 12, -3.f, 3.f);
  const float scale = 1.0f / 3.0f;
  double total = 0;
  for (size_t begin = 0; begin < n; begin += 65536) {
    double lane[16] = {};
    for (size_t j = begin; j < std::min(n, begin + 65536); ++j) {
      const double x = double(g[j] * scale);
      lane[(j - begin) % 16] += x * x;
    }
    double block = 0;
    for (double l : lane)
      block += l;
    total += block;
  }
  const double got = sumOfSquares(g.data(), int64_t(n), scale);
  EXPECT_EQ(std::memcmp(&got, &total, sizeof got), 0) << got << " vs " << total;
}

// The passes that write a gradient square it as sumOfSquares does, bit for bit, at any thread
// count, and still flag inf and NaN.
TEST(AdamWTest, CheckedPassesSquareLikeSumOfSquares) {
  const size_t n = 3 * 65536 + 4099; // blocks, chunks and lanes with remainders
  const std::vector<float> a = uniform(n, 21, -2.f, 2.f), b = uniform(n, 22, -2.f, 2.f);
  const float scale = 0.3f;
  std::vector<float> dst(n);
  double squares = -1;
  EXPECT_TRUE(copyCheckingFinite(dst.data(), a.data(), int64_t(n), scale, &squares));
  EXPECT_EQ(dst, a);
  double want = sumOfSquares(a.data(), int64_t(n), scale);
  EXPECT_EQ(std::memcmp(&squares, &want, sizeof want), 0);

  const int saved = omp_get_max_threads();
  std::vector<float> sums[2];
  double sumSquares[2];
  const int threads[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    omp_set_num_threads(threads[k]);
    sums[k] = a;
    EXPECT_TRUE(addCheckingFinite(sums[k].data(), b.data(), int64_t(n), scale, &sumSquares[k]));
  }
  omp_set_num_threads(saved);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(sums[0][i], a[i] + b[i]) << i;
  EXPECT_EQ(sums[0], sums[1]);
  want = sumOfSquares(sums[0].data(), int64_t(n), scale);
  EXPECT_EQ(std::memcmp(&sumSquares[0], &want, sizeof want), 0);
  EXPECT_EQ(std::memcmp(&sumSquares[1], &want, sizeof want), 0);

  std::vector<float> bad = a;
  bad[n - 1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(copyCheckingFinite(dst.data(), bad.data(), int64_t(n), scale, &squares));
  std::vector<float> big(n, 3e38f);
  EXPECT_FALSE(addCheckingFinite(big.data(), big.data(), int64_t(n))); // finite + finite = inf
  EXPECT_TRUE(copyCheckingFinite(dst.data(), a.data(), 0, scale, &squares));
  EXPECT_EQ(squares, 0.0);
}

// The fused copy writes what adamwStep followed by writeComputeWeights writes, and leaves the
// state as adamwStep does.
TEST(AdamWTest, FusedWeightCopyEqualsTwoPasses) {
  const size_t n = 40000; // several blocks
  std::vector<float> p0 = uniform(n, 31), g = uniform(n, 32, -5.f, 5.f);
  p0[7] = 1.f + 0x1p-8f; // a bf16 tie before the update moves it
  p0[9] = 70000.f;        // beyond f16: rounds to infinity
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    std::vector<float> p = p0, m(n, 0.f), v(n, 0.f), pf = p0, mf(n, 0.f), vf(n, 0.f);
    std::vector<uint8_t> twoPass(n * dtypeSize(dtype)), fused(n * dtypeSize(dtype));
    for (int64_t t = 1; t <= 2; ++t) {
      adamwStep(p.data(), m.data(), v.data(), g.data(), int64_t(n), kConfig, t, 0.5f);
      ASSERT_TRUE(writeComputeWeights(p.data(), dtype, twoPass.data(), int64_t(n)).ok());
      ASSERT_TRUE(adamwStepWritingWeights(pf.data(), mf.data(), vf.data(), g.data(), int64_t(n),
                                          kConfig, t, 0.5f, dtype, fused.data())
                      .ok());
    }
    EXPECT_EQ(p, pf) << dtypeName(dtype);
    EXPECT_EQ(m, mf) << dtypeName(dtype);
    EXPECT_EQ(v, vf) << dtypeName(dtype);
    EXPECT_EQ(twoPass, fused) << dtypeName(dtype);
  }
  float one = 1, zero = 0;
  int64_t out = 0;
  EXPECT_EQ(adamwStepWritingWeights(&one, &zero, &zero, &one, 1, kConfig, 1, 1.f, DType::I64, &out)
                .code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(adamwStepWritingWeights(&one, &zero, &zero, &one, 1, kConfig, 1, 1.f, DType::BF16,
                                    nullptr)
                .code(),
            StatusCode::InvalidArgument);
}

// The parallel writer converts every element as the scalar conversions do (NaN, infinity,
// ties), across blocks.
TEST(AdamWTest, WriteComputeWeightsConvertsEveryElement) {
  const size_t n = 50000;
  std::vector<float> master = uniform(n, 41, -100.f, 100.f);
  master[3] = std::numeric_limits<float>::quiet_NaN();
  master[20000] = -std::numeric_limits<float>::infinity();
  master[40000] = 1.00390625f;
  std::vector<uint16_t> bf16(n), f16(n);
  ASSERT_TRUE(writeComputeWeights(master.data(), DType::BF16, bf16.data(), int64_t(n)).ok());
  ASSERT_TRUE(writeComputeWeights(master.data(), DType::F16, f16.data(), int64_t(n)).ok());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf16[i], floatToBf16(master[i])) << i;
    ASSERT_EQ(f16[i], floatToHalf(master[i])) << i;
  }
}

TEST(AdamWTest, FirstTouchZeroes) {
  std::vector<float> x = uniform(100003, 51);
  firstTouch(x.data(), int64_t(x.size()));
  EXPECT_EQ(x, std::vector<float>(x.size(), 0.f));
}

TEST(AdamWTest, ClipFactor) {
  EXPECT_EQ(clipFactor(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clipFactor(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_EQ(clipFactor(100.0, 0.0), 1.0);  // clipping off
  EXPECT_EQ(clipFactor(100.0, -1.0), 1.0); // clipping off
  EXPECT_EQ(clipFactor(std::numeric_limits<double>::infinity(), 1.0), 0.0);
  EXPECT_TRUE(std::isnan(clipFactor(std::nan(""), 1.0)));
}

TEST(AdamWTest, ClippedGradScale) {
  StatusOr<float> s = clippedGradScale(16.0, 1.0, 4, 3); // norm 4: clip to 1, mean over 4
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s.value(), static_cast<float>(1.0 / (4.0 + 1e-6) / 4.0));
  s = clippedGradScale(0.25, 1.0, 2, 1); // norm 0.5: no clipping
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value(), 0.5f);
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    s = clippedGradScale(bad, 1.0, 4, 7);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::Internal);
    EXPECT_NE(s.status().message().find(std::string("gradient norm of step 7 is ") +
                                        (std::isnan(bad) ? "nan" : "inf")),
              std::string::npos)
        << s.status().message();
  }
}

TEST(AdamWTest, LearningRateWarmup) {
  const LrSchedule s{1e-3, 4};
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 0.25e-3);
  EXPECT_DOUBLE_EQ(learningRate(s, 1), 0.5e-3);
  EXPECT_DOUBLE_EQ(learningRate(s, 3), 1e-3);
  EXPECT_EQ(learningRate(s, 4), 1e-3);
  EXPECT_EQ(learningRate(s, 1000), 1e-3);
  EXPECT_EQ(learningRate(LrSchedule{1e-3, 0}, 0), 1e-3);
}

TEST(AdamWTest, LearningRateDecay) {
  // Warmup 2, then cosine from 1e-3 to 1e-4 over steps 2..11 (p = (step - 2) / 10).
  const LrSchedule cosine{1e-3, 2, LrDecay::Cosine, 1e-4, 12};
  EXPECT_DOUBLE_EQ(learningRate(cosine, 0), 0.5e-3);
  EXPECT_DOUBLE_EQ(learningRate(cosine, 1), 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(cosine, 2), 1e-3); // the decay starts at the peak
  EXPECT_NEAR(learningRate(cosine, 7), 0.55e-3, 1e-15); // p = 0.5: halfway
  EXPECT_NEAR(learningRate(cosine, 11), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(0.9 * M_PI)), 1e-15);
  EXPECT_EQ(learningRate(cosine, 12), 1e-4); // the floor at and beyond the end
  EXPECT_EQ(learningRate(cosine, 100), 1e-4);
  for (int64_t k = 2; k < 12; ++k) // monotone
    EXPECT_LT(learningRate(cosine, k + 1), learningRate(cosine, k)) << k;

  const LrSchedule linear{1e-3, 0, LrDecay::Linear, 0, 4};
  EXPECT_DOUBLE_EQ(learningRate(linear, 0), 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(linear, 1), 0.75e-3);
  EXPECT_DOUBLE_EQ(learningRate(linear, 3), 0.25e-3);
  EXPECT_EQ(learningRate(linear, 4), 0);
  // No room to decay: the peak after the warmup.
  EXPECT_EQ(learningRate(LrSchedule{1e-3, 4, LrDecay::Cosine, 0, 4}, 10), 1e-3);

  for (LrDecay d : {LrDecay::Constant, LrDecay::Cosine, LrDecay::Linear})
    EXPECT_EQ(parseLrDecay(lrDecayName(d)).value(), d);
  StatusOr<LrDecay> bad = parseLrDecay("exponential");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'exponential' (expected constant, cosine or linear)"),
            std::string::npos);
}

TEST(AdamWTest, WriteComputeWeights) {
  // 1 + 2^-8 and 1 + 3 * 2^-8 are bf16 ties (to even); 1 + 2^-8 + 2^-20 rounds up.
  const float master[6] = {1.f, 1.00390625f, 1.01171875f, 1.f + 0x1p-8f + 0x1p-20f, -2.f, 0.f};
  uint16_t bf16[6];
  ASSERT_TRUE(writeComputeWeights(master, DType::BF16, bf16, 6).ok());
  const uint16_t expectedBf16[6] = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC000, 0x0000};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(bf16[i], expectedBf16[i]) << i;
  uint16_t f16[2];
  ASSERT_TRUE(writeComputeWeights(master, DType::F16, f16, 2).ok());
  EXPECT_EQ(f16[0], 0x3C00);
  EXPECT_EQ(f16[1], 0x3C04); // 1 + 2^-8 is exact in f16 (10 fraction bits)
  float f32[6];
  ASSERT_TRUE(writeComputeWeights(master, DType::F32, f32, 6).ok());
  EXPECT_EQ(std::memcmp(f32, master, sizeof(f32)), 0);
  int64_t i64[1];
  EXPECT_EQ(writeComputeWeights(master, DType::I64, i64, 1).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(writeComputeWeights(master, DType::BF16, bf16, -1).code(),
            StatusCode::InvalidArgument);
}

TEST(AccumulateGradientTest, FirstCopiesThenAddsInFloat) {
  std::vector<float> acc(3, 123.0f);
  const float g0[3] = {1.0f, -2.5f, 1e-8f};
  const float g1[3] = {0.5f, 2.5f, 1.0f};
  accumulateGradient(acc.data(), g0, 3, /*first=*/true);
  EXPECT_EQ(acc, (std::vector<float>{1.0f, -2.5f, 1e-8f}));
  accumulateGradient(acc.data(), g1, 3, /*first=*/false);
  // Float sums: 1e-8f + 1.0f rounds to 1.0f.
  EXPECT_EQ(acc, (std::vector<float>{1.5f, 0.0f, 1.0f}));
  accumulateGradient(acc.data(), g1, 0, /*first=*/true); // n = 0: untouched
  EXPECT_EQ(acc[0], 1.5f);
}

// The non-finite checks ride on passes the step makes anyway: each gives the same bits as the
// plain copy / sum and says whether every value is finite (an overflow of a sum included), for
// every length around the check's block size.
TEST(GradientCheckTest, CopiesAndSumsAsThePlainPassesAndFlagsNonFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4095}, int64_t{4096}, int64_t{10000}}) {
    std::vector<float> g(static_cast<size_t>(n)), acc(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      g[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3.25f;
      acc[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i % 5);
    }
    EXPECT_TRUE(allFinite(g.data(), n)) << n;
    std::vector<float> copy(static_cast<size_t>(n), -1.0f);
    EXPECT_TRUE(copyCheckingFinite(copy.data(), g.data(), n)) << n;
    EXPECT_EQ(copy, g) << n;
    std::vector<float> sum = acc, plain = acc;
    EXPECT_TRUE(addCheckingFinite(sum.data(), g.data(), n)) << n;
    accumulateGradient(plain.data(), g.data(), n, /*first=*/false);
    EXPECT_EQ(sum, plain) << n;
    if (n == 0)
      continue;
    for (float bad : {inf, -inf, nan})
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> x = g;
        x[static_cast<size_t>(at)] = bad;
        EXPECT_FALSE(allFinite(x.data(), n)) << n << " at " << at;
        EXPECT_FALSE(copyCheckingFinite(copy.data(), x.data(), n)) << n << " at " << at;
        std::vector<float> s2 = acc;
        EXPECT_FALSE(addCheckingFinite(s2.data(), x.data(), n)) << n << " at " << at;
      }
    // Two finite values whose float sum overflows.
    std::vector<float> a(static_cast<size_t>(n), 1.0f), b(static_cast<size_t>(n), 1.0f);
    a[static_cast<size_t>(n - 1)] = big;
    b[static_cast<size_t>(n - 1)] = big;
    EXPECT_TRUE(allFinite(b.data(), n));
    EXPECT_FALSE(addCheckingFinite(a.data(), b.data(), n)) << n;
  }
}

} // namespace
} // namespace rp::runtime
