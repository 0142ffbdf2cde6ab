//===- LaunchCheck.h - Every data-parallel rank trains the same run -*- C++ -*-===//
//
// A data-parallel launch (docs/MULTI_NODE.md) is only meaningful when every rank has the same
// plan, data, initial weights / optimizer state and training flags: the ranks exchange a 64-bit
// fingerprint of each part before the first step, and a launch where any rank's differs from
// rank 0's is refused on every rank alike (nothing is written). The fingerprint is a hash for
// catching mistakes (another data file on one node, a stale plan), not a cryptographic proof.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_LAUNCHCHECK_H
#define RP_RUNTIME_TRAIN_LAUNCHCHECK_H

#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rp::runtime {

class World;

/// One compared part: what it is ("the plan file", "the data", ...) and its fingerprint.
struct LaunchPart {
  std::string what;
  uint64_t fingerprint = 0;
};

/// Folds `bytes` bytes at `data` into the running fingerprint `h` (start from 0): 8-byte words,
/// each mixed with the splitmix64 finaliser, then the tail and the length. Deterministic across
/// machines of the same byte order.
uint64_t fingerprintBytes(const void *data, size_t bytes, uint64_t h);

/// The fingerprint of a file's contents. Errors: Unavailable when it cannot be read.
StatusOr<uint64_t> fingerprintFile(const std::string &path);

/// Collective: gathers every rank's `parts` (the same list of parts on every rank) and compares
/// them with rank 0's. Errors (the same on every rank): InvalidArgument "data-parallel launch
/// refused: <what> of rank 1, 2 differs from rank 0's; ...".
Status checkSameLaunch(World &world, const std::vector<LaunchPart> &parts);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_LAUNCHCHECK_H
