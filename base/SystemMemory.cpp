//===- SystemMemory.cpp - How much memory this machine has ----------------===//

#include "base/SystemMemory.h"

#include <cstdlib>

#include <unistd.h>

namespace rp {
inline namespace base {

uint64_t physicalMemoryBytes() {
  if (const char *limit = std::getenv("RP_MEMORY_LIMIT_BYTES")) {
    char *end = nullptr;
    const unsigned long long v = std::strtoull(limit, &end, 10);
    if (*limit >= '0' && *limit <= '9' && *end == '\0')
      return v;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

} // namespace base
} // namespace rp
