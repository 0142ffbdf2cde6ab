//===- ElementwiseOps.h - Per-element bodies of the elementwise kernels -*- C++ -*-===//
//
// RP_HD functions computing one point of an elementwise op (kernels/cuda/Elementwise.h): the
// GPU kernels' grid-stride loops call them, and the host tests run them on the CPU against
// the reference kernels. Formulas follow kernels/cpu/Elementwise.cpp (scalar functions) and
// kernels/cpu/Cast.cpp (conversions) exactly.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ELEMENTWISEOPS_H
#define RP_KERNELS_CUDA_ELEMENTWISEOPS_H

#include "kernels/cuda/Elementwise.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__CUDA_ARCH__)
#define RP_MATH(fn) ::fn
#else
#define RP_MATH(fn) std::fn
#endif

namespace rp::kernels::cuda::ops {

inline constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)

template <typename C> RP_HD inline C sigmoid(C x) {
  if (x >= C(0))
    return C(1) / (C(1) + RP_MATH(exp)(-x));
  const C e = RP_MATH(exp)(x); // x < 0: no overflow
  return e / (C(1) + e);
}

/// Two's-complement negation (-INT_MIN = INT_MIN).
template <typename T> RP_HD inline T wrapNeg(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(x));
  else
    return -x;
}

/// PyTorch's integer pow (exact, wrapping; negative exponents truncate).
RP_HD inline int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1)
      return 1;
    if (base == -1)
      return exp % 2 == 0 ? 1 : -1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exp); e != 0; e >>= 1) {
    if (e & 1)
      result *= b;
    b *= b;
  }
  return static_cast<int64_t>(result);
}

/// The remainder of x / y with the sign of y (`floored`: graph.mod) or of x (`fmod`), as
/// kernels/cpu/Elementwise.cpp computes it; integers: y != 0 and y != -1 (the caller's cases).
template <typename C> RP_HD inline C remainderOf(C x, C y, bool floored) {
  C r;
  if constexpr (std::is_integral_v<C>)
    r = x % y;
  else
    r = RP_MATH(fmod)(x, y);
  if (floored && r != C(0) && ((r < C(0)) != (y < C(0))))
    r += y;
  return r;
}

/// op(x) for a float compute type C (float or double).
template <typename C> RP_HD inline C unaryFloat(UnaryOp op, C v) {
  switch (op) {
  case UnaryOp::Sqrt:
    return RP_MATH(sqrt)(v);
  case UnaryOp::Reciprocal:
    return C(1) / v;
  case UnaryOp::Exp:
    return RP_MATH(exp)(v);
  case UnaryOp::Log:
    return RP_MATH(log)(v);
  case UnaryOp::Tanh:
    return RP_MATH(tanh)(v);
  case UnaryOp::Sigmoid:
    return sigmoid(v);
  case UnaryOp::Erf:
    return RP_MATH(erf)(v);
  case UnaryOp::Silu:
    return v * sigmoid(v);
  case UnaryOp::Softplus:
    return (v > C(0) ? v : C(0)) + RP_MATH(log1p)(RP_MATH(exp)(-RP_MATH(fabs)(v)));
  case UnaryOp::Floor:
    return RP_MATH(floor)(v);
  case UnaryOp::Cos:
    return RP_MATH(cos)(v);
  case UnaryOp::Sin:
    return RP_MATH(sin)(v);
  case UnaryOp::Neg:
    return -v;
  case UnaryOp::Relu:
    return v < C(0) ? C(0) : v; // NaN stays NaN
  case UnaryOp::GeluExact:
    return C(0.5) * v * (C(1) + RP_MATH(erf)(v * C(kSqrtHalf)));
  case UnaryOp::GeluTanh:
    return C(0.5) * v * (C(1) + RP_MATH(tanh)(C(kSqrt2OverPi) * (v + C(0.044715) * v * v * v)));
  case UnaryOp::LogicalNot:
    break;
  }
  return v;
}

/// Point i of a unary op on dtype D.
template <base::DType D>
RP_HD inline void unaryAt(const UnaryPlan &p, const void *x, void *out, int64_t i) {
  int64_t off[2];
  p.iter.offsets(i, off);
  using C = typename DTypeTraits<D>::Compute;
  const C v = loadAs<D>(x, off[0]);
  if constexpr (D == base::DType::I1) {
    storeAs<D>(out, off[1], !v);
  } else if constexpr (std::is_integral_v<C>) {
    using S = typename DTypeTraits<D>::Storage;
    const S s = static_cast<S>(v);
    storeAs<D>(out, off[1], p.op == UnaryOp::Neg ? wrapNeg(s) : (s < S(0) ? S(0) : s));
  } else {
    storeAs<D>(out, off[1], unaryFloat<C>(p.op, v));
  }
}

