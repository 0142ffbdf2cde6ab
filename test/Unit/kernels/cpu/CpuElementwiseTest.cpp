//===- CpuElementwiseTest.cpp - unary, binary and where kernels -----------===//
//
// Float kernels are checked against float64 references written here from the
// formulas (naive loops), with kF32 (rtol 1e-5, atol 1e-6) for f32 and kF64
// (rtol 1e-12, atol 1e-12) for f64; integer and boolean results exactly.
// Outputs are poisoned first, so every comparison also proves that every
// element was written.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Elementwise.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cmath>
#include <functional>
#include <limits>

namespace rp::kernels::cpu::test {
namespace {

//===--- unary --------------------------------------------------------------===//

struct UnaryCase {
  UnaryKind kind;
  double lo, hi; // input domain
  std::function<double(double)> ref;
};

double refSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<UnaryCase> floatUnaryCases() {
  const double pi = std::acos(-1.0);
  return {
      {UnaryKind::Sqrt, 0.01, 9.0, [](double x) { return std::sqrt(x); }},
      {UnaryKind::Reciprocal, 0.1, 4.0, [](double x) { return 1.0 / x; }},
      {UnaryKind::Exp, -5.0, 5.0, [](double x) { return std::exp(x); }},
      {UnaryKind::Log, 0.01, 50.0, [](double x) { return std::log(x); }},
      {UnaryKind::Tanh, -4.0, 4.0, [](double x) { return std::tanh(x); }},
      {UnaryKind::Sigmoid, -8.0, 8.0, refSigmoid},
      {UnaryKind::Erf, -3.0, 3.0, [](double x) { return std::erf(x); }},
      {UnaryKind::Silu, -8.0, 8.0, [](double x) { return x * refSigmoid(x); }},
      {UnaryKind::GeluExact, -5.0, 5.0,
       [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }},
      {UnaryKind::GeluTanh, -5.0, 5.0,
       [pi](double x) {
         return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
       }},
      {UnaryKind::Softplus, -30.0, 30.0, [](double x) { return std::log1p(std::exp(x)); }},
      {UnaryKind::Floor, -5.0, 5.0, [](double x) { return std::floor(x); }},
      {UnaryKind::Cos, -40.0, 40.0, [](double x) { return std::cos(x); }},
      {UnaryKind::Sin, -40.0, 40.0, [](double x) { return std::sin(x); }},
      {UnaryKind::Neg, -3.0, 3.0, [](double x) { return -x; }},
      {UnaryKind::Relu, -3.0, 3.0, [](double x) { return x > 0 ? x : 0.0; }},
  };
}

// Every float unary op against its formula, in f32 and f64, on a small and a
// large (multi-threaded) tensor.
TEST(CpuUnary, FloatKindsMatchReference) {
  std::mt19937 rng(1);
  for (const UnaryCase &c : floatUnaryCases()) {
    for (DType t : kFloatDTypes) {
      for (const Shape &shape : {Shape{3, 5}, Shape{70000}}) {
        SCOPED_TRACE(std::string(unaryKindName(c.kind)) + " " + base::dtypeName(t));
        HostTensor x = randomTensor(t, shape, rng, c.lo, c.hi);
        HostTensor out = poisoned(t, shape);
        ASSERT_OK(unary(c.kind, x, out));
        std::vector<double> want;
        for (double v : values(x))
          want.push_back(c.ref(v));
        expectClose(out, want, toleranceFor(t));
      }
    }
  }
}

// Sigmoid and silu stay finite and exact in the tails (no exp overflow).
TEST(CpuUnary, SigmoidIsStableForLargeInputs) {
  HostTensor x = tensor(DType::F32, {4}, {-800.0, -100.0, 100.0, 800.0});
  HostTensor out = poisoned(DType::F32, {4});
  ASSERT_OK(unary(UnaryKind::Sigmoid, x, out));
  expectClose(out, {0.0, std::exp(-100.0), 1.0, 1.0}, kF32);
  EXPECT_GT(out.data<float>()[1], 0.0f);
  ASSERT_OK(unary(UnaryKind::Silu, x, out));
  expectClose(out, {0.0, -100.0 * std::exp(-100.0), 100.0, 800.0}, kF32);
  HostTensor xd = tensor(DType::F64, {2}, {-800.0, 800.0});
  HostTensor outd = poisoned(DType::F64, {2});
  ASSERT_OK(unary(UnaryKind::Sigmoid, xd, outd));
  expectClose(outd, {0.0, 1.0}, kF64);
}

// Softplus neither overflows for large inputs nor loses the tiny values of very negative
// ones (log(1 + exp(x)) computed literally gives inf and 0 there); floor keeps NaN, infinities
// and -0.
TEST(CpuUnary, SoftplusTailsAndFloorSpecialValues) {
  for (DType t : kFloatDTypes) {
    HostTensor x = tensor(t, {5}, {-800.0, -50.0, 0.0, 50.0, 800.0});
    HostTensor out = poisoned(t, {5});
    ASSERT_OK(unary(UnaryKind::Softplus, x, out));
    expectClose(out, {0.0, std::exp(-50.0), std::log(2.0), 50.0, 800.0}, toleranceFor(t));
    EXPECT_GT(get(out, 1), 0.0);
  }
  HostTensor y = tensor(DType::F64, {6}, {NAN, INFINITY, -INFINITY, -0.0, -0.5, 2.5});
  HostTensor out = poisoned(DType::F64, {6});
  ASSERT_OK(unary(UnaryKind::Floor, y, out));
  expectEqual(out, {NAN, INFINITY, -INFINITY, -0.0, -1.0, 2.0});
  EXPECT_TRUE(std::signbit(out.data<double>()[3]));
}

// Relu keeps NaN (PyTorch); sqrt and log of negatives are NaN.
TEST(CpuUnary, SpecialValues) {
  HostTensor x = tensor(DType::F64, {3}, {NAN, -1.0, 0.0});
  HostTensor out = poisoned(DType::F64, {3});
  ASSERT_OK(unary(UnaryKind::Relu, x, out));
  expectEqual(out, {NAN, 0.0, 0.0});
  ASSERT_OK(unary(UnaryKind::Sqrt, x, out));
  expectEqual(out, {NAN, NAN, 0.0});
  ASSERT_OK(unary(UnaryKind::Log, x, out));
  expectEqual(out, {NAN, NAN, -INFINITY});
}

// Integer neg and relu, including the wrapping -INT_MIN.
TEST(CpuUnary, Integers) {
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  HostTensor x = HostTensor(DType::I64, {4});
  int64_t *p = x.data<int64_t>();
  p[0] = 5;
  p[1] = -7;
  p[2] = 0;
  p[3] = min64;
  HostTensor out = poisoned(DType::I64, {4});
  ASSERT_OK(unary(UnaryKind::Neg, x, out));
  EXPECT_EQ(out.data<int64_t>()[0], -5);
  EXPECT_EQ(out.data<int64_t>()[1], 7);
  EXPECT_EQ(out.data<int64_t>()[2], 0);
  EXPECT_EQ(out.data<int64_t>()[3], min64);
  ASSERT_OK(unary(UnaryKind::Relu, x, out));
  EXPECT_EQ(out.data<int64_t>()[0], 5);
  EXPECT_EQ(out.data<int64_t>()[1], 0);
  EXPECT_EQ(out.data<int64_t>()[3], 0);

  HostTensor x32 = tensor(DType::I32, {3}, {3, -4, std::numeric_limits<int32_t>::min()});
  HostTensor out32 = poisoned(DType::I32, {3});
  ASSERT_OK(unary(UnaryKind::Neg, x32, out32));
  expectEqual(out32, {-3, 4, std::numeric_limits<int32_t>::min()});
}

// logical_not maps 0 to 1 and any non-zero byte to 0.
TEST(CpuUnary, LogicalNot) {
  HostTensor x(DType::I1, {4});
  uint8_t *p = x.data<uint8_t>();
  p[0] = 0;
  p[1] = 1;
  p[2] = 0;
  p[3] = 7;
  HostTensor out = poisoned(DType::I1, {4});
  ASSERT_OK(unary(UnaryKind::LogicalNot, x, out));
  expectEqual(out, {1, 0, 1, 0});
}

// Wrong dtypes and out types are InvalidArgument errors naming them.
TEST(CpuUnary, Errors) {
  HostTensor x(DType::F32, {2, 3});
  HostTensor wrongShape(DType::F32, {3, 2});
  EXPECT_ERROR(unary(UnaryKind::Exp, x, wrongShape), StatusCode::InvalidArgument,
               "exp: out is f32[3, 2], expected f32[2, 3]");
  HostTensor wrongType(DType::F64, {2, 3});
  EXPECT_ERROR(unary(UnaryKind::Exp, x, wrongType), StatusCode::InvalidArgument,
               "exp: out is f64[2, 3], expected f32[2, 3]");
  HostTensor ints(DType::I64, {2});
  HostTensor intsOut(DType::I64, {2});
  EXPECT_ERROR(unary(UnaryKind::Tanh, ints, intsOut), StatusCode::InvalidArgument,
               "tanh: x has dtype i64, expected f32 or f64");
  HostTensor half(DType::F16, {2});
  HostTensor halfOut(DType::F16, {2});
  EXPECT_ERROR(unary(UnaryKind::Sqrt, half, halfOut), StatusCode::InvalidArgument,
               "sqrt: x has dtype f16, expected f32 or f64 (CPU kernels take f16/bf16 upcast");
  EXPECT_ERROR(unary(UnaryKind::LogicalNot, x, x), StatusCode::InvalidArgument,
               "logical_not: x has dtype f32, expected i1");
  HostTensor bools(DType::I1, {2});
  EXPECT_ERROR(unary(UnaryKind::Neg, bools, bools), StatusCode::InvalidArgument,
               "neg: x has dtype i1, expected f32, f64, i64 or i32");
}

//===--- binary -------------------------------------------------------------===//

double refArith(BinaryKind k, double a, double b) {
  switch (k) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Pow:
    return std::pow(a, b);
  default:
    return NAN;
  }
}

/// A binary op evaluated elementwise with numpy broadcasting, naively.
std::vector<double> refBinary(const std::function<double(double, double)> &f, const HostTensor &a,
                              const HostTensor &b, const Shape &outShape) {
  std::vector<double> out;
  for (int64_t i = 0; i < numElements(outShape); ++i) {
    const Shape idx = unravel(i, outShape);
    out.push_back(
        f(get(a, broadcastSource(idx, a.shape())), get(b, broadcastSource(idx, b.shape()))));
  }
  return out;
}

struct BroadcastCase {
  Shape a, b, out;
};
const BroadcastCase kBroadcastCases[] = {
    {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
    {{2, 3, 4}, {4}, {2, 3, 4}},
    {{2, 3, 4}, {3, 1}, {2, 3, 4}},
    {{3, 1}, {1, 4}, {3, 4}},
    {{}, {5}, {5}},
    {{2, 1, 4}, {3, 1}, {2, 3, 4}},
    {{1}, {2, 3}, {2, 3}},
    {{}, {}, {}},
    {{4, 1, 1}, {1, 1, 1, 6}, {1, 4, 1, 6}},
    {{300, 1}, {1, 200}, {300, 200}},
};

// Float arithmetic with numpy broadcasting against the float64 reference.
TEST(CpuBinary, FloatArithmeticBroadcasts) {
  std::mt19937 rng(2);
  for (BinaryKind k :
       {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div, BinaryKind::Pow}) {
    for (DType t : kFloatDTypes) {
      for (const BroadcastCase &c : kBroadcastCases) {
        SCOPED_TRACE(std::string(binaryKindName(k)) + " " + base::dtypeName(t) + " " +
                     base::formatShape(c.a) + " with " + base::formatShape(c.b));
        const bool positive = k == BinaryKind::Pow || k == BinaryKind::Div;
        HostTensor a = randomTensor(t, c.a, rng, positive ? 0.2 : -2.0, 2.0);
        HostTensor b = randomTensor(t, c.b, rng, positive ? 0.5 : -2.0, 2.0);
        HostTensor out = poisoned(t, c.out);
        ASSERT_OK(binary(k, a, b, out));
        expectClose(out,
                    refBinary([k](double x, double y) { return refArith(k, x, y); }, a, b, c.out),
                    toleranceFor(t));
      }
    }
  }
}

// Hand-computed broadcast: a column plus a row.
TEST(CpuBinary, ColumnPlusRow) {
  HostTensor a = tensor(DType::F32, {3, 1}, {10, 20, 30});
  HostTensor b = tensor(DType::F32, {1, 4}, {1, 2, 3, 4});
  HostTensor out = poisoned(DType::F32, {3, 4});
  ASSERT_OK(binary(BinaryKind::Add, a, b, out));
  expectEqual(out, {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34});
  // A 0-D operand broadcasts to anything; an empty dimension stays empty.
  HostTensor s = tensor(DType::F32, {}, {2});
  HostTensor out2 = poisoned(DType::F32, {3, 1});
  ASSERT_OK(binary(BinaryKind::Mul, a, s, out2));
  expectEqual(out2, {20, 40, 60});
  HostTensor e(DType::F32, {0, 4});
  HostTensor outE(DType::F32, {0, 4});
  ASSERT_OK(binary(BinaryKind::Sub, e, b, outE));
}

// Integer arithmetic: wrapping add/mul, division truncating toward zero.
TEST(CpuBinary, IntegerArithmetic) {
  std::mt19937 rng(3);
  for (DType t : {DType::I64, DType::I32}) {
    for (BinaryKind k : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul}) {
      HostTensor a = randomTensor(t, {4, 5}, rng, -1000, 1000);
      HostTensor b = randomTensor(t, {5}, rng, -1000, 1000);
      HostTensor out = poisoned(t, {4, 5});
      ASSERT_OK(binary(k, a, b, out));
      expectEqual(out,
                  refBinary([k](double x, double y) { return refArith(k, x, y); }, a, b, {4, 5}));
    }
    HostTensor a = tensor(t, {6}, {-7, 7, -7, 7, 0, 9});
    HostTensor b = tensor(t, {6}, {2, -2, -2, 2, 5, 3});
    HostTensor out = poisoned(t, {6});
    ASSERT_OK(binary(BinaryKind::Div, a, b, out));
    expectEqual(out, {-3, -3, 3, 3, 0, 3});
  }
  // INT64_MIN / -1 and INT64_MAX + 1 wrap instead of trapping.
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  HostTensor a(DType::I64, {2});
  a.data<int64_t>()[0] = min64;
  a.data<int64_t>()[1] = std::numeric_limits<int64_t>::max();
  HostTensor b(DType::I64, {2});
  b.data<int64_t>()[0] = -1;
  b.data<int64_t>()[1] = 1;
  HostTensor out = poisoned(DType::I64, {2});
  ASSERT_OK(binary(BinaryKind::Div, a, b, out));
  EXPECT_EQ(out.data<int64_t>()[0], min64);
  ASSERT_OK(binary(BinaryKind::Add, a, b, out));
  EXPECT_EQ(out.data<int64_t>()[1], min64);
}

// Integer pow is exact; negative exponents follow PyTorch.
TEST(CpuBinary, IntegerPow) {
  for (DType t : {DType::I64, DType::I32}) {
    HostTensor a = tensor(t, {8}, {2, -3, 2, 1, -1, -1, 0, 7});
    HostTensor b = tensor(t, {8}, {10, 3, -1, -5, -3, -2, 0, 0});
    HostTensor out = poisoned(t, {8});
    ASSERT_OK(binary(BinaryKind::Pow, a, b, out));
    expectEqual(out, {1024, -27, 0, 1, -1, 1, 1, 1});
  }
  HostTensor a = tensor(DType::I64, {1}, {3});
  HostTensor b = tensor(DType::I64, {1}, {39});
  HostTensor out = poisoned(DType::I64, {1});
  ASSERT_OK(binary(BinaryKind::Pow, a, b, out));
  EXPECT_EQ(out.data<int64_t>()[0], 4052555153018976267); // 3^39 < 2^63, not representable in f64
}

// mod: the sign of the divisor (Python's %, torch.remainder) and with fmod the sign of the
// dividend (C's fmod, torch.fmod), for integers (exact; x mod -1 is 0, also for INT_MIN) and
// floats (numpy's mod and fmod).
TEST(CpuBinary, ModAndFmod) {
  for (DType t : {DType::I64, DType::I32}) {
    HostTensor a = tensor(t, {7}, {7, -7, 7, -7, 6, 0, 5});
    HostTensor b = tensor(t, {7}, {3, 3, -3, -3, 3, 4, -1});
    HostTensor out = poisoned(t, {7});
    ASSERT_OK(binary(BinaryKind::Mod, a, b, out));
    expectEqual(out, {1, 2, -2, -1, 0, 0, 0});
    ASSERT_OK(binary(BinaryKind::Fmod, a, b, out));
    expectEqual(out, {1, -1, 1, -1, 0, 0, 0});
  }
  HostTensor m(DType::I64, {1}), neg1 = tensor(DType::I64, {1}, {-1});
  HostTensor mo = poisoned(DType::I64, {1});
  m.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  ASSERT_OK(binary(BinaryKind::Mod, m, neg1, mo));
  EXPECT_EQ(mo.data<int64_t>()[0], 0);
  std::mt19937 rng(9);
  for (DType t : kFloatDTypes)
    for (const BroadcastCase &c : kBroadcastCases) {
      SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + base::formatShape(c.a) + " with " +
                   base::formatShape(c.b));
      HostTensor a = randomTensor(t, c.a, rng, -10.0, 10.0);
      HostTensor b = randomTensor(t, c.b, rng, 0.5, 3.0);
      for (int64_t i = 0; i < b.numElements(); i += 2) // divisors of both signs
        set(b, i, -get(b, i));
      HostTensor out = poisoned(t, c.out);
      ASSERT_OK(binary(BinaryKind::Mod, a, b, out));
      auto floored = [](double x, double y) {
        double r = std::fmod(x, y);
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
      };
      expectClose(out, refBinary(floored, a, b, c.out), toleranceFor(t));
      ASSERT_OK(binary(BinaryKind::Fmod, a, b, out));
      expectClose(out, refBinary([](double x, double y) { return std::fmod(x, y); }, a, b, c.out),
                  toleranceFor(t));
    }
  HostTensor fa = tensor(DType::F32, {4}, {5.5, -5.5, 1, 1});
  HostTensor fb = tensor(DType::F32, {4}, {2, 2, 0, INFINITY});
  HostTensor fo = poisoned(DType::F32, {4});
  ASSERT_OK(binary(BinaryKind::Mod, fa, fb, fo));
  expectEqual(fo, {1.5, 0.5, NAN, 1});
}

