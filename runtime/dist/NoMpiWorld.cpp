//===- NoMpiWorld.cpp - World in a build without MPI: init() refuses ------===//

#include "runtime/dist/World.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rp::runtime {

struct World::Comms {};

bool mpiBuilt() { return false; }

StatusOr<std::unique_ptr<World>> World::init() {
  return unimplemented("this rp-run was built without MPI, so it cannot train data-parallel "
                       "under mpirun; install an MPI (libopenmpi-dev) and rebuild, or run "
                       "without mpirun");
}

World::~World() = default;

Status World::sumInRankOrder(float *, int64_t) { return unimplemented("built without MPI"); }

void World::setChunkFloatsForTests(int64_t floats) {
  chunkFloats_ = std::max<int64_t>(1, std::min(floats, kChainChunkFloats));
}

Status World::allGather(const float *, int64_t, float *) {
  return unimplemented("built without MPI");
}

StatusOr<std::vector<uint64_t>> World::allGatherWords(const std::vector<uint64_t> &) {
  return unimplemented("built without MPI");
}

StatusOr<int> World::maxOverRanks(int) { return unimplemented("built without MPI"); }

void World::abort(const std::string &message, int code) {
  std::fprintf(stderr, "rp-run: error: %s\n", message.c_str());
  std::exit(code);
}

} // namespace rp::runtime
