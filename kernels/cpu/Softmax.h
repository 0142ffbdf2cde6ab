//===- Softmax.h - Softmax and log-softmax on the CPU -----------*- C++ -*-===//
//
// graph.softmax / graph.log_softmax: ONNX Softmax / LogSoftmax (opset 13:
// along one axis) and torch.softmax / torch.log_softmax.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_SOFTMAX_H
#define RP_KERNELS_CPU_SOFTMAX_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// Along `axis` (0 <= axis < rank), with m = max(x):
///   softmax:      y = exp(x - m) / sum(exp(x - m))
///   log-softmax:  y = (x - m) - log(sum(exp(x - m)))
/// Subtracting the maximum keeps exp from overflowing. The exponentials, the
/// sum (sequential, in axis order) and y are computed in double; f32 rounds
/// once when stored. A NaN in a slice, or a slice whose maximum is +-inf,
/// gives NaN for the whole slice (as PyTorch).
/// x is f32 or f64; out has x's dtype and shape.
/// Errors: InvalidArgument for a bad axis, dtype or out type.
base::Status softmax(const base::HostTensor &x, int64_t axis, bool log,
                        base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_SOFTMAX_H
