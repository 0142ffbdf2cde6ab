//===- AttentionGrad.cpp - The fused attention backward on the CPU --------===//

#include "kernels/cpu/AttentionGrad.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using runtime::okStatus;

namespace {

/// The dimensions of one attention_vjp and its operands (f32 or f64 data of type T).
template <typename T> struct Problem {
  int64_t batch, heads, kvHeads, groups, seq, dim;
  double scale;
  bool causal;
  const T *q, *k, *v, *out, *dout;
};

/// sum_c a[c] b[c] in double, c ascending (both passes score with it, so that they agree).
template <typename T> double dot(const T *a, const T *b, int64_t n) {
  double s = 0.0;
  for (int64_t c = 0; c < n; ++c)
    s += static_cast<double>(a[c]) * static_cast<double>(b[c]);
  return s;
}

/// Pass 1, query row `row` = (b, h, i): its log-sum-exp and D_i into lse/delta, dq_i into dq.
template <typename T>
void queryRow(const Problem<T> &p, int64_t row, double *lse, double *delta, T *dq) {
  const int64_t dim = p.dim, i = row % p.seq, bh = row / p.seq;
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t kvBase = (b * p.kvHeads + h / p.groups) * p.seq * dim;
  const T *qs = p.q + row * dim, *dos = p.dout + row * dim;
  const int64_t keys = p.causal ? i + 1 : p.seq;
  std::vector<double> s(static_cast<size_t>(keys));
  double m = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    s[j] = dot(qs, p.k + kvBase + j * dim, dim) * p.scale;
    m = s[j] > m ? s[j] : m;
  }
  double l = 0.0;
  for (int64_t j = 0; j < keys; ++j)
    l += std::exp(s[j] - m);
  const double L = m + std::log(l);
  const double D = dot(dos, p.out + row * dim, dim);
  std::vector<double> acc(static_cast<size_t>(dim), 0.0);
  for (int64_t j = 0; j < keys; ++j) {
    const double prob = std::exp(s[j] - L);
    const double ds = prob * (dot(dos, p.v + kvBase + j * dim, dim) - D);
    const T *ks = p.k + kvBase + j * dim;
    for (int64_t c = 0; c < dim; ++c)
      acc[c] += ds * static_cast<double>(ks[c]);
  }
  for (int64_t c = 0; c < dim; ++c)
    dq[row * dim + c] = static_cast<T>(p.scale * acc[c]);
  lse[row] = L;
  delta[row] = D;
}

/// Pass 2, key row `krow` = (b, g, j): dk_j and dv_j over the query heads of k/v head g and
/// their rows i (i >= j when causal), heads then rows ascending.
template <typename T>
void keyRow(const Problem<T> &p, int64_t krow, const double *lse, const double *delta, T *dk,
            T *dv) {
  const int64_t dim = p.dim, j = krow % p.seq, bg = krow / p.seq;
  const int64_t b = bg / p.kvHeads, g = bg % p.kvHeads;
  const T *ks = p.k + krow * dim, *vs = p.v + krow * dim;
  std::vector<double> accK(static_cast<size_t>(dim), 0.0), accV(static_cast<size_t>(dim), 0.0);
  for (int64_t h = g * p.groups; h < (g + 1) * p.groups; ++h) {
    const int64_t rowBase = (b * p.heads + h) * p.seq;
    for (int64_t i = p.causal ? j : 0; i < p.seq; ++i) {
      const int64_t row = rowBase + i;
      const T *qs = p.q + row * dim, *dos = p.dout + row * dim;
      const double prob = std::exp(dot(qs, ks, dim) * p.scale - lse[row]);
      const double ds = prob * (dot(dos, vs, dim) - delta[row]);
      for (int64_t c = 0; c < dim; ++c) {
        accV[c] += prob * static_cast<double>(dos[c]);
        accK[c] += ds * static_cast<double>(qs[c]);
      }
    }
  }
  for (int64_t c = 0; c < dim; ++c) {
    dk[krow * dim + c] = static_cast<T>(p.scale * accK[c]);
    dv[krow * dim + c] = static_cast<T>(accV[c]);
  }
}

template <typename T>
void attentionVjpLoop(const Problem<T> &p, HostTensor &dq, HostTensor &dk, HostTensor &dv) {
  const int64_t rows = p.batch * p.heads * p.seq, keyRows = p.batch * p.kvHeads * p.seq;
  const bool parallel = rows * p.seq * p.dim >= kParallelMinElements;
  std::vector<double> lse(static_cast<size_t>(rows)), delta(static_cast<size_t>(rows));
  T *pdq = dq.data<T>(), *pdk = dk.data<T>(), *pdv = dv.data<T>();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t row = 0; row < rows; ++row)
    queryRow(p, row, lse.data(), delta.data(), pdq);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t krow = 0; krow < keyRows; ++krow)
    keyRow(p, krow, lse.data(), delta.data(), pdk, pdv);
}

} // namespace

Status attentionVjp(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                    const HostTensor &out, const HostTensor &dout, double scale, bool causal,
                    HostTensor &dq, HostTensor &dk, HostTensor &dv) {
  const char *op = "attention_vjp";
  RP_RETURN_IF_ERROR(checkDType(op, "q", q, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAttentionQuery(q.shape(), op));
  RP_RETURN_IF_ERROR(checkSameDType(op, "q", q, "k", k));
  const Shape &qs = q.shape(), &ks = k.shape();
  RP_RETURN_IF_ERROR(checkAttentionKey(qs, ks, op));
  RP_RETURN_IF_ERROR(checkType(op, "v", v, k.dtype(), ks));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, q.dtype(), qs));
  RP_RETURN_IF_ERROR(checkType(op, "dout", dout, q.dtype(), qs));
  RP_RETURN_IF_ERROR(checkType(op, "dq", dq, q.dtype(), qs));
  RP_RETURN_IF_ERROR(checkType(op, "dk", dk, q.dtype(), ks));
  RP_RETURN_IF_ERROR(checkType(op, "dv", dv, q.dtype(), ks));
  visitFloat(q.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Problem<T> p{qs[0], qs[1], ks[1], qs[1] / ks[1], qs[2], qs[3], scale, causal,
                       q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), dout.data<T>()};
    attentionVjpLoop(p, dq, dk, dv);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
