//===- CpuVectorMathTest.cpp - the f32 array loops equal their scalar forms -===//
//
// kernels/cpu/VectorMath.h's loops run as this CPU's widest clone (AVX-512, AVX2 or baseline);
// each element must be bit for bit the scalar expression of KernelSupport.h (expF32,
// sigmoidF32) evaluated one element at a time: 100,003 values over [-110, 110] (every
// remainder of the vector widths), plus 0, -0, +-inf, NaN, the largest finite values and
// subnormals. The scalar loop is kept from vectorising (volatile), so the two sides take
// different code paths. A NaN result must be a NaN; its sign is not specified (vector and
// scalar code give different signs).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cpu/VectorMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace rp::kernels::cpu::detail {
namespace {

std::vector<float> inputs(uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-110.0f, 110.0f);
  std::vector<float> v(100003);
  for (float &x : v)
    x = dist(gen);
  const float special[] = {0.0f,
                           -0.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::denorm_min(),
                           -1e-40f,
                           88.7f,
                           -87.3f,
                           -104.5f};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; ++i)
    v[i * 997] = special[i];
  return v;
}

template <typename Scalar>
std::vector<float> scalarLoop(const std::vector<float> &x, Scalar f) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    volatile float in = x[i]; // one element at a time: not vectorised
    y[i] = f(in);
  }
  return y;
}

int64_t countDifferent(const std::vector<float> &a, const std::vector<float> &b) {
  int64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(std::isnan(a[i]) && std::isnan(b[i])) &&
        d++ < 3)
      ADD_FAILURE() << "element " << i << ": " << a[i] << " against " << b[i];
  return d;
}

TEST(CpuVectorMath, UnaryLoopsEqualScalar) {
  const std::vector<float> x = inputs(1);
  std::vector<float> y(x.size());
  expF32Array(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(countDifferent(y, scalarLoop(x, [](float v) { return expF32(v); })), 0) << "exp";
  sigmoidF32Array(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(countDifferent(y, scalarLoop(x, [](float v) { return sigmoidF32(v); })), 0)
      << "sigmoid";
  siluF32Array(x.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(countDifferent(y, scalarLoop(x, [](float v) { return v * sigmoidF32(v); })), 0)
      << "silu";
  // And the loops compute something: exp(1) within 2 ulp.
  const float one = 1.0f;
  float e = 0.0f;
  expF32Array(&one, &e, 1);
  EXPECT_NEAR(e, 2.7182818f, 5e-7f);
}

TEST(CpuVectorMath, SwigluEqualsScalar) {
  const std::vector<float> g = inputs(2), u = inputs(3);
  std::vector<float> y(g.size()), want(g.size());
  swigluF32Array(g.data(), u.data(), y.data(), static_cast<int64_t>(g.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    volatile float a = g[i];
    want[i] = a * sigmoidF32(a) * u[i];
  }
  EXPECT_EQ(countDifferent(y, want), 0);
}

TEST(CpuVectorMath, ChunksCoverTheArrayOnce) {
  for (int64_t n : {0, 1, 8191, 8192, 8193, 40000}) {
    std::vector<int> seen(static_cast<size_t>(n), 0);
    forChunks(n, true, [&](int64_t b, int64_t c) {
      for (int64_t i = b; i < b + c; ++i)
        ++seen[static_cast<size_t>(i)];
    });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << "n " << n << " element " << i;
  }
}

} // namespace
} // namespace rp::kernels::cpu::detail
