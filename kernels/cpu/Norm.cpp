//===- Norm.cpp - Layer and RMS normalisation on the CPU ------------------===//

#include "kernels/cpu/Norm.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>

namespace rp::kernels::cpu {

using namespace detail;
using runtime::okStatus;

namespace {

Status checkNorm(const char *op, const HostTensor &x, const HostTensor &scale,
                 const HostTensor *bias, int64_t axis, const HostTensor &out) {
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  const Shape paramShape(x.shape().begin() + axis, x.shape().end());
  RP_RETURN_IF_ERROR(checkType(op, "scale", scale, x.dtype(), paramShape));
  if (bias)
    RP_RETURN_IF_ERROR(checkType(op, "bias", *bias, x.dtype(), paramShape));
  return checkType(op, "out", out, x.dtype(), x.shape());
}

/// sum_c f(xs[c]) in double as 8 partial sums (element c into sum c mod 8) added pairwise at
/// the end: a fixed order, whatever the thread count, that vectorises (one running sum would
/// wait on each addition's latency).
template <typename T, typename F>
double laneSum(const T *xs, int64_t n, F f) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += f(static_cast<double>(xs[c + l]));
  for (int l = 0; c + l < n; ++l)
    acc[l] += f(static_cast<double>(xs[c + l]));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <typename T>
void normLoop(bool rms, const HostTensor &x, const HostTensor &scale, const HostTensor *bias,
              int64_t axis, double epsilon, HostTensor &out) {
  const int64_t cols = product(x.shape(), axis, x.shape().size());
  const int64_t rows = cols == 0 ? 0 : x.numElements() / cols;
  const T *in = x.data<T>();
  const T *g = scale.data<T>();
  const T *b = bias ? bias->data<T>() : nullptr;
  T *po = out.data<T>();
#pragma omp parallel for schedule(static) if (x.numElements() >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xs = in + r * cols;
    T *ys = po + r * cols;
    const double mean =
        rms ? 0.0 : laneSum(xs, cols, [](double v) { return v; }) / static_cast<double>(cols);
    // sum of (x - mean)^2, or of x^2 for rms
    const double sq = laneSum(xs, cols, [mean](double v) { return (v - mean) * (v - mean); });
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
    if (b) {
      for (int64_t c = 0; c < cols; ++c)
        ys[c] = static_cast<T>((static_cast<double>(xs[c]) - mean) * inv *
                                   static_cast<double>(g[c]) +
                               static_cast<double>(b[c]));
    } else {
      for (int64_t c = 0; c < cols; ++c)
        ys[c] = static_cast<T>((static_cast<double>(xs[c]) - mean) * inv *
                               static_cast<double>(g[c]));
    }
  }
}

} // namespace

Status layerNorm(const HostTensor &x, const HostTensor &scale, const HostTensor *bias, int64_t axis,
                 double epsilon, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkNorm("layer_norm", x, scale, bias, axis, out));
  visitFloat(x.dtype(), [&](auto tag) {
    normLoop<typename decltype(tag)::type>(false, x, scale, bias, axis, epsilon, out);
  });
  return okStatus();
}

Status rmsNorm(const HostTensor &x, const HostTensor &scale, int64_t axis, double epsilon,
               HostTensor &out) {
  RP_RETURN_IF_ERROR(checkNorm("rms_norm", x, scale, nullptr, axis, out));
  visitFloat(x.dtype(), [&](auto tag) {
    normLoop<typename decltype(tag)::type>(true, x, scale, nullptr, axis, epsilon, out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
