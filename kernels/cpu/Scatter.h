//===- Scatter.h - Scatters, the VJPs of gathers and slices -----*- C++ -*-===//
//
// graph.scatter_add, graph.scatter_elements_add and graph.slice_scatter: the
// transposes (vector-Jacobian products) of graph.gather, graph.gather_elements
// and graph.slice (kernels/cpu/Gather.h, Shape.h). Each starts from zeros of
// out's type, so for a gather-like op G and its scatter S,
// <G(x), u> == <x, S(u)> for every x and u. The embedding gradient is a
// scatter_add on axis 0; the cross-entropy gradient of the picked logits is a
// scatter_elements_add on the class axis.
//
// graph.scatter and graph.scatter_elements overwrite instead (ONNX ScatterND
// and ScatterElements without a reduction): out is a copy of `data` in which
// the positions gather or gather_elements would read receive the updates. They
// move bits and take any kernel dtype (f32, f64, i64, i32, i1). When several
// updates land on one element, the last in the row-major order of the indices
// (scatter) or of its line along `axis` (scatter_elements) wins; threads split
// the output (rows, lines), so the result does not depend on the thread count.
//
// Conventions (those of the gathers): the caller allocates `out` with the
// op's result type (the shape of the gather's *data*) and the kernels check it;
// indices are i64 or i32, and an index i in [-s, s) along an axis of size s
// addresses position i, or s + i when i is negative (ONNX).
//
// Numerics: scatter_add and scatter_elements_add take f32 or f64 (callers
// upcast f16/bf16) and sum every output element in double, in the row-major
// order of `updates`, rounding once at the store (as reduce_sum). Threads split
// the *output* (one output row or line per task, never one accumulation), so
// results are bit-identical for any thread count (docs/DECISIONS.md).
// slice_scatter moves bits and takes any kernel dtype (f32, f64, i64, i32, i1).
//
// Errors: InvalidArgument naming the op and the expected and actual dtype,
// shape or bound; OutOfRange naming the first (row-major) index outside
// [-s, s), its position in `indices`, and s. Nothing is written to `out`
// before every check has passed.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_SCATTER_H
#define RP_KERNELS_CPU_SCATTER_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>
#include <vector>

namespace rp::kernels::cpu {

/// graph.scatter_add, the transpose of gather(data = out, indices, axis):
///   out = 0;  out[i..., indices[j...], k...] += updates[i..., j..., k...]
/// for every position of `updates`, whose shape must be
/// out.shape[:axis] + indices.shape + out.shape[axis+1:] (0 <= axis <
/// out.rank()). Repeated indices accumulate, in the row-major order of
/// `updates`. updates and out: f32 or f64, the same dtype.
base::Status scatterAdd(const base::HostTensor &updates, const base::HostTensor &indices,
                           int64_t axis, base::HostTensor &out);

/// graph.scatter_elements_add, the transpose of gather_elements(data = out,
/// indices, axis) (ONNX GatherElements / torch.gather; torch.scatter_add_):
///   out = 0;  out[p with p[axis] replaced by indices[p]] += updates[p]
/// for every position p of `updates`. indices.shape == updates.shape, of
/// out's rank, each dimension but `axis` at most out's (the `axis` dimension
/// may be any size). updates and out: f32 or f64, the same dtype.
base::Status scatterElementsAdd(const base::HostTensor &updates,
                                   const base::HostTensor &indices, int64_t axis,
                                   base::HostTensor &out);

/// graph.scatter, the overwriting counterpart of gather(data, indices, axis):
///   out = data;  out[i..., indices[j...], k...] = updates[i..., j..., k...]
/// for every index position j..., in row-major order (the last repeated index wins).
/// updates has the shape data.shape[:axis] + indices.shape + data.shape[axis+1:]; data,
/// updates and out have one dtype (any), out data's shape.
base::Status scatter(const base::HostTensor &data, const base::HostTensor &indices,
                     const base::HostTensor &updates, int64_t axis, base::HostTensor &out);

/// graph.scatter_elements, the overwriting counterpart of gather_elements(data, indices,
/// axis) (ONNX ScatterElements, torch.Tensor.scatter):
///   out = data;  out[p with p[axis] replaced by indices[p]] = updates[p]
/// for every position p of updates, each line along `axis` in order (the later wins).
/// indices.shape == updates.shape, of data's rank, each dimension but `axis` at most data's;
/// data, updates and out have one dtype (any), out data's shape.
base::Status scatterElements(const base::HostTensor &data, const base::HostTensor &indices,
                             const base::HostTensor &updates, int64_t axis,
                             base::HostTensor &out);

/// graph.slice_scatter, the transpose of slice(x = out, axes, starts, ends,
/// steps) with the same normalised bounds as cpu::slice (axes strictly
/// increasing; step > 0: 0 <= start <= end <= dim; step < 0:
/// -1 <= end <= start < dim, end = -1 running down to index 0): out is zero
/// except at the positions the slice reads, which receive `update` element for
/// element. update.shape must be the slice's result shape; update and out have
/// one dtype, any of f32, f64, i64, i32, i1 (copied bit for bit).
base::Status sliceScatter(const base::HostTensor &update, const std::vector<int64_t> &axes,
                             const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
                             const std::vector<int64_t> &steps, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_SCATTER_H
