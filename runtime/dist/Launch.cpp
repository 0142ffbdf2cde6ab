//===- Launch.cpp - How rp-run was launched (MPI or plain) ----------------===//

#include "runtime/dist/World.h"

#include <cstdlib>

namespace rp::runtime {

std::optional<MpiLaunch> detectMpiLaunch() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char *value = std::getenv(name);
    if (!value)
      continue;
    char *end = nullptr;
    const long size = std::strtol(value, &end, 10);
    MpiLaunch launch;
    launch.variable = name;
    launch.size = (end != value && *end == '\0' && size > 0 && size < (1L << 30))
                      ? static_cast<int>(size)
                      : 1;
    return launch;
  }
  return std::nullopt;
}

std::string rankPath(const std::string &path, int rank) {
  if (path.empty() || rank == 0)
    return path;
  return path + ".rank" + std::to_string(rank);
}

} // namespace rp::runtime
