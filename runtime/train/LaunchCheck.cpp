//===- LaunchCheck.cpp - Every data-parallel rank trains the same run -----===//

#include "runtime/train/LaunchCheck.h"

#include "runtime/data/BatchSampler.h"
#include "runtime/dist/World.h"

#include <cstring>
#include <fstream>

namespace rp::runtime {

uint64_t fingerprintBytes(const void *data, size_t bytes, uint64_t h) {
  const auto *p = static_cast<const uint8_t *>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = splitmix64(h ^ word);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, bytes - i);
  return splitmix64(splitmix64(h ^ tail) ^ static_cast<uint64_t>(bytes));
}

StatusOr<uint64_t> fingerprintFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return unavailable("cannot read " + path);
  std::vector<char> buffer(size_t(1) << 20);
  uint64_t h = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize n = in.gcount();
    if (n > 0)
      h = fingerprintBytes(buffer.data(), static_cast<size_t>(n), h);
  }
  if (in.bad())
    return unavailable("cannot read " + path);
  return h;
}

Status checkSameLaunch(World &world, const std::vector<LaunchPart> &parts) {
  std::vector<uint64_t> mine;
  for (const LaunchPart &p : parts)
    mine.push_back(p.fingerprint);
  RP_ASSIGN_OR_RETURN(std::vector<uint64_t> all, world.allGatherWords(mine));
  std::string problems;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string ranks;
    for (int r = 1; r < world.ranks(); ++r)
      if (all[static_cast<size_t>(r) * parts.size() + i] != all[i])
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (!ranks.empty())
      problems += (problems.empty() ? "" : "; ") + parts[i].what + " of rank " + ranks +
                  " differs from rank 0's";
  }
  if (problems.empty())
    return okStatus();
  return invalidArgument("data-parallel launch refused: " + problems +
                         " (every rank must train the same plan, data, weights and flags; "
                         "docs/MULTI_NODE.md)");
}

} // namespace rp::runtime
