//===- LinearCrossEntropy.cu - The fused LM head's row kernels on the GPU -===//
//
// lceScaleKernel, lceRowKernel, lceFinishKernel, lceAccumulateKernel, lceStoreKernel,
// lceBiasAddKernel, lceBiasGradKernel of LinearCrossEntropy.h (the GEMMs between them are cuBLASLt's); the row math and the
// reductions are CrossEntropy.h's and RowReduce.h's.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/LinearCrossEntropy.h"

#include "kernels/cuda/Launch.cuh"
#include "kernels/cuda/RowReduce.cuh"

namespace rp::kernels::cuda {

using base::DType;

namespace {

template <DType D>
__global__ void __launch_bounds__(kFinishThreads)
    lceScaleKernel(const LceStep s, const void *__restrict__ labels,
                   const void *__restrict__ seed, void *__restrict__ scale) {
  __shared__ int64_t sharedCount[kWarpSize];
  const int lane = threadIdx.x, threads = blockDim.x;
  const int64_t counted = rowAllReduce<RowMode::Block>(
      lossFinishCountPartial(s.rows, labels, lane, threads), SumOp{}, int64_t(0), sharedCount);
  if (lane == 0)
    *static_cast<LossCompute<D> *>(scale) = lceScaleFrom<D>(s.rows, seed, counted);
}

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    lceRowKernel(const LceStep s, void *__restrict__ logits, const void *__restrict__ labels,
                 void *__restrict__ rowLosses, const void *__restrict__ scale) {
  using C = LossCompute<D>;
  __shared__ C shared[kWarpSize];
  const CrossEntropyPlan &p = s.rows;
  C *losses = static_cast<C *>(rowLosses);
  const C g = s.grads ? *static_cast<const C *>(scale) : C(0);
  forEachRow<M>(p.rows, [&](int64_t row, int lane, int threads) {
    const int64_t label = lossLabel(p, labels, row);
    const bool skip = label == p.ignoreIndex || lossLabelOutOfRange(p, label);
    C m = C(0), sum = C(1);
    if (!skip) {
      m = rowAllReduce<M>(lossMaxPartial<D>(p, logits, row, lane, threads), FMaxOp{},
                          static_cast<C>(-INFINITY), shared);
      // Read before the sum's reduction, whose synchronisation orders it before the writes.
      const C xl = loadAs<D>(logits, row * p.classes + label);
      sum = rowAllReduce<M>(lossSumPartial<D>(p, logits, row, lane, threads, m), SumOp{}, C(0),
                            shared);
      if (lane == 0)
        losses[row] = m + rowLog(sum) - xl;
    } else if (lane == 0) {
      losses[row] = label == p.ignoreIndex ? C(0) : static_cast<C>(NAN);
    }
    if (s.grads)
      for (int64_t k = lane; k < p.classes; k += threads)
        lceGradAt<D>(p, logits, row, k, label, m, sum, g);
  });
}

template <DType D>
__global__ void __launch_bounds__(kFinishThreads)
    lceFinishKernel(const LceStep s, const void *__restrict__ labels,
                    const void *__restrict__ rowLosses, void *__restrict__ loss) {
  using C = LossCompute<D>;
  __shared__ C sharedSum[kWarpSize];
  __shared__ int64_t sharedCount[kWarpSize];
  const int lane = threadIdx.x, threads = blockDim.x;
  const C total = rowAllReduce<RowMode::Block>(
      lossFinishSumPartial<D>(s.rows, rowLosses, lane, threads), SumOp{}, C(0), sharedSum);
  const int64_t counted = rowAllReduce<RowMode::Block>(
      lossFinishCountPartial(s.rows, labels, lane, threads), SumOp{}, int64_t(0), sharedCount);
  if (lane == 0)
    lossFinishStore<D>(s.rows, loss, total, counted);
}

template <DType D>
__global__ void lceAccumulateKernel(const LceStep s, const void *__restrict__ partial,
                                    float *__restrict__ acc) {
  for (int64_t i = gridThread(); i < s.elements; i += gridStride())
    lceAccumulateAt<D>(s, partial, acc, i);
}

template <DType D>
__global__ void lceStoreKernel(const LceStep s, const float *__restrict__ acc,
                               void *__restrict__ out) {
  for (int64_t i = gridThread(); i < s.elements; i += gridStride())
    storeAs<D>(out, i, s.first ? 0.0f : acc[i]);
}

template <DType D>
__global__ void lceBiasAddKernel(const LceStep s, void *__restrict__ logits,
                                 const void *__restrict__ bias) {
  for (int64_t i = gridThread(); i < s.elements; i += gridStride())
    lceBiasAddAt<D>(s, logits, bias, i);
}

template <DType D>
__global__ void lceBiasGradKernel(const LceStep s, const void *__restrict__ grads,
                                  float *__restrict__ acc) {
  for (int64_t v = gridThread(); v < s.elements; v += gridStride())
    lceBiasGradAt<D>(s, grads, acc, v);
}

/// A step of the plan's GEMM dtypes with sane sizes.
bool validStep(const LceStep &s) {
  return (s.rows.dtype == DType::F32 || s.rows.dtype == DType::F16 ||
          s.rows.dtype == DType::BF16) &&
         (s.rows.labelDType == DType::I64 || s.rows.labelDType == DType::I32) &&
         s.rows.rows >= 0 && s.rows.classes >= 0 && s.elements >= 0 &&
         validThreadsPerRow(s.rows.threadsPerRow);
}

size_t computeBytes(DType d) { return d == DType::F32 ? sizeof(double) : sizeof(float); }

} // namespace

cudaError_t launchLceScale(const LceStep &s, const void *labels, const void *seed, void *scale,
                           cudaStream_t stream) {
  if (!validStep(s) || !usablePointer(seed, base::dtypeSize(s.rows.dtype)) ||
      !usablePointer(scale, computeBytes(s.rows.dtype)) ||
      (s.rows.rows > 0 && !usablePointer(labels, base::dtypeSize(s.rows.labelDType))))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceScaleKernel<decltype(d)::value><<<1, kFinishThreads, 0, stream>>>(s, labels, seed, scale);
  });
  return cudaGetLastError();
}

