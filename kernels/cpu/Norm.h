//===- Norm.h - Layer and RMS normalisation on the CPU ----------*- C++ -*-===//
//
// graph.layer_norm (ONNX LayerNormalization output 0,
// torch.nn.functional.layer_norm) and graph.rms_norm (ONNX RMSNormalization,
// opset 23; the Llama / Qwen RMSNorm modules). Both normalise each row of
// x.shape[axis:] elements (the dimensions [axis, rank) flattened).
//
// Numerics: the statistics (two-pass mean and biased variance, or the mean
// square) and y are computed in double; f32 rounds once when stored.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_NORM_H
#define RP_KERNELS_CPU_NORM_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// y = (x - mean) / sqrt(var + epsilon) * scale + bias over dims [axis, rank),
/// var = mean((x - mean)^2) (biased). x is f32 or f64 with 0 <= axis < rank;
/// scale and the optional bias (null: no bias) have shape x.shape[axis:] and
/// x's dtype; out has x's dtype and shape.
/// Errors: InvalidArgument for a bad axis, dtype or shape.
base::Status layerNorm(const base::HostTensor &x, const base::HostTensor &scale,
                          const base::HostTensor *bias, int64_t axis, double epsilon,
                          base::HostTensor &out);

/// y = x / sqrt(mean(x^2) + epsilon) * scale over dims [axis, rank); shapes and
/// errors as layerNorm.
base::Status rmsNorm(const base::HostTensor &x, const base::HostTensor &scale,
                        int64_t axis, double epsilon, base::HostTensor &out);

/// The VJP of rmsNorm before the sum over rows (graph.rms_norm_vjp), per row of x over dims
/// [axis, rank) with r = 1 / sqrt(mean(x^2) + epsilon), xhat = x r, dxhat = g * scale:
///   dx = r (dxhat - xhat mean(dxhat xhat)),   dscaleRows = g * xhat
/// (the scale's gradient is dscaleRows summed over dims [0, axis)). x is f32 or f64; scale as
/// rmsNorm's; g, dx and dscaleRows have x's dtype and shape. The row statistics and both
/// results are computed in double and rounded once when stored, so r is the forward's.
/// Errors: InvalidArgument for a bad axis, dtype or shape.
base::Status rmsNormVjp(const base::HostTensor &x, const base::HostTensor &scale,
                        const base::HostTensor &g, int64_t axis, double epsilon,
                        base::HostTensor &dx, base::HostTensor &dscaleRows);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_NORM_H
