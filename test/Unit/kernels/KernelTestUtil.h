//===- KernelTestUtil.h - Helpers of the CPU kernel tests -------*- C++ -*-===//
//
// Tensors from values, seeded random tensors, output poisoning, naive index
// arithmetic for the float64 references, and tolerance checks.
//
// Tolerances (every numeric kernel test states which it uses):
//   kF32: rtol 1e-5, atol 1e-6 for f32 kernels against a float64 reference
//         (f32 has a 6e-8 unit roundoff; the kernels round once or accumulate
//         in double, so 1e-5 leaves room for libm differences only);
//   kF64: rtol 1e-12, atol 1e-12 for f64 kernels (a few ulps of the
//         different evaluation order of the naive reference).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_KERNELTESTUTIL_H
#define RP_TEST_UNIT_KERNELTESTUTIL_H

#include "base/HostTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace rp::kernels::cpu::test {

using base::DType;
using base::HostTensor;
using base::StatusCode;
using Shape = std::vector<int64_t>;

struct Tolerance {
  double rtol, atol;
};
inline constexpr Tolerance kF32{1e-5, 1e-6};
inline constexpr Tolerance kF64{1e-12, 1e-12};
inline Tolerance toleranceFor(DType t) { return t == DType::F32 ? kF32 : kF64; }

inline const DType kFloatDTypes[] = {DType::F32, DType::F64};

/// Element i of t as a double (i1: 0 or 1 as stored, 0xAB poison shows as 171).
inline double get(const HostTensor &t, int64_t i) {
  switch (t.dtype()) {
  case DType::F32:
    return t.data<float>()[i];
  case DType::F64:
    return t.data<double>()[i];
  case DType::I64:
    return static_cast<double>(t.data<int64_t>()[i]);
  case DType::I32:
    return t.data<int32_t>()[i];
  case DType::I1:
    return t.data<uint8_t>()[i];
  default:
    ADD_FAILURE() << "get: unsupported dtype";
    return 0;
  }
}

/// Sets element i of t from v (rounded to f32; converted to integers).
inline void set(HostTensor &t, int64_t i, double v) {
  switch (t.dtype()) {
  case DType::F32:
    t.data<float>()[i] = static_cast<float>(v);
    break;
  case DType::F64:
    t.data<double>()[i] = v;
    break;
  case DType::I64:
    t.data<int64_t>()[i] = static_cast<int64_t>(v);
    break;
  case DType::I32:
    t.data<int32_t>()[i] = static_cast<int32_t>(v);
    break;
  case DType::I1:
    t.data<uint8_t>()[i] = v != 0 ? 1 : 0;
    break;
  default:
    ADD_FAILURE() << "set: unsupported dtype";
  }
}

inline std::vector<double> values(const HostTensor &t) {
  std::vector<double> v(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    v[i] = get(t, i);
  return v;
}

inline HostTensor tensor(DType dtype, Shape shape, const std::vector<double> &vals) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(vals.size()), t.numElements());
  for (int64_t i = 0; i < t.numElements() && i < static_cast<int64_t>(vals.size()); ++i)
    set(t, i, vals[i]);
  return t;
}

/// Uniform values in [lo, hi) (integers: in [ceil(lo), floor(hi)]; i1: 0/1),
/// never all zero for a non-empty tensor.
inline HostTensor randomTensor(DType dtype, Shape shape, std::mt19937 &rng, double lo = -2.0,
                               double hi = 2.0) {
  HostTensor t(dtype, std::move(shape));
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(std::ceil(lo)),
                                                 static_cast<int64_t>(std::floor(hi)));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (dtype == DType::I1)
      set(t, i, static_cast<double>(rng() & 1));
    else if (dtype == DType::I64 || dtype == DType::I32)
      set(t, i, static_cast<double>(integer(rng)));
    else
      set(t, i, real(rng));
  }
  if (t.numElements() > 0)
    set(t, 0, dtype == DType::I1 ? 1.0 : (lo + hi) / 2 + (hi - lo) / 3); // not all zero
  return t;
}

/// Fills t with NaN (floats) or 0xAB bytes (integers, i1), so that a test
/// comparing every element proves the kernel wrote every element.
inline void poison(HostTensor &t) {
  if (t.dtype() == DType::F32 || t.dtype() == DType::F64) {
    for (int64_t i = 0; i < t.numElements(); ++i)
      set(t, i, NAN);
  } else if (t.byteSize() > 0) {
    std::memset(t.raw(), 0xAB, t.byteSize());
  }
}