/// Point i of a binary op on operands of dtype D (the result dtype: i1 for comparisons and
/// logic, D otherwise).
template <base::DType D>
RP_HD inline void binaryAt(const BinaryPlan &p, const void *a, const void *b, void *out,
                           int64_t i) {
  int64_t off[3];
  p.iter.offsets(i, off);
  using C = typename DTypeTraits<D>::Compute;
  const C x = loadAs<D>(a, off[0]), y = loadAs<D>(b, off[1]);
  switch (p.op) {
  case BinaryOp::Eq:
    storeAs<base::DType::I1>(out, off[2], x == y);
    return;
  case BinaryOp::Lt:
    storeAs<base::DType::I1>(out, off[2], x < y);
    return;
  case BinaryOp::Le:
    storeAs<base::DType::I1>(out, off[2], x <= y);
    return;
  case BinaryOp::Gt:
    storeAs<base::DType::I1>(out, off[2], x > y);
    return;
  case BinaryOp::Ge:
    storeAs<base::DType::I1>(out, off[2], x >= y);
    return;
  case BinaryOp::And:
    storeAs<base::DType::I1>(out, off[2], x != C(0) && y != C(0));
    return;
  case BinaryOp::Or:
    storeAs<base::DType::I1>(out, off[2], x != C(0) || y != C(0));
    return;
  default:
    break;
  }
  if constexpr (D == base::DType::I1) {
    return; // arithmetic on i1 is rejected by planBinary
  } else if constexpr (std::is_integral_v<C>) {
    using S = typename DTypeTraits<D>::Storage;
    using U = std::make_unsigned_t<S>;
    const S sx = static_cast<S>(x), sy = static_cast<S>(y);
    S r = 0;
    switch (p.op) {
    case BinaryOp::Add:
      r = static_cast<S>(static_cast<U>(sx) + static_cast<U>(sy));
      break;
    case BinaryOp::Sub:
      r = static_cast<S>(static_cast<U>(sx) - static_cast<U>(sy));
      break;
    case BinaryOp::Mul:
      r = static_cast<S>(static_cast<U>(sx) * static_cast<U>(sy));
      break;
    case BinaryOp::Div:
      r = sy == 0 ? S(0) : sy == S(-1) ? wrapNeg(sx) : static_cast<S>(sx / sy);
      break;
    case BinaryOp::Pow:
      r = static_cast<S>(intPow(sx, sy));
      break;
    case BinaryOp::Mod:
    case BinaryOp::Fmod:
      r = sy == 0 || sy == S(-1) ? S(0) : remainderOf(sx, sy, p.op == BinaryOp::Mod);
      break;
    default:
      break;
    }
    storeAs<D>(out, off[2], r);
  } else {
    C r = 0;
    switch (p.op) {
    case BinaryOp::Add:
      r = x + y;
      break;
    case BinaryOp::Sub:
      r = x - y;
      break;
    case BinaryOp::Mul:
      r = x * y;
      break;
    case BinaryOp::Div:
      r = x / y;
      break;
    case BinaryOp::Pow:
      r = RP_MATH(pow)(x, y);
      break;
    case BinaryOp::Mod:
    case BinaryOp::Fmod:
      r = remainderOf(x, y, p.op == BinaryOp::Mod);
      break;
    default:
      break;
    }
    storeAs<D>(out, off[2], r);
  }
}

/// Point i of `where` on values of dtype D.
template <base::DType D>
RP_HD inline void whereAt(const WherePlan &p, const void *cond, const void *onTrue,
                          const void *onFalse, void *out, int64_t i) {
  int64_t off[4];
  p.iter.offsets(i, off);
  using S = typename DTypeTraits<D>::Storage;
  const bool c = static_cast<const uint8_t *>(cond)[off[0]] != 0;
  static_cast<S *>(out)[off[3]] =
      c ? static_cast<const S *>(onTrue)[off[1]] : static_cast<const S *>(onFalse)[off[2]];
}

/// Float -> integer: truncate toward zero; NaN -> 0; saturate out of range (Cast.cpp).
template <typename Int> RP_HD inline Int truncSaturate(double x) {
  if (x != x)
    return 0;
  const double lo = static_cast<double>(std::numeric_limits<Int>::min());
  if (x <= lo)
    return std::numeric_limits<Int>::min();
  if (x >= -lo)
    return std::numeric_limits<Int>::max();
  return static_cast<Int>(x);
}

/// Element i converted from dtype From to dtype To (kernels/cpu/Cast.h rules).
template <base::DType From, base::DType To>
RP_HD inline void castAt(const void *x, void *out, int64_t i) {
  using base::DType;
  using S = typename DTypeTraits<To>::Storage;
  if constexpr (From == To) {
    static_cast<S *>(out)[i] = static_cast<const S *>(x)[i];
  } else if constexpr (To == DType::I1) {
    storeAs<To>(out, i, loadAs<From>(x, i) != 0); // NaN != 0
  } else if constexpr (From == DType::I1) {
    storeAs<To>(out, i, loadAs<From>(x, i) ? 1 : 0);
  } else if constexpr (To == DType::I64 || To == DType::I32) {
    if constexpr (From == DType::I64 || From == DType::I32)
      storeAs<To>(out, i, loadAs<From>(x, i)); // wraps to i32
    else
      static_cast<S *>(out)[i] = truncSaturate<S>(static_cast<double>(loadAs<From>(x, i)));
  } else if constexpr (To == DType::F16 || To == DType::BF16) {
    // One rounding: from double through round-to-odd (Float16.h), exact for every source.
    const double v = static_cast<double>(loadAs<From>(x, i));
    static_cast<S *>(out)[i] =
        To == DType::BF16 ? base::doubleToBf16(v) : base::doubleToHalf(v);
  } else {
    static_cast<S *>(out)[i] = static_cast<S>(loadAs<From>(x, i)); // to f32 / f64: RNE
  }
}

/// acc[i] = (first ? 0 : acc[i]) + float(g[i]).
template <base::DType D>
RP_HD inline void accumulateAt(const void *g, float *acc, bool first, int64_t i) {
  const float v = static_cast<float>(loadAs<D>(g, i));
  acc[i] = first ? v : acc[i] + v;
}

/// Whether x[i] is inf or NaN (its exponent bits all ones), from its bits: the same answer
/// with or without fast-math flags.
RP_HD inline bool nonFiniteAt(const float *x, int64_t i) {
  return (base::floatToBits(x[i]) & 0x7f800000u) == 0x7f800000u;
}

} // namespace rp::kernels::cuda::ops

#endif // RP_KERNELS_CUDA_ELEMENTWISEOPS_H
