//===- CudaRowKernelsTestUtil.h - Shared helpers of the row kernel tests -*- C++ -*-===//
//
// For CudaRowKernelsHostTest.cpp and CudaRowKernelsTest.cpp: random inputs rounded to the
// tested dtype (16-bit tensors through CudaTestUtil.h: rounded from f32, widened back
// exactly), the tolerances both tests state, the case tables' types, and the per-family CPU
// reference runs (kernels/cpu on the inputs, 16-bit inputs widened to f32 first: "the
// reference in f32 of the rounded inputs"): reduce's output shape, kinds and summation slack,
// the norm inputs and their CPU reference and GPU plan, cross-entropy's labels.
//
// Tolerances, |got - want| <= bound(want) with want the CPU reference:
//   f32   1e-6 |want| + 1e-7   (the CPU and the GPU compute in double and round once; what
//                               remains is the order of the additions and libm vs CUDA exp)
//   f64   1e-12 |want| + 1e-12
//   f16   2 ulps of binary16 at want + 2^-20 (ulp: 2^(e - 10), e >= -14)
//   bf16  2 ulps of bfloat16 at want + 2^-20 (ulp: 2^(e - 7), e >= -126)
//   i64, i32: exact.
// The 2^-20 absolute term covers results near 0 that come out of a cancellation of terms of
// size ~1 computed in float (layer_norm with a bias, log_softmax of a dominant class): their
// float rounding (~2^-24 per term) is far below it. Reductions add the bound of summing in
// the compute type, (count / P + 10) * u * sum|x| (u = 2^-24 for float, 2^-53 for double, P
// threads per row), which a cancelling sum of many 16-bit inputs needs; layer / rms norm add
// (cols / P + 10) * u * 8 (normSlack: the relative float error of the row statistics times
// the largest |(x - mean) / stdev * scale| of the test data, inputs in [-2, 2]), which an
// output that cancels against the bias needs when a thread sums thousands of elements.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAROWKERNELSTESTUTIL_H
#define RP_TEST_UNIT_CUDAROWKERNELSTESTUTIL_H

#include "kernels/cpu/Norm.h"
#include "kernels/cpu/Reduce.h"
#include "kernels/cuda/Norm.h"
#include "kernels/cuda/Reduce.h"
#include "base/DType.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {

/// The dtype the CPU reference runs in for inputs of dtype d (f32 for the 16-bit floats).
inline DType referenceDType(DType d) { return is16Bit(d) ? DType::F32 : d; }

/// Uniform values in [lo, hi) rounded to `dtype` (integers: uniform integers in [lo, hi]).
inline HostTensor randomInput(DType dtype, const Shape &shape, std::mt19937 &rng, double lo = -2.0,
                              double hi = 2.0) {
  if (!is16Bit(dtype))
    return cpu::test::randomTensor(dtype, shape, rng, lo, hi);
  return convertTo(cpu::test::randomTensor(DType::F32, shape, rng, lo, hi), dtype);
}

/// The bound of the file comment for an output of `dtype` with reference `want`, plus
/// `extra` (a reduction's accumulation bound, 0 otherwise).
inline double allowedError(DType dtype, double want, double extra = 0.0) {
  switch (dtype) {
  case DType::F32:
    return 1e-6 * std::fabs(want) + 1e-7 + extra;
  case DType::F64:
    return 1e-12 * std::fabs(want) + 1e-12 + extra;
  case DType::F16:
  case DType::BF16:
    return 2 * ulp16(dtype, want) + std::ldexp(1.0, -20) + extra;
  default:
    return 0.0;
  }
}

/// The unit roundoff of the compute type of `dtype` (float for the 16-bit floats).
inline double computeRoundoff(DType dtype) {
  return is16Bit(dtype) ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

/// The norm slack of the file comment for `n` outputs of rows of `cols` elements reduced by
/// `threads` threads each.
inline std::vector<double> normSlack(DType dtype, int64_t cols, int threads, int64_t n) {
  const double s = (static_cast<double>(cols) / threads + 10) * computeRoundoff(dtype) * 8;
  return std::vector<double>(static_cast<size_t>(n), s);
}

/// Every element of `got` is within allowedError(dtype, want[i], extra[i]) of want[i]
/// (`extra` empty: 0); NaN matches NaN, infinities match exactly. Reports up to 10.
inline void expectNear(const HostTensor &got, const std::vector<double> &want,
                       const std::vector<double> &extra, const std::string &what) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 10; ++i) {
    const double g = valueAt(got, i), w = want[static_cast<size_t>(i)];
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(g);
    else if (std::isinf(w))
      ok = g == w;
    else
      ok = std::fabs(g - w) <=
           allowedError(got.dtype(), w, extra.empty() ? 0.0 : extra[static_cast<size_t>(i)]);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " of " << got.typeString() << ": got " << g
                    << ", expected " << w << " (difference " << g - w << ")";
    }
  }
}

/// Bit-for-bit equality of the values (NaN matches NaN whatever its payload; the sign of a
/// zero must match). Reports up to 10 differences.
inline void expectSame(const HostTensor &got, const std::vector<double> &want,
                       const std::string &what) {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 10; ++i) {
    const double g = valueAt(got, i), w = want[static_cast<size_t>(i)];
    const bool ok =
        (std::isnan(g) && std::isnan(w)) || (g == w && std::signbit(g) == std::signbit(w));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " of " << got.typeString() << ": got " << g
                    << ", expected exactly " << w;
    }
  }
}

