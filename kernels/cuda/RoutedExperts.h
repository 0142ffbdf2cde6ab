//===- RoutedExperts.h - Routed experts in grouped form on the GPU -*- C++ -*-===//
//
// The GPU kernels of graph.moe_sort, moe_dispatch, moe_combine, grouped_matmul and
// grouped_matmul_wgrad, with the semantics of the CPU reference kernels
// (kernels/cpu/ExpertRouting.h, kernels/cpu/GroupedMatMul.h). Floats f32, f16, bf16 or f64
// (computed in their compute type); positions and offsets i64.
//
// Work and determinism (no atomics, no host round trip; every output element has one writer
// that sums in a fixed order):
//   moe_sort      one thread block; thread e counts expert e's pairs into offsets[e + 1],
//                 thread 0 turns the counts into offsets, thread e then places expert e's
//                 pairs in ascending (token, choice) order: O(T k) per thread.
//   moe_dispatch  one thread per copied element.
//   moe_combine   one thread per output element; the k choices summed j = 0 .. k-1.
//   grouped_matmul  one thread per output element: its row's expert found by binary search
//                 of the device offsets, a K-term dot product in order. A first, untiled
//                 kernel: the plan for speed is a tiled grouped GEMM (one thread block per
//                 (expert, 64-row tile), tiles past a segment exit), then cuBLASLt's grouped
//                 GEMM once its per-group pointer arrays can be filled on the device from the
//                 offsets (docs/DECISIONS.md).
//   grouped_matmul_wgrad  one thread per output element of [E, K, N]: the sum over the
//                 expert's segment in row order.
// An expert index outside [0, E) is not checked on the GPU (reading an error word back would
// synchronise the stream): such a pair gets no row. graph.top_k's indices are always in range.
//
// Host verification: the *At bodies are RP_HD code shared by the __global__ kernels
// (RoutedExperts.cu) and kernels/cuda/HostReplay.cpp's replay::moe*/grouped*, which the host
// test (test/Unit/CudaRoutedExpertsHostTest.cpp) compares with the CPU kernels.
//
// Errors: the planners return InvalidArgument for a wrong dtype or shape (naming the op); the
// launchers return cudaErrorInvalidValue for a null or misaligned pointer, otherwise
// cudaGetLastError() after enqueueing; they never synchronize. This header contains no device
// code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ROUTEDEXPERTS_H
#define RP_KERNELS_CUDA_ROUTEDEXPERTS_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// moe_sort: pairs = T * k expert indices, experts = E.
struct MoeSortPlan {
  int64_t pairs = 0, experts = 0;
};

/// moe_dispatch and moe_combine: T tokens, k choices, rows of `width` elements.
struct MoeRowsPlan {
  base::DType dtype = base::DType::F32;
  int64_t tokens = 0, k = 0, width = 0;
};

/// grouped_matmul ([R, K] x [E, K, N] or [E, N, K]) and grouped_matmul_wgrad ([R, K], [R, N]
/// -> [E, K, N]).
struct GroupedPlan {
  base::DType dtype = base::DType::F32;
  int64_t rows = 0, k = 0, n = 0, experts = 0;
  bool transposeB = false;
};

base::StatusOr<MoeSortPlan> planMoeSort(base::DType indices, const Shape &idx,
                                           base::DType positions, const Shape &pos,
                                           base::DType offsets, const Shape &off);
base::StatusOr<MoeRowsPlan> planMoeDispatch(base::DType dtype, const Shape &x,
                                               base::DType positions, const Shape &pos,
                                               base::DType outDType, const Shape &out);
base::StatusOr<MoeRowsPlan> planMoeCombine(base::DType dtype, const Shape &rows,
                                              base::DType weights, const Shape &w,
                                              base::DType positions, const Shape &pos,
                                              base::DType outDType, const Shape &out);
base::StatusOr<GroupedPlan> planGroupedMatmul(base::DType dtype, const Shape &rows,
                                                 base::DType weights, const Shape &w,
                                                 base::DType offsets, const Shape &off,
                                                 bool transposeB, base::DType outDType,
                                                 const Shape &out);
base::StatusOr<GroupedPlan> planGroupedMatmulWgrad(base::DType dtype, const Shape &lhs,
                                                      base::DType rhsDType, const Shape &rhs,
                                                      base::DType offsets, const Shape &off,
                                                      base::DType outDType, const Shape &out);

cudaError_t launchMoeSort(const MoeSortPlan &plan, const void *indices, void *positions,
                          void *offsets, cudaStream_t stream);
cudaError_t launchMoeDispatch(const MoeRowsPlan &plan, const void *x, const void *positions,
                              void *out, cudaStream_t stream);
cudaError_t launchMoeCombine(const MoeRowsPlan &plan, const void *rows, const void *weights,
                             const void *positions, void *out, cudaStream_t stream);
