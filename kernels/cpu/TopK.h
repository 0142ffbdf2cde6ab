//===- TopK.h - The indices of the k largest elements on the CPU -*- C++ -*-===//
//
// graph.top_k (ONNX TopK; torch.topk's indices): along `axis`, the positions of the k largest
// (or smallest) elements, best first. Ties keep the lower position first (ONNX); NaN ranks above
// every number (torch.topk), so it comes first when `largest` and last otherwise. The values
// are a graph.gather_elements of the input by these indices (the importer emits it).
//
// Errors: InvalidArgument naming the op and the expected and actual dtype or shape, or a k
// outside [1, x.shape[axis]].
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_TOPK_H
#define RP_KERNELS_CPU_TOPK_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// out[..., j, ...] (j < k along `axis`) = the position along `axis` of x's j-th largest
/// (`largest`) or j-th smallest element of that row. x: f32 or f64; out: i64 with x's shape but
/// k along `axis`. Each row is ranked on its own (O(n log k) per row); the result does not
/// depend on the thread count.
base::Status topK(const base::HostTensor &x, int64_t k, int64_t axis, bool largest,
                     base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_TOPK_H
