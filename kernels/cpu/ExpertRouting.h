//===- ExpertRouting.h - Routed experts: sort, dispatch, combine -*- C++ -*-===//
//
// The token permutation of a mixture-of-experts layer in grouped-GEMM form (graph.moe_sort,
// graph.moe_dispatch, graph.moe_combine; docs/dialects/Graph.md):
//
//   moeSort:     indices [T, k] (expert of each choice) -> positions [T, k], offsets [E + 1]
//   moeDispatch: x [T, H], positions -> rows [T * k, H], rows[positions[t, j]] = x[t]
//   moeCombine:  rows [T * k, N], weights [T, k], positions -> y [T, N],
//                y[t] = sum_j weights[t, j] * rows[positions[t, j]] (j ascending)
//
// Every output element is written by one thread in a fixed order: the results do not depend
// on the thread count (no atomics). Floats: f32 or f64; indices, positions, offsets: i64.
//
// Errors: InvalidArgument naming the op and the expected and actual dtype or shape;
// OutOfRange for an expert index outside [0, E) or positions that are not a permutation of
// [0, T * k).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_EXPERTROUTING_H
#define RP_KERNELS_CPU_EXPERTROUTING_H

#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// Stable counting sort of the T * k (token, choice) pairs by expert: pair (t, j) (flat
/// q = t * k + j) goes to row positions[t, j]; expert e's rows are [offsets[e], offsets[e+1]),
/// within it the pairs in ascending q. indices, positions: i64 [T, k]; offsets: i64 [E + 1].
base::Status moeSort(const base::HostTensor &indices, base::HostTensor &positions,
                        base::HostTensor &offsets);

/// rows[positions[t, j]] = x[t]: x [T, H], positions i64 [T, k], rows [T * k, H].
base::Status moeDispatch(const base::HostTensor &x, const base::HostTensor &positions,
                            base::HostTensor &rows);

/// y[t] = sum_{j = 0..k-1} weights[t, j] * rows[positions[t, j]]: rows [T * k, N], weights
/// [T, k] (rows' dtype), positions i64 [T, k], y [T, N].
base::Status moeCombine(const base::HostTensor &rows, const base::HostTensor &weights,
                           const base::HostTensor &positions, base::HostTensor &y);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_EXPERTROUTING_H
