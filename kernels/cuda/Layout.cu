//===- Layout.cu - Data movement on the GPU: the strided copy kernel ------===//
//
// One grid-stride kernel per element size; elements are moved as unsigned integers of that
// size (any dtype). Point i reads src[base0 + idx . strides0] and writes dst[base1 + ...].
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Launch.cuh"
#include "kernels/cuda/Layout.h"

namespace rp::kernels::cuda {
namespace {

template <typename T>
__global__ void copyKernel(StridedIter<2> it, const T *__restrict__ src, T *__restrict__ dst) {
  for (int64_t i = gridThread(); i < it.numel; i += gridStride())
    copyAt(it, src, dst, i);
}

template <typename T>
cudaError_t launchAs(const CopyPlan &p, const void *src, void *dst, cudaStream_t stream) {
  copyKernel<T><<<gridFor(p.iter.numel), kBlockSize, 0, stream>>>(
      p.iter, static_cast<const T *>(src), static_cast<T *>(dst));
  return cudaGetLastError();
}

} // namespace

cudaError_t launchCopy(const CopyPlan &p, const void *src, void *dst, cudaStream_t stream) {
  if (p.iter.numel == 0)
    return cudaSuccess;
  if (!src || !dst)
    return cudaErrorInvalidValue;
  switch (p.elementBytes) {
  case 1:
    return launchAs<uint8_t>(p, src, dst, stream);
  case 2:
    return launchAs<uint16_t>(p, src, dst, stream);
  case 4:
    return launchAs<uint32_t>(p, src, dst, stream);
  case 8:
    return launchAs<uint64_t>(p, src, dst, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace rp::kernels::cuda
