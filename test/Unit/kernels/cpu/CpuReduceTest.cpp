//===- CpuReduceTest.cpp - reduce_sum / reduce_mean / reduce_max ----------===//
//
// Against naive float64 references over every axis subset; tolerances kF32
// (rtol 1e-5, atol 1e-6) for f32 and kF64 (rtol 1e-12, atol 1e-12) for f64,
// integers exactly.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Reduce.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <algorithm>
#include <limits>

namespace rp::kernels::cpu::test {
namespace {

const char *name(ReduceKind k) {
  return k == ReduceKind::Sum ? "sum" : k == ReduceKind::Mean ? "mean" : "max";
}

Shape reducedShape(const Shape &in, const Shape &axes, bool keepdims) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

/// Naive reduction: bucket every input element into its output element.
std::vector<double> refReduce(ReduceKind k, const HostTensor &x, const Shape &axes) {
  const Shape keptShape = reducedShape(x.shape(), axes, true);
  const int64_t n = numElements(keptShape);
  std::vector<double> acc(n, k == ReduceKind::Max ? -INFINITY : 0.0), count(n, 0.0);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Shape idx = unravel(i, x.shape());
    for (int64_t a : axes)
      idx[a] = 0;
    const int64_t o = ravel(idx, keptShape);
    const double v = get(x, i);
    acc[o] = k == ReduceKind::Max
                 ? (std::isnan(v) || std::isnan(acc[o]) ? NAN : std::max(acc[o], v))
                 : acc[o] + v;
    count[o] += 1;
  }
  if (k == ReduceKind::Mean)
    for (int64_t o = 0; o < n; ++o)
      acc[o] = x.dtype() == DType::F32 || x.dtype() == DType::F64 ? acc[o] / count[o]
                                                                  : std::trunc(acc[o] / count[o]);
  return acc;
}

/// Every non-empty strictly increasing subset of [0, rank).
std::vector<Shape> axisSubsets(int64_t rank) {
  std::vector<Shape> subsets;
  for (int mask = 1; mask < (1 << rank); ++mask) {
    Shape axes;
    for (int64_t d = 0; d < rank; ++d)
      if (mask & (1 << d))
        axes.push_back(d);
    subsets.push_back(axes);
  }
  return subsets;
}

// Every kind over every axis subset of a rank-4 tensor, with and without
// keepdims, in every dtype.
TEST(CpuReduce, AllAxisSubsetsMatchReference) {
  std::mt19937 rng(21);
  const Shape shape{3, 4, 2, 5};
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max})
    for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32}) {
      HostTensor x = randomTensor(t, shape, rng, -50, 50);
      for (const Shape &axes : axisSubsets(4))
        for (bool keepdims : {false, true}) {
          SCOPED_TRACE(std::string(name(k)) + " " + base::dtypeName(t) + " axes " +
                       base::formatShape(axes) + (keepdims ? " keepdims" : ""));
          HostTensor out = poisoned(t, reducedShape(shape, axes, keepdims));
          ASSERT_OK(reduce(k, x, axes, keepdims, out));
          expectClose(out, refReduce(k, x, axes),
                      base::isFloat(t) ? toleranceFor(t) : Tolerance{0, 0});
        }
    }
}

// Large reductions run on several threads and still match.
TEST(CpuReduce, LargeTensors) {
  std::mt19937 rng(22);
  for (DType t : kFloatDTypes) {
    HostTensor x = randomTensor(t, {64, 300, 8}, rng);
    for (const Shape &axes : {Shape{2}, Shape{0}, Shape{1}, Shape{0, 1, 2}, Shape{0, 2}}) {
      HostTensor out = poisoned(t, reducedShape(x.shape(), axes, false));
      ASSERT_OK(reduce(ReduceKind::Sum, x, axes, false, out));
      expectClose(out, refReduce(ReduceKind::Sum, x, axes), toleranceFor(t));
    }
  }
}

// f32 sums accumulate in double: adding 1 four times to 2^24 is exact.
TEST(CpuReduce, F32AccumulatesInDouble) {
  HostTensor x = tensor(DType::F32, {5}, {16777216.0, 1, 1, 1, 1});
  HostTensor out = poisoned(DType::F32, {});
  ASSERT_OK(reduce(ReduceKind::Sum, x, {0}, false, out));
  EXPECT_EQ(out.data<float>()[0], 16777220.0f); // f32 accumulation would give 16777216
}

