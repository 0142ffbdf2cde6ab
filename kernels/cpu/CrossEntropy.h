//===- CrossEntropy.h - Softmax cross-entropy loss on the CPU ---*- C++ -*-===//
//
// graph.cross_entropy: ONNX SoftmaxCrossEntropyLoss (no weights) and
// torch.nn.functional.cross_entropy with ignore_index.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_CROSSENTROPY_H
#define RP_KERNELS_CPU_CROSSENTROPY_H

#include "kernels/OpKinds.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

using LossReduction = ::rp::kernels::LossReduction; ///< kernels/OpKinds.h

/// loss[n, d...] = logsumexp_c(logits[n, :, d...]) - logits[n, labels[n, d...], d...]
/// for every position whose label is not `ignoreIndex`, reduced to the 0-D out.
/// logits: [N, C, d1..dk] f32 or f64 (rank >= 2); labels: [N, d1..dk] i64 or
/// i32; out: 0-D of the logits' dtype. The log-sum-exp (max-subtracted), the
/// per-position losses and their sum (sequential, in row-major position
/// order) are computed in double; f32 rounds once.
/// Errors: InvalidArgument for a bad dtype or shape; OutOfRange naming the
/// label value and its position for a label outside [0, C) that is not
/// ignoreIndex (the first such position in row-major order).
base::Status crossEntropy(const base::HostTensor &logits, const base::HostTensor &labels,
                             int64_t ignoreIndex, LossReduction reduction,
                             base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_CROSSENTROPY_H
