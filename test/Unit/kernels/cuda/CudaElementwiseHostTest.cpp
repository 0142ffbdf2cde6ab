//===- CudaElementwiseHostTest.cpp - GPU elementwise and layout bodies on the host -===//
//
// The elementwise and layout kernels (kernels/cuda/Elementwise.h, Layout.h) are grid-stride
// loops over RP_HD bodies (ElementwiseOps.h, Layout.h copyAt). This test runs those very
// bodies on the CPU (kernels/cuda/HostReplay.h), over every point of the planned iteration space,
// and compares the result with the CPU reference kernels (kernels/cpu): so the planners (broadcast
// strides, coalescing, transposes, slices, concat/split offsets) and the per-element math are
// checked without a GPU. What it does not cover: the launch itself (grid size, the kernel's loop),
// and CUDA's device libm (the host runs glibc's); the GPU test (CudaKernelsTest.cpp) does.
//
// Tolerances: f32 results must be bit-identical to the CPU kernels (both compute in double
// and round once, with the same libm here; mod's fmod is exact and its one addition rounds
// once in both), except exp, sigmoid and silu: the CPU computes
// those in f32 with a vectorised exp (kernels/cpu/KernelSupport.h expF32, within 2 ulp), so
// they are compared with rtol 1e-6 (a few f32 ulp); bf16 results are compared with the CPU kernel
// run in f32 on the bf16-rounded inputs and rounded to bf16: at most 1 bf16 ulp apart (the
// GPU computes bf16 in float, the reference in double, then both round).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Kernels.h"
#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/ElementwiseOps.h"
#include "kernels/cuda/HostReplay.h"
#include "kernels/cuda/Layout.h"
#include "test/Unit/kernels/cuda/GradientCheckTestUtil.h"
#include "base/Float16.h"
#include "base/HostTensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace rp::kernels::cuda {
namespace {

using base::DType;
using base::HostTensor;
namespace cpu = ::rp::kernels::cpu;

HostTensor randomTensor(DType dtype, const Shape &shape, std::mt19937 &rng) {
  HostTensor t(dtype, shape);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> small(-5, 5);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    switch (dtype) {
    case DType::F32:
      t.data<float>()[i] = static_cast<float>(real(rng));
      break;
    case DType::I64:
      t.data<int64_t>()[i] = small(rng);
      break;
    case DType::I32:
      t.data<int32_t>()[i] = static_cast<int32_t>(small(rng));
      break;
    case DType::I1:
      t.data<uint8_t>()[i] = static_cast<uint8_t>(small(rng) > 0);
      break;
    default:
      ADD_FAILURE() << "unsupported dtype in the test";
    }
  }
  return t;
}

void expectSameBytes(const HostTensor &got, const HostTensor &want, const std::string &what) {
  ASSERT_EQ(got.byteSize(), want.byteSize()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.byteSize()), 0) << what;
}

// The kernels' bodies over every point (kernels/cuda/HostReplay.h).
using replay::binary;
using replay::copy;
using replay::unary;

