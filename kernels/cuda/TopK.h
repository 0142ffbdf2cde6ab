//===- TopK.h - The indices of the k largest elements on the GPU -*- C++ -*-===//
//
// The GPU kernel of graph.top_k (ONNX TopK's indices; torch.topk), with the semantics of the
// CPU reference kernel (kernels/cpu/TopK.h): along `axis`, the positions of the k largest (or,
// with `smallest`, k smallest) elements, best first; ties keep the lower position first; NaN
// ranks above every number. Input f32, f16, bf16 or f64 (compared in its compute type, which
// orders exactly as the stored values); output i64.
//
// Work and determinism: one thread per row (a line along `axis`); pick j is the best element
// ranking after pick j - 1 in the strict total order (value, then position), found by one scan
// of the row: O(k * n) comparisons per row, no shared state, no atomics. The order is total,
// so the result is unique and equals the CPU kernel's partial sort bit for bit. Routers rank
// tens to hundreds of experts (n) for a handful of picks (k); a long row (vocabulary-sized)
// with a large k would want a block-wide selection instead.
//
// Host verification: topKRowAt is RP_HD code shared by the __global__ kernel (TopK.cu) and
// replay::topK (HostReplay.cpp), which the host test (test/Unit/CudaTopKHostTest.cpp) compares
// with cpu::topK. Only the launch geometry is left to the device test.
//
// Errors: planTopK returns InvalidArgument with the CPU kernel's messages (dtype, axis, k,
// out's type); launchTopK returns cudaErrorInvalidValue for a null or misaligned pointer that
// would be used, otherwise cudaGetLastError() after enqueueing; it never synchronizes. This
// header contains no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_TOPK_H
#define RP_KERNELS_CUDA_TOPK_H

#include "kernels/TopKOrder.h"
#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// The geometry of one top_k: the input is [outer, n, inner] around `axis` (rows = outer *
/// inner lines of n), the output [outer, k, inner].
struct TopKPlan {
  base::DType dtype = base::DType::F32;
  int64_t outer = 0, n = 0, inner = 0, k = 0, rows = 0;
  bool largest = true;
};

/// Checks top_k's operands as cpu::topK does: x float (f32, f16, bf16, f64), 0 <= axis <
/// rank, 1 <= k <= x[axis], out i64 of x's shape with k along axis. Errors: InvalidArgument,
/// e.g. "top_k: k = 5 is outside [1, 4] for x of shape [3, 4] on axis 1".
base::StatusOr<TopKPlan> planTopK(base::DType dtype, const Shape &x, int64_t k,
                                     int64_t axis, bool largest, base::DType outDType,
                                     const Shape &out);

/// Enqueues the top_k on `stream`: x (plan.dtype), out (i64).
cudaError_t launchTopK(const TopKPlan &plan, const void *x, void *out, cudaStream_t stream);

/// Row r of top_k: k scans of the row, pick j the best element ranking after pick j - 1.
template <base::DType D>
RP_HD inline void topKRowAt(const TopKPlan &plan, const void *x, void *out, int64_t r) {
  const int64_t o = r / plan.inner, i = r % plan.inner;
  const int64_t base = o * plan.n * plan.inner + i;
  int64_t *dst = static_cast<int64_t *>(out);
  using C = typename DTypeTraits<D>::Compute;
  int64_t prev = -1;
  C prevValue = C(0);
  for (int64_t j = 0; j < plan.k; ++j) {
    int64_t best = -1;
    C bestValue = C(0);
    for (int64_t c = 0; c < plan.n; ++c) {
      const C v = loadAs<D>(x, base + c * plan.inner);
      if (prev >= 0 && !topKRanksBefore(prevValue, prev, v, c, plan.largest))
        continue;
      if (best < 0 || topKRanksBefore(v, c, bestValue, best, plan.largest)) {
        best = c;
        bestValue = v;
      }
    }
    dst[(o * plan.k + j) * plan.inner + i] = best;
    prev = best;
    prevValue = bestValue;
  }
}

namespace replay {
/// launchTopK's work on the host (kernels/cuda/HostReplay.h).
void topK(const TopKPlan &plan, const void *x, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_TOPK_H