// Integer division by zero is an error naming the element.
TEST(CpuBinary, IntegerDivisionByZero) {
  HostTensor a = tensor(DType::I32, {2, 2}, {1, 2, 3, 4});
  HostTensor b = tensor(DType::I32, {2, 2}, {1, 1, 0, 1});
  HostTensor out(DType::I32, {2, 2});
  EXPECT_ERROR(binary(BinaryKind::Div, a, b, out), StatusCode::InvalidArgument,
               "div: integer division by zero: rhs element [1, 0] of i32[2, 2] is 0");
  EXPECT_ERROR(binary(BinaryKind::Mod, a, b, out), StatusCode::InvalidArgument,
               "mod: integer division by zero: rhs element [1, 0] of i32[2, 2] is 0");
  EXPECT_ERROR(binary(BinaryKind::Fmod, a, b, out), StatusCode::InvalidArgument,
               "mod: integer division by zero: rhs element [1, 0] of i32[2, 2] is 0");
  // Float division by zero is IEEE.
  HostTensor fa = tensor(DType::F32, {3}, {1, -1, 0});
  HostTensor fb = tensor(DType::F32, {3}, {0, 0, 0});
  HostTensor fo = poisoned(DType::F32, {3});
  ASSERT_OK(binary(BinaryKind::Div, fa, fb, fo));
  expectEqual(fo, {INFINITY, -INFINITY, NAN});
}

