//===- GroupedMatMul.h - Grouped GEMMs over expert row segments -*- C++ -*-===//
//
// graph.grouped_matmul and graph.grouped_matmul_wgrad (docs/dialects/Graph.md): the rows of a
// routed-experts layer sorted by expert (graph.moe_sort), expert e's segment
// [offsets[e], offsets[e + 1]) multiplied by expert e's matrix, and the weight gradient as a
// per-expert sum of outer products. One GEMM call per task (KernelSupport.h's gemm: f32 on the
// project's own sgemm, kernels/cpu/Sgemm.h, or OpenBLAS on a CPU without FMA; f64 on OpenBLAS);
// the tasks (64-row blocks of each segment forward, one expert each for the weight gradient)
// depend only on the offsets, so the results do not depend on the thread count (no atomics,
// fixed summation order).
//
// Floats: f32 or f64 (one dtype for every float tensor); offsets: i64 [E + 1],
// non-decreasing from 0 to R (else OutOfRange naming the first bad entry). Shape and dtype
// errors: InvalidArgument naming the op and the expected and actual type.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_GROUPEDMATMUL_H
#define RP_KERNELS_CPU_GROUPEDMATMUL_H

#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// Rows per task of groupedMatmul (a segment is cut into blocks of this many rows).
constexpr int64_t kGroupedRowBlock = 64;

/// out[r] = rows[r] @ W_e for offsets[e] <= r < offsets[e + 1]: rows [R, K], weights
/// [E, K, N] (`transposeB`: [E, N, K], W_e = weights[e]^T), out [R, N].
base::Status groupedMatmul(const base::HostTensor &rows, const base::HostTensor &weights,
                              const base::HostTensor &offsets, bool transposeB,
                              base::HostTensor &out);

/// out[e] = sum over expert e's rows r of lhs[r]^T rhs[r] (zeros for an empty segment):
/// lhs [R, K], rhs [R, N], out [E, K, N].
base::Status groupedMatmulWgrad(const base::HostTensor &lhs, const base::HostTensor &rhs,
                                   const base::HostTensor &offsets, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_GROUPEDMATMUL_H
