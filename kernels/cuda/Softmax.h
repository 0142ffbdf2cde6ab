//===- Softmax.h - Softmax and log-softmax on the GPU -----------*- C++ -*-===//
//
// graph.softmax / graph.log_softmax (ONNX Softmax / LogSoftmax opset 13, along one axis):
// the GPU twin of kernels/cpu/Softmax.h, computing what it computes.
//
// Shapes: x of rank >= 1, 0 <= axis < rank; out has x's shape. A "line" is the dim =
// x.shape[axis] elements that share all other indices: line l (0 <= l < outer * inner,
// inner = product of the dimensions after axis) starts at element (l / inner) * dim * inner
// + l % inner and steps by inner. Contiguous row-major tensors in device memory.
//
// Dtypes: x and out share one dtype: f32, f16, bf16 or f64 (the CPU takes f32 and f64).
//
// Numerics (as the CPU), per line with m = max(x):
//   softmax:      y = exp(x - m) / sum(exp(x - m))
//   log-softmax:  y = (x - m) - log(sum(exp(x - m)))
// in the compute type (double for f32 and f64, float for f16 and bf16), rounded once when
// stored. A NaN in a line, or a line whose maximum is +-inf, gives NaN for the whole line.
//
// Algorithm: three passes over a line (max, sum of exponentials, the writes) by P =
// threadsPerRow threads (threadsPerRowFor in RowReduce.h): one thread per line for lines of
// <= 16 elements, and for strided lines (inner > 1) of <= 64 elements or when there are >=
// 4096 of them (neighbouring threads then read neighbouring addresses; the sum is the CPU's
// sequential one); else a warp (<= 1024 elements) or a block of 256, 512 or 1024 threads.
// Bit-reproducible run to run.
//
// Errors: planSoftmax returns InvalidArgument with the CPU kernel's messages ("softmax:
// axis 2 is out of range, expected [0, 2)"); the dtype message lists the GPU's dtypes.
// launchSoftmax returns cudaErrorInvalidValue for a bad plan or pointer (nothing is
// launched), else the launch's cudaGetLastError().
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_SOFTMAX_H
#define RP_KERNELS_CUDA_SOFTMAX_H

#include "kernels/cuda/RowReduce.h"
#include "kernels/cuda/Strided.h"
#include "base/DType.h"
#include "base/Status.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// Everything launchSoftmax needs (trivially copyable; see the file comment).
struct SoftmaxPlan {
  base::DType dtype = base::DType::F32;
  bool log = false;
  /// outer * inner lines; 0 (or dim == 0): nothing to launch.
  int64_t lines = 0;
  /// Elements per line (x.shape[axis]).
  int64_t dim = 0;
  /// Element stride of a line (product of the dimensions after axis).
  int64_t inner = 1;
  /// Threads per line (RowReduce.h).
  int threadsPerRow = 1;
};

/// Checks the arguments as cpu::softmax does (InvalidArgument: dtype, axis, out shape; op
/// named "softmax" or "log_softmax") and decides the geometry. `dtype` is the dtype of x and
/// out; `out` is out's shape.
base::StatusOr<SoftmaxPlan> planSoftmax(base::DType dtype, const Shape &x, int64_t axis,
                                           bool log, const Shape &out);

/// Enqueues the kernel on `stream`: x and out are device pointers aligned to the element
/// size (may be null when the plan has no elements). Never synchronizes, needs no scratch.
/// Returns cudaErrorInvalidValue (launching nothing) for a plan not made by planSoftmax or a
/// null / misaligned pointer, else cudaGetLastError().
cudaError_t launchSoftmax(const SoftmaxPlan &plan, const void *x, void *out, cudaStream_t stream);

//===--- the per-line math (host and device) ------------------------------===//

template <base::DType D> using SoftmaxCompute = typename DTypeTraits<D>::Compute;

/// Thread `lane` of `threads`' partial maximum of `line` (MaxOp from -inf: NaN if the
/// thread saw a NaN).
template <base::DType D>
RP_HD inline SoftmaxCompute<D> softmaxMaxPartial(const SoftmaxPlan &p, const void *x, int64_t line,
                                                 int lane, int threads) {
  using C = SoftmaxCompute<D>;
  return stridedFold(p.dim, lane, threads, static_cast<C>(-INFINITY),
                     LineLoad<D>{x, lineBase(line, p.dim, p.inner), p.inner}, MaxOp{});
}

/// Thread `lane` of `threads`' partial sum of exp(x - m) over `line`.
template <base::DType D>
RP_HD inline SoftmaxCompute<D> softmaxSumPartial(const SoftmaxPlan &p, const void *x, int64_t line,
                                                 int lane, int threads, SoftmaxCompute<D> m) {
  using C = SoftmaxCompute<D>;
  const LineLoad<D> load{x, lineBase(line, p.dim, p.inner), p.inner};
  return stridedFold(p.dim, lane, threads, C(0), LineExpLoad<D>{load, m}, SumOp{});
}

/// Writes the elements k = lane, lane + threads, ... of `line` from the line's maximum m and
/// sum of exponentials (NaN everywhere when m is NaN or infinite).
template <base::DType D>
RP_HD inline void softmaxWrite(const SoftmaxPlan &p, const void *x, void *out, int64_t line,
                               int lane, int threads, SoftmaxCompute<D> m, SoftmaxCompute<D> sum) {
  using C = SoftmaxCompute<D>;
  const int64_t base = lineBase(line, p.dim, p.inner);
  if (!rowIsFinite(m)) {
    for (int64_t k = lane; k < p.dim; k += threads)
      storeAs<D>(out, base + k * p.inner, static_cast<C>(NAN));
    return;
  }
  const LineLoad<D> load{x, base, p.inner};
  if (p.log) {
    const C logSum = rowLog(sum);
    for (int64_t k = lane; k < p.dim; k += threads)
      storeAs<D>(out, base + k * p.inner, (load(k) - m) - logSum);
  } else {
    for (int64_t k = lane; k < p.dim; k += threads)
      storeAs<D>(out, base + k * p.inner, rowExp(load(k) - m) / sum);
  }
}

/// What one thread computes for `line` when threadsPerRow is 1: the CPU's loop.
template <base::DType D>
RP_HD inline void softmaxLineSerial(const SoftmaxPlan &p, const void *x, void *out, int64_t line) {
  const SoftmaxCompute<D> m = softmaxMaxPartial<D>(p, x, line, 0, 1);
  const SoftmaxCompute<D> sum = softmaxSumPartial<D>(p, x, line, 0, 1, m);
  softmaxWrite<D>(p, x, out, line, 0, 1, m, sum);
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void softmax(const SoftmaxPlan &plan, const void *x, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_SOFTMAX_H
