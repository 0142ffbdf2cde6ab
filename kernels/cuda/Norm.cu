//===- Norm.cu - Layer and RMS normalisation on the GPU -------------------===//
//
// normKernel: per row, layer_norm's mean (normSumPartial + rowAllReduce), the sum of
// squared deviations (normSquarePartial + rowAllReduce), then every thread of the row
// writes its elements (normWrite). Three reads of the row (two for rms_norm), from L1/L2
// after the first for the row sizes of transformer hidden states. rmsNormVjpKernel: the sum
// of squares, the dot of the row's dxhat and xhat, then dx and dscaleRows (Norm.h).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Norm.h"

#include "kernels/cuda/RowReduce.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;

namespace {

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    normKernel(const NormPlan p, const void *__restrict__ x, const void *__restrict__ scale,
               const void *__restrict__ bias, void *__restrict__ out) {
  using C = NormCompute<D>;
  __shared__ C shared[kWarpSize];
  forEachRow<M>(p.rows, [&](int64_t row, int lane, int threads) {
    C mean = C(0);
    if (!p.rms) {
      const C sum =
          rowAllReduce<M>(normSumPartial<D>(p, x, row, lane, threads), SumOp{}, C(0), shared);
      mean = normMean<D>(p, sum);
    }
    const C squares = rowAllReduce<M>(normSquarePartial<D>(p, x, row, lane, threads, mean), SumOp{},
                                      C(0), shared);
    normWrite<D>(p, x, scale, bias, out, row, lane, threads, mean, normStdev<D>(p, squares));
  });
}

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    rmsNormVjpKernel(const NormPlan p, const void *__restrict__ x, const void *__restrict__ scale,
                     const void *__restrict__ g, void *__restrict__ dx,
                     void *__restrict__ dscaleRows) {
  using C = NormCompute<D>;
  __shared__ C shared[kWarpSize];
  forEachRow<M>(p.rows, [&](int64_t row, int lane, int threads) {
    const C squares = rowAllReduce<M>(normSquarePartial<D>(p, x, row, lane, threads, C(0)),
                                      SumOp{}, C(0), shared);
    const C rstd = C(1) / normStdev<D>(p, squares);
    const C dot = rowAllReduce<M>(normVjpDotPartial<D>(p, x, scale, g, row, lane, threads, rstd),
                                  SumOp{}, C(0), shared);
    normVjpWrite<D>(p, x, scale, g, dx, dscaleRows, row, lane, threads, rstd, dot);
  });
}

template <DType D>
void enqueue(const NormPlan &p, const void *x, const void *scale, const void *bias, void *out,
             cudaStream_t stream) {
  launchRows(
      p.rows, p.threadsPerRow, stream,
      [](auto mode) { return normKernel<D, decltype(mode)::value>; }, p, x, scale, bias, out);
}

base::StatusOr<NormPlan> planNorm(const char *opName, bool rms, DType dtype, const Shape &x,
                                     const Shape &scale, const Shape *bias, int64_t axis,
                                     double epsilon, const Shape &out) {
  const std::string op = opName;
  RP_RETURN_IF_ERROR(checkDType(op, "x", dtype, kRowFloatTypes));
  RP_RETURN_IF_ERROR(checkNoNegativeDim(op, "x", x));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(x.size())));
  const Shape paramShape(x.begin() + axis, x.end());
  RP_RETURN_IF_ERROR(checkShapeIs(op, "scale", dtype, scale, paramShape));
  if (bias)
    RP_RETURN_IF_ERROR(checkShapeIs(op, "bias", dtype, *bias, paramShape));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, x));
  NormPlan plan;
  plan.dtype = dtype;
  plan.rms = rms;
  plan.hasBias = bias != nullptr;
  plan.cols = numElements(paramShape);
  plan.rows = plan.cols == 0 ? 0 : numElements(x) / plan.cols;
  plan.epsilon = epsilon;
  plan.threadsPerRow = threadsPerRowFor(plan.rows, plan.cols, true);
  return plan;
}

/// A plan a planner could have made: a row dtype, a valid thread count, no negative size,
/// no bias on rms_norm.
bool validNormPlan(const NormPlan &p) {
  return rowFloatDType(p.dtype) && validThreadsPerRow(p.threadsPerRow) && p.rows >= 0 &&
         p.cols >= 0 && !(p.rms && p.hasBias);
}

} // namespace

base::StatusOr<NormPlan> planLayerNorm(DType dtype, const Shape &x, const Shape &scale,
                                          const Shape *bias, int64_t axis, double epsilon,
                                          const Shape &out) {
  return planNorm("layer_norm", false, dtype, x, scale, bias, axis, epsilon, out);
}

base::StatusOr<NormPlan> planRmsNorm(DType dtype, const Shape &x, const Shape &scale,
                                        int64_t axis, double epsilon, const Shape &out) {
  return planNorm("rms_norm", true, dtype, x, scale, nullptr, axis, epsilon, out);
}

base::StatusOr<NormPlan> planRmsNormVjp(DType dtype, const Shape &x, const Shape &scale,
                                        const Shape &g, int64_t axis, double epsilon,
                                        const Shape &dx, const Shape &dscaleRows) {
  RP_ASSIGN_OR_RETURN(NormPlan plan,
                      planNorm("rms_norm_vjp", true, dtype, x, scale, nullptr, axis, epsilon, dx));
  RP_RETURN_IF_ERROR(checkShapeIs("rms_norm_vjp", "g", dtype, g, x));
  RP_RETURN_IF_ERROR(checkShapeIs("rms_norm_vjp", "dscale_rows", dtype, dscaleRows, x));
  return plan;
}

cudaError_t launchRmsNormVjp(const NormPlan &plan, const void *x, const void *scale,
                             const void *g, void *dx, void *dscaleRows, cudaStream_t stream) {
  if (!validNormPlan(plan) || !plan.rms)
    return cudaErrorInvalidValue;
  if (plan.rows == 0)
    return cudaSuccess;
  const size_t size = base::dtypeSize(plan.dtype);
  if (!usablePointer(x, size) || !usablePointer(scale, size) || !usablePointer(g, size) ||
      !usablePointer(dx, size) || !usablePointer(dscaleRows, size))
    return cudaErrorInvalidValue;
  visitFloatDType(plan.dtype, [&](auto d) {
    launchRows(
        plan.rows, plan.threadsPerRow, stream,
        [](auto mode) { return rmsNormVjpKernel<decltype(d)::value, decltype(mode)::value>; },
        plan, x, scale, g, dx, dscaleRows);
  });
  return cudaGetLastError();
}

cudaError_t launchNorm(const NormPlan &plan, const void *x, const void *scale, const void *bias,
                       void *out, cudaStream_t stream) {
  if (!validNormPlan(plan))
    return cudaErrorInvalidValue;
  if (plan.rows == 0)
    return cudaSuccess;
  const size_t size = base::dtypeSize(plan.dtype);
  if (!usablePointer(x, size) || !usablePointer(scale, size) || !usablePointer(out, size) ||
      (plan.hasBias ? !usablePointer(bias, size) : bias != nullptr))
    return cudaErrorInvalidValue;
  visitFloatDType(plan.dtype,
                  [&](auto d) { enqueue<decltype(d)::value>(plan, x, scale, bias, out, stream); });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