/// Random labels of dtype `t` in [0, classes); about a quarter of them (never the first)
/// `ignore`.
inline HostTensor randomLabels(DType t, const Shape &shape, int64_t classes, int64_t ignore,
                               std::mt19937 &rng) {
  HostTensor labels(t, shape);
  std::uniform_int_distribution<int64_t> cls(0, std::max<int64_t>(classes - 1, 0));
  for (int64_t i = 0; i < labels.numElements(); ++i)
    cpu::test::set(labels, i, static_cast<double>(rng() % 4 == 0 && i > 0 ? ignore : cls(rng)));
  return labels;
}

/// A "<what>: f32[2, 3]" trace line.
inline std::string describe(const std::string &what, DType d, const Shape &shape) {
  return what + " " + base::dtypeName(d) + base::formatShape(shape);
}

//===--- reduce -----------------------------------------------------------===//

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
};

inline const cpu::ReduceKind kCpuKinds[] = {cpu::ReduceKind::Sum, cpu::ReduceKind::Mean,
                                            cpu::ReduceKind::Max};

/// The shape of reducing `shape` over `axes` (keepdims: the reduced dimensions stay as 1).
inline Shape reduceOutShape(const Shape &shape, const std::vector<int64_t> &axes,
                            bool keepdims = false) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

/// Per output of reducing x (any dtype) over `axes`: the accumulation bound of the file
/// comment, (count / P + 10) * u * sum|x| (Mean: / count), P = `threads`; empty for Max and
/// the integers.
inline std::vector<double> reduceSlack(cpu::ReduceKind kind, DType dtype, const HostTensor &x,
                                       const std::vector<int64_t> &axes, bool keepdims,
                                       int threads) {
  if (kind == cpu::ReduceKind::Max || !base::isFloat(dtype))
    return {};
  HostTensor absX(DType::F64, x.shape());
  for (int64_t i = 0; i < absX.numElements(); ++i)
    absX.data<double>()[i] = std::fabs(valueAt(x, i));
  HostTensor absSum(DType::F64, reduceOutShape(x.shape(), axes, keepdims));
  EXPECT_TRUE(cpu::reduce(cpu::ReduceKind::Sum, absX, axes, keepdims, absSum).ok());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= x.dim(a);
  std::vector<double> slack = valuesOf(absSum);
  for (double &s : slack) {
    s *= (static_cast<double>(count) / threads + 10) * computeRoundoff(dtype);
    if (kind == cpu::ReduceKind::Mean && count > 0)
      s /= static_cast<double>(count);
  }
  return slack;
}

//===--- softmax and norm -------------------------------------------------===//

struct AxisCase {
  Shape shape;
  int64_t axis;
};

/// A norm case: rms_norm (epsilon 1e-6) or layer_norm (1e-5, with or without a bias) of x
/// over the dimensions from `axis` on; x, scale and bias random in [-2, 2] of the tested
/// dtype (drawn in that order) and their copies in referenceDType.
struct NormInputs {
  DType dtype;
  Shape shape, paramShape;
  int64_t axis;
  bool rms, withBias;
  double epsilon;
  HostTensor x, scale, bias, xRef, scaleRef, biasRef;
  /// "rms_norm f32[4, 8] axis 1" (layer_norm, layer_norm+bias).
  std::string trace;

  /// cpu::rmsNorm or cpu::layerNorm on the reference inputs into `want`.
  base::Status reference(HostTensor &want) const {
    return rms ? cpu::rmsNorm(xRef, scaleRef, axis, epsilon, want)
               : cpu::layerNorm(xRef, scaleRef, withBias ? &biasRef : nullptr, axis, epsilon, want);
  }
  /// planRmsNorm or planLayerNorm of the case.
  base::StatusOr<NormPlan> plan() const {
    return rms ? planRmsNorm(dtype, shape, paramShape, axis, epsilon, shape)
               : planLayerNorm(dtype, shape, paramShape, withBias ? &paramShape : nullptr, axis,
                               epsilon, shape);
  }
};

inline NormInputs randomNormInputs(DType dtype, const AxisCase &c, bool rms, bool withBias,
                                   std::mt19937 &rng) {
  NormInputs n;
  n.dtype = dtype;
  n.shape = c.shape;
  n.paramShape = Shape(c.shape.begin() + c.axis, c.shape.end());
  n.axis = c.axis;
  n.rms = rms;
  n.withBias = withBias;
  n.epsilon = rms ? 1e-6 : 1e-5;
  n.x = randomInput(dtype, n.shape, rng);
  n.scale = randomInput(dtype, n.paramShape, rng);
  n.bias = randomInput(dtype, n.paramShape, rng);
  n.xRef = convertTo(n.x, referenceDType(dtype));
  n.scaleRef = convertTo(n.scale, referenceDType(dtype));
  n.biasRef = convertTo(n.bias, referenceDType(dtype));
  n.trace = describe(rms        ? "rms_norm"
                     : withBias ? "layer_norm+bias"
                                : "layer_norm",
                     dtype, n.shape) +
            " axis " + std::to_string(n.axis);
  return n;
}

//===--- cross-entropy ----------------------------------------------------===//

inline constexpr int64_t kIgnore = -100;

/// The labels' shape for logits [N, C, d...]: [N, d...].
inline Shape labelShapeOf(const Shape &logits) {
  Shape s{logits[0]};
  s.insert(s.end(), logits.begin() + 2, logits.end());
  return s;
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAROWKERNELSTESTUTIL_H
