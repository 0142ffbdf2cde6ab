//===- DType.h - Element types of runtime tensors ---------------*- C++ -*-===//
//
// The element types a plan, a safetensors file or a kernel can name, their
// storage sizes and names, and (via Float16.h) the scalar conversions between
// binary32 and the 16-bit float formats.
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_DTYPE_H
#define RP_BASE_DTYPE_H

#include "base/Float16.h"
#include "base/Status.h"

#include <cstddef>
#include <string_view>

namespace rp {
inline namespace base {

/// Element type of a tensor. Storage: F32 binary32, F16 IEEE binary16,
/// BF16 bfloat16, F64 binary64, I64/I32 two's-complement integers, I1 a
/// boolean stored as one byte holding 0 or 1 (like PyTorch and safetensors
/// "BOOL"; readers treat any non-zero byte as true).
enum class DType { F32, F16, BF16, F64, I64, I32, I1, U8 };

/// Every DType, in declaration order (for tests and tables).
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                       DType::I64, DType::I32, DType::I1, DType::U8};

/// Storage size of one element in bytes (I1: 1 byte).
size_t dtypeSize(DType type);

/// The MLIR-style lower-case name: "f32", "f16", "bf16", "f64", "i64", "i32", "i1".
const char *dtypeName(DType type);

/// Parses a dtype name: the names dtypeName returns, or the safetensors header
/// names "F32", "F16", "BF16", "F64", "I64", "I32", "BOOL".
/// Errors: InvalidArgument naming the text and the accepted names.
StatusOr<DType> parseDType(std::string_view name);

/// True for F32, F16, BF16 and F64.
bool isFloat(DType type);

} // namespace base
} // namespace rp

#endif // RP_BASE_DTYPE_H
