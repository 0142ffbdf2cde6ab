//===- Elementwise.cpp - Elementwise graph ops on the CPU -----------------===//

#include "kernels/cpu/Elementwise.h"

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cpu/VectorMath.h"

#include <cmath>
#include <type_traits>

namespace rp::kernels::cpu {

using namespace detail;
using base::invalidArgument;
using base::okStatus;

namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
inline constexpr std::initializer_list<DType> kBoolTypes = {DType::I1};

//===--- scalar functions ---------------------------------------------------===//

double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x); // x < 0: no overflow
  return e / (1.0 + e);
}

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

template <typename T>
T wrapNeg(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x));
  else
    return -x;
}

/// The remainder of a / b with the sign of b (`floored`: Mod) or of a (Fmod); b != 0 for
/// integers (checked by the caller).
template <typename T>
T remainder(T a, T b, bool floored) {
  T r;
  if constexpr (std::is_integral_v<T>)
    r = b == T(-1) ? T(0) : static_cast<T>(a % b); // INT_MIN % -1 would trap
  else
    r = std::fmod(a, b);
  if (floored && r != T(0) && ((r < T(0)) != (b < T(0))))
    r = static_cast<T>(r + b);
  return r;
}

template <typename T>
T intPow(T base, T exp) {
  if (exp < 0) { // PyTorch: the truncated real result
    if (base == 1)
      return 1;
    if (base == -1)
      return exp % 2 == 0 ? 1 : -1;
    return 0;
  }
  Unsigned<T> result = 1, b = static_cast<Unsigned<T>>(base);
  for (Unsigned<T> e = static_cast<Unsigned<T>>(exp); e != 0; e >>= 1) {
    if (e & 1)
      result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

/// The arithmetic of BinaryKind::Add..Pow on T. Integers compute in their unsigned type
/// (wrapping). Floats compute + - * / in T itself: for f32 that is bit for bit what computing
/// in double and rounding once gives (double rounding is innocuous for these four operations,
/// as binary64 has more than 2 x 24 + 2 significand bits), and it vectorises. pow computes in
/// double.
template <typename T>
struct Arith {
  using C = Compute<T>;
  using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, Tag<T>>::type;
  static T add(T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
  static T sub(T a, T b) { return static_cast<T>(static_cast<U>(a) - static_cast<U>(b)); }
  static T mul(T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); }
  static T div(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return b == -1 ? wrapNeg(a) : static_cast<T>(a / b); // b != 0 was checked
    else
      return a / b;
  }
  static T pow(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return intPow(a, b);
    else
      return static_cast<T>(std::pow(static_cast<C>(a), static_cast<C>(b)));
  }
};

//===--- loops --------------------------------------------------------------===//

template <typename T, typename R, typename F>
void mapUnary(const HostTensor &x, HostTensor &out, F f) {
  const T *in = x.data<T>();
  R *o = out.data<R>();
  const int64_t n = x.numElements();
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i)
    o[i] = static_cast<R>(f(in[i]));
}

template <typename T>
void floatUnary(UnaryKind kind, const HostTensor &x, HostTensor &out) {
  auto run = [&](auto f) { mapUnary<T, T>(x, out, [f](T v) { return f(double(v)); }); };
  if constexpr (std::is_same_v<T, float>) { // f32 arithmetic with expF32: these vectorise
    void (*array)(const float *, float *, int64_t) = nullptr;
    switch (kind) {
    case UnaryKind::Exp:
      array = expF32Array;
      break;
    case UnaryKind::Sigmoid:
      array = sigmoidF32Array;
      break;
    case UnaryKind::Silu:
      array = siluF32Array;
      break;
    default:
      break;
    }
    if (array) { // VectorMath.h: AVX-512 / AVX2 clones, the same bits
      const float *in = x.data<float>();
      float *o = out.data<float>();
      const int64_t n = x.numElements();
      return forChunks(n, n >= kParallelMinElements,
                       [&](int64_t b, int64_t c) { array(in + b, o + b, c); });
    }
  }
  switch (kind) {
  case UnaryKind::Sqrt:
    return run([](double v) { return std::sqrt(v); });
  case UnaryKind::Reciprocal:
    return run([](double v) { return 1.0 / v; });
  case UnaryKind::Exp:
    return run([](double v) { return std::exp(v); });
  case UnaryKind::Log:
    return run([](double v) { return std::log(v); });
  case UnaryKind::Tanh:
    return run([](double v) { return std::tanh(v); });
  case UnaryKind::Sigmoid:
    return run([](double v) { return sigmoid(v); });
  case UnaryKind::Erf:
    return run([](double v) { return std::erf(v); });
  case UnaryKind::Silu:
    return run([](double v) { return v * sigmoid(v); });
  case UnaryKind::Softplus:
    return run([](double v) {
      return (v > 0.0 ? v : 0.0) + std::log1p(std::exp(-std::fabs(v)));
    });
  case UnaryKind::Floor:
    return run([](double v) { return std::floor(v); });
  case UnaryKind::Cos:
    return run([](double v) { return std::cos(v); });
  case UnaryKind::Sin:
    return run([](double v) { return std::sin(v); });
  case UnaryKind::GeluExact:
    return run([](double v) { return 0.5 * v * (1.0 + std::erf(v * kSqrtHalf)); });
  case UnaryKind::GeluTanh:
    return run([](double v) {
      return 0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v)));
    });
  default:
    return;
  }
}

