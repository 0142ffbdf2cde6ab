//===- Generators.h - graph.range and graph.trilu on the GPU ----*- C++ -*-===//
//
// ONNX Range (an arithmetic sequence: position ids) and ONNX Trilu (keep a triangle of the
// last two dimensions: causal masks) on device memory, with the semantics of the CPU
// reference kernels (kernels/cpu/Generators.h):
//
//   range  out[i] = start + i * delta for i < n, n = max(ceil((limit - start) / delta), 0),
//          which must equal out's length (1-D). Float outputs (f32, f64, f16, bf16) compute
//          start + i * delta in double, each operation rounded (no fused multiply-add: the
//          device uses __dmul_rn / __dadd_rn), and round once to the output: f32 and f64 are
//          bit-identical to the CPU (torch.arange's rule); f16/bf16 round the double directly
//          (base::doubleToHalf / doubleToBf16). Integer outputs (i64, i32) need integral
//          arguments and are exact: n is computed in 128 bits and every value is checked to
//          fit the output dtype at plan time (planRangeInt takes int64 arguments directly).
//   trilu  on the last two dimensions (rows i, columns j) of x (rank >= 2, any dtype): `upper`
//          keeps elements with j - i >= k, lower keeps j - i <= k, the rest become 0 (zero
//          bits: +0.0, 0, false). out: x's dtype and shape.
//
// Algorithm: one grid-stride thread per output element (rangeAt, triluAt: RP_HOST_DEVICE
// bodies shared by the kernels in Generators.cu and the host test
// test/Unit/CudaFusedHostTest.cpp; the device test test/Unit/CudaFusedTest.cpp alone covers
// the launches and the device's __dmul_rn / __dadd_rn path of rangeAt).
//
// Errors: the plan functions return InvalidArgument with the CPU kernels' messages; the
// launchers return cudaErrorInvalidValue for a null or misaligned pointer with elements to
// write, otherwise cudaGetLastError() after enqueueing; they never synchronize. This header
// contains no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_GENERATORS_H
#define RP_KERNELS_CUDA_GENERATORS_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

//===--- range -----------------------------------------------------------===//

/// The geometry of one range: `n` elements of `dtype`. Float dtypes use start/delta,
/// integer dtypes istart/idelta (exact).
struct RangePlan {
  base::DType dtype = base::DType::F32;
  int64_t n = 0;
  double start = 0, delta = 1;
  int64_t istart = 0, idelta = 1;
};

/// Checks a range as cpu::range does: out 1-D f32, f64, f16, bf16, i64 or i32; finite
/// arguments and delta != 0; integer outputs need integral arguments in int64 (then as
/// planRangeInt); float outputs need out's length to be max(ceil((limit - start) / delta), 0)
/// computed in double. Errors: InvalidArgument, e.g. "range: expected finite arguments and a
/// non-zero delta, got start 0.000000, limit 5.000000, delta 0.000000", "range: start
/// 0.000000, limit 5.000000, delta 1.000000 gives 5 elements, but out is f32[4]".
base::StatusOr<RangePlan> planRange(base::DType dtype, double start, double limit,
                                       double delta, const Shape &out);

/// Checks an integer range as cpu::rangeInt(start, limit, delta, out) does: out 1-D i64 or
/// i32 of length max(ceil((limit - start) / delta), 0) (exact), delta != 0, every value
/// representable in out's dtype. Errors: InvalidArgument, e.g. "range: start 0 + i * delta 1
/// for i < 3000000000 overflows i32".
base::StatusOr<RangePlan> planRangeInt(base::DType dtype, int64_t start, int64_t limit,
                                          int64_t delta, const Shape &out);

/// Enqueues the range into `out` (device pointer aligned to the element size) on `stream`.
/// Returns cudaErrorInvalidValue for a null or misaligned `out` when n > 0, cudaSuccess for
/// n == 0 (nothing launched), otherwise cudaGetLastError(). Never synchronizes.
cudaError_t launchRange(const RangePlan &plan, void *out, cudaStream_t stream);

/// Element i of a range of dtype D.
template <base::DType D> RP_HD inline void rangeAt(const RangePlan &plan, void *out, int64_t i) {
  using base::DType;
  if constexpr (D == DType::I64 || D == DType::I32) {
    // Fits the dtype: checked at plan time; wraps like the CPU's int64 arithmetic otherwise.
    const auto value =
        static_cast<int64_t>(static_cast<uint64_t>(plan.istart) +
                             static_cast<uint64_t>(i) * static_cast<uint64_t>(plan.idelta));
    storeAs<D>(out, i, value);
  } else {
#if defined(__CUDA_ARCH__)
    const double value = __dadd_rn(plan.start, __dmul_rn(static_cast<double>(i), plan.delta));
#else
    const double value = plan.start + static_cast<double>(i) * plan.delta;
#endif
    if constexpr (D == DType::BF16)
      static_cast<uint16_t *>(out)[i] = base::doubleToBf16(value);
    else if constexpr (D == DType::F16)
      static_cast<uint16_t *>(out)[i] = base::doubleToHalf(value);
    else
      storeAs<D>(out, i, value);
  }
}

//===--- trilu -----------------------------------------------------------===//

/// The geometry of one trilu: `numel` elements of `dtype`, matrices of rows x cols.
struct TriluPlan {
  base::DType dtype = base::DType::F32;
  int64_t numel = 0, rows = 0, cols = 0, k = 0;
  bool upper = true;
};

/// Checks a trilu as cpu::trilu does: x of rank >= 2 (any dtype), out of x's dtype and shape.
/// Errors: InvalidArgument "trilu: expected x of rank >= 2, got f32[4]", "trilu: out is
/// f32[2, 3], expected f32[3, 3]".
base::StatusOr<TriluPlan> planTrilu(base::DType dtype, const Shape &x, int64_t k, bool upper,
                                       const Shape &out);

/// Enqueues the trilu on `stream` (device pointers, contiguous, aligned to the element size;
/// x and out may be the same buffer). Returns as launchRange.
cudaError_t launchTrilu(const TriluPlan &plan, const void *x, void *out, cudaStream_t stream);

/// Element e of a trilu; E is the unsigned integer of the dtype's size (bits are copied).
template <typename E>
RP_HD inline void triluAt(const TriluPlan &plan, const void *x, void *out, int64_t e) {
  const int64_t j = e % plan.cols, i = (e / plan.cols) % plan.rows;
  const bool keep = plan.upper ? j - i >= plan.k : j - i <= plan.k;
  static_cast<E *>(out)[e] = keep ? static_cast<const E *>(x)[e] : E(0);
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void range(const RangePlan &plan, void *out);
void trilu(const TriluPlan &plan, const void *x, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_GENERATORS_H
