//===- JsonNumbers.h - Numbers read from JSON by the runtime's readers -*- C++ -*-===//
//
// Internal to the runtime libraries that parse JSON (safetensors headers, checkpoint
// manifests): it includes nlohmann/json, which stays out of their public headers.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_IO_JSONNUMBERS_H
#define RP_RUNTIME_IO_JSONNUMBERS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>

namespace rp::runtime {

/// A JSON non-negative integer that fits int64, or nullopt (a negative number, a float, a
/// string, anything else).
inline std::optional<int64_t> jsonNonNegativeInt(const nlohmann::json &v) {
  if (!v.is_number_unsigned())
    return std::nullopt;
  const uint64_t u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return static_cast<int64_t>(u);
}

} // namespace rp::runtime

#endif // RP_RUNTIME_IO_JSONNUMBERS_H
