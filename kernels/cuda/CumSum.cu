//===- CumSum.cu - Cumulative sums on the GPU -----------------------------===//
//
// The plan (the CPU kernel's checks) and the launcher of cumsum; the per-lane body lives in
// CumSum.h (shared with the host replay).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CumSum.h"

#include "kernels/cuda/Launch.cuh"

namespace rp::kernels::cuda {

using base::DType;
using base::StatusOr;

namespace {

/// The dtypes cumsum takes on the GPU: any but i1.
constexpr std::initializer_list<DType> kCumSumTypes = {DType::F32,  DType::F16, DType::BF16,
                                                       DType::F64, DType::I64, DType::I32};

template <DType D> __global__ void cumsumKernel(CumSumPlan plan, const void *x, void *out) {
  for (int64_t lane = gridThread(); lane < plan.lanes; lane += gridStride())
    cumsumLaneAt<D>(plan, x, out, lane);
}

} // namespace

StatusOr<CumSumPlan> planCumSum(DType dtype, const Shape &x, int64_t axis, bool exclusive,
                                bool reverse, const Shape &out) {
  const char *op = "cumsum";
  RP_RETURN_IF_ERROR(checkDType(op, "x", dtype, kCumSumTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(x.size())));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, x));
  CumSumPlan plan;
  plan.dtype = dtype;
  plan.n = x[static_cast<size_t>(axis)];
  plan.inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.size(); ++d)
    plan.inner *= x[d];
  plan.lanes = plan.n == 0 ? 0 : numElements(x) / plan.n;
  plan.exclusive = exclusive;
  plan.reverse = reverse;
  return plan;
}

cudaError_t launchCumSum(const CumSumPlan &plan, const void *x, void *out, cudaStream_t stream) {
  if (plan.lanes == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(plan.dtype);
  if (plan.dtype == DType::I1 || !usablePointer(x, bytes) || !usablePointer(out, bytes))
    return cudaErrorInvalidValue;
  visitDType(plan.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    if constexpr (D != DType::I1)
      cumsumKernel<D><<<gridFor(plan.lanes), kBlockSize, 0, stream>>>(plan, x, out);
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
