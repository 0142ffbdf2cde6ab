//===- CumSum.h - Cumulative sums on the GPU --------------------*- C++ -*-===//
//
// The GPU kernel of graph.cumsum (ONNX CumSum), with the semantics of the CPU reference kernel
// (kernels/cpu/CumSum.h): along `axis`, each element is the sum of the elements before it
// (and itself unless `exclusive`), from the start, or from the end with `reverse`.
//
// Types: f32, f16, bf16, f64, i64, i32. f32 and f64 sum in double, f16 and bf16 in float,
// integers in 64-bit wrapping arithmetic; each element is rounded once when stored. The sums
// of a lane (every coordinate but the axis fixed) run in position order, as on the CPU, so
// f32 and f64 results are bit-identical to the CPU kernel.
//
// Algorithm: one grid-stride thread per lane walks its run sequentially (cumsumLaneAt, an
// RP_HD body shared by the kernel in CumSum.cu and the host replay). O(n) work, but only
// `lanes` threads: a long axis with few lanes (a cumulative sum over the sequence of one
// row) runs one thread for the whole row. Fine for masks and positions; a parallel scan
// with a fixed combination tree is the next step if a profile shows it.
//
// Errors: the plan returns InvalidArgument with the CPU kernel's messages; the launcher
// returns cudaErrorInvalidValue for a null or misaligned pointer with elements to write,
// otherwise cudaGetLastError() after enqueueing; it never synchronizes. This header contains
// no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_CUMSUM_H
#define RP_KERNELS_CUDA_CUMSUM_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace rp::kernels::cuda {

/// The geometry of one cumsum: x and out are [outer, n, inner] around `axis`; `lanes` =
/// outer * inner runs of `n` elements of `dtype`.
struct CumSumPlan {
  base::DType dtype = base::DType::F32;
  int64_t n = 0, inner = 0, lanes = 0;
  bool exclusive = false, reverse = false;
};

/// Checks a cumsum as cpu::cumsum does: x of `dtype` (f32, f16, bf16, f64, i64 or i32),
/// 0 <= axis < rank, out of x's dtype and shape. Errors: InvalidArgument, e.g. "cumsum: x has
/// dtype i1, expected f32, f16, bf16, f64, i64 or i32", "cumsum: axis 2 is out of range,
/// expected [0, 2)".
base::StatusOr<CumSumPlan> planCumSum(base::DType dtype, const Shape &x, int64_t axis,
                                      bool exclusive, bool reverse, const Shape &out);

/// Enqueues the cumsum on `stream` (device pointers, contiguous, aligned to the element
/// size). Returns cudaErrorInvalidValue for a null or misaligned pointer when there are
/// elements, cudaSuccess when there are none (nothing launched), otherwise
/// cudaGetLastError(). Never synchronizes.
cudaError_t launchCumSum(const CumSumPlan &plan, const void *x, void *out, cudaStream_t stream);

/// Lane `lane` of a cumsum of dtype D: its run, in position order from its start.
template <base::DType D>
RP_HD inline void cumsumLaneAt(const CumSumPlan &plan, const void *x, void *out, int64_t lane) {
  using C = typename DTypeTraits<D>::Compute;
  // Integers add in uint64 (wrapping, no signed overflow); floats in the compute type.
  using Acc = std::conditional_t<std::is_integral_v<C>, uint64_t, C>;
  const int64_t base = (lane / plan.inner) * plan.n * plan.inner + lane % plan.inner;
  Acc sum = Acc(0);
  for (int64_t step = 0; step < plan.n; ++step) {
    const int64_t p = base + (plan.reverse ? plan.n - 1 - step : step) * plan.inner;
    const Acc v = static_cast<Acc>(loadAs<D>(x, p));
    if (!plan.exclusive)
      sum += v;
    if constexpr (std::is_integral_v<C>)
      storeAs<D>(out, p, static_cast<int64_t>(sum));
    else
      storeAs<D>(out, p, sum);
    if (plan.exclusive)
      sum += v;
  }
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

namespace replay {
void cumsum(const CumSumPlan &plan, const void *x, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_CUMSUM_H
