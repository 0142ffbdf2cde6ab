//===- CpuSoftmaxTest.cpp - softmax and log-softmax -----------------------===//
//
// Against a naive float64 reference along every axis; tolerances kF32 (rtol
// 1e-5, atol 1e-6) for f32 and kF64 (rtol 1e-12, atol 1e-12) for f64.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Softmax.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

std::vector<double> refSoftmax(const HostTensor &x, int64_t axis, bool log) {
  const Shape &shape = x.shape();
  std::vector<double> out(static_cast<size_t>(x.numElements()));
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Shape idx = unravel(i, shape);
    double m = -INFINITY;
    for (idx[axis] = 0; idx[axis] < shape[axis]; ++idx[axis])
      m = std::max(m, get(x, ravel(idx, shape)));
    double sum = 0;
    for (idx[axis] = 0; idx[axis] < shape[axis]; ++idx[axis])
      sum += std::exp(get(x, ravel(idx, shape)) - m);
    const double v = get(x, i);
    out[i] = log ? v - m - std::log(sum) : std::exp(v - m) / sum;
  }
  return out;
}

// Every axis of a rank-3 tensor, softmax and log-softmax, f32 and f64, plus a
// large tensor on the multi-threaded path.
TEST(CpuSoftmax, MatchesReference) {
  std::mt19937 rng(31);
  for (DType t : kFloatDTypes)
    for (bool log : {false, true}) {
      HostTensor x = randomTensor(t, {3, 4, 5}, rng, -6, 6);
      for (int64_t axis = 0; axis < 3; ++axis) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + (log ? " log" : "") + " axis " +
                     std::to_string(axis));
        HostTensor out = poisoned(t, x.shape());
        ASSERT_OK(softmax(x, axis, log, out));
        expectClose(out, refSoftmax(x, axis, log), toleranceFor(t));
      }
      HostTensor big = randomTensor(t, {4, 64, 256}, rng, -6, 6);
      HostTensor out = poisoned(t, big.shape());
      ASSERT_OK(softmax(big, 2, log, out));
      expectClose(out, refSoftmax(big, 2, log), toleranceFor(t));
    }
}

// Large logits do not overflow; -inf entries (masked scores) get 0 / -inf;
// a fully masked row is NaN (PyTorch).
TEST(CpuSoftmax, StableAndMasked) {
  HostTensor x = tensor(DType::F32, {3, 2}, {1000, 1001, 0, -INFINITY, -INFINITY, -INFINITY});
  HostTensor out = poisoned(DType::F32, {3, 2});
  ASSERT_OK(softmax(x, 1, false, out));
  const double e = std::exp(-1.0);
  expectClose(out, {e / (1 + e), 1 / (1 + e), 1, 0, NAN, NAN}, kF32);
  ASSERT_OK(softmax(x, 1, true, out));
  expectClose(out, {-1 - std::log1p(e), -std::log1p(e), 0, -INFINITY, NAN, NAN}, kF32);
}

TEST(CpuSoftmax, Errors) {
  HostTensor x(DType::F32, {2, 3});
  HostTensor out(DType::F32, {2, 3});
  EXPECT_ERROR(softmax(x, 2, false, out), StatusCode::InvalidArgument,
               "softmax: axis 2 is out of range, expected [0, 2)");
  HostTensor wrong(DType::F64, {2, 3});
  EXPECT_ERROR(softmax(x, 1, true, wrong), StatusCode::InvalidArgument,
               "log_softmax: out is f64[2, 3], expected f32[2, 3]");
  HostTensor i(DType::I64, {2, 3});
  EXPECT_ERROR(softmax(i, 1, false, i), StatusCode::InvalidArgument,
               "softmax: x has dtype i64, expected f32 or f64");
}

} // namespace
} // namespace rp::kernels::cpu::test
