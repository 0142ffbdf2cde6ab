//===- CpuGeneratorsTest.cpp - range, trilu and the tensor cast -----------===//
//
// range is checked against start + i * delta computed in double (f32 rounds
// once, so the comparison is exact); integer ranges, trilu and casts exactly.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Cast.h"
#include "kernels/cpu/Generators.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <limits>

namespace rp::kernels::cpu::test {
namespace {

// Float ranges: length ceil((limit - start) / delta), values start + i*delta.
TEST(CpuRange, Float) {
  struct Case {
    double start, limit, delta;
    int64_t length;
  };
  const Case cases[] = {
      {0, 1, 0.1, 10}, {1, -2, -0.5, 6}, {0.5, 3, 1, 3}, {5, 1, 1, 0}, {0, 8, 1, 8}};
  for (DType t : kFloatDTypes)
    for (const Case &c : cases) {
      HostTensor out = poisoned(t, {c.length});
      ASSERT_OK(range(c.start, c.limit, c.delta, out));
      std::vector<double> want;
      for (int64_t i = 0; i < c.length; ++i) {
        const double v = c.start + static_cast<double>(i) * c.delta;
        want.push_back(t == DType::F32 ? static_cast<double>(static_cast<float>(v)) : v);
      }
      expectEqual(out, want);
    }
}

// Integer ranges are exact, through range() with integral doubles or rangeInt.
TEST(CpuRange, Integer) {
  HostTensor out = poisoned(DType::I64, {4});
  ASSERT_OK(range(3, -5, -2, out));
  expectEqual(out, {3, 1, -1, -3});
  HostTensor i32 = poisoned(DType::I32, {3});
  ASSERT_OK(rangeInt(10, 17, 3, i32));
  expectEqual(i32, {10, 13, 16});
  // Values beyond 2^53 stay exact.
  const int64_t big = (int64_t(1) << 60) + 1;
  HostTensor b = poisoned(DType::I64, {3});
  ASSERT_OK(rangeInt(big, 1, b));
  EXPECT_EQ(b.data<int64_t>()[0], big);
  EXPECT_EQ(b.data<int64_t>()[2], big + 2);
  HostTensor empty(DType::I64, {0});
  ASSERT_OK(rangeInt(0, 0, 1, empty));
}

TEST(CpuRange, Errors) {
  HostTensor out(DType::F32, {5});
  EXPECT_ERROR(range(0, 4, 1, out), StatusCode::InvalidArgument,
               "range: start 0.000000, limit 4.000000, delta 1.000000 gives 4 elements, but out "
               "is f32[5]");
  EXPECT_ERROR(range(0, 4, 0, out), StatusCode::InvalidArgument,
               "range: expected finite arguments and a non-zero delta");
  HostTensor ints(DType::I64, {5});
  EXPECT_ERROR(range(0, 2.5, 0.5, ints), StatusCode::InvalidArgument,
               "range: an integer out (i64[5]) needs integral int64 arguments");
  EXPECT_ERROR(rangeInt(0, 4, 1, ints), StatusCode::InvalidArgument,
               "range: start 0, limit 4, delta 1 gives 4 elements, but out is i64[5]");
  EXPECT_ERROR(rangeInt(0, 0, ints), StatusCode::InvalidArgument,
               "range: expected a non-zero delta");
  HostTensor i32(DType::I32, {3});
  EXPECT_ERROR(rangeInt(std::numeric_limits<int32_t>::max() - 1, 1, i32),
               StatusCode::InvalidArgument, "overflows i32");
  HostTensor matrix(DType::I64, {2, 2});
  EXPECT_ERROR(rangeInt(0, 1, matrix), StatusCode::InvalidArgument,
               "range: out is i64[2, 2], expected a 1-D tensor");
  HostTensor bools(DType::I1, {2});
  EXPECT_ERROR(range(0, 2, 1, bools), StatusCode::InvalidArgument,
               "range: out has dtype i1, expected f32, f64, i64 or i32");
}

// trilu against the j - i rule, for every dtype, k and triangle, on a batch of
// rectangular matrices.
TEST(CpuTrilu, MatchesReference) {
  std::mt19937 rng(81);
  const Shape shape{2, 4, 6};
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1})
    for (int64_t k : {-7, -1, 0, 2, 9})
      for (bool upper : {false, true}) {
        HostTensor x = randomTensor(t, shape, rng, 1, 9); // no zeros: a kept 0 would hide a bug
        HostTensor out = poisoned(t, shape);
        ASSERT_OK(trilu(x, k, upper, out));
        std::vector<double> want;
        for (int64_t n = 0; n < x.numElements(); ++n) {
          const Shape idx = unravel(n, shape);
          const int64_t i = idx[1], j = idx[2];
          want.push_back((upper ? j - i >= k : j - i <= k) ? get(x, n) : 0.0);
        }
        expectEqual(out, want);
      }
  // The causal mask: a lower triangle of ones.
  HostTensor ones = tensor(DType::I1, {3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  HostTensor mask = poisoned(DType::I1, {3, 3});
  ASSERT_OK(trilu(ones, 0, false, mask));
  expectEqual(mask, {1, 0, 0, 1, 1, 0, 1, 1, 1});
}

TEST(CpuTrilu, Errors) {
  HostTensor v(DType::F32, {4});
  EXPECT_ERROR(trilu(v, 0, false, v), StatusCode::InvalidArgument,
               "trilu: expected x of rank >= 2, got f32[4]");
  HostTensor m(DType::F32, {2, 2});
  HostTensor wrong(DType::F32, {2, 3});
  EXPECT_ERROR(trilu(m, 0, true, wrong), StatusCode::InvalidArgument,
               "trilu: out is f32[2, 3], expected f32[2, 2]");
}

// The tensor cast wraps the raw-pointer cast, f16 included.
TEST(CpuCastTensor, Wrapper) {
  HostTensor x = tensor(DType::F32, {2, 2}, {1.5, -2.75, 0, 65504});
  HostTensor h = HostTensor(DType::F16, {2, 2});
  ASSERT_OK(cast(x, h));
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3E00);
  EXPECT_EQ(h.data<uint16_t>()[3], 0x7BFF);
  HostTensor i = poisoned(DType::I32, {2, 2});
  ASSERT_OK(cast(h, i));
  expectEqual(i, {1, -2, 0, 65504});
  HostTensor bad(DType::F64, {4});
  EXPECT_ERROR(cast(x, bad), StatusCode::InvalidArgument,
               "cast: out is f64[4], expected shape [2, 2] (x is f32[2, 2])");
}

} // namespace
} // namespace rp::kernels::cpu::test
