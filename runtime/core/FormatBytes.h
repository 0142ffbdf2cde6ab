//===- FormatBytes.h - Byte counts for messages ------------------*- C++ -*-===//
#ifndef RP_RUNTIME_CORE_FORMATBYTES_H
#define RP_RUNTIME_CORE_FORMATBYTES_H

#include <cstdint>
#include <string>

namespace rp::runtime {

/// "1.5 GiB", "300.0 MiB", "12.0 KiB", "17 B" (binary units up to TiB, one decimal): for
/// messages and summaries.
std::string formatBytes(uint64_t bytes);

} // namespace rp::runtime

#endif // RP_RUNTIME_CORE_FORMATBYTES_H
