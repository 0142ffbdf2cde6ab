//===- LinearCrossEntropy.cpp - Fused LM head + cross-entropy (CPU) -------===//

#include "kernels/cpu/LinearCrossEntropy.h"

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cpu/Sgemm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <omp.h>

namespace rp::kernels::cpu {

using namespace detail;
using base::invalidArgument;
using base::okStatus;
using base::outOfRange;

namespace {

constexpr int kLanes = 8;

/// sum_i a[i] b[i] in T: lane j sums the indices i = j (mod 8) in order, then lanes 0..7.
template <typename T>
T dot8(const T *a, const T *b, int64_t n) {
  T lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lane[j] += a[i + j] * b[i + j];
  for (int j = 0; i < n; ++i, ++j)
    lane[j] += a[i] * b[i];
  T s = 0;
  for (int j = 0; j < kLanes; ++j)
    s += lane[j];
  return s;
}

/// The checked problem: sizes, the labels widened to int64, the kept rows.
struct Problem {
  int64_t rows = 0, width = 0, vocab = 0, chunk = 0, kept = 0, ignoreIndex = 0;
  LossReduction reduction = LossReduction::Mean;
  std::vector<int64_t> labels;
  bool keep(int64_t r) const { return labels[r] != ignoreIndex; }
};

template <typename L>
Status loadLabels(const char *op, const HostTensor &labels, Problem &p) {
  const L *y = labels.data<L>();
  p.labels.resize(static_cast<size_t>(p.rows));
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t l = y[i];
    if (l != p.ignoreIndex && (l < 0 || l >= p.vocab))
      return outOfRange(std::string(op) + ": label " + std::to_string(l) + " at position " +
                        std::to_string(i) + " is outside [0, " + std::to_string(p.vocab) +
                        ") and is not ignore_index (" + std::to_string(p.ignoreIndex) + ")");
    p.labels[i] = l;
    p.kept += l != p.ignoreIndex;
  }
  return okStatus();
}

Status prepare(const char *op, const HostTensor &hidden, const HostTensor &weight,
               const HostTensor &labels, int64_t ignoreIndex, LossReduction reduction,
               int64_t chunkRows, const HostTensor &loss, Problem &p) {
  RP_RETURN_IF_ERROR(checkDType(op, "hidden", hidden, kFloatTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "hidden", hidden, "weight", weight));
  RP_RETURN_IF_ERROR(checkDType(op, "labels", labels, kIndexTypes));
  if (hidden.rank() != 2 || weight.rank() != 2 || weight.dim(1) != hidden.dim(1))
    return invalidArgument(std::string(op) + ": expected hidden [N, H] and weight [V, H], got " +
                           hidden.typeString() + " and " + weight.typeString());
  RP_RETURN_IF_ERROR(checkType(op, "labels", labels, labels.dtype(), {hidden.dim(0)}));
  RP_RETURN_IF_ERROR(checkType(op, "loss", loss, hidden.dtype(), {}));
  if (chunkRows < 0)
    return invalidArgument(std::string(op) + ": chunk_rows must be >= 0, got " +
                           std::to_string(chunkRows));
  p.rows = hidden.dim(0);
  p.width = hidden.dim(1);
  p.vocab = weight.dim(0);
  p.ignoreIndex = ignoreIndex;
  p.reduction = reduction;
  p.chunk = chunkRows > 0 ? std::min(chunkRows, std::max<int64_t>(p.rows, 1))
                          : defaultChunkRows(p.rows, p.vocab);
  if (labels.dtype() == DType::I64)
    return loadLabels<int64_t>(op, labels, p);
  return loadLabels<int32_t>(op, labels, p);
}

/// logits[r - r0, v] = hidden[r] . weight[v] (+ bias[v], added in T to the rounded dot
/// product, as matmul then add) for the rows [r0, r0 + c).
template <typename T>
void chunkLogits(const Problem &p, const T *h, const T *w, const T *bias, int64_t r0, int64_t c,
                 T *logits) {
  const int64_t H = p.width, V = p.vocab;
#pragma omp parallel for schedule(static) if (c * V * H >= kParallelMinElements)
  for (int64_t v = 0; v < V; ++v)
    for (int64_t r = 0; r < c; ++r) {
      const T x = dot8(h + (r0 + r) * H, w + v * H, H);
      logits[r * V + v] = bias ? x + bias[v] : x;
    }
}

/// Row r's loss from its logits x (double); with `scale`, overwrites x by the gradient row
/// (softmax - onehot) * scale, rounded to T per element.
/// (Each e^(x - max) is computed once and kept for the gradient row.)
template <typename T>
double rowLoss(const Problem &p, T *x, int64_t label, const T *scale) {
  thread_local std::vector<double> e;
  e.resize(static_cast<size_t>(p.vocab));
  double m = -INFINITY;
  for (int64_t v = 0; v < p.vocab; ++v)
    m = std::fmax(m, static_cast<double>(x[v]));
  double sum = 0.0;
  for (int64_t v = 0; v < p.vocab; ++v) {
    e[v] = std::exp(static_cast<double>(x[v]) - m);
    sum += e[v];
  }
  const double loss = m + std::log(sum) - static_cast<double>(x[label]);
  if (scale)
    for (int64_t v = 0; v < p.vocab; ++v) {
      const T prob = static_cast<T>(e[v] / sum);
      x[v] = (prob - static_cast<T>(v == label ? 1 : 0)) * *scale;
    }
  return loss;
}

/// The gradient rows' scale, seed (/ kept rows for a mean; 0 without a seed), after zeroing
/// the accumulated dweight and dbias (when not null).
template <typename T> T startGrads(const Problem &p, const T *seed, T *dw, T *db) {
  if (dw)
    std::fill(dw, dw + p.vocab * p.width, T(0));
  if (db)
    std::fill(db, db + p.vocab, T(0));
  if (!seed)
    return T(0);
  return p.reduction == LossReduction::Mean ? *seed / static_cast<T>(p.kept + (p.kept == 0))
                                            : *seed;
}

/// The loss from the kept rows' losses (double, summed in row order): their sum, or their
/// mean (0/0: NaN when every row is ignored), rounded to T.
template <typename T> T finishLoss(const Problem &p, const std::vector<double> &losses) {
  double total = 0.0;
  for (int64_t r = 0; r < p.rows; ++r)
    if (p.keep(r))
      total += losses[r];
  return static_cast<T>(p.reduction == LossReduction::Sum ? total
                                                          : total / static_cast<double>(p.kept));
}

/// The gradients of one chunk from its gradient rows g: dhidden rows (overwritten), dweight
/// and (when not null) dbias (accumulated in row order; the ignored rows, whose g is 0, are
/// skipped).
template <typename T>
void chunkGrads(const Problem &p, const T *h, const T *w, int64_t r0, int64_t c, const T *g,
                T *dh, T *dw, T *db) {
  const int64_t H = p.width, V = p.vocab;
#pragma omp parallel for schedule(static) if (c * V * H >= kParallelMinElements)
  for (int64_t r = 0; r < c; ++r) {
    T *out = dh + (r0 + r) * H;
    std::fill(out, out + H, T(0));
    if (!p.keep(r0 + r))
      continue;
    const T *gr = g + r * V;
    for (int64_t v = 0; v < V; ++v) {
      const T a = gr[v];
      const T *wv = w + v * H;
      for (int64_t k = 0; k < H; ++k)
        out[k] += a * wv[k];
    }
  }
#pragma omp parallel for schedule(static) if (c * V * H >= kParallelMinElements)
  for (int64_t v = 0; v < V; ++v) {
    T *out = dw + v * H;
    for (int64_t r = 0; r < c; ++r) {
      if (!p.keep(r0 + r))
        continue;
      const T a = g[r * V + v];
      const T *hr = h + (r0 + r) * H;
      for (int64_t k = 0; k < H; ++k)
        out[k] += a * hr[k];
      if (db)
        db[v] += a;
    }
  }
}

/// The chunks in order: the loss, and with `seed` the gradients into dh and dw (and db when
/// there is a bias).
template <typename T>
void run(const Problem &p, const T *h, const T *w, const T *bias, const T *seed, T *loss, T *dh,
         T *dw, T *db) {
  std::vector<T> logits(static_cast<size_t>(p.chunk * p.vocab));
  std::vector<double> losses(static_cast<size_t>(p.rows), 0.0);
  const T scale = startGrads(p, seed, dw, db);
  for (int64_t r0 = 0; r0 < p.rows; r0 += p.chunk) {
    const int64_t c = std::min(p.chunk, p.rows - r0);
    chunkLogits(p, h, w, bias, r0, c, logits.data());
#pragma omp parallel for schedule(static) if (c * p.vocab >= kParallelMinElements)
    for (int64_t r = 0; r < c; ++r)
      if (p.keep(r0 + r))
        losses[r0 + r] = rowLoss(p, logits.data() + r * p.vocab, p.labels[r0 + r],
                                 seed ? &scale : nullptr);
    if (seed)
      chunkGrads(p, h, w, r0, c, logits.data(), dh, dw, db);
  }
  *loss = finishLoss<T>(p, losses);
}

/// Runs fn(begin, end) over [0, rows) in bands (multiples of 8 rows), one per OpenMP thread
/// when the work (multiply-adds) is large enough. Each output row is computed by one sgemm
/// chain whatever the bands, so they change no bit.
template <typename Fn>
void inBands(int64_t rows, int64_t work, Fn fn) {
  const int threads = work >= kParallelMinElements * 8 ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t band = ((rows + threads - 1) / threads + 7) / 8 * 8;
  const int64_t bands = band > 0 ? (rows + band - 1) / band : 0;
#pragma omp parallel for schedule(static) if (threads > 1 && bands > 1)
  for (int64_t b = 0; b < bands; ++b)
    fn(b * band, std::min(rows, (b + 1) * band));
}

/// f32 on the kernels' own sgemm (Sgemm.h): per chunk, the kept rows are packed together
/// (hk), logits = hk W^T (+ bias, added to the rounded product), and with `seed` dh rows =
/// G W and dW += G^T hk, dW's chains continuing over the chunks (sgemmAccumulate), and dbias
/// += the column sums of G in row order, so chunking changes no bit.
void runSgemm(const Problem &p, const float *h, const float *w, const float *bias,
              const float *seed, float *loss, float *dh, float *dw, float *db) {
  const int64_t H = p.width, V = p.vocab;
  std::vector<float> hk(static_cast<size_t>(p.chunk * H)), logits(static_cast<size_t>(p.chunk * V));
  std::vector<float> dhk(seed ? static_cast<size_t>(p.chunk * H) : 0);
  std::vector<double> losses(static_cast<size_t>(p.rows), 0.0);
  std::vector<int64_t> kept;
  const float scale = startGrads(p, seed, dw, db);
  if (dh)
    std::fill(dh, dh + p.rows * H, 0.0f); // ignored rows keep 0
  for (int64_t r0 = 0; r0 < p.rows; r0 += p.chunk) {
    kept.clear();
    for (int64_t r = r0; r < std::min(p.rows, r0 + p.chunk); ++r)
      if (p.keep(r))
        kept.push_back(r);
    const int64_t ck = static_cast<int64_t>(kept.size());
    for (int64_t i = 0; i < ck; ++i)
      std::copy(h + kept[i] * H, h + (kept[i] + 1) * H, hk.begin() + i * H);
    inBands(ck, ck * V * H, [&](int64_t i0, int64_t i1) {
      sgemm(false, true, i1 - i0, V, H, 1.0f, hk.data() + i0 * H, H, w, H, 0.0f,
            logits.data() + i0 * V, V);
      if (bias)
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t v = 0; v < V; ++v)
            logits[i * V + v] += bias[v];
    });
#pragma omp parallel for schedule(static) if (ck * V >= kParallelMinElements)
    for (int64_t i = 0; i < ck; ++i)
      losses[kept[i]] = rowLoss(p, logits.data() + i * V, p.labels[kept[i]], seed ? &scale : nullptr);
    if (!seed || ck == 0)
      continue;
    inBands(ck, ck * V * H, [&](int64_t i0, int64_t i1) {
      sgemm(false, false, i1 - i0, H, V, 1.0f, logits.data() + i0 * V, V, w, H, 0.0f,
            dhk.data() + i0 * H, H);
      for (int64_t i = i0; i < i1; ++i)
        std::copy(dhk.begin() + i * H, dhk.begin() + (i + 1) * H, dh + kept[i] * H);
    });
    inBands(V, ck * V * H, [&](int64_t v0, int64_t v1) {
      sgemmAccumulate(true, false, v1 - v0, H, ck, logits.data() + v0, V, hk.data(), H,
                      dw + v0 * H, H);
      if (db)
        for (int64_t i = 0; i < ck; ++i)
          for (int64_t v = v0; v < v1; ++v)
            db[v] += logits[i * V + v];
    });
  }
  *loss = finishLoss<float>(p, losses);
}