TEST(CudaElementwiseHost, UnaryF32MatchesCpuBitForBit) {
  std::mt19937 rng(1);
  const std::pair<UnaryOp, cpu::UnaryKind> cases[] = {
      {UnaryOp::Sqrt, cpu::UnaryKind::Sqrt},
      {UnaryOp::Reciprocal, cpu::UnaryKind::Reciprocal},
      {UnaryOp::Exp, cpu::UnaryKind::Exp},
      {UnaryOp::Log, cpu::UnaryKind::Log},
      {UnaryOp::Tanh, cpu::UnaryKind::Tanh},
      {UnaryOp::Sigmoid, cpu::UnaryKind::Sigmoid},
      {UnaryOp::Erf, cpu::UnaryKind::Erf},
      {UnaryOp::Silu, cpu::UnaryKind::Silu},
      {UnaryOp::Softplus, cpu::UnaryKind::Softplus},
      {UnaryOp::Floor, cpu::UnaryKind::Floor},
      {UnaryOp::Cos, cpu::UnaryKind::Cos},
      {UnaryOp::Sin, cpu::UnaryKind::Sin},
      {UnaryOp::Neg, cpu::UnaryKind::Neg},
      {UnaryOp::Relu, cpu::UnaryKind::Relu},
      {UnaryOp::GeluExact, cpu::UnaryKind::GeluExact},
      {UnaryOp::GeluTanh, cpu::UnaryKind::GeluTanh}};
  const Shape shape = {3, 5, 7};
  HostTensor x = randomTensor(DType::F32, shape, rng);
  for (auto [op, kind] : cases) {
    HostTensor want(DType::F32, shape), got(DType::F32, shape);
    ASSERT_TRUE(cpu::unary(kind, x, want).ok());
    auto plan = planUnary(op, DType::F32, shape, shape);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(plan.value().iter.rank, 1); // contiguous: coalesced to one dimension
    unary(plan.value(), x.raw(), got.raw());
    if (kind == cpu::UnaryKind::Exp || kind == cpu::UnaryKind::Sigmoid ||
        kind == cpu::UnaryKind::Silu) {
      const float *g = got.data<float>(), *w = want.data<float>();
      for (int64_t i = 0; i < got.numElements(); ++i)
        EXPECT_LE(std::fabs(double(g[i]) - double(w[i])), 1e-6 * std::fabs(double(w[i])))
            << cpu::unaryKindName(kind) << " element " << i;
    } else if (kind == cpu::UnaryKind::Cos || kind == cpu::UnaryKind::Sin) {
      // Float libm against the double reference rounded once: within 1e-6 absolute (the
      // values lie in [-1, 1], where float's spacing is at most 6e-8).
      const float *g = got.data<float>(), *w = want.data<float>();
      for (int64_t i = 0; i < got.numElements(); ++i)
        EXPECT_LE(std::fabs(double(g[i]) - double(w[i])), 1e-6)
            << cpu::unaryKindName(kind) << " element " << i;
    } else {
      expectSameBytes(got, want, cpu::unaryKindName(kind));
    }
  }
}

TEST(CudaElementwiseHost, IntegerAndBoolUnary) {
  std::mt19937 rng(2);
  for (DType dt : {DType::I64, DType::I32}) {
    HostTensor x = randomTensor(dt, {4, 6}, rng);
    for (auto [op, kind] : {std::pair{UnaryOp::Neg, cpu::UnaryKind::Neg},
                            std::pair{UnaryOp::Relu, cpu::UnaryKind::Relu}}) {
      HostTensor want(dt, {4, 6}), got(dt, {4, 6});
      ASSERT_TRUE(cpu::unary(kind, x, want).ok());
      unary(planUnary(op, dt, {4, 6}, {4, 6}).value(), x.raw(), got.raw());
      expectSameBytes(got, want, base::dtypeName(dt));
    }
  }
  HostTensor b = randomTensor(DType::I1, {9}, rng), want(DType::I1, {9}), got(DType::I1, {9});
  ASSERT_TRUE(cpu::unary(cpu::UnaryKind::LogicalNot, b, want).ok());
  unary(planUnary(UnaryOp::LogicalNot, DType::I1, {9}, {9}).value(), b.raw(), got.raw());
  expectSameBytes(got, want, "logical_not");
}

