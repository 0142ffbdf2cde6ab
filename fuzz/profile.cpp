//===- profile.cpp - Fuzz target: layer profiles and the partitioner -------===//
//
// The input is a layer-profile JSON file (runtime/partition/Profile.h), parsed as
// `rpc-compile --profile` and `rp-run --backend sim --profile` read it. A profile that parses
// and validates is also partitioned by both partitioners for 2 GPUs and 4 micro-batches
// (PCIe 32 GB/s, 24 GB of GPU memory, the limit raised as the library does): a fuzzed profile
// may not crash or hang the planner either. Seeds: examples/profiles/*.json and the profiles
// of the tests (scripts/fuzz.sh).

#include "runtime/partition/CostModel.h"
#include "runtime/partition/Partitioner.h"
#include "runtime/partition/Profile.h"

#include <string_view>

using namespace rp::partition;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  auto profile = parseProfile(text, "fuzz.json");
  if (!profile.ok() || !validateProfile(*profile, "fuzz.json").ok())
    return 0;
  // The planners' cost is polynomial in the layer count; an input of a few KiB holds at most a
  // few hundred layers.
  auto model = CostModel::create(*profile, /*pcieGbps=*/32.0, /*numMicroBatches=*/4);
  if (!model.ok())
    return 0;
  PartitionOptions options;
  options.numGpus = 2;
  options.modelMemoryLimitBytes = 24'000'000'000ull;
  options.raiseMemoryLimit = true;
  for (PartitionAlgorithm a : {PartitionAlgorithm::RoundPipe, PartitionAlgorithm::Exact}) {
    auto plan = partition(a, *model, options);
    if (plan.ok())
      (void)validatePlan(*plan, *model);
  }
  return 0;
}
