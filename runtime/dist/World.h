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
// provided). During training, the reductions and gathers run on one executor thread (the
// communication thread, else the optimizer thread; RankReducer, on its own duplicated
// communicator). The main thread's collectives use another duplicated communicator: the
// launch check (allGatherWords), before the executor starts, and with MPI_THREAD_MULTIPLE the
// per-step stop agreement (maxOverRanks) while it runs. MULTIPLE also lets abort() come from the
// main thread while an executor thread blocks in a reduction (docs/DECISIONS.md).
//
// Reduction order: sumInRankOrder is a chain, rank 0 -> 1 -> ... -> R-1 in chunks of 1 Mi
// floats, rank q adding its values to the partial sum it received ((x_0 + x_1) + x_2) + ...;
// rank R-1 then holds the sums and they flow back R-1 -> R-2 -> ... -> 0. It never uses
// MPI_Allreduce, whose association is the library's choice. Results are bit-identical run to
// run and independent of timing.
//
// Reduction protocol (pipelined, so that on full-duplex links the sums of chunk i flow back
// while chunks i+1.. still flow forward). Chunks i = 0 .. k-1 of kChainChunkFloats (the last
// one shorter). Tags on the reduce communicator: 0 = forward (a partial sum, q -> q+1),
// 1 = backward (the finished sums, q+1 -> q); MPI keeps each pair's messages of one tag in
// order, so chunk indices need no tag. Rank q runs steps s = 0 .. k-1+lag, lag = 2(R-1-q)+1
// (0 on rank R-1, which takes nothing back):
//   forward, s < k:  q > 0 waits for chunk s in partial[s % 2] (a receive posted one step
//                    earlier: double buffering), posts the receive of chunk s+1 into the other
//                    buffer, adds its own values into data (partial + mine, per element);
//                    then Isend of data's chunk s to q+1 (tag 0), or on rank R-1 back to R-2
//                    (tag 1): those are the sums.
//   backward, j = s-lag >= 0 (q < R-1): waits for the forward Isend of chunk j (data's chunk j
//                    is about to be overwritten), receives the sums into data's chunk j from
//                    q+1, and q > 0 Isends them on to q-1 (tag 1).
// The backward Isends are waited for at the end. Step s of rank q waits only for step s of
// q-1 (chunk s) and steps <= s-2 of q+1 (its receive posted, the sums sent), never for a send
// to complete within the step, so the chain cannot deadlock whatever the MPI's eager limit.
// lag is one more than the 2(R-1-q) hops from q to R-1 and back: a slack of one chunk, so a
// rank's forward stream does not stall on sums that can only just have arrived. Every call is
// on the calling thread. Time on full-duplex links, one message of a chunk taking one chunk
// time: k + 1 chunk times for R = 2 (chunk k-1 leaves rank 0 at k-1 and takes 2 hops), max(k + 2R -
// 3, 2k + 2R - 5) for R > 2 (a middle rank's NIC sends 2k chunks); the chain before this
// protocol returned the sums only after the whole chain, 2(k + R - 2) (runtime/sim/NodeModel.h).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DIST_WORLD_H
#define RP_RUNTIME_DIST_WORLD_H

#include "base/Status.h"
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

  /// The chain's chunk, floats (1 Mi = 4 MiB).
  static constexpr int64_t kChainChunkFloats = int64_t(1) << 20;

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  Status sumInRankOrder(float *data, int64_t count) override;
  /// For tests only: the chain's chunk, floats, clamped to [1, kChainChunkFloats], so that a
  /// few floats span several chunks. The sums do not depend on it (element by element).
  void setChunkFloatsForTests(int64_t floats);
  Status allGather(const float *data, int64_t count, float *out) override;
  /// Every rank's `words` (the same count on every rank), rank-major. Collective, on the
  /// launch-check communicator (main thread, before the executor starts).
  StatusOr<std::vector<uint64_t>> allGatherWords(const std::vector<uint64_t> &words);
  /// The largest of the ranks' `mine` (e.g. the signal that asked a rank to stop, 0 for none).
  /// Collective on the launch-check communicator, from the main thread while the executor's
  /// threads may make their own MPI calls: only when stopAgreement() holds. Errors: the MPI
  /// call's.
  StatusOr<int> maxOverRanks(int mine);
  /// Whether maxOverRanks may be called during training: the MPI library runs
  /// MPI_THREAD_MULTIPLE.
  bool stopAgreement() const { return threadMultiple_; }
  /// Prints "rp-run: rank r of R: error: MESSAGE" on stderr and ends every rank with exit
  /// status `code` (MPI_Abort on the world communicator; mpirun names the rank too).
  [[noreturn]] void abort(const std::string &message, int code);

  struct Comms; ///< World.cpp: the duplicated communicators.

private:
  World() = default;
  int rank_ = 0;
  int ranks_ = 1;
  int64_t chunkFloats_ = kChainChunkFloats;
  bool threadMultiple_ = false;
  std::unique_ptr<Comms> comms_;
};

/// "PATH" on rank 0 (also a run without ranks), "PATH.rankR" on rank R > 0: the per-rank name
/// of an output every rank writes (--trace, --profile-kernels). "" stays "".
std::string rankPath(const std::string &path, int rank);

} // namespace rp::runtime

#endif // RP_RUNTIME_DIST_WORLD_H
