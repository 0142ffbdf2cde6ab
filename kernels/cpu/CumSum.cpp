//===- CumSum.cpp - Cumulative sums on the CPU -----------------------------===//

#include "kernels/cpu/CumSum.h"

#include "kernels/cpu/KernelSupport.h"

#include <type_traits>

namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

Status cumsum(const HostTensor &x, int64_t axis, bool exclusive, bool reverse, HostTensor &out) {
  const char *op = "cumsum";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kNumericTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), x.shape()));
  if (x.numElements() == 0)
    return okStatus();
  const int64_t n = x.dim(axis);
  const int64_t inner = product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  const int64_t lanes = x.numElements() / n;
  const bool parallel = x.numElements() >= kParallelMinElements;
  visitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Floats sum in double; integers in uint64 (wrapping), stored as T (wraps to i32).
    using C = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    const T *src = x.data<T>();
    T *dst = out.data<T>();
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const int64_t base = (lane / inner) * n * inner + lane % inner;
      C sum = C(0);
      for (int64_t step = 0; step < n; ++step) {
        const int64_t p = base + (reverse ? n - 1 - step : step) * inner;
        const C v = static_cast<C>(src[p]);
        if (!exclusive)
          sum += v;
        dst[p] = static_cast<T>(sum);
        if (exclusive)
          sum += v;
      }
    }
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
