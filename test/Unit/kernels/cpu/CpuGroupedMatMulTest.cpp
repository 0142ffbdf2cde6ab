//===- CpuGroupedMatMulTest.cpp - grouped_matmul, grouped_matmul_wgrad ---===//
//
// Both against naive triple loops in double over random segment sizes (empty segments, a
// segment longer than one 64-row block, one expert taking every row), with and without
// transpose_b. Tolerance: f32 |got - want| <= 1e-5 + 1e-4 |want| (K- or R-term sums), f64
// 1e-12. Malformed offsets and shapes are errors; the results do not depend on the thread
// count.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/GroupedMatMul.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <omp.h>

#include <cstring>

namespace rp::kernels::cpu::test {
namespace {

Tolerance gemmTolerance(DType dt) { return dt == DType::F32 ? Tolerance{1e-4, 1e-5} : kF64; }

HostTensor offsetsOf(const std::vector<int64_t> &sizes) {
  HostTensor off(DType::I64, {static_cast<int64_t>(sizes.size()) + 1});
  int64_t *o = off.data<int64_t>();
  o[0] = 0;
  for (size_t e = 0; e < sizes.size(); ++e)
    o[e + 1] = o[e] + sizes[e];
  return off;
}

int64_t expertOf(const HostTensor &off, int64_t r) {
  int64_t e = 0;
  while (off.data<int64_t>()[e + 1] <= r)
    ++e;
  return e;
}

const std::vector<std::vector<int64_t>> kSegments = {
    {3, 0, 5, 2}, {0, 0, 130, 0}, {1}, {70, 1, 0, 64, 9}, {0, 4}};

TEST(CpuGroupedMatMul, MatchesNaive) {
  std::mt19937 rng(17);
  for (DType dt : kFloatDTypes)
    for (bool tb : {false, true})
      for (const std::vector<int64_t> &sizes : kSegments) {
        const int64_t experts = static_cast<int64_t>(sizes.size()), k = 6, n = 5;
        HostTensor off = offsetsOf(sizes);
        const int64_t r = off.data<int64_t>()[experts];
        HostTensor rows = randomTensor(dt, {r, k}, rng);
        HostTensor w = randomTensor(dt, tb ? Shape{experts, n, k} : Shape{experts, k, n}, rng);
        HostTensor out = poisoned(dt, {r, n});
        ASSERT_OK(groupedMatmul(rows, w, off, tb, out));
        std::vector<double> want(r * n, 0.0);
        for (int64_t i = 0; i < r; ++i) {
          const int64_t e = expertOf(off, i);
          for (int64_t c = 0; c < n; ++c)
            for (int64_t p = 0; p < k; ++p)
              want[i * n + c] += get(rows, i * k + p) *
                                 get(w, tb ? (e * n + c) * k + p : (e * k + p) * n + c);
        }
        expectClose(out, want, gemmTolerance(dt), "segments of " + std::to_string(r) + " rows");
      }
}

TEST(CpuGroupedMatMulWgrad, MatchesNaive) {
  std::mt19937 rng(19);
  for (DType dt : kFloatDTypes)
    for (const std::vector<int64_t> &sizes : kSegments) {
      const int64_t experts = static_cast<int64_t>(sizes.size()), k = 4, n = 3;
      HostTensor off = offsetsOf(sizes);
      const int64_t r = off.data<int64_t>()[experts];
      HostTensor a = randomTensor(dt, {r, k}, rng), b = randomTensor(dt, {r, n}, rng);
      HostTensor out = poisoned(dt, {experts, k, n});
      ASSERT_OK(groupedMatmulWgrad(a, b, off, out));
      std::vector<double> want(experts * k * n, 0.0);
      for (int64_t i = 0; i < r; ++i) {
        const int64_t e = expertOf(off, i);
        for (int64_t p = 0; p < k; ++p)
          for (int64_t c = 0; c < n; ++c)
            want[(e * k + p) * n + c] += get(a, i * k + p) * get(b, i * n + c);
      }
      expectClose(out, want, gemmTolerance(dt)); // empty experts: exact zeros
    }
}

TEST(CpuGroupedMatMul, Errors) {
  HostTensor rows(DType::F32, {5, 4}), w(DType::F32, {2, 4, 3}), out(DType::F32, {5, 3});
  HostTensor decreasing = tensor(DType::I64, {3}, {0, 3, 2});
  EXPECT_ERROR(groupedMatmul(rows, w, decreasing, false, out), StatusCode::OutOfRange,
               "grouped_matmul: offsets[2] = 2; expected non-decreasing offsets from 0 to 5");
  HostTensor shortEnd = tensor(DType::I64, {3}, {0, 2, 4});
  EXPECT_STATUS(groupedMatmul(rows, w, shortEnd, false, out), StatusCode::OutOfRange);
  HostTensor badStart = tensor(DType::I64, {3}, {1, 2, 5});
  EXPECT_STATUS(groupedMatmul(rows, w, badStart, false, out), StatusCode::OutOfRange);
  HostTensor good = tensor(DType::I64, {3}, {0, 2, 5});
  HostTensor wrongW(DType::F32, {2, 5, 3});
  EXPECT_ERROR(groupedMatmul(rows, wrongW, good, false, out), StatusCode::InvalidArgument,
               "grouped_matmul: weights is f32[2, 5, 3], expected f32[2, 4, 3]");
  HostTensor threeExperts = tensor(DType::I64, {4}, {0, 2, 5, 5});
  EXPECT_ERROR(groupedMatmul(rows, w, threeExperts, false, out), StatusCode::InvalidArgument,
               "offsets has 4 entries, expected 3");
  HostTensor a(DType::F32, {5, 4}), b(DType::F32, {4, 3}), g(DType::F32, {2, 4, 3});
  EXPECT_ERROR(groupedMatmulWgrad(a, b, good, g), StatusCode::InvalidArgument,
               "grouped_matmul_wgrad: expected lhs [R, K] and rhs [R, N]");
  HostTensor bF64(DType::F64, {5, 3});
  EXPECT_STATUS(groupedMatmulWgrad(a, bF64, good, g), StatusCode::InvalidArgument);
}

TEST(CpuGroupedMatMul, ThreadCountIndependent) {
  std::mt19937 rng(23);
  HostTensor off = offsetsOf({300, 0, 129, 700, 64, 1});
  const int64_t r = off.data<int64_t>()[6], k = 48, n = 40;
  HostTensor rows = randomTensor(DType::F32, {r, k}, rng);
  HostTensor w = randomTensor(DType::F32, {6, k, n}, rng), dy = randomTensor(DType::F32, {r, n}, rng);
  HostTensor one(DType::F32, {r, n}), four(DType::F32, {r, n});
  HostTensor gOne(DType::F32, {6, k, n}), gFour(DType::F32, {6, k, n});
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_OK(groupedMatmul(rows, w, off, false, one));
  ASSERT_OK(groupedMatmulWgrad(rows, dy, off, gOne));
  omp_set_num_threads(4);
  ASSERT_OK(groupedMatmul(rows, w, off, false, four));
  ASSERT_OK(groupedMatmulWgrad(rows, dy, off, gFour));
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(one.raw(), four.raw(), one.byteSize()), 0);
  EXPECT_EQ(std::memcmp(gOne.raw(), gFour.raw(), gOne.byteSize()), 0);
}

} // namespace
} // namespace rp::kernels::cpu::test