TEST(CudaElementwiseHost, BinaryBroadcastMatchesCpu) {
  std::mt19937 rng(3);
  struct Case {
    Shape a, b;
  };
  const Case shapes[] = {{{4, 5}, {4, 5}},      {{4, 5}, {5}}, {{4, 1}, {1, 5}},
                         {{2, 3, 4}, {3, 1}},   {{}, {2, 3}},  {{2, 1, 3, 1}, {5, 1, 4}},
                         {{6, 1, 8}, {1, 7, 1}}};
  const std::pair<BinaryOp, cpu::BinaryKind> opsF[] = {
      {BinaryOp::Add, cpu::BinaryKind::Add}, {BinaryOp::Sub, cpu::BinaryKind::Sub},
      {BinaryOp::Mul, cpu::BinaryKind::Mul}, {BinaryOp::Div, cpu::BinaryKind::Div},
      {BinaryOp::Pow, cpu::BinaryKind::Pow}, {BinaryOp::Lt, cpu::BinaryKind::Lt},
      {BinaryOp::Eq, cpu::BinaryKind::Eq},   {BinaryOp::Ge, cpu::BinaryKind::Ge},
      {BinaryOp::Mod, cpu::BinaryKind::Mod}, {BinaryOp::Fmod, cpu::BinaryKind::Fmod}};
  for (DType dt : {DType::F32, DType::I64, DType::I32}) {
    for (const Case &c : shapes) {
      HostTensor a = randomTensor(dt, c.a, rng), b = randomTensor(dt, c.b, rng);
      if (dt != DType::F32) // no integer division by zero (the CPU kernel refuses it)
        for (int64_t i = 0; i < b.numElements(); ++i) {
          if (dt == DType::I64 && b.data<int64_t>()[i] == 0)
            b.data<int64_t>()[i] = 3;
          if (dt == DType::I32 && b.data<int32_t>()[i] == 0)
            b.data<int32_t>()[i] = 3;
        }
      for (auto [op, kind] : opsF) {
        const Shape out = broadcastShapes("t", {c.a, c.b}).value();
        const DType outType = isComparison(op) ? DType::I1 : dt;
        HostTensor want(outType, out), got(outType, out);
        ASSERT_TRUE(cpu::binary(kind, a, b, want).ok());
        auto plan = planBinary(op, dt, c.a, c.b, out);
        ASSERT_TRUE(plan.ok()) << plan.status().message();
        binary(plan.value(), a.raw(), b.raw(), got.raw());
        expectSameBytes(got, want,
                        std::string(cpu::binaryKindName(kind)) + " " + base::dtypeName(dt) +
                            " " + formatShape(c.a) + " x " + formatShape(c.b));
      }
    }
  }
}

TEST(CudaElementwiseHost, WhereAndCast) {
  std::mt19937 rng(4);
  HostTensor c = randomTensor(DType::I1, {3, 1}, rng), t = randomTensor(DType::F32, {1, 4}, rng),
             f = randomTensor(DType::F32, {3, 4}, rng);
  HostTensor want(DType::F32, {3, 4}), got(DType::F32, {3, 4});
  ASSERT_TRUE(cpu::where(c, t, f, want).ok());
  WherePlan wp = planWhere(DType::F32, {3, 1}, {1, 4}, {3, 4}, {3, 4}).value();
  for (int64_t i = 0; i < wp.iter.numel; ++i)
    ops::whereAt<DType::F32>(wp, c.raw(), t.raw(), f.raw(), got.raw(), i);
  expectSameBytes(got, want, "where");

  // Casts between every pair of f32, bf16, f16, i64, i32, i1 (values with halfway cases).
  HostTensor src(DType::F32, {64});
  for (int64_t i = 0; i < 64; ++i)
    src.data<float>()[i] = static_cast<float>((i - 32) * 0.37 + (i % 3) * 1e-3);
  const DType types[] = {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32, DType::I1};
  for (DType from : types) {
    HostTensor x(from, {64});
    ASSERT_TRUE(cpu::cast(src, x).ok());
    for (DType to : types) {
      HostTensor w(to, {64}), g(to, {64});
      ASSERT_TRUE(cpu::cast(x, w).ok());
      visitDType(from, [&](auto fd) {
        visitDType(to, [&](auto td) {
          for (int64_t i = 0; i < 64; ++i)
            ops::castAt<decltype(fd)::value, decltype(td)::value>(x.raw(), g.raw(), i);
        });
      });
      expectSameBytes(
          g, w, std::string("cast ") + base::dtypeName(from) + " -> " + base::dtypeName(to));
    }
  }
}

