//===- CpuSgemmTest.cpp - The CPU kernels' own f32 GEMM -------------------===//
//
// kernels/cpu/Sgemm.h promises that every element of alpha op(A) op(B) + beta C is one chain
// of FMAs in increasing k from 0, then alpha (skipped at 1) and beta (two roundings). The
// reference below computes exactly that with std::fma, so the comparison is bit for bit (no
// tolerance): shapes with partial micro-tiles, every transpose combination, K over the K block
// (256, partial sums stored in C between blocks), N over the N block (512), M over the A block
// (96), alpha and beta. Also: AVX2 and AVX-512 give the same bits (on a CPU with AVX-512), a
// product computed in pieces (rows, columns, or k with sgemmAccumulate) equals the whole,
// beta = 0 never reads C (NaN there stays out), and K = 0. A plain (non-FMA) f32 sum of the same products differs in some elements, so the
// bit-for-bit check has teeth.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace rp::kernels::cpu::detail {
namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

std::vector<float> randomFloats(size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// The promised result, element by element.
std::vector<float> reference(const Case &c, const std::vector<float> &a,
                             const std::vector<float> &b, std::vector<float> cIn, bool fused) {
  const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < c.k; ++p) {
        const float x = c.ta ? a[p * lda + i] : a[i * lda + p];
        const float y = c.tb ? b[j * ldb + p] : b[p * ldb + j];
        if (fused) {
          acc = std::fma(x, y, acc);
        } else {
          volatile float prod = x * y; // rounded on its own: not contracted into an FMA
          acc = acc + prod;
        }
      }
      volatile float v = c.alpha == 1.0f ? acc : c.alpha * acc; // volatile: no FMA contraction
      if (c.beta != 0.0f) {
        volatile float scaled = c.beta * cIn[i * c.n + j];
        v = v + scaled;
      }
      cIn[i * c.n + j] = v;
    }
  return cIn;
}

std::vector<float> run(SgemmIsa isa, const Case &c, const std::vector<float> &a,
                       const std::vector<float> &b, std::vector<float> cIn) {
  sgemm(isa, c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), c.ta ? c.m : c.k, b.data(),
        c.tb ? c.k : c.n, c.beta, cIn.data(), c.n);
  return cIn;
}

int64_t countDifferent(const std::vector<float> &x, const std::vector<float> &y) {
  int64_t d = 0;
  for (size_t i = 0; i < x.size(); ++i)
    d += std::memcmp(&x[i], &y[i], sizeof(float)) != 0;
  return d;
}

const Case kCases[] = {
    {1, 1, 1, false, false, 1.0f, 0.0f},     {7, 5, 3, false, false, 1.0f, 0.0f},
    {64, 384, 128, false, false, 1.0f, 0.0f}, {256, 128, 384, false, true, 1.0f, 0.0f},
    {128, 96, 256, true, false, 1.0f, 0.0f},  {37, 53, 600, true, true, 1.0f, 0.0f},
    {100, 530, 70, false, true, 0.5f, 0.0f},  {64, 64, 32, false, true, 0.17677669f, 0.0f},
    {65, 33, 257, true, false, 1.0f, 1.0f},   {30, 45, 300, false, false, 1.5f, -0.25f},
    {97, 17, 9, true, true, -2.0f, 0.75f},    {8, 32, 513, false, false, 1.0f, 1.0f},
};

TEST(CpuSgemm, BitForBitTheFmaChain) {
  const SgemmIsa best = sgemmBestIsa();
  if (!sgemmAvailable()) { // a CPU without FMA: the kernels use OpenBLAS instead
    EXPECT_STREQ(sgemmIsaName(best), "none");
    return;
  }
  uint32_t seed = 1;
  for (const Case &c : kCases) {
    SCOPED_TRACE(testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " ta "
                                    << c.ta << " tb " << c.tb << " alpha " << c.alpha
                                    << " beta " << c.beta << " isa " << sgemmIsaName(best));
    const auto a = randomFloats(static_cast<size_t>(c.m * c.k), seed++);
    const auto b = randomFloats(static_cast<size_t>(c.k * c.n), seed++);
    const auto cIn = randomFloats(static_cast<size_t>(c.m * c.n), seed++);
    EXPECT_EQ(countDifferent(run(best, c, a, b, cIn), reference(c, a, b, cIn, true)), 0);
  }
}

