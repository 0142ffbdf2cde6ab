//===- World.cpp - rp-run's data-parallel ranks over MPI ------------------===//

#include "runtime/dist/World.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rp::runtime {

namespace {

/// The largest message of the reductions, floats: 4 MiB, the chain's chunk (World.h), and
/// counts stay far below INT_MAX.
constexpr int64_t kChunk = World::kChainChunkFloats;
/// The reduction chain's tags (World.h, "Reduction protocol").
constexpr int kForwardTag = 0;
constexpr int kBackwardTag = 1;

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
  world->threadMultiple_ = provided >= MPI_THREAD_MULTIPLE;
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

StatusOr<int> World::maxOverRanks(int mine) {
  int out = 0;
  RP_MPI(MPI_Allreduce(&mine, &out, 1, MPI_INT, MPI_MAX, comms_->control));
  return out;
}

Status World::sumInRankOrder(float *data, int64_t count) {
  if (ranks_ == 1 || count <= 0)
    return okStatus();
  MPI_Comm comm = comms_->reduce;
  const int64_t chunk = chunkFloats_;
  const int64_t chunks = (count + chunk - 1) / chunk;
  const bool first = rank_ == 0, last = rank_ + 1 == ranks_;
  auto at = [&](int64_t i) { return data + i * chunk; };
  auto len = [&](int64_t i) { return static_cast<int>(std::min(chunk, count - i * chunk)); };
  // Steps 0 .. chunks - 1 + lag: step s forwards chunk s and takes back the sums of chunk
  // s - lag (World.h, "Reduction protocol").
  const int64_t lag = last ? 0 : 2 * (ranks_ - 1 - rank_) + 1;
  std::vector<float> partial[2];
  std::vector<MPI_Request> forwardSent(static_cast<size_t>(chunks), MPI_REQUEST_NULL);
  std::vector<MPI_Request> backwardSent(static_cast<size_t>(chunks), MPI_REQUEST_NULL);
  MPI_Request forwardRecv = MPI_REQUEST_NULL;
  if (!first) {
    partial[0].resize(static_cast<size_t>(len(0)));
    partial[1].resize(chunks > 1 ? static_cast<size_t>(len(1)) : 0);
    RP_MPI(MPI_Irecv(partial[0].data(), len(0), MPI_FLOAT, rank_ - 1, kForwardTag, comm,
                     &forwardRecv));
  }
  for (int64_t s = 0; s < chunks + lag; ++s) {
    if (s < chunks) {
      float *mine = at(s);
      const int n = len(s);
      if (!first) { // partial = x_0 + ... + x_{rank-1}; then + x_rank, element by element
        RP_MPI(MPI_Wait(&forwardRecv, MPI_STATUS_IGNORE));
        if (s + 1 < chunks)
          RP_MPI(MPI_Irecv(partial[(s + 1) % 2].data(), len(s + 1), MPI_FLOAT, rank_ - 1,
                           kForwardTag, comm, &forwardRecv));
        const float *sum = partial[s % 2].data();
        for (int i = 0; i < n; ++i)
          mine[i] = sum[i] + mine[i];
      }
      MPI_Request *sent = last ? &backwardSent[s] : &forwardSent[s];
      if (last) // the sums of chunk s, back down the chain
        RP_MPI(MPI_Isend(mine, n, MPI_FLOAT, rank_ - 1, kBackwardTag, comm, sent));
      else
        RP_MPI(MPI_Isend(mine, n, MPI_FLOAT, rank_ + 1, kForwardTag, comm, sent));
    }
    if (const int64_t j = s - lag; !last && j >= 0) { // the sums of chunk j, over x_rank
      RP_MPI(MPI_Wait(&forwardSent[j], MPI_STATUS_IGNORE));
      RP_MPI(MPI_Recv(at(j), len(j), MPI_FLOAT, rank_ + 1, kBackwardTag, comm,
                      MPI_STATUS_IGNORE));
      if (!first)
        RP_MPI(MPI_Isend(at(j), len(j), MPI_FLOAT, rank_ - 1, kBackwardTag, comm,
                         &backwardSent[j]));
    }
  }
  RP_MPI(MPI_Waitall(static_cast<int>(chunks), backwardSent.data(), MPI_STATUSES_IGNORE));
  return okStatus();
}

void World::setChunkFloatsForTests(int64_t floats) {
  chunkFloats_ = std::clamp<int64_t>(floats, 1, kChunk);
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
