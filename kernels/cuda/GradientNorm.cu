//===- GradientNorm.cu - The gradient norm's squares on the GPU -----------===//
//
// The launcher of the lane sums; the per-lane body lives in GradientNorm.h (shared with the
// host test).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/GradientNorm.h"

#include "kernels/cuda/Launch.cuh"

namespace rp::kernels::cuda {
namespace {

__global__ void squaresLanesKernel(const float *x, int64_t n, float scale, double *lanes,
                                   int64_t count) {
  for (int64_t t = gridThread(); t < count; t += gridStride())
    lanes[t] = squaresLaneAt(x, n, scale, t / kSquaresLanes, static_cast<int>(t % kSquaresLanes));
}

} // namespace

cudaError_t launchSquaresLanes(const float *x, int64_t n, float scale, double *lanes,
                               cudaStream_t stream) {
  if (n < 0 || (n > 0 && !(usablePointers(sizeof(float), x) &&
                            usablePointers(sizeof(double), lanes))))
    return cudaErrorInvalidValue;
  const int64_t count = squaresLaneCount(n);
  if (count == 0)
    return cudaSuccess;
  squaresLanesKernel<<<gridFor(count), kBlockSize, 0, stream>>>(x, n, scale, lanes, count);
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