/// out[i] = op(a[...], b[...]) over out's shape with broadcast reads. The innermost chunk is a
/// plain loop when each operand is read contiguously or broadcast (stride 1 or 0), so that the
/// compiler vectorises it; other strides take the general loop.
template <typename T, typename R, typename Op>
void broadcastBinary(const HostTensor &a, const HostTensor &b, HostTensor &out, Op op) {
  const T *pa = a.data<T>();
  const T *pb = b.data<T>();
  R *po = out.data<R>();
  const LoopNest<2> nest = makeLoopNest<2>(out.shape(), {broadcastStrides(a.shape(), out.shape()),
                                                         broadcastStrides(b.shape(), out.shape())});
  forEachChunk(nest, [&](int64_t o, const std::array<int64_t, 2> &off, int64_t count,
                         const std::array<int64_t, 2> &st) {
    const T *x = pa + off[0];
    const T *y = pb + off[1];
    R *z = po + o;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t j = 0; j < count; ++j)
        z[j] = op(x[j], y[j]);
    } else if (st[0] == 1 && st[1] == 0) {
      const T v = y[0];
      for (int64_t j = 0; j < count; ++j)
        z[j] = op(x[j], v);
    } else if (st[0] == 0 && st[1] == 1) {
      const T v = x[0];
      for (int64_t j = 0; j < count; ++j)
        z[j] = op(v, y[j]);
    } else {
      for (int64_t j = 0; j < count; ++j)
        z[j] = op(x[j * st[0]], y[j * st[1]]);
    }
  });
}

template <typename T>
void arithmetic(BinaryKind kind, const HostTensor &a, const HostTensor &b, HostTensor &out) {
  using A = Arith<T>;
  // Lambdas, not function pointers: the loops inline the operation.
  switch (kind) {
  case BinaryKind::Add:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return A::add(x, y); });
  case BinaryKind::Sub:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return A::sub(x, y); });
  case BinaryKind::Mul:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return A::mul(x, y); });
  case BinaryKind::Div:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return A::div(x, y); });
  case BinaryKind::Pow:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return A::pow(x, y); });
  case BinaryKind::Mod:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return remainder(x, y, true); });
  case BinaryKind::Fmod:
    return broadcastBinary<T, T>(a, b, out, [](T x, T y) { return remainder(x, y, false); });
  default:
    return;
  }
}

/// Comparisons read i1 as booleans (any non-zero byte is true).
template <typename T>
auto loadCmp(T v) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return v != 0;
  else
    return v;
}

template <typename T>
void compare(BinaryKind kind, const HostTensor &a, const HostTensor &b, HostTensor &out) {
  auto run = [&](auto cmp) {
    broadcastBinary<T, uint8_t>(a, b, out, [cmp](T x, T y) {
      return static_cast<uint8_t>(cmp(loadCmp(x), loadCmp(y)) ? 1 : 0);
    });
  };
  switch (kind) {
  case BinaryKind::Eq:
    return run([](auto x, auto y) { return x == y; });
  case BinaryKind::Lt:
    return run([](auto x, auto y) { return x < y; });
  case BinaryKind::Le:
    return run([](auto x, auto y) { return x <= y; });
  case BinaryKind::Gt:
    return run([](auto x, auto y) { return x > y; });
  case BinaryKind::Ge:
    return run([](auto x, auto y) { return x >= y; });
  default:
    return;
  }
}

/// InvalidArgument naming the first zero of an integer divisor of `op` (div, mod).
template <typename T>
Status checkNoZeroDivisor(const char *op, const HostTensor &b) {
  const T *p = b.data<T>();
  for (int64_t i = 0; i < b.numElements(); ++i)
    if (p[i] == 0)
      return invalidArgument(std::string(op) + ": integer division by zero: rhs element " +
                             formatIndex(i, b.shape()) + " of " + b.typeString() + " is 0");
  return okStatus();
}

} // namespace

