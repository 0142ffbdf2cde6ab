//===- Reduce.h - Reductions (graph.reduce_*) on the CPU --------*- C++ -*-===//
//
// ONNX ReduceSum / ReduceMean / ReduceMax over a list of axes, with or
// without keepdims. Each output element is reduced by one thread in
// row-major order of the reduced indices, so results do not depend on the
// thread count.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_REDUCE_H
#define RP_KERNELS_CPU_REDUCE_H

#include "kernels/OpKinds.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>
#include <vector>

namespace rp::kernels::cpu {

using ReduceKind = ::rp::kernels::ReduceKind; ///< kernels/OpKinds.h

/// out = reduce(x) over `axes` (non-empty, strictly increasing, each in
/// [0, rank): graph's normalised form). x is f32, f64, i64 or i32; out has
/// x's dtype and x's shape with each reduced dimension set to 1 (keepdims) or
/// removed.
/// Errors: InvalidArgument for bad axes, dtype or out type.
base::Status reduce(ReduceKind kind, const base::HostTensor &x,
                       const std::vector<int64_t> &axes, bool keepdims, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_REDUCE_H
