//===- GroupedMatMul.cpp - Grouped GEMMs over expert row segments ---------===//

#include "kernels/cpu/GroupedMatMul.h"

#include "kernels/cpu/KernelSupport.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;

namespace {

/// offsets is i64 [E + 1], E >= 1, non-decreasing from 0 to `rows`.
Status checkOffsets(const char *op, const HostTensor &offsets, int64_t rows) {
  if (offsets.dtype() != DType::I64 || offsets.rank() != 1 || offsets.dim(0) < 2)
    return base::invalidArgument(std::string(op) + ": offsets is " +
                                    std::string(base::dtypeName(offsets.dtype())) +
                                    formatShape(offsets.shape()) + ", expected i64[E + 1], E >= 1");
  const int64_t *off = offsets.data<int64_t>();
  const int64_t n = offsets.dim(0);
  for (int64_t e = 0; e < n; ++e) {
    const int64_t want = e == 0 ? 0 : off[e - 1];
    const bool bad = e == 0 ? off[0] != 0 : off[e] < want || off[e] > rows;
    if (bad || (e == n - 1 && off[e] != rows))
      return base::outOfRange(std::string(op) + ": offsets[" + std::to_string(e) + "] = " +
                                 std::to_string(off[e]) + "; expected non-decreasing offsets "
                                 "from 0 to " + std::to_string(rows) + " (the rows)");
  }
  return okStatus();
}

/// The (expert, first row) of every kGroupedRowBlock-row block of every segment.
std::vector<std::pair<int64_t, int64_t>> rowBlocks(const int64_t *off, int64_t experts) {
  std::vector<std::pair<int64_t, int64_t>> blocks;
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = off[e]; r < off[e + 1]; r += kGroupedRowBlock)
      blocks.emplace_back(e, r);
  return blocks;
}

template <typename T>
void forwardLoop(const HostTensor &rows, const HostTensor &w, const int64_t *off, bool tb,
                 HostTensor &out) {
  const int64_t experts = w.dim(0), k = rows.dim(1), n = out.dim(1);
  const std::vector<std::pair<int64_t, int64_t>> blocks = rowBlocks(off, experts);
  const T *a = rows.data<T>(), *b = w.data<T>();
  T *c = out.data<T>();
  const int64_t count = static_cast<int64_t>(blocks.size());
  const bool parallel = rows.numElements() * n >= kParallelMinElements;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < count; ++i) {
    const auto [e, r0] = blocks[i];
    const int64_t m = std::min(kGroupedRowBlock, off[e + 1] - r0);
    gemm(false, tb, m, n, k, T(1), a + r0 * k, k, b + e * k * n, tb ? k : n, T(0), c + r0 * n, n);
  }
}

template <typename T>
void wgradLoop(const HostTensor &lhs, const HostTensor &rhs, const int64_t *off,
               HostTensor &out) {
  const int64_t experts = out.dim(0), k = lhs.dim(1), n = rhs.dim(1);
  const T *a = lhs.data<T>(), *b = rhs.data<T>();
  T *c = out.data<T>();
  const bool parallel = lhs.numElements() * n >= kParallelMinElements;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t len = off[e + 1] - off[e];
    T *ce = c + e * k * n;
    if (len == 0) {
      std::fill(ce, ce + k * n, T(0));
      continue;
    }
    gemm(true, false, k, n, len, T(1), a + off[e] * k, k, b + off[e] * n, n, T(0), ce, n);
  }
}

} // namespace

Status groupedMatmul(const HostTensor &rows, const HostTensor &weights, const HostTensor &offsets,
                     bool transposeB, HostTensor &out) {
  const char *op = "grouped_matmul";
  RP_RETURN_IF_ERROR(checkDType(op, "rows", rows, kFloatTypes));
  if (rows.rank() != 2 || weights.rank() != 3)
    return base::invalidArgument(std::string(op) + ": expected rows [R, K] and weights of "
                                    "rank 3, got " + formatShape(rows.shape()) + " and " +
                                    formatShape(weights.shape()));
  const int64_t k = rows.dim(1), n = weights.dim(transposeB ? 1 : 2);
  Shape want = transposeB ? Shape{weights.dim(0), n, k} : Shape{weights.dim(0), k, n};
  RP_RETURN_IF_ERROR(checkType(op, "weights", weights, rows.dtype(), want));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, rows.dtype(), {rows.dim(0), n}));
  RP_RETURN_IF_ERROR(checkOffsets(op, offsets, rows.dim(0)));
  if (offsets.dim(0) != weights.dim(0) + 1)
    return base::invalidArgument(std::string(op) + ": offsets has " +
                                    std::to_string(offsets.dim(0)) + " entries, expected " +
                                    std::to_string(weights.dim(0) + 1) + " (experts + 1)");
  visitFloat(rows.dtype(), [&](auto tag) {
    forwardLoop<typename decltype(tag)::type>(rows, weights, offsets.data<int64_t>(), transposeB,
                                              out);
  });
  return okStatus();
}

Status groupedMatmulWgrad(const HostTensor &lhs, const HostTensor &rhs, const HostTensor &offsets,
                          HostTensor &out) {
  const char *op = "grouped_matmul_wgrad";
  RP_RETURN_IF_ERROR(checkDType(op, "lhs", lhs, kFloatTypes));
  if (lhs.rank() != 2 || rhs.rank() != 2 || lhs.dim(0) != rhs.dim(0))
    return base::invalidArgument(std::string(op) + ": expected lhs [R, K] and rhs [R, N], got " +
                                    formatShape(lhs.shape()) + " and " +
                                    formatShape(rhs.shape()));
  RP_RETURN_IF_ERROR(checkSameDType(op, "lhs", lhs, "rhs", rhs));
  RP_RETURN_IF_ERROR(checkOffsets(op, offsets, lhs.dim(0)));
  RP_RETURN_IF_ERROR(
      checkType(op, "out", out, lhs.dtype(), {offsets.dim(0) - 1, lhs.dim(1), rhs.dim(1)}));
  visitFloat(lhs.dtype(), [&](auto tag) {
    wgradLoop<typename decltype(tag)::type>(lhs, rhs, offsets.data<int64_t>(), out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
