//===- ElementBits.h - Dispatch on an element's size, for kernels that move bits -*- C++ -*-===//
//
// The kernels that move elements without reading their values (gathers, the overwriting
// scatters, slice_scatter, trilu, copies) work on the unsigned integer of the element's size,
// on both backends. Plain C++17, no dependency.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_ELEMENTBITS_H
#define RP_KERNELS_ELEMENTBITS_H

#include <cstddef>
#include <cstdint>

namespace rp::kernels {

/// Calls fn(E{}) with E the unsigned integer of `bytes` (1, 2, 4 or 8) bytes.
template <typename Fn> void visitBits(size_t bytes, Fn &&fn) {
  switch (bytes) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  default:
    return fn(uint64_t{});
  }
}

} // namespace rp::kernels

#endif // RP_KERNELS_ELEMENTBITS_H
