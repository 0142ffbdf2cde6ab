//===- TopKOrder.h - The order graph.top_k ranks elements by -----*- C++ -*-===//
//
// Shared by the CPU reference kernel (kernels/cpu/TopK.h) and the GPU kernel
// (kernels/cuda/TopK.h), host and device, so that both pick the same positions.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_TOPKORDER_H
#define RP_KERNELS_TOPKORDER_H

#include "base/Float16.h"

#include <cstdint>

namespace rp::kernels {

/// Whether element a (at position ia) ranks before element b (at ib): the larger (smaller when
/// !largest) first, NaN above every number (torch.topk), ties by the lower position (ONNX
/// TopK). A strict total order. `a != a` tests NaN on the host and the device alike.
template <typename T>
RP_HOST_DEVICE inline bool topKRanksBefore(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool na = a != a, nb = b != b;
  if (na || nb) {
    if (na && nb)
      return ia < ib;
    return largest ? na : nb;
  }
  if (a != b)
    return largest ? a > b : a < b;
  return ia < ib;
}

} // namespace rp::kernels

#endif // RP_KERNELS_TOPKORDER_H