TEST(CudaElementwiseHost, Bf16WithinOneUlpOfTheF32Reference) {
  std::mt19937 rng(5);
  const Shape shape = {257};
  HostTensor x32 = randomTensor(DType::F32, shape, rng);
  HostTensor x16(DType::BF16, shape), xr(DType::F32, shape);
  ASSERT_TRUE(cpu::cast(x32, x16).ok());
  ASSERT_TRUE(cpu::cast(x16, xr).ok()); // the rounded inputs, in f32
  for (auto [op, kind] : {std::pair{UnaryOp::Silu, cpu::UnaryKind::Silu},
                          std::pair{UnaryOp::Exp, cpu::UnaryKind::Exp},
                          std::pair{UnaryOp::GeluTanh, cpu::UnaryKind::GeluTanh}}) {
    HostTensor ref(DType::F32, shape), ref16(DType::BF16, shape), got(DType::BF16, shape);
    ASSERT_TRUE(cpu::unary(kind, xr, ref).ok());
    ASSERT_TRUE(cpu::cast(ref, ref16).ok());
    unary(planUnary(op, DType::BF16, shape, shape).value(), x16.raw(), got.raw());
    for (int64_t i = 0; i < 257; ++i) {
      const int diff = std::abs(static_cast<int>(got.data<uint16_t>()[i]) -
                                static_cast<int>(ref16.data<uint16_t>()[i]));
      EXPECT_LE(diff, 1) << cpu::unaryKindName(kind) << " at " << i;
    }
  }
}

TEST(CudaElementwiseHost, AccumulateAddsInOrder) {
  std::vector<float> acc(5, 0.0f), g = {1.5f, -2.0f, 3.25f, 0.0f, 1e-8f};
  for (int64_t i = 0; i < 5; ++i)
    ops::accumulateAt<DType::F32>(g.data(), acc.data(), /*first=*/true, i);
  for (int64_t i = 0; i < 5; ++i)
    ops::accumulateAt<DType::F32>(g.data(), acc.data(), /*first=*/false, i);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(acc[i], g[i] + g[i]);
  std::vector<uint16_t> h = {base::floatToBf16(0.5f), base::floatToBf16(-3.0f)};
  std::vector<float> acc2 = {1.0f, 1.0f};
  for (int64_t i = 0; i < 2; ++i)
    ops::accumulateAt<DType::BF16>(h.data(), acc2.data(), /*first=*/false, i);
  EXPECT_EQ(acc2[0], 1.5f);
  EXPECT_EQ(acc2[1], -2.0f);
}

// The replay (the kernel's per-element body) flags exactly the arrays holding an inf or NaN.
TEST(CudaElementwiseHost, GradientCheckFlagsExactlyTheNonFiniteArrays) {
  std::mt19937 rng(5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{100003}}) {
    const std::vector<float> finite = test::finiteGradients(n, rng);
    EXPECT_EQ(test::replayFlag(finite), 0u) << n;
    for (float bad : test::kNonFinite)
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        if (n == 0)
          continue;
        std::vector<float> x = finite;
        x[at] = bad;
        EXPECT_EQ(test::replayFlag(x), 1u) << n << " at " << at << " " << bad;
      }
  }
}

