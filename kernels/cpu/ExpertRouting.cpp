//===- ExpertRouting.cpp - Routed experts: sort, dispatch, combine --------===//

#include "kernels/cpu/ExpertRouting.h"

#include "kernels/cpu/KernelSupport.h"

#include <cstring>
#include <string>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;

namespace {

/// positions is i64 [T, k] with T * k == rows and a permutation of [0, rows).
Status checkPositions(const char *op, const HostTensor &positions, int64_t tokens,
                      int64_t rows) {
  if (positions.dtype() != DType::I64 || positions.rank() != 2 || positions.dim(0) != tokens ||
      positions.dim(0) * positions.dim(1) != rows)
    return base::invalidArgument(std::string(op) + ": positions is " +
                                    std::string(base::dtypeName(positions.dtype())) +
                                    formatShape(positions.shape()) + ", expected i64[" +
                                    std::to_string(tokens) + ", k] with " +
                                    std::to_string(tokens) + " * k = " + std::to_string(rows));
  std::vector<char> seen(static_cast<size_t>(rows), 0);
  const int64_t *p = positions.data<int64_t>();
  for (int64_t q = 0; q < rows; ++q) {
    if (p[q] < 0 || p[q] >= rows || seen[p[q]])
      return base::outOfRange(std::string(op) + ": positions" +
                                 formatIndex(q, positions.shape()) + " = " +
                                 std::to_string(p[q]) + " is not part of a permutation of [0, " +
                                 std::to_string(rows) + ")");
    seen[p[q]] = 1;
  }
  return okStatus();
}

template <typename T> void dispatchLoop(const HostTensor &x, const int64_t *pos, int64_t k,
                                        HostTensor &rows) {
  const int64_t tokens = x.dim(0), h = x.dim(1);
  const T *src = x.data<T>();
  T *dst = rows.data<T>();
#pragma omp parallel for schedule(static) if (rows.numElements() >= kParallelMinElements)
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(dst + pos[t * k + j] * h, src + t * h, sizeof(T) * static_cast<size_t>(h));
}

template <typename T> void combineLoop(const HostTensor &rows, const HostTensor &w,
                                       const int64_t *pos, HostTensor &y) {
  const int64_t tokens = y.dim(0), n = y.dim(1), k = w.dim(1);
  const T *src = rows.data<T>(), *wt = w.data<T>();
  T *dst = y.data<T>();
#pragma omp parallel for schedule(static) if (rows.numElements() >= kParallelMinElements)
  for (int64_t t = 0; t < tokens; ++t) {
    T *out = dst + t * n;
    for (int64_t c = 0; c < n; ++c)
      out[c] = T(0);
    for (int64_t j = 0; j < k; ++j) {
      const T a = wt[t * k + j];
      const T *row = src + pos[t * k + j] * n;
      for (int64_t c = 0; c < n; ++c)
        out[c] += a * row[c];
    }
  }
}

} // namespace

Status moeSort(const HostTensor &indices, HostTensor &positions, HostTensor &offsets) {
  const char *op = "moe_sort";
  if (indices.rank() != 2)
    return base::invalidArgument(std::string(op) + ": indices is " +
                                    formatShape(indices.shape()) + ", expected rank 2 [T, k]");
  RP_RETURN_IF_ERROR(checkType(op, "indices", indices, DType::I64, indices.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "positions", positions, DType::I64, indices.shape()));
  if (offsets.dtype() != DType::I64 || offsets.rank() != 1 || offsets.dim(0) < 2)
    return base::invalidArgument(std::string(op) + ": offsets is " +
                                    std::string(base::dtypeName(offsets.dtype())) +
                                    formatShape(offsets.shape()) + ", expected i64[E + 1], E >= 1");
  const int64_t experts = offsets.dim(0) - 1, pairs = indices.numElements();
  const int64_t *idx = indices.data<int64_t>();
  int64_t *off = offsets.data<int64_t>(), *pos = positions.data<int64_t>();
  std::vector<int64_t> count(static_cast<size_t>(experts) + 1, 0);
  for (int64_t q = 0; q < pairs; ++q) {
    if (idx[q] < 0 || idx[q] >= experts)
      return base::outOfRange(std::string(op) + ": indices" + formatIndex(q, indices.shape()) +
                                 " = " + std::to_string(idx[q]) + " is outside [0, " +
                                 std::to_string(experts) + ")");
    ++count[idx[q] + 1];
  }
  for (int64_t e = 0; e < experts; ++e)
    count[e + 1] += count[e];
  for (int64_t e = 0; e <= experts; ++e)
    off[e] = count[e];
  // count[e] is now expert e's next free row; ascending q keeps the sort stable.
  for (int64_t q = 0; q < pairs; ++q)
    pos[q] = count[idx[q]]++;
  return okStatus();
}

Status moeDispatch(const HostTensor &x, const HostTensor &positions, HostTensor &rows) {
  const char *op = "moe_dispatch";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kFloatTypes));
  if (x.rank() != 2 || positions.rank() != 2)
    return base::invalidArgument(std::string(op) + ": expected x [T, H] and positions [T, k], "
                                    "got " + formatShape(x.shape()) + " and " +
                                    formatShape(positions.shape()));
  const int64_t k = positions.dim(1);
  RP_RETURN_IF_ERROR(checkType(op, "rows", rows, x.dtype(), {x.dim(0) * k, x.dim(1)}));
  RP_RETURN_IF_ERROR(checkPositions(op, positions, x.dim(0), rows.dim(0)));
  visitFloat(x.dtype(), [&](auto tag) {
    dispatchLoop<typename decltype(tag)::type>(x, positions.data<int64_t>(), k, rows);
  });
  return okStatus();
}

Status moeCombine(const HostTensor &rows, const HostTensor &weights, const HostTensor &positions,
                  HostTensor &y) {
  const char *op = "moe_combine";
  RP_RETURN_IF_ERROR(checkDType(op, "rows", rows, kFloatTypes));
  if (rows.rank() != 2 || positions.rank() != 2)
    return base::invalidArgument(std::string(op) + ": expected rows [T * k, N] and positions "
                                    "[T, k], got " + formatShape(rows.shape()) + " and " +
                                    formatShape(positions.shape()));
  const int64_t tokens = positions.dim(0);
  RP_RETURN_IF_ERROR(checkType(op, "weights", weights, rows.dtype(), positions.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "y", y, rows.dtype(), {tokens, rows.dim(1)}));
  RP_RETURN_IF_ERROR(checkPositions(op, positions, tokens, rows.dim(0)));
  visitFloat(rows.dtype(), [&](auto tag) {
    combineLoop<typename decltype(tag)::type>(rows, weights, positions.data<int64_t>(), y);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
