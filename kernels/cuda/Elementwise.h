//===- Elementwise.h - Elementwise graph ops on the GPU ---------*- C++ -*-===//
//
// The GPU kernels of the elementwise `graph` ops: unary math, binary arithmetic / logic /
// comparison with numpy broadcasting, `where`, `cast`, and the backend's gradient
// accumulation. Semantics are those of the CPU reference kernels (kernels/cpu/Elementwise.h,
// kernels/cpu/Cast.h), with these GPU choices:
//   - f32 (and f64) elements compute in double and round once when stored, as the CPU does:
//     + - * / sqrt and comparisons match the CPU bit for bit; exp, log, tanh, erf, pow use
//     CUDA's double libm (<= 2 ulp in double), so after rounding to f32 they match the CPU in
//     all but rare halfway cases. f16 and bf16 compute in float.
//   - integer division and remainder (mod) by zero write 0 (a kernel cannot return an error;
//     the CPU kernel reports InvalidArgument). Integer arithmetic wraps, as on the CPU.
//   - softplus and floor are float ops; mod's float remainder is fmod, exact, and its one
//     addition (the sign of the divisor) rounds once: bit-identical to the CPU.
// Types: unary float ops take f32, f16, bf16, f64; neg and relu also i64, i32; logical_not
// i1. Binary arithmetic takes f32, f16, bf16, f64, i64, i32; logic i1; comparisons any of
// those (result i1). `where`: cond i1, values any dtype.
//
// Each op is planned once on the host (plan*: checks dtypes and shapes as the CPU kernels do,
// returns InvalidArgument naming the op, the expected and the actual; builds the strided
// iteration space, kernels/cuda/Strided.h) and launched many times (launch*: enqueues one
// grid-stride kernel on `stream`, returns cudaGetLastError(), never synchronizes). The
// per-element bodies are RP_HD functions (ElementwiseOps.h), run on the host by the tests.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ELEMENTWISE_H
#define RP_KERNELS_CUDA_ELEMENTWISE_H

#include "kernels/OpKinds.h"
#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

namespace rp::kernels::cuda {

/// The op kinds (kernels/OpKinds.h), shared with the CPU kernels.
using UnaryOp = ::rp::kernels::UnaryKind;
using BinaryOp = ::rp::kernels::BinaryKind;

struct UnaryPlan {
  UnaryOp op;
  base::DType dtype;
  StridedIter<2> iter; ///< tensors: x, out
};
struct BinaryPlan {
  BinaryOp op;
  base::DType dtype; ///< the operands' dtype (the result is i1 for comparisons and logic)
  StridedIter<3> iter;  ///< tensors: a, b, out
};
struct WherePlan {
  base::DType dtype; ///< the values' and the result's dtype
  StridedIter<4> iter;  ///< tensors: cond, onTrue, onFalse, out
};
struct CastPlan {
  base::DType from, to;
  int64_t n;
};

/// out = op(x); out has x's shape and dtype.
base::StatusOr<UnaryPlan> planUnary(UnaryOp op, base::DType dtype, const Shape &x,
                                       const Shape &out);
/// out = a op b with numpy broadcasting; out's shape is the broadcast.
base::StatusOr<BinaryPlan> planBinary(BinaryOp op, base::DType dtype, const Shape &a,
                                         const Shape &b, const Shape &out);
/// out = cond ? onTrue : onFalse, the three shapes broadcast to out's.
base::StatusOr<WherePlan> planWhere(base::DType dtype, const Shape &cond, const Shape &onTrue,
                                       const Shape &onFalse, const Shape &out);
/// out = cast(x) for `n` elements (same shape). Float -> int truncates toward zero (values
/// out of range: unspecified, as static_cast), any -> i1 is x != 0, i1 -> any is 0 or 1,
/// float -> float rounds to nearest even (kernels/cpu/Cast.h).
base::StatusOr<CastPlan> planCast(base::DType from, base::DType to, const Shape &x,
                                     const Shape &out);

cudaError_t launchUnary(const UnaryPlan &plan, const void *x, void *out, cudaStream_t stream);
cudaError_t launchBinary(const BinaryPlan &plan, const void *a, const void *b, void *out,
                         cudaStream_t stream);
cudaError_t launchWhere(const WherePlan &plan, const void *cond, const void *onTrue,
                        const void *onFalse, void *out, cudaStream_t stream);
cudaError_t launchCast(const CastPlan &plan, const void *x, void *out, cudaStream_t stream);

/// The backend's gradient accumulation (runtime/exec/Backend.h `accumulate`): `n` values of
/// `dtype` (f32, f16, bf16) at `src` are converted to fp32 and copied into (`first`) or added
/// to (`acc[i] = acc[i] + g[i]` in fp32) the fp32 values at `acc`. Errors:
/// cudaErrorInvalidValue for another dtype or n < 0.
cudaError_t launchAccumulate(base::DType dtype, const void *src, float *acc, int64_t n,
                             bool first, cudaStream_t stream);

/// The backend's gradient check (runtime/exec/Backend.h `downloadGradients`): sets `*flag` to
/// 1 when any of the `n` floats at `x` is inf or NaN, and leaves it otherwise (the caller
/// zeroes it first; several launches may OR into one flag). One grid-stride pass; each thread
/// ORs its elements, then one atomicOr per thread that found one, so the result does not
/// depend on the schedule. Errors: cudaErrorInvalidValue for n < 0 or a null or misaligned
/// pointer when n > 0.
cudaError_t launchFlagNonFinite(const float *x, int64_t n, uint32_t *flag, cudaStream_t stream);

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void unary(const UnaryPlan &plan, const void *x, void *out);
void binary(const BinaryPlan &plan, const void *a, const void *b, void *out);
void where(const WherePlan &plan, const void *cond, const void *onTrue, const void *onFalse,
           void *out);
void cast(const CastPlan &plan, const void *x, void *out);
void accumulate(base::DType dtype, const void *src, float *acc, int64_t n, bool first);
void flagNonFinite(const float *x, int64_t n, uint32_t *flag);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ELEMENTWISE_H
