//===- Norm.h - Layer and RMS normalisation on the GPU ----------*- C++ -*-===//
//
// graph.layer_norm (ONNX LayerNormalization output 0, torch layer_norm) and graph.rms_norm
// (ONNX RMSNormalization opset 23, the Llama / Qwen RMSNorm): the GPU twin of
// kernels/cpu/Norm.h, computing what it computes.
//
// Shapes: x of rank >= 1, 0 <= axis < rank; each row is the cols = product(x.shape[axis:])
// contiguous elements of one index of x.shape[:axis] (rows = numel / cols); scale and the
// optional bias have shape x.shape[axis:]; out has x's shape. Contiguous row-major tensors
// in device memory.
//
// Dtypes: x, scale, bias and out share one dtype: f32, f16, bf16 or f64 (the CPU takes f32
// and f64).
//
// Numerics (as the CPU), per row:
//   layer_norm: mean = sum(x) / cols; var = sum((x - mean)^2) / cols (two passes, biased);
//               y = (x - mean) / sqrt(var + epsilon) * scale + bias
//   rms_norm:   y = x / sqrt(sum(x^2) / cols + epsilon) * scale
// in the compute type (double for f32 and f64, float for f16 and bf16; epsilon converted to
// it), rounded once when stored.
//
// Algorithm: the statistics passes and the write pass over a row by P = threadsPerRow
// threads (RowReduce.h): a warp for rows of 17..1024 elements, a block of 256..1024 threads
// for longer rows, one thread for rows of <= 16 elements. Bit-reproducible run to run.
//
// Errors: planLayerNorm / planRmsNorm return InvalidArgument with the CPU kernel's messages
// ("layer_norm: scale is f32[3], expected f32[4]"); the dtype message lists the GPU's
// dtypes. launchNorm returns cudaErrorInvalidValue for a bad plan or pointer (nothing is
// launched), else the launch's cudaGetLastError().
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_NORM_H
#define RP_KERNELS_CUDA_NORM_H

#include "kernels/cuda/RowReduce.h"
#include "kernels/cuda/Strided.h"
#include "base/DType.h"
#include "base/Status.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// Everything launchNorm needs (trivially copyable; see the file comment).
struct NormPlan {
  base::DType dtype = base::DType::F32;
  /// rms_norm (no mean, no bias) or layer_norm.
  bool rms = false;
  /// layer_norm with a bias tensor.
  bool hasBias = false;
  /// Rows; 0: nothing to launch.
  int64_t rows = 0;
  /// Elements per row (product of x.shape[axis:]).
  int64_t cols = 0;
  double epsilon = 0.0;
  /// Threads per row (RowReduce.h).
  int threadsPerRow = 1;
};

/// Checks the arguments as cpu::layerNorm does (InvalidArgument naming "layer_norm": dtype,
/// axis, scale / bias / out shape) and decides the geometry. `dtype` is the dtype of every
/// tensor; `bias` is null for no bias.
base::StatusOr<NormPlan> planLayerNorm(base::DType dtype, const Shape &x, const Shape &scale,
                                          const Shape *bias, int64_t axis, double epsilon,
                                          const Shape &out);

/// As planLayerNorm for cpu::rmsNorm ("rms_norm", no bias).
base::StatusOr<NormPlan> planRmsNorm(base::DType dtype, const Shape &x, const Shape &scale,
                                        int64_t axis, double epsilon, const Shape &out);

/// Enqueues the kernel on `stream`: device pointers aligned to the element size; `bias` is
/// non-null exactly when plan.hasBias (all may be null when plan.rows == 0). Never
/// synchronizes, needs no scratch. Returns cudaErrorInvalidValue (launching nothing) for a
/// plan not made by planLayerNorm / planRmsNorm or a bad pointer, else cudaGetLastError().
cudaError_t launchNorm(const NormPlan &plan, const void *x, const void *scale, const void *bias,
                       void *out, cudaStream_t stream);

//===--- the per-row math (host and device) -------------------------------===//

template <base::DType D> using NormCompute = typename DTypeTraits<D>::Compute;

/// Element c of row `row` as the compute type.
template <base::DType D> struct NormLoad {
  const void *x;
  int64_t base;
  RP_HD NormCompute<D> operator()(int64_t c) const { return loadAs<D>(x, base + c); }
};

/// (x_c - mean)^2 of one row.
template <base::DType D> struct NormSquareLoad {
  NormLoad<D> load;
  NormCompute<D> mean;
  RP_HD NormCompute<D> operator()(int64_t c) const {
    const NormCompute<D> d = load(c) - mean;
    return d * d;
  }
};

/// Thread `lane` of `threads`' partial sum of x over `row` (layer_norm's mean pass).
template <base::DType D>
RP_HD inline NormCompute<D> normSumPartial(const NormPlan &p, const void *x, int64_t row, int lane,
                                           int threads) {
  return stridedFold(p.cols, lane, threads, NormCompute<D>(0), NormLoad<D>{x, row * p.cols},
                     SumOp{});
}

/// The row mean from the row's sum (rms_norm: 0, its statistics are about 0).
template <base::DType D>
RP_HD inline NormCompute<D> normMean(const NormPlan &p, NormCompute<D> sum) {
  return p.rms ? NormCompute<D>(0) : sum / static_cast<NormCompute<D>>(p.cols);
}

