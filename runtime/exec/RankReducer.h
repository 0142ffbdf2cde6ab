//===- RankReducer.h - The executor's view of data-parallel ranks -*- C++ -*-===//
//
// Data parallelism across RoundPipe pools (docs/MULTI_NODE.md): R processes (ranks) run the
// same plan, each on its own pool with its own share of the step's micro-batches, and combine
// their results through this interface. The executor (Executor.h) calls it from one host
// thread only (its communication thread, or its optimizer thread), in the same order on every
// rank: per step, once allGather for the step's M
// micro-batch losses, then once sumInRankOrder per plan.optimizer_steps entry (the layer's
// trainable gradients). Implementations (runtime/dist/World.h: MPI) must make both collective
// and deterministic: the result depends on the ranks' inputs only, never on timing or on the
// communication library's choice of algorithm.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_RANKREDUCER_H
#define RP_RUNTIME_EXEC_RANKREDUCER_H

#include "base/Status.h"

#include <cstdint>

namespace rp::runtime {

class RankReducer {
public:
  virtual ~RankReducer() = default;
  /// This process's rank r, 0 <= r < ranks().
  virtual int rank() const = 0;
  /// The number of ranks R >= 1.
  virtual int ranks() const = 0;
  /// In place: data[i] = (((x_0[i] + x_1[i]) + x_2[i]) + ... + x_{R-1}[i]) in fp32, x_q the
  /// `count` floats rank q passed; every rank gets the same bits. Collective (every rank calls
  /// it with the same count). Errors: the communication failed.
  virtual Status sumInRankOrder(float *data, int64_t count) = 0;
  /// out[q * count + i] = rank q's data[i]: `out` holds R * count floats. Collective.
  virtual Status allGather(const float *data, int64_t count, float *out) = 0;
};

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_RANKREDUCER_H