// Integer mean truncates toward zero; max of integers is exact.
// A sum over leading axes (the innermost dimension kept: blocks of outputs accumulate together)
// gives the bits of the plain order: each output the double sum of its elements in row-major
// order of the reduced axes, rounded once; mean divides that sum by the count.
TEST(CpuReduce, LeadingAxesSumInRowMajorOrder) {
  std::mt19937 rng(17);
  const HostTensor x = randomTensor(DType::F32, {3, 5, 300}, rng, -1e4, 1e4);
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean}) {
    HostTensor out(DType::F32, {300});
    ASSERT_OK(reduce(kind, x, {0, 1}, false, out));
    for (int64_t j = 0; j < 300; ++j) {
      double acc = 0.0;
      for (int64_t i = 0; i < 15; ++i)
        acc += static_cast<double>(x.data<float>()[i * 300 + j]);
      const float want = static_cast<float>(kind == ReduceKind::Mean ? acc / 15.0 : acc);
      ASSERT_EQ(out.data<float>()[j], want) << reduceKindName(kind) << " output " << j;
    }
  }
  // A kept leading axis too ([3, 5, 300] -> [3, 1, 300] over axis 1).
  HostTensor out(DType::F32, {3, 1, 300});
  ASSERT_OK(reduce(ReduceKind::Sum, x, {1}, true, out));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t j = 0; j < 300; ++j) {
      double acc = 0.0;
      for (int64_t i = 0; i < 5; ++i)
        acc += static_cast<double>(x.data<float>()[(a * 5 + i) * 300 + j]);
      ASSERT_EQ(out.data<float>()[a * 300 + j], static_cast<float>(acc)) << a << ", " << j;
    }
}

TEST(CpuReduce, Integers) {
  HostTensor x = tensor(DType::I64, {2, 2}, {-7, 0, 7, 2});
  HostTensor out = poisoned(DType::I64, {2});
  ASSERT_OK(reduce(ReduceKind::Mean, x, {1}, false, out));
  expectEqual(out, {-3, 4});
  ASSERT_OK(reduce(ReduceKind::Max, x, {0}, false, out));
  expectEqual(out, {7, 2});
}

// Max propagates NaN (PyTorch); empty reductions follow ONNX.
TEST(CpuReduce, NaNAndEmpty) {
  HostTensor x = tensor(DType::F32, {2, 3}, {1, NAN, 3, 4, 5, 6});
  HostTensor out = poisoned(DType::F32, {2});
  ASSERT_OK(reduce(ReduceKind::Max, x, {1}, false, out));
  expectEqual(out, {NAN, 6});

  HostTensor empty(DType::F64, {2, 0});
  HostTensor eo = poisoned(DType::F64, {2, 1});
  ASSERT_OK(reduce(ReduceKind::Sum, empty, {1}, true, eo));
  expectEqual(eo, {0, 0});
  ASSERT_OK(reduce(ReduceKind::Mean, empty, {1}, true, eo));
  expectEqual(eo, {NAN, NAN});
  ASSERT_OK(reduce(ReduceKind::Max, empty, {1}, true, eo));
  expectEqual(eo, {-INFINITY, -INFINITY});
  HostTensor ie(DType::I32, {0, 3});
  HostTensor io = poisoned(DType::I32, {3});
  ASSERT_OK(reduce(ReduceKind::Max, ie, {0}, false, io));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(io.data<int32_t>()[i], std::numeric_limits<int32_t>::min());
  EXPECT_ERROR(reduce(ReduceKind::Mean, ie, {0}, false, io), StatusCode::InvalidArgument,
               "reduce_mean: the integer mean of an empty set is undefined");
}

// Bad axes, dtypes and out types are InvalidArgument errors.
TEST(CpuReduce, Errors) {
  HostTensor x(DType::F32, {2, 3, 4});
  HostTensor out(DType::F32, {2, 4});
  EXPECT_ERROR(reduce(ReduceKind::Sum, x, {}, false, out), StatusCode::InvalidArgument,
               "reduce_sum: expected at least one axis");
  EXPECT_ERROR(reduce(ReduceKind::Sum, x, {3}, false, out), StatusCode::InvalidArgument,
               "reduce_sum: axis 3 is out of range, expected [0, 3)");
  EXPECT_ERROR(reduce(ReduceKind::Sum, x, {2, 1}, false, out), StatusCode::InvalidArgument,
               "reduce_sum: expected strictly increasing axes, got [2, 1]");
  EXPECT_ERROR(reduce(ReduceKind::Mean, x, {1}, true, out), StatusCode::InvalidArgument,
               "reduce_mean: out is f32[2, 4], expected f32[2, 1, 4]");
  HostTensor b(DType::I1, {2});
  HostTensor bo(DType::I1, {});
  EXPECT_ERROR(reduce(ReduceKind::Max, b, {0}, false, bo), StatusCode::InvalidArgument,
               "reduce_max: x has dtype i1, expected f32, f64, i64 or i32");
}

} // namespace
} // namespace rp::kernels::cpu::test
