//===- CrossEntropy.cu - Softmax cross-entropy loss on the GPU ------------===//
//
// lossRowKernel: per row, the label decides (ignored: 0; out of range: NaN; uniform over
// the row's threads), then the maximum (lossMaxPartial + rowAllReduce with FMaxOp) and the
// sum of exponentials (lossSumPartial + rowAllReduce with SumOp); lane 0 stores the loss in
// rowScratch. lossFinishKernel: one block, chunked row-order partial sums and counts, the
// fixed-order tree, thread 0 stores out. Both on `stream`, so (2) sees (1)'s writes.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CrossEntropy.h"

#include "kernels/cuda/RowReduce.cuh"
#include "base/HostTensor.h"

#include <string>

namespace rp::kernels::cuda {

using base::DType;

namespace {

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    lossRowKernel(const CrossEntropyPlan p, const void *__restrict__ logits,
                  const void *__restrict__ labels, void *__restrict__ rowScratch) {
  using C = LossCompute<D>;
  __shared__ C shared[kWarpSize];
  C *losses = static_cast<C *>(rowScratch);
  forEachRow<M>(p.rows, [&](int64_t row, int lane, int threads) {
    const int64_t label = lossLabel(p, labels, row);
    if (label == p.ignoreIndex || lossLabelOutOfRange(p, label)) {
      if (lane == 0)
        losses[row] = label == p.ignoreIndex ? C(0) : static_cast<C>(NAN);
      return;
    }
    const C m = rowAllReduce<M>(lossMaxPartial<D>(p, logits, row, lane, threads), FMaxOp{},
                                static_cast<C>(-INFINITY), shared);
    const C sum =
        rowAllReduce<M>(lossSumPartial<D>(p, logits, row, lane, threads, m), SumOp{}, C(0), shared);
    if (lane == 0)
      losses[row] = lossFromStats<D>(p, logits, row, label, m, sum);
  });
}

template <DType D>
__global__ void __launch_bounds__(kFinishThreads)
    lossFinishKernel(const CrossEntropyPlan p, const void *__restrict__ labels,
                     const void *__restrict__ rowScratch, void *__restrict__ out) {
  using C = LossCompute<D>;
  __shared__ C sharedSum[kWarpSize];
  __shared__ int64_t sharedCount[kWarpSize];
  const int lane = threadIdx.x, threads = blockDim.x;
  const C total = rowAllReduce<RowMode::Block>(
      lossFinishSumPartial<D>(p, rowScratch, lane, threads), SumOp{}, C(0), sharedSum);
  const int64_t counted = rowAllReduce<RowMode::Block>(
      lossFinishCountPartial(p, labels, lane, threads), SumOp{}, int64_t(0), sharedCount);
  if (lane == 0)
    lossFinishStore<D>(p, out, total, counted);
}

template <DType D>
void enqueue(const CrossEntropyPlan &p, const void *logits, const void *labels, void *out,
             void *rowScratch, cudaStream_t stream) {
  if (p.rows > 0) {
    launchRows(
        p.rows, p.threadsPerRow, stream,
        [](auto mode) { return lossRowKernel<D, decltype(mode)::value>; }, p, logits, labels,
        rowScratch);
    if (cudaPeekAtLastError() != cudaSuccess)
      return; // the caller's cudaGetLastError() reports it
  }
  lossFinishKernel<D><<<1, kFinishThreads, 0, stream>>>(p, labels, rowScratch, out);
}

/// Bytes of one rowScratch element: the compute type of `d`.
size_t computeSize(DType d) {
  return d == DType::F16 || d == DType::BF16 ? sizeof(float) : sizeof(double);
}

} // namespace

base::StatusOr<CrossEntropyPlan> planCrossEntropy(DType dtype, const Shape &logits,
                                                     DType labelDType, const Shape &labels,
                                                     int64_t ignoreIndex, LossReduction reduction,
                                                     const Shape &out) {
  const std::string op = "cross_entropy";
  RP_RETURN_IF_ERROR(checkDType(op, "logits", dtype, kRowFloatTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "labels", labelDType, kIndexTypes));
  RP_RETURN_IF_ERROR(checkNoNegativeDim(op, "logits", logits));
  RP_RETURN_IF_ERROR(checkLossShapes(dtype, logits, labels));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, {}));
  CrossEntropyPlan plan;
  plan.dtype = dtype;
  plan.labelDType = labelDType;
  plan.reduction = reduction;
  plan.ignoreIndex = ignoreIndex;
  plan.rows = numElements(labels); // labels is [N, d1, ...], checked above
  plan.classes = logits[1];
  plan.inner = numElements(Shape(logits.begin() + 2, logits.end()));
  if (plan.rows == 0)
    plan.inner = 1; // nothing to index (a zero dimension after C)
  plan.threadsPerRow = threadsPerRowFor(plan.rows, plan.classes, plan.inner == 1);
  plan.scratchBytes = static_cast<size_t>(plan.rows) * computeSize(dtype);
  return plan;
}

cudaError_t launchCrossEntropy(const CrossEntropyPlan &plan, const void *logits, const void *labels,
                               void *out, void *rowScratch, cudaStream_t stream) {
  if (!rowFloatDType(plan.dtype) ||
      (plan.labelDType != DType::I64 && plan.labelDType != DType::I32) ||
      !validThreadsPerRow(plan.threadsPerRow) || plan.rows < 0 || plan.classes < 0 ||
      plan.inner < 1 ||
      plan.scratchBytes != static_cast<size_t>(plan.rows) * computeSize(plan.dtype))
    return cudaErrorInvalidValue;
  const size_t size = base::dtypeSize(plan.dtype);
  if (!usablePointer(out, size))
    return cudaErrorInvalidValue;
  if (plan.rows > 0 && ((plan.classes > 0 && !usablePointer(logits, size)) ||
                        !usablePointer(labels, base::dtypeSize(plan.labelDType)) ||
                        !usablePointer(rowScratch, computeSize(plan.dtype))))
    return cudaErrorInvalidValue;
  visitFloatDType(plan.dtype, [&](auto d) {
    enqueue<decltype(d)::value>(plan, logits, labels, out, rowScratch, stream);
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