TEST(CpuSgemm, UnfusedSumDiffers) {
  if (!sgemmAvailable())
    return;
  const Case c{64, 384, 128, false, false, 1.0f, 0.0f};
  const auto a = randomFloats(64 * 128, 11), b = randomFloats(128 * 384, 12);
  const std::vector<float> cIn(64 * 384, 0.0f);
  EXPECT_GT(countDifferent(run(sgemmBestIsa(), c, a, b, cIn), reference(c, a, b, cIn, false)),
            0);
}

TEST(CpuSgemm, Avx2AndAvx512Agree) {
  if (sgemmBestIsa() != SgemmIsa::Avx512) {
    EXPECT_NE(sgemmIsaName(sgemmBestIsa()), std::string("avx512"));
    return;
  }
  uint32_t seed = 100;
  for (const Case &c : kCases) {
    SCOPED_TRACE(testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k);
    const auto a = randomFloats(static_cast<size_t>(c.m * c.k), seed++);
    const auto b = randomFloats(static_cast<size_t>(c.k * c.n), seed++);
    const auto cIn = randomFloats(static_cast<size_t>(c.m * c.n), seed++);
    EXPECT_EQ(countDifferent(run(SgemmIsa::Avx2, c, a, b, cIn),
                             run(SgemmIsa::Avx512, c, a, b, cIn)),
              0);
  }
}

TEST(CpuSgemm, PiecesEqualTheWhole) {
  if (!sgemmAvailable())
    return;
  // [150, 300] x [300, 90]: rows 0..71 and 72..149 as two calls, columns 0..40 and 41..89 of
  // the second band as two more (b's column block read at an offset with the full ldb).
  const int64_t m = 150, n = 90, k = 300;
  const auto a = randomFloats(m * k, 21), b = randomFloats(k * n, 22);
  std::vector<float> whole(m * n, 0.0f), pieces(m * n, 0.0f);
  sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, whole.data(), n);
  sgemm(false, false, 72, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, pieces.data(), n);
  sgemm(false, false, m - 72, 41, k, 1.0f, a.data() + 72 * k, k, b.data(), n, 0.0f,
        pieces.data() + 72 * n, n);
  sgemm(false, false, m - 72, n - 41, k, 1.0f, a.data() + 72 * k, k, b.data() + 41, n, 0.0f,
        pieces.data() + 72 * n + 41, n);
  EXPECT_EQ(countDifferent(whole, pieces), 0);
}

TEST(CpuSgemm, AccumulateContinuesTheChains) {
  if (!sgemmAvailable())
    return;
  // op(A) [40, 300] (A stored transposed, [300, 40]) x [300, 70], k in pieces 0..99, 100..262,
  // 263..299 accumulated into C = the whole product from C = 0.
  const int64_t m = 40, n = 70, k = 300;
  const auto a = randomFloats(k * m, 41), b = randomFloats(k * n, 42);
  std::vector<float> whole(m * n, 0.0f), pieces(m * n, 0.0f);
  sgemm(true, false, m, n, k, 1.0f, a.data(), m, b.data(), n, 0.0f, whole.data(), n);
  const int64_t cuts[] = {0, 100, 263, 300};
  for (int piece = 0; piece < 3; ++piece)
    sgemmAccumulate(true, false, m, n, cuts[piece + 1] - cuts[piece], a.data() + cuts[piece] * m,
                    m, b.data() + cuts[piece] * n, n, pieces.data(), n);
  EXPECT_EQ(countDifferent(whole, pieces), 0);
  // From a non-zero C: the chain starts at C's value (the reference with C as its start).
  const auto start = randomFloats(m * n, 43);
  std::vector<float> got = start, want = start;
  sgemmAccumulate(true, false, m, n, 5, a.data(), m, b.data(), n, got.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < 5; ++p)
        want[i * n + j] = std::fma(a[p * m + i], b[p * n + j], want[i * n + j]);
  EXPECT_EQ(countDifferent(got, want), 0);
}

TEST(CpuSgemm, BetaZeroIgnoresC) {
  if (!sgemmAvailable())
    return;
  const Case c{20, 40, 300, false, false, 1.0f, 0.0f};
  const auto a = randomFloats(20 * 300, 31), b = randomFloats(300 * 40, 32);
  const std::vector<float> nan(20 * 40, std::nanf("")), zero(20 * 40, 0.0f);
  const auto got = run(sgemmBestIsa(), c, a, b, nan);
  EXPECT_EQ(countDifferent(got, run(sgemmBestIsa(), c, a, b, zero)), 0);
  for (float v : got)
    ASSERT_FALSE(std::isnan(v));
}

TEST(CpuSgemm, EmptyContraction) {
  if (!sgemmAvailable())
    return;
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
}

} // namespace
} // namespace rp::kernels::cpu::detail
