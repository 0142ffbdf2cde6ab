//===- Cast.h - Element-type conversion on the CPU --------------*- C++ -*-===//
//
// Reference element-wise cast between any two runtime dtypes, with the
// semantics of ONNX Cast and PyTorch Tensor.to():
//   - float -> float: round to nearest even; NaN stays NaN (quiet); overflow
//     gives infinity. f64 -> f16/bf16 and i64/i32 -> f16/bf16 are correctly
//     rounded (one rounding, via round-to-odd; PyTorch rounds twice through
//     f32 and can differ by one ulp on rare ties).
//   - float -> integer: truncate toward zero. Where C++, ONNX and PyTorch leave
//     it undefined we define it like CUDA cvt.rzi and Rust `as`: NaN -> 0,
//     out of range and +-inf saturate to the integer's min / max.
//   - integer -> integer: two's-complement wrap (i64 -> i32 keeps the low 32 bits).
//   - x -> i1: x != 0 (NaN -> true, -0.0 -> false); i1 -> x: 0 or 1.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_CAST_H
#define RP_KERNELS_CPU_CAST_H

#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// Converts `n` elements of `srcType` at `src` into `dstType` at `dst`
/// (dtypeSize(srcType) * n and dtypeSize(dstType) * n bytes; any alignment).
/// The buffers must not overlap, except src == dst when both dtypes have the
/// same size (an in-place cast). Large `n` runs on OpenMP threads.
/// Errors: InvalidArgument when n < 0, n > 0 with a null pointer, or a dtype
/// outside the enum.
base::Status cast(const void *src, base::DType srcType, void *dst, base::DType dstType,
                     int64_t n);

/// graph.cast on tensors: converts every element of x (any dtype, f16/bf16
/// included) into out, which has x's shape and the target dtype.
/// Errors: InvalidArgument naming both types when the shapes differ.
base::Status cast(const base::HostTensor &x, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_CAST_H
