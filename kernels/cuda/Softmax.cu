//===- Softmax.cu - Softmax and log-softmax on the GPU --------------------===//
//
// softmaxKernel: per line, the maximum (softmaxMaxPartial + rowAllReduce with MaxOp), the
// sum of exponentials (softmaxSumPartial + rowAllReduce with SumOp), then every thread of
// the line writes its elements (softmaxWrite). The passes re-read x (from L1/L2 for the
// rows this project sees); the exponentials are recomputed in the write pass as the CPU
// does, so no scratch is needed.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Softmax.h"

#include "kernels/cuda/RowReduce.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;

namespace {

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    softmaxKernel(const SoftmaxPlan p, const void *__restrict__ x, void *__restrict__ out) {
  using C = SoftmaxCompute<D>;
  __shared__ C shared[kWarpSize];
  forEachRow<M>(p.lines, [&](int64_t line, int lane, int threads) {
    C m = softmaxMaxPartial<D>(p, x, line, lane, threads);
    m = rowAllReduce<M>(m, MaxOp{}, static_cast<C>(-INFINITY), shared);
    C sum = softmaxSumPartial<D>(p, x, line, lane, threads, m);
    sum = rowAllReduce<M>(sum, SumOp{}, C(0), shared);
    softmaxWrite<D>(p, x, out, line, lane, threads, m, sum);
  });
}

template <DType D>
void enqueue(const SoftmaxPlan &p, const void *x, void *out, cudaStream_t stream) {
  launchRows(
      p.lines, p.threadsPerRow, stream,
      [](auto mode) { return softmaxKernel<D, decltype(mode)::value>; }, p, x, out);
}

} // namespace

base::StatusOr<SoftmaxPlan> planSoftmax(DType dtype, const Shape &x, int64_t axis, bool log,
                                           const Shape &out) {
  const std::string op = log ? "log_softmax" : "softmax";
  RP_RETURN_IF_ERROR(checkDType(op, "x", dtype, kRowFloatTypes));
  RP_RETURN_IF_ERROR(checkNoNegativeDim(op, "x", x));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(x.size())));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, x));
  SoftmaxPlan plan;
  plan.dtype = dtype;
  plan.log = log;
  plan.dim = x[axis];
  plan.inner = numElements(Shape(x.begin() + axis + 1, x.end()));
  plan.lines = numElements(Shape(x.begin(), x.begin() + axis)) * plan.inner;
  if (plan.dim == 0 || plan.lines == 0) { // no elements: nothing to do
    plan.lines = 0;
    plan.inner = 1;
  }
  plan.threadsPerRow = threadsPerRowFor(plan.lines, plan.dim, plan.inner == 1);
  return plan;
}

cudaError_t launchSoftmax(const SoftmaxPlan &plan, const void *x, void *out, cudaStream_t stream) {
  if (!rowFloatDType(plan.dtype) || !validThreadsPerRow(plan.threadsPerRow) || plan.lines < 0 ||
      plan.dim < 0 || plan.inner < 1)
    return cudaErrorInvalidValue;
  if (plan.lines == 0)
    return cudaSuccess;
  const size_t size = base::dtypeSize(plan.dtype);
  if (!usablePointer(x, size) || !usablePointer(out, size))
    return cudaErrorInvalidValue;
  visitFloatDType(plan.dtype, [&](auto d) { enqueue<decltype(d)::value>(plan, x, out, stream); });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
