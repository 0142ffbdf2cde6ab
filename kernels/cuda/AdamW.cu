//===- AdamW.cu - AdamW on fp32 master weights on the GPU -----------------===//
//
// planAdamW (the scalars of runtime::adamwStep, computed the same way) and the grid-stride
// launcher; the per-element body lives in AdamW.h (shared with the host tests).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/AdamW.h"

#include "kernels/cuda/Launch.cuh"

#include <cmath>
#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;

namespace {

template <DType W>
__global__ void adamwKernel(AdamWPlan plan, float *master, float *m, float *v, const float *grad,
                            void *weights) {
  for (int64_t i = gridThread(); i < plan.n; i += gridStride())
    adamwAt<W>(plan, master, m, v, grad, weights, i);
}

} // namespace

base::StatusOr<AdamWPlan> planAdamW(const AdamWParams &params, int64_t n, DType weightDType) {
  if (params.step < 1)
    return invalidArgument("adamw: step " + std::to_string(params.step) + " must be >= 1");
  if (n < 0)
    return invalidArgument("adamw: negative element count " + std::to_string(n));
  if (weightDType != DType::F32 && weightDType != DType::BF16 && weightDType != DType::F16)
    return invalidArgument(std::string("adamw: compute dtype ") + base::dtypeName(weightDType) +
                           " is not f32, bf16 or f16");
  // The scalars of runtime::adamwStep, in the same double expressions.
  const double t = static_cast<double>(params.step);
  AdamWPlan plan;
  plan.n = n;
  plan.weights = weightDType;
  plan.decay = static_cast<float>(1.0 - params.lr * params.weightDecay);
  plan.b1 = static_cast<float>(params.beta1);
  plan.c1 = static_cast<float>(1.0 - params.beta1);
  plan.b2 = static_cast<float>(params.beta2);
  plan.c2 = static_cast<float>(1.0 - params.beta2);
  plan.stepSize = static_cast<float>(params.lr / (1.0 - std::pow(params.beta1, t)));
  plan.bc2Sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(params.beta2, t)));
  plan.eps = static_cast<float>(params.eps);
  plan.gradScale = params.gradScale;
  return plan;
}

cudaError_t launchAdamW(const AdamWPlan &plan, float *master, float *m, float *v, const float *grad,
                        void *weights, cudaStream_t stream) {
  if (plan.n == 0)
    return cudaSuccess;
  if (plan.n < 0 || !usablePointers(4, master, m, v, grad) ||
      (weights && !usablePointer(weights, base::dtypeSize(plan.weights))))
    return cudaErrorInvalidValue;
  const unsigned blocks = gridFor(plan.n);
  switch (plan.weights) {
  case DType::F32:
    adamwKernel<DType::F32><<<blocks, kBlockSize, 0, stream>>>(plan, master, m, v, grad, weights);
    break;
  case DType::BF16:
    adamwKernel<DType::BF16><<<blocks, kBlockSize, 0, stream>>>(plan, master, m, v, grad, weights);
    break;
  case DType::F16:
    adamwKernel<DType::F16><<<blocks, kBlockSize, 0, stream>>>(plan, master, m, v, grad, weights);
    break;
  default:
    return cudaErrorInvalidValue; // not a plan from planAdamW
  }
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
