//===- CpuFusedVjpTest.cpp - rms_norm_vjp, swiglu_vjp and rope_vjp --------===//
//
// The fused VJP kernels against float64 references written from each op's Jacobian (J^T g,
// the Jacobian's entries derived by hand: rms_norm's d xhat_i / d x_j = r (delta_ij - xhat_i
// xhat_j / n), silu's sigma (1 + a (1 - sigma)), rope's cos on the diagonal and +-sin at the
// partner), tolerances kF32 / kF64 (KernelTestUtil.h); and against central finite
// differences of the forward kernels in f64 (<J^T g, v> = <g, (f(x + h v) - f(x - h v)) / 2h>,
// h = 1e-6, relative tolerance 1e-7). Every output is poisoned first.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Norm.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <functional>

namespace rp::kernels::cpu::test {
namespace {

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// <g, (f(x + h v) - f(x - h v)) / 2h> for f64 x: the directional derivative of f along v,
/// weighted by g.
double fdDirectional(const std::function<HostTensor(const HostTensor &)> &f, const HostTensor &x,
                     const HostTensor &v, const HostTensor &g) {
  const double h = 1e-6;
  HostTensor plus(x.dtype(), x.shape()), minus(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    set(plus, i, get(x, i) + h * get(v, i));
    set(minus, i, get(x, i) - h * get(v, i));
  }
  const std::vector<double> a = values(f(plus)), b = values(f(minus));
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    d[i] = (a[i] - b[i]) / (2 * h);
  return dot(values(g), d);
}

void expectRelativelyClose(double got, double want, const std::string &what) {
  EXPECT_LE(std::fabs(got - want), 1e-7 * std::max(1.0, std::fabs(want)))
      << what << ": " << got << " vs " << want;
}

//===--- rms_norm_vjp ----------------------------------------------------------===//

struct NormVjpRef {
  std::vector<double> dx, dscaleRows;
};

/// J^T g row by row: dx_j = sum_i g_i w_i r (delta_ij - xhat_i xhat_j / n), and g_i xhat_i.
NormVjpRef refRmsNormVjp(const HostTensor &x, const HostTensor &w, const HostTensor &g,
                         int64_t axis, double eps) {
  const int64_t n = w.numElements(), rows = n == 0 ? 0 : x.numElements() / n;
  NormVjpRef r{std::vector<double>(x.numElements()), std::vector<double>(x.numElements())};
  for (int64_t row = 0; row < rows; ++row) {
    double sq = 0;
    for (int64_t c = 0; c < n; ++c)
      sq += get(x, row * n + c) * get(x, row * n + c);
    const double rstd = 1.0 / std::sqrt(sq / n + eps);
    for (int64_t j = 0; j < n; ++j) {
      const double xj = get(x, row * n + j) * rstd;
      double s = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double xi = get(x, row * n + i) * rstd;
        s += get(g, row * n + i) * get(w, i) * rstd * ((i == j ? 1.0 : 0.0) - xi * xj / n);
      }
      r.dx[row * n + j] = s;
      r.dscaleRows[row * n + j] = get(g, row * n + j) * xj;
    }
  }
  (void)axis;
  return r;
}

TEST(CpuFusedVjp, RmsNormVjpMatchesTheJacobian) {
  std::mt19937 rng(7);
  const struct {
    Shape x;
    int64_t axis;
  } cases[] = {{{4, 8}, 1}, {{2, 3, 16}, 2}, {{2, 3, 16}, 1}, {{64, 128}, 1}, {{0, 8}, 1}};
  for (DType t : {DType::F32, DType::F64})
    for (const auto &c : cases) {
      SCOPED_TRACE(base::formatShape(c.x) + " axis " + std::to_string(c.axis));
      const Shape ws(c.x.begin() + c.axis, c.x.end());
      const HostTensor x = randomTensor(t, c.x, rng), w = randomTensor(t, ws, rng),
                       g = randomTensor(t, c.x, rng);
      HostTensor dx = poisoned(t, c.x), ds = poisoned(t, c.x);
      ASSERT_TRUE(rmsNormVjp(x, w, g, c.axis, 1e-6, dx, ds).ok());
      const NormVjpRef want = refRmsNormVjp(x, w, g, c.axis, 1e-6);
      expectClose(dx, want.dx, toleranceFor(t), "dx");
      expectClose(ds, want.dscaleRows, toleranceFor(t), "dscale_rows");
    }
}

TEST(CpuFusedVjp, RmsNormVjpMatchesFiniteDifferences) {
  std::mt19937 rng(8);
  const Shape xs{3, 5, 12}, ws{12};
  const HostTensor x = randomTensor(DType::F64, xs, rng), w = randomTensor(DType::F64, ws, rng),
                   g = randomTensor(DType::F64, xs, rng), vx = randomTensor(DType::F64, xs, rng),
                   vw = randomTensor(DType::F64, ws, rng);
  HostTensor dx(DType::F64, xs), ds(DType::F64, xs);
  ASSERT_TRUE(rmsNormVjp(x, w, g, 2, 1e-5, dx, ds).ok());
  auto normOfX = [&](const HostTensor &in) {
    HostTensor y(DType::F64, xs);
    EXPECT_TRUE(rmsNorm(in, w, 2, 1e-5, y).ok());
    return y;
  };
  auto normOfW = [&](const HostTensor &in) {
    HostTensor y(DType::F64, xs);
    EXPECT_TRUE(rmsNorm(x, in, 2, 1e-5, y).ok());
    return y;
  };
  expectRelativelyClose(dot(values(dx), values(vx)), fdDirectional(normOfX, x, vx, g), "dx");
  // The scale's gradient is dscale_rows summed over the rows.
  std::vector<double> dw(12, 0.0);
  for (int64_t i = 0; i < ds.numElements(); ++i)
    dw[static_cast<size_t>(i % 12)] += get(ds, i);
  expectRelativelyClose(dot(dw, values(vw)), fdDirectional(normOfW, w, vw, g), "dscale");
}

TEST(CpuFusedVjp, RmsNormVjpRejectsBadOperands) {
  const HostTensor x(DType::F32, {2, 8}), w(DType::F32, {8}), badW(DType::F32, {4}),
      badG(DType::F32, {2, 4}), i64(DType::I64, {2, 8});
  HostTensor dx(DType::F32, {2, 8}), ds(DType::F32, {2, 8}), badDs(DType::F32, {8});
  EXPECT_EQ(rmsNormVjp(x, badW, x, 1, 1e-6, dx, ds).message(),
            "rms_norm_vjp: scale is f32[4], expected f32[8]");
  EXPECT_EQ(rmsNormVjp(x, w, badG, 1, 1e-6, dx, ds).message(),
            "rms_norm_vjp: g is f32[2, 4], expected f32[2, 8]");
  EXPECT_EQ(rmsNormVjp(x, w, x, 1, 1e-6, dx, badDs).message(),
            "rms_norm_vjp: dscale_rows is f32[8], expected f32[2, 8]");
  EXPECT_FALSE(rmsNormVjp(i64, w, x, 1, 1e-6, dx, ds).ok());
  EXPECT_FALSE(rmsNormVjp(x, w, x, 2, 1e-6, dx, ds).ok());
}

//===--- swiglu_vjp ------------------------------------------------------------===//

TEST(CpuFusedVjp, SwigluVjpMatchesTheDerivative) {
  std::mt19937 rng(9);
  for (DType t : {DType::F32, DType::F64})
    for (const Shape &s : {Shape{7}, Shape{3, 40}, Shape{4, 64, 96}, Shape{0, 3}}) {
      SCOPED_TRACE(base::formatShape(s));
      const HostTensor a = randomTensor(t, s, rng, -8, 8), u = randomTensor(t, s, rng),
                       g = randomTensor(t, s, rng);
      HostTensor da = poisoned(t, s), du = poisoned(t, s);
      ASSERT_TRUE(swigluVjp(a, u, g, da, du).ok());
      std::vector<double> wantA, wantU;
      for (int64_t i = 0; i < a.numElements(); ++i) {
        const double x = get(a, i), sig = 1.0 / (1.0 + std::exp(-x));
        wantA.push_back(get(g, i) * get(u, i) * (sig + x * sig * (1.0 - sig)));
        wantU.push_back(get(g, i) * x * sig);
      }
      expectClose(da, wantA, toleranceFor(t), "dgate");
      expectClose(du, wantU, toleranceFor(t), "dup");
    }
}

TEST(CpuFusedVjp, SwigluVjpMatchesFiniteDifferences) {
  std::mt19937 rng(10);
  const Shape s{6, 33};
  const HostTensor a = randomTensor(DType::F64, s, rng, -6, 6), u = randomTensor(DType::F64, s, rng),
                   g = randomTensor(DType::F64, s, rng), va = randomTensor(DType::F64, s, rng),
                   vu = randomTensor(DType::F64, s, rng);
  HostTensor da(DType::F64, s), du(DType::F64, s);
  ASSERT_TRUE(swigluVjp(a, u, g, da, du).ok());
  auto ofGate = [&](const HostTensor &in) {
    HostTensor y(DType::F64, s);
    EXPECT_TRUE(swiglu(in, u, y).ok());
    return y;
  };
  auto ofUp = [&](const HostTensor &in) {
    HostTensor y(DType::F64, s);
    EXPECT_TRUE(swiglu(a, in, y).ok());
    return y;
  };
  expectRelativelyClose(dot(values(da), values(va)), fdDirectional(ofGate, a, va, g), "dgate");
  expectRelativelyClose(dot(values(du), values(vu)), fdDirectional(ofUp, u, vu, g), "dup");
}

TEST(CpuFusedVjp, SwigluVjpRejectsBadOperands) {
  const HostTensor a(DType::F32, {2, 8}), bad(DType::F32, {2, 4}), i64(DType::I64, {2, 8});
  HostTensor d(DType::F32, {2, 8}), badOut(DType::F32, {8});
  EXPECT_EQ(swigluVjp(a, a, bad, d, d).message(), "swiglu_vjp: g is f32[2, 4], expected f32[2, 8]");
  EXPECT_EQ(swigluVjp(a, a, a, d, badOut).message(), "swiglu_vjp: dup is f32[8], expected f32[2, 8]");
  EXPECT_FALSE(swigluVjp(i64, a, a, d, d).ok());
}

//===--- rope_vjp --------------------------------------------------------------===//

/// J^T g: dx_k = g_k cos_k + sign g_p sin_p, p = k's partner, sign + for the first element
/// of a pair and - for the second (cos/sin read at g's broadcast index).
std::vector<double> refRopeVjp(const HostTensor &g, const HostTensor &cos, const HostTensor &sin,
                               bool interleaved) {
  const Shape &shape = g.shape();
  std::vector<double> out;
  for (int64_t i = 0; i < g.numElements(); ++i) {
    const Shape idx = unravel(i, shape);
    const auto [partner, first] = ropePartner(idx, shape.back(), interleaved);
    const int64_t c = broadcastSource(idx, cos.shape()), cp = broadcastSource(partner, sin.shape());
    out.push_back(get(g, i) * get(cos, c) +
                  (first ? 1.0 : -1.0) * get(g, ravel(partner, shape)) * get(sin, cp));
  }
  return out;
}

TEST(CpuFusedVjp, RopeVjpMatchesTheJacobian) {
  std::mt19937 rng(11);
  const struct {
    Shape x, table;
  } cases[] = {{{2, 3, 5, 8}, {5, 8}}, {{2, 3, 5, 8}, {2, 1, 5, 8}}, {{4, 6}, {4, 6}},
               {{1, 2, 70, 64}, {70, 64}}};
  for (DType t : {DType::F32, DType::F64})
    for (bool interleaved : {false, true})
      for (const auto &c : cases) {
        SCOPED_TRACE(base::formatShape(c.x) + (interleaved ? " interleaved" : ""));
        const HostTensor g = randomTensor(t, c.x, rng), cs = randomTensor(t, c.table, rng),
                         sn = randomTensor(t, c.table, rng);
        HostTensor dx = poisoned(t, c.x);
        ASSERT_TRUE(ropeVjp(g, cs, sn, dx, interleaved).ok());
        expectClose(dx, refRopeVjp(g, cs, sn, interleaved), toleranceFor(t), "dx");
      }
}

TEST(CpuFusedVjp, RopeVjpIsTheTransposeOfRope) {
  // rope is linear in x, so <rope_vjp(g), v> = <g, rope(v)> exactly up to rounding.
  std::mt19937 rng(12);
  for (bool interleaved : {false, true}) {
    const HostTensor g = randomTensor(DType::F64, {2, 3, 7, 16}, rng),
                     v = randomTensor(DType::F64, {2, 3, 7, 16}, rng),
                     cs = randomTensor(DType::F64, {2, 1, 7, 16}, rng),
                     sn = randomTensor(DType::F64, {2, 1, 7, 16}, rng);
    HostTensor dx(DType::F64, g.shape()), y(DType::F64, g.shape());
    ASSERT_TRUE(ropeVjp(g, cs, sn, dx, interleaved).ok());
    ASSERT_TRUE(rope(v, cs, sn, y, interleaved).ok());
    expectRelativelyClose(dot(values(dx), values(v)), dot(values(g), values(y)),
                          interleaved ? "interleaved" : "halves");
  }
}

TEST(CpuFusedVjp, RopeVjpRejectsBadOperands) {
  const HostTensor g(DType::F32, {2, 4, 6}), odd(DType::F32, {2, 4, 5}), t6(DType::F32, {4, 6}),
      t4(DType::F32, {4, 4});
  HostTensor dx(DType::F32, {2, 4, 6}), badDx(DType::F32, {2, 6});
  EXPECT_EQ(ropeVjp(odd, t6, t6, dx).message(),
            "rope_vjp: g is [2, 4, 5], expected rank >= 1 with an even last dimension");
  EXPECT_EQ(ropeVjp(g, t4, t4, dx).message(), "rope_vjp: cos is [4, 4], expected a last dimension of 6");
  EXPECT_EQ(ropeVjp(g, t6, t6, badDx).message(), "rope_vjp: dx is f32[2, 6], expected f32[2, 4, 6]");
}

} // namespace
} // namespace rp::kernels::cpu::test
