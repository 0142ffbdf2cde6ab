//===- target.cpp - Fuzz target: target descriptions -----------------------===//
//
// The first input byte picks the form: even, a target JSON file (`--target FILE`); odd, the
// flag form "name=rtx4090,pcie_gbps=32,..." (`--target name=...`) (runtime/partition/
// Profile.h). A target that parses gives the library's default memory limit.
// Seeds: the target files of the tests and a few flags (scripts/fuzz.sh).

#include "runtime/partition/Partitioner.h"
#include "runtime/partition/Profile.h"

#include <string_view>

using namespace rp::partition;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);
  auto target = data[0] % 2 == 0 ? parseTarget(text, "fuzz.json") : parseTargetFlag(text);
  if (target.ok())
    (void)defaultModelMemoryLimit(*target);
  return 0;
}
