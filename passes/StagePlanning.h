//===- StagePlanning.h - the stage partition of a grouped module --*- C++ -*-===//
//
// Partitions the layers of a module grouped by rp-group-layers into forward
// and backward stages (runtime/partition: the RoundPipe partitioner and the exact one), from
// a measured layer profile or the FLOP estimate of LayerCosts.h. Used by rp-partition-stages
// and `rpc-compile --emit=stages`.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_STAGEPLANNING_H
#define RP_PASSES_STAGEPLANNING_H

#include "runtime/partition/Partitioner.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::rp {

struct StageOptions {
  int gpus = 8;                   ///< N.
  std::string gpuMemory;          ///< "24GiB"; empty: the target's memory.
  int microBatches = 0;           ///< M; 0: N + 1 (the paper's default).
  std::string profilePath;        ///< Measured profile (JSON); empty: the FLOP estimate.
  std::string targetPath;         ///< Target: a JSON file, or the flag form
                                  ///< "name=X,peak_tflops=T,pcie_gbps=B,memory_bytes=M";
                                  ///< empty: an RTX 4090.
  std::string partitioner = "auto"; ///< roundpipe, exact, or auto (the lower step time).
};

struct StagePlan {
  ::rp::partition::Profile profile;
  ::rp::partition::Plan plan;
};

/// Plans the stages of a grouped module; emits an error at the module and fails on bad
/// options, a profile whose layer count differs from the model, or a layer that does not fit.
FailureOr<StagePlan> planStages(ModuleOp module, const StageOptions &options);

/// Records `plan` on the module as `graph.partition`: a dictionary with the algorithm, N, M,
/// the stage time and objective (ms), and `forward` / `backward` lists of [begin, end) layer
/// index pairs (backward starts with the fused tail).
void recordPlan(ModuleOp module, const StagePlan &plan);

/// The human-readable table of `rpc-compile --emit=stages`: stage, kind, layers, estimated
/// time per micro-batch, the cost model's memory, and (when given, one per stage in dispatch
/// order) the peak device memory rp-plan-memory planned for the stage's job.
std::string formatStageTable(const StagePlan &plan, ArrayRef<int64_t> devicePeakBytes = {});

} // namespace mlir::rp

#endif // RP_PASSES_STAGEPLANNING_H