/// Thread `lane` of `threads`' partial sum of (x - mean)^2 over `row`.
template <base::DType D>
RP_HD inline NormCompute<D> normSquarePartial(const NormPlan &p, const void *x, int64_t row,
                                              int lane, int threads, NormCompute<D> mean) {
  return stridedFold(p.cols, lane, threads, NormCompute<D>(0),
                     NormSquareLoad<D>{NormLoad<D>{x, row * p.cols}, mean}, SumOp{});
}

/// sqrt(squares / cols + epsilon).
template <base::DType D>
RP_HD inline NormCompute<D> normStdev(const NormPlan &p, NormCompute<D> squares) {
  using C = NormCompute<D>;
  return rowSqrt(squares / static_cast<C>(p.cols) + static_cast<C>(p.epsilon));
}

/// Writes the elements c = lane, lane + threads, ... of `row` from the row's statistics
/// (bias read only when plan.hasBias).
template <base::DType D>
RP_HD inline void normWrite(const NormPlan &p, const void *x, const void *scale, const void *bias,
                            void *out, int64_t row, int lane, int threads, NormCompute<D> mean,
                            NormCompute<D> stdev) {
  const int64_t base = row * p.cols;
  for (int64_t c = lane; c < p.cols; c += threads) {
    NormCompute<D> y = (loadAs<D>(x, base + c) - mean) / stdev * loadAs<D>(scale, c);
    if (p.hasBias)
      y += loadAs<D>(bias, c);
    storeAs<D>(out, base + c, y);
  }
}

/// What one thread computes for `row` when threadsPerRow is 1: the CPU's loop.
template <base::DType D>
RP_HD inline void normRowSerial(const NormPlan &p, const void *x, const void *scale,
                                const void *bias, void *out, int64_t row) {
  const NormCompute<D> mean =
      p.rms ? NormCompute<D>(0) : normMean<D>(p, normSumPartial<D>(p, x, row, 0, 1));
  const NormCompute<D> stdev = normStdev<D>(p, normSquarePartial<D>(p, x, row, 0, 1, mean));
  normWrite<D>(p, x, scale, bias, out, row, 0, 1, mean, stdev);
}

//===--- rms_norm_vjp -------------------------------------------------------===//
//
// graph.rms_norm_vjp (cpu::rmsNormVjp's semantics): per row, r = 1 / sqrt(mean(x^2) + eps)
// from the forward's square pass (normSquarePartial, normStdev), dot = sum_c (g_c scale_c)
// (x_c r) (normVjpDotPartial), then dx_c = r (g_c scale_c - x_c r dot / cols) and
// dscaleRows_c = g_c x_c r (normVjpWrite): three reads of x, two of g and scale, two writes, in
// one launch with normKernel's geometry. The plan is an rms NormPlan.

/// Checks graph.rms_norm_vjp's operands as cpu::rmsNormVjp does (InvalidArgument naming
/// "rms_norm_vjp": dtype, axis, scale, g, dx or dscale_rows shape) and decides the geometry.
base::StatusOr<NormPlan> planRmsNormVjp(base::DType dtype, const Shape &x, const Shape &scale,
                                        const Shape &g, int64_t axis, double epsilon,
                                        const Shape &dx, const Shape &dscaleRows);

/// Enqueues the VJP on `stream` (device pointers aligned to the element size). Never
/// synchronizes, needs no scratch. Returns cudaErrorInvalidValue (launching nothing) for a
/// plan not made by planRmsNormVjp or a bad pointer, else cudaGetLastError().
cudaError_t launchRmsNormVjp(const NormPlan &plan, const void *x, const void *scale,
                             const void *g, void *dx, void *dscaleRows, cudaStream_t stream);

/// (g_c scale_c) (x_c r) of one row.
template <base::DType D> struct NormVjpDotLoad {
  NormLoad<D> x, g;
  const void *scale;
  NormCompute<D> rstd;
  RP_HD NormCompute<D> operator()(int64_t c) const {
    return g(c) * loadAs<D>(scale, c) * (x(c) * rstd);
  }
};

/// Thread `lane` of `threads`' partial sum of (g * scale) * (x * r) over `row`.
template <base::DType D>
RP_HD inline NormCompute<D> normVjpDotPartial(const NormPlan &p, const void *x, const void *scale,
                                              const void *g, int64_t row, int lane, int threads,
                                              NormCompute<D> rstd) {
  const int64_t base = row * p.cols;
  return stridedFold(p.cols, lane, threads, NormCompute<D>(0),
                     NormVjpDotLoad<D>{NormLoad<D>{x, base}, NormLoad<D>{g, base}, scale, rstd},
                     SumOp{});
}

/// Writes dx and dscaleRows at c = lane, lane + threads, ... of `row` from r and the row's dot.
template <base::DType D>
RP_HD inline void normVjpWrite(const NormPlan &p, const void *x, const void *scale, const void *g,
                               void *dx, void *dscaleRows, int64_t row, int lane, int threads,
                               NormCompute<D> rstd, NormCompute<D> dot) {
  using C = NormCompute<D>;
  const int64_t base = row * p.cols;
  const C m = dot / static_cast<C>(p.cols);
  for (int64_t c = lane; c < p.cols; c += threads) {
    const C xhat = loadAs<D>(x, base + c) * rstd;
    const C gc = loadAs<D>(g, base + c);
    storeAs<D>(dx, base + c, rstd * (gc * loadAs<D>(scale, c) - xhat * m));
    storeAs<D>(dscaleRows, base + c, gc * xhat);
  }
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void norm(const NormPlan &plan, const void *x, const void *scale, const void *bias, void *out);
void rmsNormVjp(const NormPlan &plan, const void *x, const void *scale, const void *g, void *dx,
                void *dscaleRows);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_NORM_H