cudaError_t launchLceRows(const LceStep &s, void *logits, const void *labels, void *rowLosses,
                          const void *scale, cudaStream_t stream) {
  if (!validStep(s) || (s.grads && !usablePointer(scale, computeBytes(s.rows.dtype))))
    return cudaErrorInvalidValue;
  if (s.rows.rows == 0)
    return cudaSuccess;
  if (!usablePointer(logits, base::dtypeSize(s.rows.dtype)) ||
      !usablePointer(labels, base::dtypeSize(s.rows.labelDType)) ||
      !usablePointer(rowLosses, computeBytes(s.rows.dtype)))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    constexpr DType T = decltype(d)::value;
    launchRows(
        s.rows.rows, s.rows.threadsPerRow, stream,
        [](auto mode) { return lceRowKernel<T, decltype(mode)::value>; }, s, logits, labels,
        rowLosses, scale);
  });
  return cudaGetLastError();
}

cudaError_t launchLceFinish(const LceStep &s, const void *labels, const void *rowLosses,
                            void *loss, cudaStream_t stream) {
  if (!validStep(s) || !usablePointer(loss, base::dtypeSize(s.rows.dtype)) ||
      (s.rows.rows > 0 && (!usablePointer(labels, base::dtypeSize(s.rows.labelDType)) ||
                           !usablePointer(rowLosses, computeBytes(s.rows.dtype)))))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceFinishKernel<decltype(d)::value><<<1, kFinishThreads, 0, stream>>>(s, labels, rowLosses,
                                                                         loss);
  });
  return cudaGetLastError();
}

cudaError_t launchLceAccumulate(const LceStep &s, const void *partial, void *acc,
                                cudaStream_t stream) {
  if (!validStep(s))
    return cudaErrorInvalidValue;
  if (s.elements == 0)
    return cudaSuccess;
  if (!usablePointer(partial, base::dtypeSize(s.rows.dtype)) ||
      !usablePointer(acc, sizeof(float)))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceAccumulateKernel<decltype(d)::value><<<gridFor(s.elements), kBlockSize, 0, stream>>>(
        s, partial, static_cast<float *>(acc));
  });
  return cudaGetLastError();
}

cudaError_t launchLceStore(const LceStep &s, const void *acc, void *out, cudaStream_t stream) {
  if (!validStep(s))
    return cudaErrorInvalidValue;
  if (s.elements == 0)
    return cudaSuccess;
  if (!usablePointer(acc, sizeof(float)) || !usablePointer(out, base::dtypeSize(s.rows.dtype)))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceStoreKernel<decltype(d)::value><<<gridFor(s.elements), kBlockSize, 0, stream>>>(
        s, static_cast<const float *>(acc), out);
  });
  return cudaGetLastError();
}

cudaError_t launchLceBiasAdd(const LceStep &s, void *logits, const void *bias,
                             cudaStream_t stream) {
  if (!validStep(s) || s.rows.classes <= 0)
    return cudaErrorInvalidValue;
  if (s.elements == 0)
    return cudaSuccess;
  const size_t elem = base::dtypeSize(s.rows.dtype);
  if (!usablePointer(logits, elem) || !usablePointer(bias, elem))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceBiasAddKernel<decltype(d)::value><<<gridFor(s.elements), kBlockSize, 0, stream>>>(
        s, logits, bias);
  });
  return cudaGetLastError();
}

cudaError_t launchLceBiasGrad(const LceStep &s, const void *grads, void *acc,
                              cudaStream_t stream) {
  if (!validStep(s) || s.elements != s.rows.classes)
    return cudaErrorInvalidValue;
  if (s.elements == 0)
    return cudaSuccess;
  if ((s.rows.rows > 0 && !usablePointer(grads, base::dtypeSize(s.rows.dtype))) ||
      !usablePointer(acc, sizeof(float)))
    return cudaErrorInvalidValue;
  visitFloatDType(s.rows.dtype, [&](auto d) {
    lceBiasGradKernel<decltype(d)::value><<<gridFor(s.elements), kBlockSize, 0, stream>>>(
        s, grads, static_cast<float *>(acc));
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
