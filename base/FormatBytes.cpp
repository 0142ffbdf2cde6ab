//===- FormatBytes.cpp - Byte counts and numbers for messages -------------===//

#include "base/FormatBytes.h"

#include <cstdio>

namespace rp {
inline namespace base {

std::string formatBytes(uint64_t bytes) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

} // namespace base
} // namespace rp