/// The f32 kernels take runSgemm on a CPU with FMA, the loops of run otherwise (and for f64).
template <typename T>
void dispatch(const Problem &p, const T *h, const T *w, const T *bias, const T *seed, T *loss,
              T *dh, T *dw, T *db) {
  if constexpr (std::is_same_v<T, float>)
    if (sgemmAvailable())
      return runSgemm(p, h, w, bias, seed, loss, dh, dw, db);
  run<T>(p, h, w, bias, seed, loss, dh, dw, db);
}

/// bias (when given) of hidden's dtype and shape [V].
Status checkBias(const char *op, const HostTensor &hidden, const Problem &p,
                 const HostTensor *bias) {
  return bias ? checkType(op, "bias", *bias, hidden.dtype(), {p.vocab}) : okStatus();
}

template <typename T> const T *dataOrNull(const HostTensor *t) {
  return t ? t->data<T>() : nullptr;
}

} // namespace

Status linearCrossEntropy(const HostTensor &hidden, const HostTensor &weight,
                          const HostTensor &labels, int64_t ignoreIndex, LossReduction reduction,
                          int64_t chunkRows, HostTensor &loss, const HostTensor *bias) {
  const char *op = "linear_cross_entropy";
  Problem p;
  RP_RETURN_IF_ERROR(
      prepare(op, hidden, weight, labels, ignoreIndex, reduction, chunkRows, loss, p));
  RP_RETURN_IF_ERROR(checkBias(op, hidden, p, bias));
  visitFloat(hidden.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch<T>(p, hidden.data<T>(), weight.data<T>(), dataOrNull<T>(bias), nullptr,
                loss.data<T>(), nullptr, nullptr, nullptr);
  });
  return okStatus();
}

