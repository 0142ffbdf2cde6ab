//===- World.cpp - rp-run's data-parallel ranks over MPI ------------------===//

#include "runtime/dist/World.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rp::runtime {

namespace {

/// Floats per message of the reduction chain: 4 MiB, so ranks down the chain add one chunk
/// while the next arrives, and counts stay far below INT_MAX.
constexpr int64_t kChunk = int64_t(1) << 20;

Status mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return internal(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

#define RP_MPI(call)                                                                             \
  do {                                                                                           \
    if (int rpMpiCode = (call); rpMpiCode != MPI_SUCCESS)                                        \
      return mpiError(#call, rpMpiCode);                                                         \
  } while (false)

} // namespace

struct World::Comms {
  MPI_Comm reduce = MPI_COMM_NULL;  ///< The optimizer thread's reductions.
  MPI_Comm control = MPI_COMM_NULL; ///< The main thread's launch check.
};

bool mpiBuilt() { return true; }

StatusOr<std::unique_ptr<World>> World::init() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return unavailable("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return unavailable("the MPI library provides neither MPI_THREAD_MULTIPLE nor "
                       "MPI_THREAD_SERIALIZED; rp-run's optimizer thread makes its MPI calls");
  }
  std::unique_ptr<World> world(new World());
  world->comms_ = std::make_unique<Comms>();
  MPI_Comm_rank(MPI_COMM_WORLD, &world->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world->ranks_);
  // Errors come back as codes (Status) rather than ending the process where they happen.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &world->comms_->reduce);
  MPI_Comm_dup(MPI_COMM_WORLD, &world->comms_->control);
  return world;
}

World::~World() {
  if (comms_) {
    MPI_Comm_free(&comms_->reduce);
    MPI_Comm_free(&comms_->control);
  }
  MPI_Finalize();
}

Status World::sumInRankOrder(float *data, int64_t count) {
  if (ranks_ == 1 || count <= 0)
    return okStatus();
  MPI_Comm comm = comms_->reduce;
  std::vector<float> partial(static_cast<size_t>(std::min(count, kChunk)));
  for (int64_t at = 0; at < count; at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, count - at));
    float *mine = data + at;
    if (rank_ > 0) { // partial = x_0 + ... + x_{rank-1}; then + x_rank, element by element
      RP_MPI(MPI_Recv(partial.data(), n, MPI_FLOAT, rank_ - 1, 0, comm, MPI_STATUS_IGNORE));
      for (int i = 0; i < n; ++i)
        mine[i] = partial[static_cast<size_t>(i)] + mine[i];
    }
    if (rank_ + 1 < ranks_)
      RP_MPI(MPI_Send(mine, n, MPI_FLOAT, rank_ + 1, 0, comm));
  }
  for (int64_t at = 0; at < count; at += kChunk) // the last rank holds the sums
    RP_MPI(MPI_Bcast(data + at, static_cast<int>(std::min(kChunk, count - at)), MPI_FLOAT,
                     ranks_ - 1, comm));
  return okStatus();
}

Status World::allGather(const float *data, int64_t count, float *out) {
  if (count > kChunk)
    return invalidArgument("allGather of " + std::to_string(count) + " floats: at most " +
                           std::to_string(kChunk));
  RP_MPI(MPI_Allgather(data, static_cast<int>(count), MPI_FLOAT, out, static_cast<int>(count),
                       MPI_FLOAT, comms_->reduce));
  return okStatus();
}

StatusOr<std::vector<uint64_t>> World::allGatherWords(const std::vector<uint64_t> &words) {
  std::vector<uint64_t> out(words.size() * static_cast<size_t>(ranks_));
  RP_MPI(MPI_Allgather(words.data(), static_cast<int>(words.size()), MPI_UINT64_T, out.data(),
                       static_cast<int>(words.size()), MPI_UINT64_T, comms_->control));
  return out;
}

void World::abort(const std::string &message, int code) {
  std::fprintf(stderr, "rp-run: rank %d of %d: error: %s\n", rank_, ranks_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; in case it does
}

} // namespace rp::runtime
