//===- Shape.h - Data-movement graph ops on the CPU -------------*- C++ -*-===//
//
// graph.transpose, graph.expand, graph.concat, graph.slice, graph.split and
// graph.reshape (copyInto). Pure data movement: every dtype a kernel takes
// (f32, f64, i64, i32, i1) is copied bit for bit. The caller allocates each
// output with the op's result type; the kernels check it.
//
// Errors: InvalidArgument naming the op and the expected and actual value.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_SHAPE_H
#define RP_KERNELS_CPU_SHAPE_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>
#include <vector>

namespace rp::kernels::cpu {

/// ONNX Transpose: out.shape[i] = x.shape[perm[i]] and
/// out[i0, i1, ...] = x[j] with j[perm[d]] = i[d]. `perm` is a permutation of
/// [0, rank).
base::Status transpose(const base::HostTensor &x, const std::vector<int64_t> &perm,
                          base::HostTensor &out);

/// ONNX Expand / numpy broadcast_to: x broadcasts to out's shape (x's dims
/// align with the trailing dims of out; each is 1 or equal). out has x's dtype.
base::Status expand(const base::HostTensor &x, base::HostTensor &out);

/// ONNX Concat along `axis`: one or more inputs of one dtype and rank that
/// agree on every other dimension; out's `axis` dimension is their sum.
base::Status concat(const std::vector<const base::HostTensor *> &inputs, int64_t axis,
                       base::HostTensor &out);

/// ONNX Slice with graph's normalised bounds: for each listed axis (strictly
/// increasing) keep starts[i], starts[i] + steps[i], ... up to but excluding
/// ends[i]. steps[i] > 0 needs 0 <= start <= end <= dim; steps[i] < 0 needs
/// -1 <= end <= start < dim (end = -1 runs down to index 0). Out's dimension
/// is ceil((end - start) / step); unlisted axes are kept whole.
base::Status slice(const base::HostTensor &x, const std::vector<int64_t> &axes,
                      const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
                      const std::vector<int64_t> &steps, base::HostTensor &out);

/// ONNX Split along `axis` into outs.size() consecutive pieces whose `axis`
/// dimensions (each > 0) are taken from the outputs and sum to x's; every
/// other dimension and the dtype equal x's. Every pointer is non-null.
base::Status split(const base::HostTensor &x, int64_t axis,
                      const std::vector<base::HostTensor *> &outs);

/// graph.reshape: copies x's bytes into out, which has x's dtype and element
/// count (any shape).
base::Status copyInto(const base::HostTensor &x, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_SHAPE_H
