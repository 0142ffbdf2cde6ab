//===- Generators.h - graph.range and graph.trilu on the CPU ----*- C++ -*-===//
//
// ONNX Range (an arithmetic sequence) and ONNX Trilu (keep a triangle of the
// last two dimensions), the ops behind position ids and causal masks.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_GENERATORS_H
#define RP_KERNELS_CPU_GENERATORS_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// ONNX Range: out[i] = start + i * delta for i < max(ceil((limit - start) /
/// delta), 0), which must equal out's length. out is 1-D f32, f64, i64 or
/// i32. Float outputs compute start + i * delta in double and round once (as
/// torch.arange); integer outputs need integral start, limit and delta and
/// are computed exactly by rangeInt.
/// Errors: InvalidArgument for delta = 0, a non-finite or (integer out)
/// non-integral argument, a length or dtype mismatch.
base::Status range(double start, double limit, double delta, base::HostTensor &out);

/// Integer ONNX Range computed exactly in int64: out[i] = start + i * delta
/// for every i < out's length (1-D i64 or i32).
/// Errors: InvalidArgument for delta = 0, a dtype or rank mismatch, or a
/// value that overflows the output dtype.
base::Status rangeInt(int64_t start, int64_t delta, base::HostTensor &out);

/// As rangeInt, after checking that out's length is
/// max(ceil((limit - start) / delta), 0) (computed exactly).
base::Status rangeInt(int64_t start, int64_t limit, int64_t delta, base::HostTensor &out);

/// ONNX Trilu on the last two dimensions (rows i, columns j) of x (rank >= 2,
/// f32, f64, i64, i32 or i1): `upper` keeps elements with j - i >= k, lower
/// keeps j - i <= k; the rest become 0 (false). out has x's dtype and shape.
base::Status trilu(const base::HostTensor &x, int64_t k, bool upper,
                      base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_GENERATORS_H
