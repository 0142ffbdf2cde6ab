//===- CpuNormTest.cpp - layer_norm and rms_norm --------------------------===//
//
// Against naive float64 references (two-pass mean and biased variance);
// tolerances kF32 (rtol 1e-5, atol 1e-6) for f32 and kF64 (rtol 1e-12, atol
// 1e-12) for f64.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Norm.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

std::vector<double> refNorm(bool rms, const HostTensor &x, const HostTensor &scale,
                            const HostTensor *bias, double eps) {
  const int64_t cols = scale.numElements();
  const int64_t rows = x.numElements() / cols;
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += get(x, r * cols + c);
    mean = rms ? 0.0 : mean / cols;
    for (int64_t c = 0; c < cols; ++c)
      var += (get(x, r * cols + c) - mean) * (get(x, r * cols + c) - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c)
      out.push_back((get(x, r * cols + c) - mean) / std::sqrt(var + eps) * get(scale, c) +
                    (bias ? get(*bias, c) : 0.0));
  }
  return out;
}

// layer_norm with and without bias and rms_norm, over one or two trailing
// dims, f32 and f64; the inputs have a non-zero mean.
TEST(CpuNorm, MatchesReference) {
  std::mt19937 rng(41);
  for (DType t : kFloatDTypes)
    for (int64_t axis : {1, 2, 0})
      for (const Shape &shape : {Shape{2, 3, 16}, Shape{4, 8, 300}}) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " axis " + std::to_string(axis) + " " +
                     base::formatShape(shape));
        HostTensor x = randomTensor(t, shape, rng, -1, 3);
        const Shape ps(shape.begin() + axis, shape.end());
        HostTensor g = randomTensor(t, ps, rng, 0.5, 1.5);
        HostTensor b = randomTensor(t, ps, rng, -1, 1);
        HostTensor out = poisoned(t, shape);
        ASSERT_OK(layerNorm(x, g, &b, axis, 1e-5, out));
        expectClose(out, refNorm(false, x, g, &b, 1e-5), toleranceFor(t), "layer_norm");
        poison(out);
        ASSERT_OK(layerNorm(x, g, nullptr, axis, 1e-5, out));
        expectClose(out, refNorm(false, x, g, nullptr, 1e-5), toleranceFor(t), "no bias");
        poison(out);
        ASSERT_OK(rmsNorm(x, g, axis, 1e-6, out));
        expectClose(out, refNorm(true, x, g, nullptr, 1e-6), toleranceFor(t), "rms_norm");
      }
}

// A constant row has zero variance: the output is the bias (epsilon keeps it
// finite).
TEST(CpuNorm, ConstantRow) {
  HostTensor x = tensor(DType::F32, {1, 4}, {3, 3, 3, 3});
  HostTensor g = tensor(DType::F32, {4}, {1, 2, 3, 4});
  HostTensor b = tensor(DType::F32, {4}, {0.5, 0.5, 0.5, 0.5});
  HostTensor out = poisoned(DType::F32, {1, 4});
  ASSERT_OK(layerNorm(x, g, &b, 1, 1e-5, out));
  expectEqual(out, {0.5, 0.5, 0.5, 0.5});
  ASSERT_OK(rmsNorm(x, g, 1, 0.0, out));
  expectClose(out, {1, 2, 3, 4}, kF32);
}

TEST(CpuNorm, Errors) {
  HostTensor x(DType::F32, {2, 3, 4});
  HostTensor g(DType::F32, {4});
  HostTensor out(DType::F32, {2, 3, 4});
  HostTensor g2(DType::F32, {3, 4});
  EXPECT_ERROR(layerNorm(x, g2, nullptr, 2, 1e-5, out), StatusCode::InvalidArgument,
               "layer_norm: scale is f32[3, 4], expected f32[4]");
  HostTensor b(DType::F64, {4});
  EXPECT_ERROR(layerNorm(x, g, &b, 2, 1e-5, out), StatusCode::InvalidArgument,
               "layer_norm: bias is f64[4], expected f32[4]");
  EXPECT_ERROR(rmsNorm(x, g, 3, 1e-5, out), StatusCode::InvalidArgument,
               "rms_norm: axis 3 is out of range, expected [0, 3)");
  HostTensor wrong(DType::F32, {2, 12});
  EXPECT_ERROR(rmsNorm(x, g, 2, 1e-5, wrong), StatusCode::InvalidArgument,
               "rms_norm: out is f32[2, 12], expected f32[2, 3, 4]");
  HostTensor h(DType::F16, {2, 4});
  EXPECT_ERROR(rmsNorm(h, g, 1, 1e-5, out), StatusCode::InvalidArgument,
               "rms_norm: x has dtype f16, expected f32 or f64");
}

} // namespace
} // namespace rp::kernels::cpu::test
