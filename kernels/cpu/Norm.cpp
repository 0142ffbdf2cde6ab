//===- Norm.cpp - Layer and RMS normalisation on the CPU ------------------===//

#include "kernels/cpu/Norm.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>

namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

namespace {

Status checkNorm(const char *op, const HostTensor &x, const HostTensor &scale,
                 const HostTensor *bias, int64_t axis, const HostTensor &out,
                 const char *outName = "out") {
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  const Shape paramShape(x.shape().begin() + axis, x.shape().end());
  RP_RETURN_IF_ERROR(checkType(op, "scale", scale, x.dtype(), paramShape));
  if (bias)
    RP_RETURN_IF_ERROR(checkType(op, "bias", *bias, x.dtype(), paramShape));
  return checkType(op, outName, out, x.dtype(), x.shape());
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
    double mean = 0.0;
    if (!rms) {
      for (int64_t c = 0; c < cols; ++c)
        mean += static_cast<double>(xs[c]);
      mean /= static_cast<double>(cols);
    }
    double sq = 0.0; // sum of (x - mean)^2, or of x^2 for rms
    for (int64_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(xs[c]) - mean;
      sq += d * d;
    }
    const double stdev = std::sqrt(sq / static_cast<double>(cols) + epsilon);
    for (int64_t c = 0; c < cols; ++c) {
      double y = (static_cast<double>(xs[c]) - mean) / stdev * static_cast<double>(g[c]);
      if (b)
        y += static_cast<double>(b[c]);
      ys[c] = static_cast<T>(y);
    }
  }
}

template <typename T>
void rmsNormVjpLoop(const HostTensor &x, const HostTensor &scale, const HostTensor &g,
                    int64_t axis, double epsilon, HostTensor &dx, HostTensor &dscaleRows) {
  const int64_t cols = product(x.shape(), axis, x.shape().size());
  const int64_t rows = cols == 0 ? 0 : x.numElements() / cols;
  const T *in = x.data<T>();
  const T *w = scale.data<T>();
  const T *pg = g.data<T>();
  T *pdx = dx.data<T>();
  T *pds = dscaleRows.data<T>();
#pragma omp parallel for schedule(static) if (x.numElements() >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xs = in + r * cols;
    const T *gs = pg + r * cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sq += static_cast<double>(xs[c]) * static_cast<double>(xs[c]);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
    double dot = 0.0; // sum of dxhat * xhat
    for (int64_t c = 0; c < cols; ++c)
      dot += static_cast<double>(gs[c]) * static_cast<double>(w[c]) *
             (static_cast<double>(xs[c]) * rstd);
    const double m = dot / static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = static_cast<double>(xs[c]) * rstd;
      const double gc = static_cast<double>(gs[c]);
      pdx[r * cols + c] = static_cast<T>(rstd * (gc * static_cast<double>(w[c]) - xhat * m));
      pds[r * cols + c] = static_cast<T>(gc * xhat);
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

Status rmsNormVjp(const HostTensor &x, const HostTensor &scale, const HostTensor &g, int64_t axis,
                  double epsilon, HostTensor &dx, HostTensor &dscaleRows) {
  RP_RETURN_IF_ERROR(checkNorm("rms_norm_vjp", x, scale, nullptr, axis, dx, "dx"));
  RP_RETURN_IF_ERROR(checkType("rms_norm_vjp", "g", g, x.dtype(), x.shape()));
  RP_RETURN_IF_ERROR(checkType("rms_norm_vjp", "dscale_rows", dscaleRows, x.dtype(), x.shape()));
  visitFloat(x.dtype(), [&](auto tag) {
    rmsNormVjpLoop<typename decltype(tag)::type>(x, scale, g, axis, epsilon, dx, dscaleRows);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