// Comparisons write i1 for every input dtype; NaN compares false.
TEST(CpuBinary, Comparisons) {
  std::mt19937 rng(4);
  const std::pair<BinaryKind, std::function<double(double, double)>> cmps[] = {
      {BinaryKind::Eq, [](double x, double y) { return double(x == y); }},
      {BinaryKind::Lt, [](double x, double y) { return double(x < y); }},
      {BinaryKind::Le, [](double x, double y) { return double(x <= y); }},
      {BinaryKind::Gt, [](double x, double y) { return double(x > y); }},
      {BinaryKind::Ge, [](double x, double y) { return double(x >= y); }},
  };
  for (const auto &[k, f] : cmps) {
    for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1}) {
      SCOPED_TRACE(std::string(binaryKindName(k)) + " " + base::dtypeName(t));
      HostTensor a = randomTensor(t, {4, 3}, rng, -2, 2);
      HostTensor b = randomTensor(t, {3}, rng, -2, 2);
      set(b, 1, get(a, 1)); // at least one tie
      HostTensor out = poisoned(DType::I1, {4, 3});
      ASSERT_OK(binary(k, a, b, out));
      expectEqual(out, refBinary(f, a, b, {4, 3}));
    }
  }
  HostTensor a = tensor(DType::F32, {3}, {NAN, 1, NAN});
  HostTensor b = tensor(DType::F32, {3}, {NAN, NAN, 1});
  HostTensor out = poisoned(DType::I1, {3});
  for (BinaryKind k : {BinaryKind::Eq, BinaryKind::Lt, BinaryKind::Ge}) {
    ASSERT_OK(binary(k, a, b, out));
    expectEqual(out, {0, 0, 0});
  }
}

