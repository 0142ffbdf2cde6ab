//===- CpuCumSumTest.cpp - cumsum (ONNX CumSum) ----------------------------===//
//
// Against a float64 reference written from the definition (naive loops over every lane),
// with kF32 / kF64 tolerances for floats and exactly for integers (which wrap); every
// combination of exclusive and reverse on every axis; ONNX's examples; errors; and the
// parallel path with 1 and 4 OpenMP threads, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CumSum.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <omp.h>

#include <cstring>
#include <limits>

namespace rp::kernels::cpu::test {
namespace {

/// The cumulative sum of `x` along `axis`, from the definition.
std::vector<double> refCumSum(const HostTensor &x, int64_t axis, bool exclusive, bool reverse) {
  std::vector<double> out(static_cast<size_t>(x.numElements()));
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Shape idx = unravel(i, x.shape());
    const int64_t at = idx[axis];
    double sum = 0;
    for (int64_t j = 0; j < x.dim(axis); ++j) {
      const bool counted = reverse ? (exclusive ? j > at : j >= at) : (exclusive ? j < at : j <= at);
      if (!counted)
        continue;
      idx[axis] = j;
      sum += get(x, ravel(idx, x.shape()));
    }
    out[static_cast<size_t>(i)] = sum;
  }
  return out;
}

TEST(CpuCumSum, MatchesReference) {
  std::mt19937 rng(5);
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32})
    for (const Shape &shape : {Shape{7}, Shape{3, 5}, Shape{2, 4, 3}})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        for (bool exclusive : {false, true})
          for (bool reverse : {false, true}) {
            SCOPED_TRACE(std::string(base::dtypeName(t)) + base::formatShape(shape) + " axis " +
                         std::to_string(axis) + (exclusive ? " exclusive" : "") +
                         (reverse ? " reverse" : ""));
            HostTensor x = randomTensor(t, shape, rng, -20, 20);
            HostTensor out = poisoned(t, shape);
            ASSERT_OK(cumsum(x, axis, exclusive, reverse, out));
            if (t == DType::I64 || t == DType::I32)
              expectEqual(out, refCumSum(x, axis, exclusive, reverse));
            else
              expectClose(out, refCumSum(x, axis, exclusive, reverse), toleranceFor(t));
          }
}

// The examples of the ONNX specification (CumSum-14).
TEST(CpuCumSum, OnnxExamples) {
  HostTensor x = tensor(DType::F32, {5}, {1, 2, 3, 4, 5});
  HostTensor out = poisoned(DType::F32, {5});
  ASSERT_OK(cumsum(x, 0, false, false, out));
  expectEqual(out, {1, 3, 6, 10, 15});
  ASSERT_OK(cumsum(x, 0, true, false, out));
  expectEqual(out, {0, 1, 3, 6, 10});
  ASSERT_OK(cumsum(x, 0, false, true, out));
  expectEqual(out, {15, 14, 12, 9, 5});
  ASSERT_OK(cumsum(x, 0, true, true, out));
  expectEqual(out, {14, 12, 9, 5, 0});
  // An f32 sum rounds once per element from a double sum: 2^24 + 1 + 1 is exact there.
  HostTensor big = tensor(DType::F32, {3}, {16777216, 1, 1});
  HostTensor bigOut = poisoned(DType::F32, {3});
  ASSERT_OK(cumsum(big, 0, false, false, bigOut));
  expectEqual(bigOut, {16777216, 16777216, 16777218});
  // Integers wrap.
  HostTensor i32(DType::I32, {2});
  i32.data<int32_t>()[0] = std::numeric_limits<int32_t>::max();
  i32.data<int32_t>()[1] = 1;
  HostTensor i32Out = poisoned(DType::I32, {2});
  ASSERT_OK(cumsum(i32, 0, false, false, i32Out));
  EXPECT_EQ(i32Out.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
}

TEST(CpuCumSum, Errors) {
  HostTensor x(DType::F32, {2, 3}), out(DType::F32, {2, 3});
  EXPECT_ERROR(cumsum(x, 2, false, false, out), StatusCode::InvalidArgument,
               "cumsum: axis 2 is out of range, expected [0, 2)");
  HostTensor wrong(DType::F32, {3, 2});
  EXPECT_ERROR(cumsum(x, 0, false, false, wrong), StatusCode::InvalidArgument,
               "cumsum: out is f32[3, 2], expected f32[2, 3]");
  HostTensor b(DType::I1, {2}), bOut(DType::I1, {2});
  EXPECT_ERROR(cumsum(b, 0, false, false, bOut), StatusCode::InvalidArgument,
               "cumsum: x has dtype i1, expected f32, f64, i64 or i32");
  HostTensor empty(DType::F32, {0, 3}), emptyOut(DType::F32, {0, 3});
  ASSERT_OK(cumsum(empty, 1, false, false, emptyOut));
}

// Past kParallelMinElements: the same bytes with 1 and 4 threads.
TEST(CpuCumSum, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(6);
  HostTensor x = randomTensor(DType::F32, {64, 1000}, rng);
  for (int64_t axis : {0, 1}) {
    const int threads = omp_get_max_threads();
    HostTensor a = poisoned(DType::F32, {64, 1000}), b = poisoned(DType::F32, {64, 1000});
    omp_set_num_threads(1);
    ASSERT_OK(cumsum(x, axis, false, true, a));
    omp_set_num_threads(4);
    ASSERT_OK(cumsum(x, axis, false, true, b));
    omp_set_num_threads(threads);
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byteSize()), 0) << "axis " << axis;
  }
}

} // namespace
} // namespace rp::kernels::cpu::test
