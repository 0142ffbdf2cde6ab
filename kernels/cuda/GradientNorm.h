//===- GradientNorm.h - The gradient norm's squares on the GPU --*- C++ -*-===//
//
// The global gradient norm (clipping, loss scaling) sums each param's squared scaled gradient
// in a fixed order (runtime/optim/AdamW.h sumOfSquares): blocks of 65536 elements, inside a
// block 16 lanes (element j of the block to lane j mod 16, each lane a sequential double sum
// from 0), the lanes in lane order, then the blocks in block order. The CUDA backend computes
// the lanes where the gradients are, before their download (runtime/exec/Backend.h
// `downloadGradients`), and the host adds the few lane sums in that order: the norm then needs
// no host pass over the gradients, and its bits are the host's.
//
// Algorithm: one thread per (block, lane), whose loop adds g * g, g = double(float(x[j] *
// scale)), over the lane's elements in increasing j; every operation rounds once (the device
// uses __fmul_rn, __dmul_rn and __dadd_rn, which nvcc never contracts into an FMA). A warp
// reads 16 consecutive floats of each of two blocks per iteration. squaresLaneAt is the body,
// shared by the kernel and the host test (test/Unit/kernels/cuda/CudaGradientNormHostTest.cpp,
// which checks it against sumOfSquares bit for bit without a GPU).
//
// Errors: launchSquaresLanes returns cudaErrorInvalidValue for n < 0 or a null or misaligned
// pointer when n > 0, otherwise cudaGetLastError() after enqueueing; it never synchronizes.
// This header contains no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_GRADIENTNORM_H
#define RP_KERNELS_CUDA_GRADIENTNORM_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// Elements per block and lanes per block of the norm's order (runtime::sumOfSquares').
inline constexpr int64_t kSquaresBlock = 65536;
inline constexpr int kSquaresLanes = 16;

/// The lane sums of a gradient of n elements: kSquaresLanes per block of kSquaresBlock.
inline int64_t squaresLaneCount(int64_t n) {
  return n <= 0 ? 0 : (n + kSquaresBlock - 1) / kSquaresBlock * kSquaresLanes;
}

/// Lane `lane` of block `block` of x[0, n): the sum over the block's elements j with
/// j - block * kSquaresBlock = lane (mod kSquaresLanes), in increasing j, of g * g with
/// g = double(float(x[j] * scale)). The host translation unit must not contract (g++ in ISO
/// C++ mode does not).
RP_HD inline double squaresLaneAt(const float *x, int64_t n, float scale, int64_t block,
                                  int lane) {
  const int64_t begin = block * kSquaresBlock;
  const int64_t end = begin + kSquaresBlock < n ? begin + kSquaresBlock : n;
  double s = 0.0;
  for (int64_t j = begin + lane; j < end; j += kSquaresLanes) {
#if defined(__CUDA_ARCH__)
    const double g = static_cast<double>(__fmul_rn(x[j], scale));
    s = __dadd_rn(s, __dmul_rn(g, g));
#else
    const double g = static_cast<double>(x[j] * scale);
    s += g * g;
#endif
  }
  return s;
}

/// Enqueues the lane sums of x[0, n) (device memory) into lanes[0, squaresLaneCount(n)),
/// lane l of block b at b * kSquaresLanes + l. Returns as described in the file comment.
cudaError_t launchSquaresLanes(const float *x, int64_t n, float scale, double *lanes,
                               cudaStream_t stream);

/// The sum of squares of a gradient of n elements from its lane sums (host memory, as
/// launchSquaresLanes lays them out): each block's lanes in lane order, then the blocks in
/// block order; runtime::sumOfSquares' value bit for bit.
inline double sumSquaresLanes(const double *lanes, int64_t n) {
  double total = 0.0;
  for (int64_t b = 0; b < squaresLaneCount(n) / kSquaresLanes; ++b) {
    double block = 0.0;
    for (int l = 0; l < kSquaresLanes; ++l)
      block += lanes[b * kSquaresLanes + l];
    total += block;
  }
  return total;
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_GRADIENTNORM_H