// logical_and / logical_or on i1 with broadcasting.
TEST(CpuBinary, Logical) {
  HostTensor a = tensor(DType::I1, {2, 1}, {0, 1});
  HostTensor b = tensor(DType::I1, {2}, {0, 1});
  HostTensor out = poisoned(DType::I1, {2, 2});
  ASSERT_OK(binary(BinaryKind::And, a, b, out));
  expectEqual(out, {0, 0, 0, 1});
  ASSERT_OK(binary(BinaryKind::Or, a, b, out));
  expectEqual(out, {0, 1, 1, 1});
}

// Bad shapes and dtypes are InvalidArgument errors naming the op and values.
TEST(CpuBinary, Errors) {
  HostTensor a(DType::F32, {2, 3});
  HostTensor b(DType::F32, {4});
  HostTensor out(DType::F32, {2, 3});
  EXPECT_ERROR(binary(BinaryKind::Add, a, b, out), StatusCode::InvalidArgument,
               "add: shapes [2, 3] and [4] are not broadcast-compatible");
  HostTensor c(DType::F32, {3});
  HostTensor wrong(DType::F32, {2, 4});
  EXPECT_ERROR(binary(BinaryKind::Sub, a, c, wrong), StatusCode::InvalidArgument,
               "sub: out is f32[2, 4], expected f32[2, 3]");
  HostTensor i(DType::I64, {3});
  EXPECT_ERROR(binary(BinaryKind::Mul, a, i, out), StatusCode::InvalidArgument,
               "mul: rhs has dtype i64, expected f32 (the dtype of lhs)");
  HostTensor cmpOut(DType::F32, {2, 3});
  EXPECT_ERROR(binary(BinaryKind::Lt, a, c, cmpOut), StatusCode::InvalidArgument,
               "compare lt: out is f32[2, 3], expected i1[2, 3]");
  EXPECT_ERROR(binary(BinaryKind::And, a, c, out), StatusCode::InvalidArgument,
               "logical_and: lhs has dtype f32, expected i1");
  HostTensor bools(DType::I1, {3});
  EXPECT_ERROR(binary(BinaryKind::Add, bools, bools, bools), StatusCode::InvalidArgument,
               "add: lhs has dtype i1, expected f32, f64, i64 or i32");
  HostTensor bf(DType::BF16, {3});
  EXPECT_ERROR(binary(BinaryKind::Add, bf, bf, bf), StatusCode::InvalidArgument,
               "add: lhs has dtype bf16");
}

