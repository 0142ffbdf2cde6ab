//===- StagePlanning.h - the stage partition of a grouped module --*- C++ -*-===//
//
// Partitions the layers of a module grouped by rp-group-layers into forward
// and backward stages (runtime/partition: the RoundPipe partitioner and the exact one), from
// a measured layer profile or the FLOP estimate of LayerCosts.h. Used by rp-partition-stages
// and `rpc-compile --emit=stages`.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_SCHEDULE_STAGEPLANNING_H
#define RP_PASSES_SCHEDULE_STAGEPLANNING_H

#include "runtime/partition/Partitioner.h"

#include "passes/Schedule/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <memory>
#include <string>

namespace mlir::rp {

struct StagePlan {
  ::rp::partition::Profile profile;
  ::rp::partition::Plan plan;
  ::rp::partition::TargetSpec target; ///< The GPU planned for (--gpu-memory applied).
};

/// Plans the stages of a grouped module with the options of rp-partition-stages; emits an
/// error at the module and fails on bad options, a profile whose layer count differs from the
/// model, or a layer that does not fit.
FailureOr<StagePlan> planStages(ModuleOp module, const PartitionStagesOptions &options);

/// Records `plan` on the module as `graph.partition`: a dictionary with the algorithm, N, M,
/// the stage time and objective (ms), the target's memory (`memory_bytes`), and `forward` /
/// `backward` lists of [begin, end) layer index pairs (backward starts with the fused tail).
void recordPlan(ModuleOp module, const StagePlan &plan);

/// The human-readable table of `rpc-compile --emit=stages`: stage, kind, layers, estimated
/// time per micro-batch, the cost model's memory, and (when given, one per stage in dispatch
/// order) the peak device memory rp-plan-memory planned for the stage's job; then the layer
/// profile used (per layer: forward and backward ms, param, trainable and activation bytes).
std::string formatStageTable(const StagePlan &plan, ArrayRef<int64_t> devicePeakBytes = {});

/// Called by rp-partition-stages with the plan it recorded.
using StagePlanObserver = std::function<void(const StagePlan &)>;

/// rp-partition-stages that also hands its plan to `observer` (rpc-compile --emit=stages
/// prints the plan's table after the rest of the pipeline ran).
std::unique_ptr<Pass> createPartitionStages(const PartitionStagesOptions &options,
                                            StagePlanObserver observer);

} // namespace mlir::rp

#endif // RP_PASSES_SCHEDULE_STAGEPLANNING_H
