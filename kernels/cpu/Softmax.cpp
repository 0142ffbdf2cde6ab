//===- Softmax.cpp - Softmax and log-softmax on the CPU -------------------===//

#include "kernels/cpu/Softmax.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>

namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

namespace {

template <typename T>
void softmaxLoop(const HostTensor &x, int64_t axis, bool log, HostTensor &out) {
  const Shape &shape = x.shape();
  const int64_t outer = product(shape, 0, axis);
  const int64_t dim = shape[axis];
  const int64_t inner = product(shape, axis + 1, shape.size());
  const T *in = x.data<T>();
  T *po = out.data<T>();
  const int64_t lines = outer * inner;
#pragma omp parallel for schedule(static) if (lines * dim >= kParallelMinElements)
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t base = (line / inner) * dim * inner + line % inner;
    const T *xs = in + base;
    T *ys = po + base;
    bool nan = false;
    double m = -INFINITY;
    for (int64_t k = 0; k < dim; ++k) {
      const double v = static_cast<double>(xs[k * inner]);
      nan = nan || v != v;
      m = v > m ? v : m;
    }
    if (nan || std::isinf(m)) {
      for (int64_t k = 0; k < dim; ++k)
        ys[k * inner] = static_cast<T>(NAN);
      continue;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < dim; ++k)
      sum += std::exp(static_cast<double>(xs[k * inner]) - m);
    if (log) {
      const double logSum = std::log(sum);
      for (int64_t k = 0; k < dim; ++k)
        ys[k * inner] = static_cast<T>((static_cast<double>(xs[k * inner]) - m) - logSum);
    } else {
      for (int64_t k = 0; k < dim; ++k)
        ys[k * inner] = static_cast<T>(std::exp(static_cast<double>(xs[k * inner]) - m) / sum);
    }
  }
}

} // namespace

Status softmax(const HostTensor &x, int64_t axis, bool log, HostTensor &out) {
  const char *op = log ? "log_softmax" : "softmax";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), x.shape()));
  visitFloat(x.dtype(),
             [&](auto tag) { softmaxLoop<typename decltype(tag)::type>(x, axis, log, out); });
  return okStatus();
}

} // namespace rp::kernels::cpu
