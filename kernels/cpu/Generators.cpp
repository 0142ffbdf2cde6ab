//===- Generators.cpp - graph.range and graph.trilu on the CPU ------------===//

#include "kernels/cpu/Generators.h"

#include "kernels/RangeRules.h"
#include "kernels/cpu/KernelSupport.h"


namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

namespace {

Status checkRangeOut(const HostTensor &out, std::initializer_list<DType> types) {
  RP_RETURN_IF_ERROR(checkDType("range", "out", out, types));
  return checkRangeOutRank(out.dtype(), out.shape());
}

} // namespace

Status range(double start, double limit, double delta, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(out, kNumericTypes));
  RP_RETURN_IF_ERROR(checkRangeArgs(start, limit, delta));
  if (!base::isFloat(out.dtype())) {
    RP_RETURN_IF_ERROR(checkIntegralRangeArgs(start, limit, delta, out.typeString()));
    return rangeInt(static_cast<int64_t>(start), static_cast<int64_t>(limit),
                    static_cast<int64_t>(delta), out);
  }
  const double length = rangeFloatLength(start, limit, delta);
  if (length != static_cast<double>(out.dim(0)))
    return rangeLengthMismatch(rangeFloatLengthText(length), rangeArgs(start, limit, delta),
                               out.dtype(), out.shape());
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
  RP_RETURN_IF_ERROR(checkRangeDelta(delta));
  const int64_t n = out.dim(0);
  RP_RETURN_IF_ERROR(checkRangeFits(start, delta, n, out.dtype()));
  if (out.dtype() == DType::I32) {
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
  RP_RETURN_IF_ERROR(checkRangeDelta(delta));
  const __int128 length = rangeIntLength(start, limit, delta);
  if (length != out.dim(0))
    return rangeLengthMismatch(std::to_string(static_cast<int64_t>(length)),
                               rangeArgs(start, limit, delta), out.dtype(), out.shape());
  return rangeInt(start, delta, out);
}

Status trilu(const HostTensor &x, int64_t k, bool upper, HostTensor &out) {
  const char *op = "trilu";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kAllTypes));
  RP_RETURN_IF_ERROR(checkRankAtLeast(op, "x", x.dtype(), x.shape(), 2));
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
