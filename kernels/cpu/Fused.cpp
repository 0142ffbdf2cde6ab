//===- Fused.cpp - Fused transformer-block ops on the CPU -----------------===//

#include "kernels/cpu/Fused.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>

namespace rp::kernels::cpu {

using namespace detail;
using runtime::okStatus;
using runtime::invalidArgument;

namespace {

/// The logistic function, without overflow for large |x| (as graph.sigmoid's kernel).
double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

template <typename T>
void swigluLoop(const HostTensor &gate, const HostTensor &up, HostTensor &out) {
  const T *a = gate.data<T>();
  const T *u = up.data<T>();
  T *y = out.data<T>();
  const int64_t n = gate.numElements();
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(a[i]);
    y[i] = static_cast<T>(g * sigmoid(g) * static_cast<double>(u[i]));
  }
}

template <typename T>
void ropeLoop(const HostTensor &x, const HostTensor &cos, const HostTensor &sin, HostTensor &out) {
  const Shape &shape = x.shape();
  const int64_t d = shape.back(), half = d / 2;
  const int64_t rows = d == 0 ? 0 : x.numElements() / d;
  // cos/sin are read at broadcast strides; their last dimension is D (stride 1).
  const Shape strides = broadcastStrides(cos.shape(), shape);
  const int outer = static_cast<int>(shape.size()) - 1;
  const T *in = x.data<T>();
  const T *c = cos.data<T>();
  const T *s = sin.data<T>();
  T *po = out.data<T>();
#pragma omp parallel for schedule(static) if (x.numElements() >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0, rem = r;
    for (int k = outer - 1; k >= 0; --k) {
      off += (rem % shape[k]) * strides[k];
      rem /= shape[k];
    }
    const T *xs = in + r * d;
    const T *cs = c + off;
    const T *ss = s + off;
    T *ys = po + r * d;
    for (int64_t j = 0; j < d; ++j) {
      const double rot = j < half ? -static_cast<double>(xs[j + half])
                                  : static_cast<double>(xs[j - half]);
      ys[j] = static_cast<T>(static_cast<double>(xs[j]) * static_cast<double>(cs[j]) +
                             rot * static_cast<double>(ss[j]));
    }
  }
}

} // namespace

Status swiglu(const HostTensor &gate, const HostTensor &up, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkDType("swiglu", "gate", gate, kFloatTypes));
  RP_RETURN_IF_ERROR(checkType("swiglu", "up", up, gate.dtype(), gate.shape()));
  RP_RETURN_IF_ERROR(checkType("swiglu", "out", out, gate.dtype(), gate.shape()));
  visitFloat(gate.dtype(),
             [&](auto tag) { swigluLoop<typename decltype(tag)::type>(gate, up, out); });
  return okStatus();
}

Status rope(const HostTensor &x, const HostTensor &cos, const HostTensor &sin, HostTensor &out) {
  RP_RETURN_IF_ERROR(checkDType("rope", "x", x, kFloatTypes));
  if (x.rank() < 1 || x.shape().back() % 2 != 0)
    return invalidArgument("rope: x is " + runtime::formatShape(x.shape()) +
                           ", expected rank >= 1 with an even last dimension");
  RP_RETURN_IF_ERROR(checkSameDType("rope", "x", x, "cos", cos));
  RP_RETURN_IF_ERROR(checkType("rope", "sin", sin, cos.dtype(), cos.shape()));
  if (cos.rank() < 1 || cos.shape().back() != x.shape().back())
    return invalidArgument("rope: cos is " + runtime::formatShape(cos.shape()) +
                           ", expected a last dimension of " + std::to_string(x.shape().back()));
  RP_RETURN_IF_ERROR(checkBroadcastsTo("rope", "cos", cos.shape(), x.shape()));
  RP_RETURN_IF_ERROR(checkType("rope", "out", out, x.dtype(), x.shape()));
  visitFloat(x.dtype(),
             [&](auto tag) { ropeLoop<typename decltype(tag)::type>(x, cos, sin, out); });
  return okStatus();
}

} // namespace rp::kernels::cpu
