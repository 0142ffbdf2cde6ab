//===- Generators.cpp - graph.range and graph.trilu on the CPU ------------===//

#include "kernels/cpu/Generators.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>
#include <limits>

namespace rp::kernels::cpu {

using namespace detail;
using runtime::invalidArgument;
using runtime::okStatus;

namespace {

Status checkRangeOut(const HostTensor &out, std::initializer_list<DType> types) {
  RP_RETURN_IF_ERROR(checkDType("range", "out", out, types));
  if (out.rank() != 1)
    return invalidArgument("range: out is " + out.typeString() + ", expected a 1-D tensor");
  return okStatus();
}

Status lengthMismatch(const HostTensor &out, const std::string &length, const std::string &args) {
  return invalidArgument("range: " + args + " gives " + length + " elements, but out is " +
                         out.typeString());
}

} // namespace

Status range(double start, double limit, double delta, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(out, kNumericTypes));
  const std::string args = "start " + std::to_string(start) + ", limit " + std::to_string(limit) +
                           ", delta " + std::to_string(delta);
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta) || delta == 0)
    return invalidArgument("range: expected finite arguments and a non-zero delta, got " + args);
  if (!runtime::isFloat(out.dtype())) {
    constexpr double kLimit = 0x1p63;
    for (double v : {start, limit, delta})
      if (v != std::trunc(v) || v >= kLimit || v < -kLimit)
        return invalidArgument("range: an integer out (" + out.typeString() +
                               ") needs integral int64 arguments, got " + args);
    return rangeInt(static_cast<int64_t>(start), static_cast<int64_t>(limit),
                    static_cast<int64_t>(delta), out);
  }
  const double length = std::fmax(std::ceil((limit - start) / delta), 0.0);
  if (length != static_cast<double>(out.dim(0)))
    return lengthMismatch(out,
                          length < 0x1p63 ? std::to_string(static_cast<int64_t>(length))
                                          : std::string("more than 2^63"),
                          args);
  visitFloat(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *p = out.data<T>();
    for (int64_t i = 0; i < out.dim(0); ++i)
      p[i] = static_cast<T>(start + static_cast<double>(i) * delta);
  });
  return okStatus();
}

Status rangeInt(int64_t start, int64_t delta, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(out, kIndexTypes));
  if (delta == 0)
    return invalidArgument("range: expected a non-zero delta");
  const int64_t n = out.dim(0);
  if (n == 0)
    return okStatus();
  // The extremes are the first and the last element; the sequence is monotonic.
  const __int128 last = static_cast<__int128>(start) + static_cast<__int128>(n - 1) * delta;
  const bool i32 = out.dtype() == DType::I32;
  const __int128 lo =
      i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const __int128 hi =
      i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  if (start < lo || start > hi || last < lo || last > hi)
    return invalidArgument("range: start " + std::to_string(start) + " + i * delta " +
                           std::to_string(delta) + " for i < " + std::to_string(n) + " overflows " +
                           runtime::dtypeName(out.dtype()));
  if (i32) {
    int32_t *p = out.data<int32_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<int32_t>(start + i * delta);
  } else {
    int64_t *p = out.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = start + i * delta;
  }
  return okStatus();
}

Status rangeInt(int64_t start, int64_t limit, int64_t delta, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(out, kIndexTypes));
  if (delta == 0)
    return invalidArgument("range: expected a non-zero delta");
  // ceil((limit - start) / delta) exactly, in 128 bits.
  const __int128 span = static_cast<__int128>(limit) - start;
  __int128 q = span / delta;
  if (q * delta != span && ((span > 0) == (delta > 0)))
    ++q; // truncation went toward zero, i.e. down, on a positive quotient
  const __int128 length = q > 0 ? q : 0;
  if (length != out.dim(0))
    return lengthMismatch(out, std::to_string(static_cast<int64_t>(length)),
                          "start " + std::to_string(start) + ", limit " + std::to_string(limit) +
                              ", delta " + std::to_string(delta));
  return rangeInt(start, delta, out);
}

Status trilu(const HostTensor &x, int64_t k, bool upper, HostTensor &out) {
  const char *op = "trilu";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  if (x.rank() < 2)
    return invalidArgument(std::string(op) + ": expected x of rank >= 2, got " + x.typeString());
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), x.shape()));
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t matrixRows = cols > 0 ? x.numElements() / cols : 0; // rows of all matrices
  visitAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *in = x.data<T>();
    T *po = out.data<T>();
#pragma omp parallel for schedule(static) if (x.numElements() >= kParallelMinElements)
    for (int64_t r = 0; r < matrixRows; ++r) {
      const int64_t i = r % rows;
      for (int64_t j = 0; j < cols; ++j) {
        const bool keep = upper ? j - i >= k : j - i <= k;
        po[r * cols + j] = keep ? in[r * cols + j] : T(0);
      }
    }
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