cudaError_t launchGroupedMatmul(const GroupedPlan &plan, const void *rows, const void *weights,
                                const void *offsets, void *out, cudaStream_t stream);
cudaError_t launchGroupedMatmulWgrad(const GroupedPlan &plan, const void *lhs, const void *rhs,
                                     const void *offsets, void *out, cudaStream_t stream);

/// moe_sort, phase 1 for expert e: its pair count.
RP_HD inline int64_t moeSortCountAt(const MoeSortPlan &p, const int64_t *idx, int64_t e) {
  int64_t count = 0;
  for (int64_t q = 0; q < p.pairs; ++q)
    count += idx[q] == e ? 1 : 0;
  return count;
}

/// moe_sort, phase 2 (serial): counts in off[1 .. E] -> offsets.
RP_HD inline void moeSortPrefix(const MoeSortPlan &p, int64_t *off) {
  off[0] = 0;
  for (int64_t e = 0; e < p.experts; ++e)
    off[e + 1] += off[e];
}

/// moe_sort, phase 3 for expert e: its pairs' rows from offsets[e], ascending pair order.
RP_HD inline void moeSortPlaceAt(const MoeSortPlan &p, const int64_t *idx, const int64_t *off,
                                 int64_t *pos, int64_t e) {
  int64_t next = off[e];
  for (int64_t q = 0; q < p.pairs; ++q)
    if (idx[q] == e)
      pos[q] = next++;
}

/// moe_dispatch, element i of the [T * k, width] result's source order: pair q = i / width.
template <base::DType D>
RP_HD inline void moeDispatchAt(const MoeRowsPlan &p, const void *x, const int64_t *pos,
                                void *out, int64_t i) {
  const int64_t q = i / p.width, c = i % p.width;
  storeAs<D>(out, pos[q] * p.width + c, loadAs<D>(x, (q / p.k) * p.width + c));
}

/// moe_combine, element i = (t, c) of the [T, width] result.
template <base::DType D>
RP_HD inline void moeCombineAt(const MoeRowsPlan &p, const void *rows, const void *w,
                               const int64_t *pos, void *out, int64_t i) {
  const int64_t t = i / p.width, c = i % p.width;
  typename DTypeTraits<D>::Compute sum = 0;
  for (int64_t j = 0; j < p.k; ++j)
    sum += loadAs<D>(w, t * p.k + j) * loadAs<D>(rows, pos[t * p.k + j] * p.width + c);
  storeAs<D>(out, i, sum);
}

/// The expert whose segment holds row r: the last e with off[e] <= r (binary search).
RP_HD inline int64_t groupOfRow(const int64_t *off, int64_t experts, int64_t r) {
  int64_t lo = 0, hi = experts - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (off[mid] <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// grouped_matmul, element i = (r, c) of the [R, N] result.
template <base::DType D>
RP_HD inline void groupedMatmulAt(const GroupedPlan &p, const void *a, const void *w,
                                  const int64_t *off, void *out, int64_t i) {
  const int64_t r = i / p.n, c = i % p.n;
  const int64_t e = groupOfRow(off, p.experts, r);
  const int64_t base = e * p.k * p.n;
  typename DTypeTraits<D>::Compute sum = 0;
  for (int64_t j = 0; j < p.k; ++j)
    sum += loadAs<D>(a, r * p.k + j) *
           loadAs<D>(w, base + (p.transposeB ? c * p.k + j : j * p.n + c));
  storeAs<D>(out, i, sum);
}

/// grouped_matmul_wgrad, element i = (e, j, c) of the [E, K, N] result.
template <base::DType D>
RP_HD inline void groupedWgradAt(const GroupedPlan &p, const void *a, const void *b,
                                 const int64_t *off, void *out, int64_t i) {
  const int64_t e = i / (p.k * p.n), j = (i / p.n) % p.k, c = i % p.n;
  typename DTypeTraits<D>::Compute sum = 0;
  for (int64_t r = off[e]; r < off[e + 1]; ++r)
    sum += loadAs<D>(a, r * p.k + j) * loadAs<D>(b, r * p.n + c);
  storeAs<D>(out, i, sum);
}

namespace replay {
/// The launchers' work on the host (kernels/cuda/HostReplay.h).
void moeSort(const MoeSortPlan &plan, const void *indices, void *positions, void *offsets);
void moeDispatch(const MoeRowsPlan &plan, const void *x, const void *positions, void *out);
void moeCombine(const MoeRowsPlan &plan, const void *rows, const void *weights,
                const void *positions, void *out);
void groupedMatmul(const GroupedPlan &plan, const void *rows, const void *weights,
                   const void *offsets, void *out);
void groupedMatmulWgrad(const GroupedPlan &plan, const void *lhs, const void *rhs,
                        const void *offsets, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ROUTEDEXPERTS_H
