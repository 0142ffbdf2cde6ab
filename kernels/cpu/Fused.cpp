//===- Fused.cpp - Fused transformer-block ops on the CPU -----------------===//

#include "kernels/cpu/Fused.h"

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cpu/VectorMath.h"

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using base::okStatus;

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
  if constexpr (std::is_same_v<T, float>) { // f32 with expF32, AVX-512 / AVX2 clones
    forChunks(n, n >= kParallelMinElements,
              [&](int64_t b, int64_t c) { swigluF32Array(a + b, u + b, y + b, c); });
  } else {
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(a[i]);
      y[i] = static_cast<T>(g * sigmoid(g) * static_cast<double>(u[i]));
    }
  }
}

template <typename T>
void swigluVjpLoop(const HostTensor &gate, const HostTensor &up, const HostTensor &g,
                   HostTensor &dgate, HostTensor &dup) {
  const T *a = gate.data<T>();
  const T *u = up.data<T>();
  const T *pg = g.data<T>();
  T *da = dgate.data<T>();
  T *du = dup.data<T>();
  const int64_t n = gate.numElements();
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(a[i]), gi = static_cast<double>(pg[i]);
    const double s = sigmoid(x);
    da[i] = static_cast<T>(gi * static_cast<double>(u[i]) * s * (1.0 + x * (1.0 - s)));
    du[i] = static_cast<T>(gi * x * s);
  }
}

/// rope (or, `transposed`, its VJP with respect to x: the transposed rotation, with x the
/// cotangent g).
template <typename T>
void ropeLoop(const HostTensor &x, const HostTensor &cos, const HostTensor &sin, HostTensor &out,
              bool interleaved, bool transposed = false) {
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
      // The partner of j: its pair's other element (interleaved) or the other half's.
      const bool first = interleaved ? j % 2 == 0 : j < half;
      const int64_t partner = interleaved ? (first ? j + 1 : j - 1) : (first ? j + half : j - half);
      if (transposed) { // dx[j] = g[j] cos[j] +- g[p] sin[p]
        const double rot = static_cast<double>(xs[partner]) * static_cast<double>(ss[partner]);
        ys[j] = static_cast<T>(static_cast<double>(xs[j]) * static_cast<double>(cs[j]) +
                               (first ? rot : -rot));
        continue;
      }
      const double rot =
          first ? -static_cast<double>(xs[partner]) : static_cast<double>(xs[partner]);
      ys[j] = static_cast<T>(static_cast<double>(xs[j]) * static_cast<double>(cs[j]) +
                             rot * static_cast<double>(ss[j]));
    }
  }
}

