//===- CumSum.h - Cumulative sums on the CPU --------------------*- C++ -*-===//
//
// The reference kernel of graph.cumsum (ONNX CumSum; torch.cumsum): along one axis, each
// element is the sum of the elements before it (and itself unless `exclusive`), counted from
// the start, or from the end with `reverse`.
//
// Numerics: f32 and f64 accumulate in double, in position order from the start of the run,
// each element rounded once when stored (as reduce_sum); integers accumulate in int64 with
// wrapping and wrap to i32 when stored. Threads split the lanes (every coordinate but the
// axis), never one run, so results do not depend on the thread count.
//
// Errors (Status, never abort): InvalidArgument naming the op and the expected and actual
// dtype, shape or axis; f16/bf16 are rejected (the caller upcasts them to f32).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_CUMSUM_H
#define RP_KERNELS_CPU_CUMSUM_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// graph.cumsum: out[..., i, ...] = sum of x[..., j, ...] along `axis` over j <= i (j < i with
/// `exclusive`; j >= i, or j > i, with `reverse`). x and out: f32, f64, i64 or i32, one dtype
/// and shape; 0 <= axis < rank.
base::Status cumsum(const base::HostTensor &x, int64_t axis, bool exclusive, bool reverse,
                    base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_CUMSUM_H