//===--- where --------------------------------------------------------------===//

// where with a three-way broadcast, for every value dtype.
TEST(CpuWhere, ThreeWayBroadcast) {
  std::mt19937 rng(5);
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1}) {
    SCOPED_TRACE(base::dtypeName(t));
    const Shape cs{4, 1}, ts{1, 3}, fs{}, os{4, 3};
    HostTensor cond = randomTensor(DType::I1, cs, rng);
    HostTensor onTrue = randomTensor(t, ts, rng, -5, 5);
    HostTensor onFalse = randomTensor(t, fs, rng, -5, 5);
    HostTensor out = poisoned(t, os);
    ASSERT_OK(where(cond, onTrue, onFalse, out));
    std::vector<double> want;
    for (int64_t i = 0; i < numElements(os); ++i) {
      const Shape idx = unravel(i, os);
      want.push_back(get(cond, broadcastSource(idx, cs)) != 0
                         ? get(onTrue, broadcastSource(idx, ts))
                         : get(onFalse, 0));
    }
    expectEqual(out, want);
  }
  // Large: a causal mask over attention scores (multi-threaded path).
  HostTensor mask(DType::I1, {64, 64});
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j)
      mask.data<uint8_t>()[i * 64 + j] = j <= i;
  HostTensor scores = randomTensor(DType::F32, {2, 8, 64, 64}, rng);
  HostTensor negInf = tensor(DType::F32, {}, {-INFINITY});
  HostTensor out = poisoned(DType::F32, {2, 8, 64, 64});
  ASSERT_OK(where(mask, scores, negInf, out));
  std::vector<double> want = values(scores);
  for (int64_t i = 0; i < out.numElements(); ++i)
    if ((i % 64) > (i / 64) % 64)
      want[i] = -INFINITY;
  expectEqual(out, want);
}

// where's errors: a non-i1 condition, mismatched branches, a wrong out.
TEST(CpuWhere, Errors) {
  HostTensor c(DType::I1, {3});
  HostTensor f(DType::F32, {3});
  HostTensor d(DType::F64, {3});
  HostTensor out(DType::F32, {3});
  EXPECT_ERROR(where(f, f, f, out), StatusCode::InvalidArgument,
               "where: condition has dtype f32, expected i1");
  EXPECT_ERROR(where(c, f, d, out), StatusCode::InvalidArgument,
               "where: on_false has dtype f64, expected f32 (the dtype of on_true)");
  HostTensor big(DType::F32, {2, 3});
  EXPECT_ERROR(where(c, f, f, big), StatusCode::InvalidArgument,
               "where: out is f32[2, 3], expected f32[3]");
  HostTensor four(DType::F32, {4});
  EXPECT_ERROR(where(c, f, four, out), StatusCode::InvalidArgument,
               "where: shapes [3] and [3] and [4] are not broadcast-compatible");
}

} // namespace
} // namespace rp::kernels::cpu::test