/// An output of the given type, poisoned.
inline HostTensor poisoned(DType dtype, Shape shape) {
  HostTensor t(dtype, std::move(shape));
  poison(t);
  return t;
}

/// Every element of got matches want within tol (NaN matches NaN, infinities
/// match exactly); i1 elements must be exactly 0 or 1.
inline void expectClose(const HostTensor &got, const std::vector<double> &want, Tolerance tol,
                        const std::string &what = "") {
  ASSERT_EQ(got.numElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 10; ++i) {
    const double g = get(got, i), w = want[i];
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(g);
    else if (std::isinf(w))
      ok = g == w;
    else
      ok = std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
    if (got.dtype() == DType::I1)
      ok = ok && (g == 0 || g == 1);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " element " << i << " of " << got.typeString() << ": got " << g
                    << ", expected " << w;
    }
  }
}

/// Exact comparison (integers, i1, data movement).
inline void expectEqual(const HostTensor &got, const std::vector<double> &want,
                        const std::string &what = "") {
  expectClose(got, want, Tolerance{0, 0}, what);
}

//===--- naive index arithmetic for references ------------------------------===//

inline Shape unravel(int64_t linear, const Shape &shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const Shape &idx, const Shape &shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + idx[d];
  return linear;
}

/// Rotary embedding's pairing of index `idx` (its last dimension D even): the partner
/// element's index (the other half's, or with `interleaved` the adjacent one) and whether
/// idx is the first element of its pair.
inline std::pair<Shape, bool> ropePartner(const Shape &idx, int64_t d, bool interleaved) {
  const int64_t j = idx.back(), half = d / 2;
  const bool first = interleaved ? j % 2 == 0 : j < half;
  Shape partner = idx;
  partner.back() = interleaved ? j ^ 1 : first ? j + half : j - half;
  return {partner, first};
}

/// The linear index in a tensor of `inShape` that numpy broadcasting reads for
/// output index `outIdx`.
inline int64_t broadcastSource(const Shape &outIdx, const Shape &inShape) {
  const size_t offset = outIdx.size() - inShape.size();
  Shape idx(inShape.size());
  for (size_t d = 0; d < inShape.size(); ++d)
    idx[d] = inShape[d] == 1 ? 0 : outIdx[offset + d];
  return ravel(idx, inShape);
}

inline int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

#define EXPECT_STATUS(expr, code_)                                                                 \
  do {                                                                                             \
    const ::rp::base::Status s_ = (expr);                                                       \
    EXPECT_EQ(s_.code(), (code_)) << s_.toString();                                                \
  } while (0)

/// Expects an error with `code` whose message contains `needle`.
#define EXPECT_ERROR(expr, code_, needle)                                                          \
  do {                                                                                             \
    const ::rp::base::Status s_ = (expr);                                                       \
    EXPECT_EQ(s_.code(), (code_)) << s_.toString();                                                \
    EXPECT_NE(s_.message().find(needle), std::string::npos)                                        \
        << "message: " << s_.message() << "\nexpected to contain: " << (needle);                   \
  } while (0)

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    const ::rp::base::Status s_ = (expr);                                                       \
    ASSERT_TRUE(s_.ok()) << s_.toString();                                                         \
  } while (0)

/// A tensor `x` (f64, perturbed in place and restored), the gradient of the loss w.r.t. it, and
/// its name in failure messages.
using GradientOf = std::tuple<HostTensor *, const HostTensor *, const char *>;

/// Checks every element of each gradient against the central difference
/// (loss(x + step) - loss(x - step)) / (2 step) of `loss`, within |fd| rtol (at least rtol).
inline void expectCentralDifferences(std::initializer_list<GradientOf> wrt,
                                     const std::function<double()> &loss, double step,
                                     double rtol) {
  for (auto [x, grad, name] : wrt)
    for (int64_t i = 0; i < x->numElements(); ++i) {
      const double x0 = get(*x, i);
      set(*x, i, x0 + step);
      const double up = loss();
      set(*x, i, x0 - step);
      const double down = loss();
      set(*x, i, x0);
      const double fd = (up - down) / (2 * step);
      EXPECT_NEAR(get(*grad, i), fd, rtol * std::max(1.0, std::fabs(fd)))
          << name << " element " << i;
    }
}

} // namespace rp::kernels::cpu::test

#endif // RP_TEST_UNIT_KERNELTESTUTIL_H
