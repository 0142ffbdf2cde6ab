//===- CpuFusedTest.cpp - swiglu and rope ---------------------------------===//
//
// Against naive float64 references written from the composed definitions
// (silu(gate) * up; x * cos + concat(-x2, x1) * sin with numpy broadcasting of
// cos/sin); tolerances kF32 (rtol 1e-5, atol 1e-6) for f32 and kF64 (rtol
// 1e-12, atol 1e-12) for f64.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "test/Unit/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

std::vector<double> refSwiglu(const HostTensor &gate, const HostTensor &up) {
  std::vector<double> out;
  for (int64_t i = 0; i < gate.numElements(); ++i) {
    const double a = get(gate, i);
    out.push_back(a / (1.0 + std::exp(-a)) * get(up, i));
  }
  return out;
}

std::vector<double> refRope(const HostTensor &x, const HostTensor &cos, const HostTensor &sin) {
  const Shape &shape = x.shape();
  const int64_t d = shape.back(), half = d / 2;
  std::vector<double> out;
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Shape idx = unravel(i, shape);
    const int64_t j = idx.back();
    Shape partner = idx;
    partner.back() = j < half ? j + half : j - half;
    const double rot = (j < half ? -1.0 : 1.0) * get(x, ravel(partner, shape));
    const int64_t c = broadcastSource(idx, cos.shape());
    out.push_back(get(x, i) * get(cos, c) + rot * get(sin, c));
  }
  return out;
}

// swiglu on a few shapes (one large enough to run in parallel), f32 and f64.
TEST(CpuFused, SwigluMatchesReference) {
  std::mt19937 rng(7);
  for (DType t : kFloatDTypes)
    for (const Shape &shape : {Shape{5}, Shape{2, 3, 7}, Shape{4, 64, 172}}) {
      SCOPED_TRACE(std::string(runtime::dtypeName(t)) + " " + runtime::formatShape(shape));
      HostTensor a = randomTensor(t, shape, rng, -6, 6);
      HostTensor u = randomTensor(t, shape, rng);
      HostTensor out = poisoned(t, shape);
      ASSERT_OK(swiglu(a, u, out));
      expectClose(out, refSwiglu(a, u), toleranceFor(t), "swiglu");
    }
}

// Large |gate|: sigmoid neither overflows nor loses the product (silu(-800) = -0, silu(800) =
// 800).
TEST(CpuFused, SwigluExtremeGate) {
  HostTensor a = tensor(DType::F64, {4}, {-800, 800, 0, -1});
  HostTensor u = tensor(DType::F64, {4}, {2, 0.5, 3, 1});
  HostTensor out = poisoned(DType::F64, {4});
  ASSERT_OK(swiglu(a, u, out));
  expectClose(out, {0.0, 400.0, 0.0, -1.0 / (1.0 + std::exp(1.0))}, kF64, "extreme");
}

// rope with cos/sin [S, D], [B, 1, S, D], [1, 1, S, D] and same-shape; f32 and f64.
TEST(CpuFused, RopeMatchesReference) {
  std::mt19937 rng(11);
  const Shape x{2, 3, 5, 8};
  for (DType t : kFloatDTypes)
    for (const Shape &cs : {Shape{5, 8}, Shape{2, 1, 5, 8}, Shape{1, 1, 5, 8}, x}) {
      SCOPED_TRACE(std::string(runtime::dtypeName(t)) + " cos " + runtime::formatShape(cs));
      HostTensor in = randomTensor(t, x, rng);
      HostTensor c = randomTensor(t, cs, rng, -1, 1);
      HostTensor s = randomTensor(t, cs, rng, -1, 1);
      HostTensor out = poisoned(t, x);
      ASSERT_OK(rope(in, c, s, out));
      expectClose(out, refRope(in, c, s), toleranceFor(t), "rope");
    }
  // Large enough to run in parallel.
  const Shape big{2, 8, 64, 64};
  HostTensor in = randomTensor(DType::F32, big, rng);
  HostTensor c = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor s = randomTensor(DType::F32, {64, 64}, rng, -1, 1);
  HostTensor out = poisoned(DType::F32, big);
  ASSERT_OK(rope(in, c, s, out));
  expectClose(out, refRope(in, c, s), kF32, "rope parallel");
}

// A rotation by angle theta per pair (cos = cos theta, sin = sin theta) keeps each pair's norm.
TEST(CpuFused, RopeRotatesPairs) {
  HostTensor in = tensor(DType::F64, {1, 4}, {1, 2, 3, 4});
  const double th = 0.3;
  HostTensor c = tensor(DType::F64, {1, 4}, {std::cos(th), 1, std::cos(th), 1});
  HostTensor s = tensor(DType::F64, {1, 4}, {std::sin(th), 0, std::sin(th), 0});
  HostTensor out = poisoned(DType::F64, {1, 4});
  ASSERT_OK(rope(in, c, s, out));
  // pair (x0, x2) = (1, 3) rotates by theta; pair (x1, x3) = (2, 4) stays.
  expectClose(out,
              {std::cos(th) - 3 * std::sin(th), 2, 3 * std::cos(th) + std::sin(th), 4}, kF64,
              "pairs");
}

TEST(CpuFused, Errors) {
  HostTensor a(DType::F32, {2, 4}), u64(DType::F64, {2, 4}), u3(DType::F32, {2, 3});
  HostTensor out(DType::F32, {2, 4});
  EXPECT_ERROR(swiglu(a, u64, out), runtime::StatusCode::InvalidArgument, "swiglu: up");
  EXPECT_ERROR(swiglu(a, u3, out), runtime::StatusCode::InvalidArgument, "swiglu: up");
  HostTensor i(DType::I64, {2, 4});
  EXPECT_ERROR(swiglu(i, i, i), runtime::StatusCode::InvalidArgument, "swiglu: gate");

  HostTensor odd(DType::F32, {2, 3}), oddOut(DType::F32, {2, 3});
  EXPECT_ERROR(rope(odd, u3, u3, oddOut), runtime::StatusCode::InvalidArgument, "even");
  HostTensor c2(DType::F32, {2}), c3(DType::F32, {3, 4}), c4(DType::F32, {4});
  EXPECT_ERROR(rope(a, c2, c2, out), runtime::StatusCode::InvalidArgument, "last dimension");
  EXPECT_ERROR(rope(a, c3, c3, out), runtime::StatusCode::InvalidArgument, "rope");
  EXPECT_ERROR(rope(a, c4, c2, out), runtime::StatusCode::InvalidArgument, "rope: sin");
}

} // namespace
} // namespace rp::kernels::cpu::test
