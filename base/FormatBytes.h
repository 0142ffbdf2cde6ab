//===- FormatBytes.h - Byte counts and numbers for messages ------*- C++ -*-===//
#ifndef RP_BASE_FORMATBYTES_H
#define RP_BASE_FORMATBYTES_H

#include <cstdint>
#include <string>

namespace rp {
inline namespace base {

/// "1.5 GiB", "300.0 MiB", "12.0 KiB", "17 B" (binary units up to TiB, one decimal): for
/// messages and summaries.
std::string formatBytes(uint64_t bytes);

/// `v` in printf's %g form ("25", "0.001", "12.5", "inf", "nan"): the value a message quotes.
std::string formatNumber(double v);

} // namespace base
} // namespace rp

#endif // RP_BASE_FORMATBYTES_H
