//===- Gather.h - Index-driven gathers on the CPU ---------------*- C++ -*-===//
//
// graph.gather (ONNX Gather; embedding lookup) and graph.gather_elements
// (ONNX GatherElements; torch.gather). Indices are i64 or i32; like ONNX,
// an index i in [-s, s) along an axis of size s reads position i, or s + i
// when i is negative. Data may be f32, f64, i64, i32 or i1 and is copied bit
// for bit.
//
// Errors: InvalidArgument naming the op and the expected and actual dtype or
// shape; OutOfRange naming the first (row-major) index outside [-s, s), its
// position in `indices`, and s.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_GATHER_H
#define RP_KERNELS_CPU_GATHER_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// out[i..., j..., k...] = data[i..., indices[j...], k...] with the indices
/// taken along `axis` (0 <= axis < data.rank()): out has data's dtype and the
/// shape data.shape[:axis] + indices.shape + data.shape[axis+1:].
base::Status gather(const base::HostTensor &data, const base::HostTensor &indices,
                       int64_t axis, base::HostTensor &out);

/// out[p] = data[p with p[axis] replaced by indices[p]] for every position p
/// of `indices`, which has data's rank and every non-axis dimension at most
/// data's; out has data's dtype and indices' shape.
base::Status gatherElements(const base::HostTensor &data, const base::HostTensor &indices,
                               int64_t axis, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_GATHER_H