Status linearCrossEntropyVjp(const HostTensor &hidden, const HostTensor &weight,
                             const HostTensor &labels, const HostTensor &seed,
                             int64_t ignoreIndex, LossReduction reduction, int64_t chunkRows,
                             HostTensor &loss, HostTensor &dhidden, HostTensor &dweight,
                             const HostTensor *bias, HostTensor *dbias) {
  const char *op = "linear_cross_entropy_vjp";
  Problem p;
  RP_RETURN_IF_ERROR(
      prepare(op, hidden, weight, labels, ignoreIndex, reduction, chunkRows, loss, p));
  RP_RETURN_IF_ERROR(checkType(op, "seed", seed, hidden.dtype(), {}));
  RP_RETURN_IF_ERROR(checkType(op, "dhidden", dhidden, hidden.dtype(), hidden.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "dweight", dweight, weight.dtype(), weight.shape()));
  if ((bias == nullptr) != (dbias == nullptr))
    return invalidArgument(std::string(op) + ": bias and dbias come together");
  RP_RETURN_IF_ERROR(checkBias(op, hidden, p, bias));
  if (dbias)
    RP_RETURN_IF_ERROR(checkType(op, "dbias", *dbias, hidden.dtype(), {p.vocab}));
  visitFloat(hidden.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch<T>(p, hidden.data<T>(), weight.data<T>(), dataOrNull<T>(bias), seed.data<T>(),
                loss.data<T>(), dhidden.data<T>(), dweight.data<T>(),
                dbias ? dbias->data<T>() : nullptr);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