TEST(CudaLayoutHost, TransposeExpandConcatSplitMatchCpu) {
  std::mt19937 rng(6);
  HostTensor x = randomTensor(DType::F32, {2, 3, 4, 5}, rng);
  for (const std::vector<int64_t> &perm :
       {std::vector<int64_t>{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2}}) {
    Shape out = {x.dim(perm[0]), x.dim(perm[1]), x.dim(perm[2]), x.dim(perm[3])};
    HostTensor want(DType::F32, out), got(DType::F32, out);
    ASSERT_TRUE(cpu::transpose(x, perm, want).ok());
    copy(planTranspose(4, x.shape(), perm, out).value(), x.raw(), got.raw());
    expectSameBytes(got, want, "transpose " + formatShape(perm));
  }
  HostTensor e = randomTensor(DType::F32, {3, 1, 5}, rng);
  HostTensor ew(DType::F32, {2, 3, 4, 5}), eg(DType::F32, {2, 3, 4, 5});
  ASSERT_TRUE(cpu::expand(e, ew).ok());
  copy(planExpand(4, {3, 1, 5}, {2, 3, 4, 5}).value(), e.raw(), eg.raw());
  expectSameBytes(eg, ew, "expand");

  HostTensor a = randomTensor(DType::F32, {2, 3, 4}, rng),
             b = randomTensor(DType::F32, {2, 1, 4}, rng);
  HostTensor cw(DType::F32, {2, 4, 4}), cg(DType::F32, {2, 4, 4});
  ASSERT_TRUE(cpu::concat({&a, &b}, 1, cw).ok());
  auto plans = planConcat(4, {a.shape(), b.shape()}, 1, {2, 4, 4});
  ASSERT_TRUE(plans.ok()) << plans.status().message();
  copy(plans.value()[0], a.raw(), cg.raw());
  copy(plans.value()[1], b.raw(), cg.raw());
  expectSameBytes(cg, cw, "concat");

  HostTensor s0w(DType::F32, {2, 1, 4}), s1w(DType::F32, {2, 3, 4});
  HostTensor s0g(DType::F32, {2, 1, 4}), s1g(DType::F32, {2, 3, 4});
  std::vector<HostTensor *> pieces = {&s0w, &s1w};
  ASSERT_TRUE(cpu::split(cw, 1, pieces).ok());
  auto sp = planSplit(4, {2, 4, 4}, 1, {{2, 1, 4}, {2, 3, 4}});
  ASSERT_TRUE(sp.ok()) << sp.status().message();
  copy(sp.value()[0], cw.raw(), s0g.raw());
  copy(sp.value()[1], cw.raw(), s1g.raw());
  expectSameBytes(s0g, s0w, "split 0");
  expectSameBytes(s1g, s1w, "split 1");
}

TEST(CudaPlanErrors, NameTheOpAndTheShapes) {
  auto bin = planBinary(BinaryOp::Add, DType::F32, {2, 3}, {4}, {2, 3});
  ASSERT_FALSE(bin.ok());
  EXPECT_EQ(bin.status().message(), "add: shapes [2, 3] and [4] do not broadcast");
  auto out = planBinary(BinaryOp::Mul, DType::F32, {2, 3}, {3}, {3, 3});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "mul: result shape [3, 3]; expected [2, 3]");
  auto un = planUnary(UnaryOp::Exp, DType::I64, {2}, {2});
  ASSERT_FALSE(un.ok());
  EXPECT_EQ(un.status().message(), "exp: dtype i64; the GPU kernel takes f32, f16, bf16 or f64");
  auto tr = planTranspose(4, {2, 3}, {0, 0}, {2, 2});
  ASSERT_FALSE(tr.ok());
  EXPECT_EQ(tr.status().message(), "transpose: [0, 0] is not a permutation");
  auto cc = planConcat(4, {{2, 3}, {3, 3}}, 1, {2, 6});
  ASSERT_FALSE(cc.ok());
  EXPECT_EQ(cc.status().message(),
            "concat: operand 1 is [3, 3]; expected [2, 6] except along axis 1");
  // Nine dimensions that cannot be merged exceed the kernels' rank limit.
  Shape big = {2, 2, 2, 2, 2, 2, 2, 2, 2};
  std::vector<int64_t> perm = {8, 7, 6, 5, 4, 3, 2, 1, 0};
  auto deep = planTranspose(4, big, perm, big);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("exceeds the GPU kernels' limit of 8"), std::string::npos);
}

TEST(CudaPlanErrors, CoalescingKeepsBroadcastDimensions) {
  // [4, 5] + [5]: the bias broadcast over rows cannot merge the two dimensions.
  BinaryPlan p = planBinary(BinaryOp::Add, DType::F32, {4, 5}, {5}, {4, 5}).value();
  EXPECT_EQ(p.iter.rank, 2);
  EXPECT_EQ(p.iter.strides[1][0], 0);
  // [2, 3, 4] + [2, 3, 4] merges to one dimension of 24.
  BinaryPlan q = planBinary(BinaryOp::Add, DType::F32, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}).value();
  EXPECT_EQ(q.iter.rank, 1);
  EXPECT_EQ(q.iter.sizes[0], 24);
}

} // namespace
} // namespace rp::kernels::cuda
