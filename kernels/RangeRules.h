//===- RangeRules.h - graph.range's argument rules, for every backend -*- C++ -*-===//
//
// The checks and the element count of graph.range (ONNX Range): the CPU reference kernel
// (kernels/cpu/Generators.cpp) and the GPU planner (kernels/cuda/Generators.cu) both apply
// these, so their rules and messages cannot drift apart. Header-only; needs runtime/core.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_RANGERULES_H
#define RP_KERNELS_RANGERULES_H

#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rp::kernels {

/// "start S, limit L, delta D", each as std::to_string writes it.
template <typename T> std::string rangeArgs(T start, T limit, T delta) {
  return "start " + std::to_string(start) + ", limit " + std::to_string(limit) + ", delta " +
         std::to_string(delta);
}

/// Float bounds. Errors: InvalidArgument "range: expected finite arguments and a non-zero
/// delta, got <args>".
inline base::Status checkRangeArgs(double start, double limit, double delta) {
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta) || delta == 0)
    return base::invalidArgument("range: expected finite arguments and a non-zero delta, got " +
                                    rangeArgs(start, limit, delta));
  return base::okStatus();
}

/// Float bounds for an integer result `outType` ("i64[5]"): each must be an integral value in
/// int64's range. Errors: InvalidArgument "range: an integer out (<outType>) needs integral
/// int64 arguments, got <args>".
inline base::Status checkIntegralRangeArgs(double start, double limit, double delta,
                                              const std::string &outType) {
  constexpr double kLimit = 0x1p63;
  for (double v : {start, limit, delta})
    if (v != std::trunc(v) || v >= kLimit || v < -kLimit)
      return base::invalidArgument("range: an integer out (" + outType +
                                      ") needs integral int64 arguments, got " +
                                      rangeArgs(start, limit, delta));
  return base::okStatus();
}

/// graph.range's result is 1-D. Errors: InvalidArgument "range: out is <dtype><shape>, expected
/// a 1-D tensor".
inline base::Status checkRangeOutRank(base::DType dtype, const std::vector<int64_t> &out) {
  if (out.size() == 1)
    return base::okStatus();
  return base::invalidArgument("range: out is " + std::string(base::dtypeName(dtype)) +
                                  base::formatShape(out) + ", expected a 1-D tensor");
}

/// An integer range's step. Errors: InvalidArgument "range: expected a non-zero delta".
inline base::Status checkRangeDelta(int64_t delta) {
  if (delta != 0)
    return base::okStatus();
  return base::invalidArgument("range: expected a non-zero delta");
}

/// InvalidArgument "range: <args> gives <length> elements, but out is <dtype><shape>".
inline base::Status rangeLengthMismatch(const std::string &length, const std::string &args,
                                           base::DType dtype, const std::vector<int64_t> &out) {
  return base::invalidArgument("range: " + args + " gives " + length + " elements, but out is " +
                                  base::dtypeName(dtype) + base::formatShape(out));
}

/// The element count of a float range: max(ceil((limit - start) / delta), 0).
inline double rangeFloatLength(double start, double limit, double delta) {
  return std::fmax(std::ceil((limit - start) / delta), 0.0);
}

/// A float range length for messages: the count, or "more than 2^63".
inline std::string rangeFloatLengthText(double length) {
  return length < 0x1p63 ? std::to_string(static_cast<int64_t>(length))
                         : std::string("more than 2^63");
}

/// The element count of an integer range: ceil((limit - start) / delta) clamped at 0, exact
/// in 128 bits. `delta` is non-zero.
inline __int128 rangeIntLength(int64_t start, int64_t limit, int64_t delta) {
  const __int128 span = static_cast<__int128>(limit) - start;
  __int128 q = span / delta;
  if (q * delta != span && ((span > 0) == (delta > 0)))
    ++q; // truncation went toward zero, i.e. down, on a positive quotient
  return q > 0 ? q : 0;
}

/// start + i * delta for i < n fits `dtype` (I64 or I32). The extremes are the first and the
/// last element (the sequence is monotonic). Errors: InvalidArgument "range: start S + i *
/// delta D for i < N overflows <dtype>".
inline base::Status checkRangeFits(int64_t start, int64_t delta, int64_t n,
                                      base::DType dtype) {
  if (n == 0)
    return base::okStatus();
  const __int128 last = static_cast<__int128>(start) + static_cast<__int128>(n - 1) * delta;
  const bool i32 = dtype == base::DType::I32;
  const __int128 lo =
      i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const __int128 hi =
      i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  if (start < lo || start > hi || last < lo || last > hi)
    return base::invalidArgument("range: start " + std::to_string(start) + " + i * delta " +
                                    std::to_string(delta) + " for i < " + std::to_string(n) +
                                    " overflows " + base::dtypeName(dtype));
  return base::okStatus();
}

} // namespace rp::kernels

#endif // RP_KERNELS_RANGERULES_H