Status unary(UnaryKind kind, const HostTensor &x, HostTensor &out) {
  const char *op = unaryKindName(kind);
  const bool numeric = kind == UnaryKind::Neg || kind == UnaryKind::Relu;
  const bool logical = kind == UnaryKind::LogicalNot;
  RP_RETURN_IF_ERROR(checkDType(op, "x", x,
                                numeric   ? kNumericTypes
                                : logical ? kBoolTypes
                                          : kFloatTypes));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), x.shape()));
  if (logical) {
    mapUnary<uint8_t, uint8_t>(x, out, [](uint8_t v) { return v != 0 ? 0 : 1; });
  } else if (kind == UnaryKind::Neg) {
    visitNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      mapUnary<T, T>(x, out, [](T v) { return wrapNeg(v); });
    });
  } else if (kind == UnaryKind::Relu) {
    visitNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      mapUnary<T, T>(x, out, [](T v) { return v < T(0) ? T(0) : v; });
    });
  } else {
    visitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      floatUnary<T>(kind, x, out);
    });
  }
  return okStatus();
}

Status binary(BinaryKind kind, const HostTensor &a, const HostTensor &b, HostTensor &out) {
  const char *op = binaryKindName(kind);
  const bool logical = kind == BinaryKind::And || kind == BinaryKind::Or;
  const bool comparison = isComparison(kind);
  RP_RETURN_IF_ERROR(checkDType(op, "lhs", a,
                                logical      ? kBoolTypes
                                : comparison ? kAllTypes
                                             : kNumericTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "lhs", a, "rhs", b));
  RP_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(op, {&a.shape(), &b.shape()}));
  RP_RETURN_IF_ERROR(
      checkType(op, "out", out, logical || comparison ? DType::I1 : a.dtype(), shape));
  if (out.numElements() == 0)
    return okStatus();
  if (logical) {
    if (kind == BinaryKind::And)
      broadcastBinary<uint8_t, uint8_t>(
          a, b, out, [](uint8_t x, uint8_t y) { return static_cast<uint8_t>(x != 0 && y != 0); });
    else
      broadcastBinary<uint8_t, uint8_t>(
          a, b, out, [](uint8_t x, uint8_t y) { return static_cast<uint8_t>(x != 0 || y != 0); });
    return okStatus();
  }
  if (comparison) {
    visitAll(a.dtype(), [&](auto tag) { compare<typename decltype(tag)::type>(kind, a, b, out); });
    return okStatus();
  }
  if (kind == BinaryKind::Div || kind == BinaryKind::Mod || kind == BinaryKind::Fmod) {
    const char *name = kind == BinaryKind::Div ? "div" : "mod";
    if (a.dtype() == DType::I64)
      RP_RETURN_IF_ERROR(checkNoZeroDivisor<int64_t>(name, b));
    if (a.dtype() == DType::I32)
      RP_RETURN_IF_ERROR(checkNoZeroDivisor<int32_t>(name, b));
  }
  visitNumeric(a.dtype(),
               [&](auto tag) { arithmetic<typename decltype(tag)::type>(kind, a, b, out); });
  return okStatus();
}

Status where(const HostTensor &cond, const HostTensor &onTrue, const HostTensor &onFalse,
             HostTensor &out) {
  const char *op = "where";
  RP_RETURN_IF_ERROR(checkDType(op, "condition", cond, kBoolTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "on_true", onTrue, kAllTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "on_true", onTrue, "on_false", onFalse));
  RP_ASSIGN_OR_RETURN(Shape shape,
                      broadcastShapes(op, {&cond.shape(), &onTrue.shape(), &onFalse.shape()}));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, onTrue.dtype(), shape));
  if (out.numElements() == 0)
    return okStatus();
  visitAll(onTrue.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const uint8_t *pc = cond.data<uint8_t>();
    const T *pt = onTrue.data<T>();
    const T *pf = onFalse.data<T>();
    T *po = out.data<T>();
    const LoopNest<3> nest = makeLoopNest<3>(shape, {broadcastStrides(cond.shape(), shape),
                                                     broadcastStrides(onTrue.shape(), shape),
                                                     broadcastStrides(onFalse.shape(), shape)});
    forEachChunk(nest, [&](int64_t o, const std::array<int64_t, 3> &off, int64_t count,
                           const std::array<int64_t, 3> &st) {
      for (int64_t j = 0; j < count; ++j)
        po[o + j] = pc[off[0] + j * st[0]] != 0 ? pt[off[1] + j * st[1]] : pf[off[2] + j * st[2]];
    });
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
