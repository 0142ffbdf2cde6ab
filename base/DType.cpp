//===- DType.cpp - Element types of runtime tensors -----------------------===//

#include "base/DType.h"

#include <string>

namespace rp {
inline namespace base {

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
  case DType::U8:
    return 1;
  }
  return 0; // unreachable for valid enumerators
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::U8:
    return "u8";
  }
  return "<invalid dtype>";
}

StatusOr<DType> parseDType(std::string_view name) {
  struct Entry {
    std::string_view name;
    DType type;
  };
  static constexpr Entry kNames[] = {
      {"f32", DType::F32},   {"f16", DType::F16},   {"bf16", DType::BF16}, {"f64", DType::F64},
      {"i64", DType::I64},   {"i32", DType::I32},   {"i1", DType::I1},     {"u8", DType::U8},
      // safetensors header spellings
      {"F32", DType::F32},   {"F16", DType::F16},   {"BF16", DType::BF16}, {"F64", DType::F64},
      {"I64", DType::I64},   {"I32", DType::I32},   {"BOOL", DType::I1},   {"U8", DType::U8},
  };
  for (const Entry &e : kNames)
    if (e.name == name)
      return e.type;
  return invalidArgument("unknown dtype '" + std::string(name) +
                         "': expected one of f32, f16, bf16, f64, i64, i32, i1, u8 "
                         "(or safetensors F32, F16, BF16, F64, I64, I32, BOOL, U8)");
}

bool isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::F64;
}

} // namespace base
} // namespace rp
