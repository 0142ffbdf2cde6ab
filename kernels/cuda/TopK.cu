//===- TopK.cu - The indices of the k largest elements on the GPU ---------===//
//
// planTopK (host checks and geometry) and launchTopK; the row body lives in TopK.h (shared
// with the host replay). See TopK.h for semantics and cost.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/TopK.h"

#include "kernels/cuda/Launch.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::StatusOr;

namespace {

template <DType D> __global__ void topKKernel(TopKPlan plan, const void *x, void *out) {
  for (int64_t r = gridThread(); r < plan.rows; r += gridStride())
    topKRowAt<D>(plan, x, out, r);
}

} // namespace

StatusOr<TopKPlan> planTopK(DType dtype, const Shape &x, int64_t k, int64_t axis, bool largest,
                            DType outDType, const Shape &out) {
  const char *op = "top_k";
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16 && dtype != DType::F64)
    return invalidArgument(std::string(op) + ": x has dtype " + base::dtypeName(dtype) +
                           ", expected f32, f16, bf16 or f64");
  const int64_t rank = static_cast<int64_t>(x.size());
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, rank));
  if (k < 1 || k > x[axis])
    return invalidArgument(std::string(op) + ": k = " + std::to_string(k) + " is outside [1, " +
                           std::to_string(x[axis]) + "] for x of shape " +
                           base::formatShape(x) + " on axis " + std::to_string(axis));
  Shape want = x;
  want[axis] = k;
  RP_RETURN_IF_ERROR(checkType(op, "out", outDType, out, DType::I64, want));
  TopKPlan p;
  p.dtype = dtype;
  p.n = x[axis];
  p.k = k;
  p.largest = largest;
  p.outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    p.outer *= x[d];
  p.inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    p.inner *= x[d];
  p.rows = p.outer * p.inner;
  return p;
}

cudaError_t launchTopK(const TopKPlan &plan, const void *x, void *out, cudaStream_t stream) {
  if (plan.rows == 0)
    return cudaSuccess;
  if (!usablePointer(x, base::dtypeSize(plan.dtype)) || !usablePointer(out, sizeof(int64_t)))
    return cudaErrorInvalidValue;
  visitFloatDType(plan.dtype, [&](auto d) {
    topKKernel<decltype(d)::value><<<gridFor(plan.rows), kBlockSize, 0, stream>>>(plan, x, out);
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
