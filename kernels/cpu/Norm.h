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

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_NORM_H
