//===- World.h - rp-run's data-parallel ranks over MPI -----------*- C++ -*-===//
//
// Data parallelism across RoundPipe nodes (docs/MULTI_NODE.md): rp-run started by mpirun runs
// one rank per process, each on its own pool. This is the only code that talks MPI; mpi.h stays
// in World.cpp (built when CMake finds MPI: RP_HAVE_MPI), and a build without MPI links
// NoMpiWorld.cpp, whose init() refuses.
//
// Launch detection: rp-run is "under an MPI launch" when the launcher's environment names a
// world size: OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), PMI_SIZE (MPICH's Hydra, Slurm's PMI)
// or PMIX_SIZE, in that order. Training then initialises MPI; no flag is needed.
//
// Threads: MPI is initialised with MPI_THREAD_MULTIPLE (at least MPI_THREAD_SERIALIZED must be
// provided). During training, every collective runs on the executor's optimizer thread
// (RankReducer, on its own duplicated communicator); the main thread's only collective, the
// launch check (allGatherWords, another duplicated communicator), runs before that thread
// starts. MULTIPLE lets abort() come from the main thread while the optimizer thread blocks in
// a reduction (docs/DECISIONS.md).
//
// Reduction order: sumInRankOrder is a chain, rank 0 -> 1 -> ... -> R-1 in chunks of 1 Mi
// floats, rank q adding its values to the partial sum it received ((x_0 + x_1) + x_2) + ...,
// then a broadcast of the sums from rank R-1; it never uses MPI_Allreduce, whose association is
// the library's choice. Results are bit-identical run to run and independent of timing.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DIST_WORLD_H
#define RP_RUNTIME_DIST_WORLD_H

#include "runtime/core/Status.h"
#include "runtime/exec/RankReducer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rp::runtime {

/// What an MPI launcher announced in the environment (file comment).
struct MpiLaunch {
  int size = 1;         ///< The world size it names (>= 1).
  std::string variable; ///< The variable that named it, e.g. "OMPI_COMM_WORLD_SIZE".
};

/// The MPI launch rp-run runs under, or nullopt (a plain run). A variable that is set but not a
/// positive number counts as size 1.
std::optional<MpiLaunch> detectMpiLaunch();

/// Whether this build can run data-parallel (CMake found MPI).
bool mpiBuilt();

class World final : public RankReducer {
public:
  /// Initialises MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE) and duplicates the world
  /// communicator for the reductions and for the launch check. Errors: Unimplemented when built
  /// without MPI; Unavailable when the library provides less than MPI_THREAD_SERIALIZED.
  static StatusOr<std::unique_ptr<World>> init();
  /// MPI_Finalize (collective: every rank must get here; a failing rank calls abort instead).
  ~World() override;
  World(const World &) = delete;
  World &operator=(const World &) = delete;

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  Status sumInRankOrder(float *data, int64_t count) override;
  Status allGather(const float *data, int64_t count, float *out) override;
  /// Every rank's `words` (the same count on every rank), rank-major. Collective, on the
  /// launch-check communicator (main thread, before the executor starts).
  StatusOr<std::vector<uint64_t>> allGatherWords(const std::vector<uint64_t> &words);
  /// Prints "rp-run: rank r of R: error: MESSAGE" on stderr and ends every rank with exit
  /// status `code` (MPI_Abort on the world communicator; mpirun names the rank too).
  [[noreturn]] void abort(const std::string &message, int code);

  struct Comms; ///< World.cpp: the duplicated communicators.

private:
  World() = default;
  int rank_ = 0;
  int ranks_ = 1;
  std::unique_ptr<Comms> comms_;
};

/// "PATH" on rank 0 (also a run without ranks), "PATH.rankR" on rank R > 0: the per-rank name
/// of an output every rank writes (--trace, --profile-kernels). "" stays "".
std::string rankPath(const std::string &path, int rank);

} // namespace rp::runtime

#endif // RP_RUNTIME_DIST_WORLD_H
