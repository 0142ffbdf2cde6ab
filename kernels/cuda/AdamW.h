//===- AdamW.h - AdamW on fp32 master weights on the GPU --------*- C++ -*-===//
//
// One AdamW step (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", alg. 2;
// torch.optim.AdamW's single-tensor formula) on device memory: fp32 master weights, the fp32
// moments m and v, an fp32 gradient, and, in the same pass, the compute-dtype copy of the
// updated weights (f32, bf16 or f16) that the forward and backward kernels read. For tests and
// optional use: RoundPipe's optimizer runs on the host (runtime/optim/AdamW.h).
//
// Numerics: the bit-exact contract of runtime::adamwStep (runtime/optim/AdamW.h), so the GPU
// and the CPU agree bit for bit: the scalars are computed once on the host in double and
// rounded to float (planAdamW); per element every float operation rounds once, in the CPU's
// order, with no fused multiply-add (the device uses __fmul_rn, __fadd_rn, __fsub_rn,
// __fdiv_rn and __fsqrt_rn, which nvcc never contracts):
//   g = grad[i] * gradScale
//   p = master[i] * decay                          decay = float(1 - lr * wd)
//   m[i] = b1 * m[i] + c1 * g                      b1 = float(beta1), c1 = float(1 - beta1)
//   v[i] = b2 * v[i] + c2 * (g * g)                b2 = float(beta2), c2 = float(1 - beta2)
//   master[i] = p - stepSize * (m[i] / (sqrtf(v[i]) / bc2Sqrt + eps))
//       stepSize = float(lr / (1 - beta1^t)), bc2Sqrt = float(sqrt(1 - beta2^t))
//   weights[i] = master[i] rounded to the compute dtype (RNE; runtime::writeComputeWeights)
//
// Algorithm: one grid-stride thread per element (adamwAt, an RP_HOST_DEVICE body shared by
// the kernel in AdamW.cu and the host test test/Unit/CudaFusedHostTest.cpp, which checks it
// bit for bit against runtime::adamwStep; the device intrinsics path and the launch are
// covered by the device test test/Unit/CudaFusedTest.cpp alone). Memory bound: 16 bytes read
// and 12 + 2..4 written per element.
//
// Errors: planAdamW returns InvalidArgument for step < 1 (a programmer error on the CPU: 1 -
// beta1^0 divides by zero), n < 0, or a compute dtype other than f32, bf16 or f16 (non-finite
// hyper-parameters are not rejected: they give NaNs, as on the CPU); launchAdamW returns
// cudaErrorInvalidValue for a null or misaligned pointer when n > 0 (weights may be null: no copy
// is written), otherwise cudaGetLastError() after enqueueing; it never synchronizes. This header
// contains no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ADAMW_H
#define RP_KERNELS_CUDA_ADAMW_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace rp::kernels::cuda {

/// The hyper-parameters of one step (runtime::AdamWConfig, plus the step count and the
/// gradient scale that runtime::adamwStep takes as arguments).
struct AdamWParams {
  double lr = 0;          ///< learning rate of this step
  double beta1 = 0.9;     ///< first-moment decay
  double beta2 = 0.999;   ///< second-moment decay
  double eps = 1e-8;      ///< added to the bias-corrected sqrt(v)
  double weightDecay = 0; ///< decoupled weight decay (0: plain Adam)
  int64_t step = 1;       ///< 1-based count of steps applied to this tensor, this one included
  float gradScale = 1.0f; ///< multiplies the gradient (e.g. clipFactor / M)
};

/// The float scalars of one step (see the file comment) and the element count.
struct AdamWPlan {
  int64_t n = 0;
  base::DType weights = base::DType::F32; ///< dtype of the compute-weight copy
  float decay = 1, b1 = 0, c1 = 1, b2 = 0, c2 = 1, stepSize = 0, bc2Sqrt = 1, eps = 0;
  float gradScale = 1;
};

/// Computes the step's scalars exactly as runtime::adamwStep does. Errors: InvalidArgument
/// "adamw: step 0 must be >= 1", "adamw: negative element count -1", "adamw: compute dtype
/// i64 is not f32, bf16 or f16".
base::StatusOr<AdamWPlan> planAdamW(const AdamWParams &params, int64_t n,
                                       base::DType weightDType);

/// Enqueues the step on `stream`, in place on master, m and v (n floats each, device memory,
/// 4-aligned, not overlapping), reading grad (n floats) and writing weights (n elements of
/// plan.weights; may be null). Returns as described in the file comment.
cudaError_t launchAdamW(const AdamWPlan &plan, float *master, float *m, float *v, const float *grad,
                        void *weights, cudaStream_t stream);

//===--- element arithmetic: one rounding per operation -------------------===//

RP_HD inline float adamwMul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
RP_HD inline float adamwAdd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
RP_HD inline float adamwSub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
RP_HD inline float adamwDiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
RP_HD inline float adamwSqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// Element i of the step; W is the compute-weight dtype (F32, BF16 or F16). The host
/// translation unit must not contract a * b + c into an FMA (g++ in ISO C++ mode does not;
/// the host test is built with -ffp-contract=off to be sure).
template <base::DType W>
RP_HD inline void adamwAt(const AdamWPlan &plan, float *master, float *m, float *v,
                          const float *grad, void *weights, int64_t i) {
  const float g = adamwMul(grad[i], plan.gradScale);
  const float p = adamwMul(master[i], plan.decay);
  const float mi = adamwAdd(adamwMul(plan.b1, m[i]), adamwMul(plan.c1, g));
  const float vi = adamwAdd(adamwMul(plan.b2, v[i]), adamwMul(plan.c2, adamwMul(g, g)));
  m[i] = mi;
  v[i] = vi;
  const float denom = adamwAdd(adamwDiv(adamwSqrt(vi), plan.bc2Sqrt), plan.eps);
  const float updated = adamwSub(p, adamwMul(plan.stepSize, adamwDiv(mi, denom)));
  master[i] = updated;
  if (weights != nullptr)
    storeAs<W>(weights, i, updated);
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ADAMW_H