/// Per block of kAttentionQueryBlock query rows of one head (b, h): scores = scale q k^T over
/// the keys the block sees (one GEMM; with a sliding `window`, from the first key in its first
/// row's window), capScores (with a softcap), softmaxRows, out = P v (one GEMM). Blocks are
/// independent tasks, so the bits do not depend on the thread count.
template <typename T>
void attentionLoop(const HostTensor &q, const HostTensor &k, const HostTensor &v, double scale,
                   bool causal, const HostTensor *sinks, HostTensor &out, int64_t window,
                   double softcap) {
  const int64_t batch = q.shape()[0], heads = q.shape()[1], seq = q.shape()[2],
                dim = q.shape()[3], vdim = v.shape()[3], kvHeads = k.shape()[1];
  if (out.numElements() == 0 || seq == 0)
    return;
  const int64_t groups = heads / kvHeads;
  const T *pq = q.data<T>();
  const T *pk = k.data<T>();
  const T *pv = v.data<T>();
  T *po = out.data<T>();
  const T *psink = sinks ? sinks->data<T>() : nullptr;
  const int64_t blocks = (seq + kAttentionQueryBlock - 1) / kAttentionQueryBlock;
  const int64_t tasks = batch * heads * blocks;
#pragma omp parallel if (tasks > 1 && batch * heads * seq * seq * dim >= kParallelMinElements)
  {
    std::vector<T> p(static_cast<size_t>(kAttentionQueryBlock * seq));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * kAttentionQueryBlock;
      const int64_t rows = seq - i0 < kAttentionQueryBlock ? seq - i0 : kAttentionQueryBlock;
      const int64_t b = bh / heads, h = bh % heads;
      const int64_t kvRow = (b * kvHeads + h / groups) * seq;
      const int64_t k0 = attentionFirstKey(i0, causal, window);
      const int64_t keys = (causal ? i0 + rows : seq) - k0;
      gemm(false, true, rows, keys, dim, static_cast<T>(scale), pq + (bh * seq + i0) * dim, dim,
           pk + (kvRow + k0) * dim, dim, T(0), p.data(), keys);
      capScores(p.data(), rows * keys, softcap);
      softmaxRows(p.data(), rows, keys, i0, causal, psink ? psink + h : nullptr,
                  static_cast<T *>(nullptr), k0, window);
      gemm(false, false, rows, vdim, keys, T(1), p.data(), keys, pv + (kvRow + k0) * vdim, vdim,
           T(0), po + (bh * seq + i0) * vdim, vdim);
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

namespace {

Status checkRope(const char *op, const char *xName, const HostTensor &x, const HostTensor &cos,
                 const HostTensor &sin, const char *outName, const HostTensor &out) {
  RP_RETURN_IF_ERROR(checkDType(op, xName, x, kFloatTypes));
  RP_RETURN_IF_ERROR(checkRopeInput(x.shape(), op, xName));
  RP_RETURN_IF_ERROR(checkSameDType(op, xName, x, "cos", cos));
  RP_RETURN_IF_ERROR(checkType(op, "sin", sin, cos.dtype(), cos.shape()));
  RP_RETURN_IF_ERROR(checkRopeTable(x.shape(), cos.shape(), op));
  RP_RETURN_IF_ERROR(checkBroadcastsTo(op, "cos", cos.shape(), x.shape()));
  return checkType(op, outName, out, x.dtype(), x.shape());
}

} // namespace

Status rope(const HostTensor &x, const HostTensor &cos, const HostTensor &sin, HostTensor &out,
            bool interleaved) {
  RP_RETURN_IF_ERROR(checkRope("rope", "x", x, cos, sin, "out", out));
  visitFloat(x.dtype(),
             [&](auto tag) { ropeLoop<typename decltype(tag)::type>(x, cos, sin, out, interleaved); });
  return okStatus();
}

Status ropeVjp(const HostTensor &g, const HostTensor &cos, const HostTensor &sin, HostTensor &dx,
               bool interleaved) {
  RP_RETURN_IF_ERROR(checkRope("rope_vjp", "g", g, cos, sin, "dx", dx));
  visitFloat(g.dtype(), [&](auto tag) {
    ropeLoop<typename decltype(tag)::type>(g, cos, sin, dx, interleaved, /*transposed=*/true);
  });
  return okStatus();
}

Status swigluVjp(const HostTensor &gate, const HostTensor &up, const HostTensor &g,
                 HostTensor &dgate, HostTensor &dup) {
  const char *op = "swiglu_vjp";
  RP_RETURN_IF_ERROR(checkDType(op, "gate", gate, kFloatTypes));
  RP_RETURN_IF_ERROR(checkType(op, "up", up, gate.dtype(), gate.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "g", g, gate.dtype(), gate.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "dgate", dgate, gate.dtype(), gate.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "dup", dup, gate.dtype(), gate.shape()));
  visitFloat(gate.dtype(), [&](auto tag) {
    swigluVjpLoop<typename decltype(tag)::type>(gate, up, g, dgate, dup);
  });
  return okStatus();
}

Status attention(const HostTensor &q, const HostTensor &k, const HostTensor &v, double scale,
                 bool causal, HostTensor &out, const HostTensor *sinks, int64_t window,
                 double softcap) {
  RP_RETURN_IF_ERROR(checkDType("attention", "q", q, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAttentionQuery(q.shape()));
  RP_RETURN_IF_ERROR(checkSameDType("attention", "q", q, "k", k));
  const Shape &qs = q.shape(), &ks = k.shape();
  RP_RETURN_IF_ERROR(checkAttentionKey(qs, ks));
  RP_RETURN_IF_ERROR(checkSameDType("attention", "q", q, "v", v));
  RP_RETURN_IF_ERROR(checkAttentionValue(ks, v.shape()));
  RP_RETURN_IF_ERROR(
      checkType("attention", "out", out, q.dtype(), attentionOutShape(qs, v.shape())));
  if (sinks)
    RP_RETURN_IF_ERROR(checkType("attention", "sinks", *sinks, q.dtype(), Shape{qs[1]}));
  RP_RETURN_IF_ERROR(checkAttentionWindow("attention", causal, window));
  RP_RETURN_IF_ERROR(checkAttentionSoftcap("attention", softcap));
  visitFloat(q.dtype(), [&](auto tag) {
    attentionLoop<typename decltype(tag)::type>(q, k, v, scale, causal, sinks, out, window,
                                                softcap);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
