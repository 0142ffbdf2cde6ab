//===- CheckDeviceMemory.cpp - rp-check-device-memory ---------------------===//
//
// Refuses a planned schedule whose device arena (rp-plan-memory: what each worker allocates)
// does not fit the target GPU: the partitioner's memory model is an estimate, the planned
// arena is what the executor will allocate, so the compile fails here rather than rp-run at
// its first allocation.
//
//===----------------------------------------------------------------------===//

#include "passes/Schedule/Passes.h"

#include "dialects/Schedule/IR/ScheduleOps.h"
#include "base/FormatBytes.h"

#include <string>

namespace mlir::rp {

#define GEN_PASS_DEF_CHECKDEVICEMEMORY
#include "passes/Schedule/Passes.h.inc"

namespace {

std::string bytesText(int64_t bytes) {
  return std::to_string(bytes) + " (" + ::rp::base::formatBytes(static_cast<uint64_t>(bytes)) +
         ")";
}

/// "B2 (backward, layers prefix .. block_10) peaks at N (X GiB)".
std::string describeStage(schedule::PlanOp plan, schedule::StageOp stage) {
  SmallVector<schedule::LayerOp> layers(plan.getLayers());
  int64_t begin = stage.getBegin(), end = stage.getEnd();
  std::string names = layers[begin].getSymName().str();
  if (end - begin > 1)
    names += " .. " + layers[end - 1].getSymName().str();
  return stage.getSymName().str() + " (" + schedule::stringifyStageKind(stage.getKind()).str() +
         ", layers " + names + ") peaks at " + bytesText(stage.getPeakBytes().value_or(0));
}

struct CheckDeviceMemoryPass : public impl::CheckDeviceMemoryBase<CheckDeviceMemoryPass> {
  using CheckDeviceMemoryBase::CheckDeviceMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t limit = memoryBytes;
    if (limit < 0) {
      module.emitError("rp-check-device-memory: memory-bytes must be non-negative, got ")
          << limit;
      return signalPassFailure();
    }
    if (limit == 0)
      if (auto partition = module->getAttrOfType<DictionaryAttr>("graph.partition"))
        if (auto recorded = partition.getAs<IntegerAttr>("memory_bytes"))
          limit = recorded.getInt();
    if (limit <= 0)
      return; // no target memory known
    for (auto plan : module.getOps<schedule::PlanOp>()) {
      auto arena = plan.getDeviceArenaAttr();
      if (!arena) {
        plan.emitError("rp-check-device-memory: the plan has no device arena: run "
                       "rp-plan-memory first");
        return signalPassFailure();
      }
      if (arena.getTotal() <= limit)
        continue;
      schedule::StageOp largest;
      for (auto stage : plan.getStages())
        if (!largest || stage.getPeakBytes().value_or(0) > largest.getPeakBytes().value_or(0))
          largest = stage;
      InFlightDiagnostic diag = plan.emitError();
      diag << "rp-check-device-memory: the plan needs " << bytesText(arena.getTotal())
           << " of device memory per worker (constants " << arena.getConstants() << " + 2 x slot "
           << arena.getSlot() << " + 2 x activations " << arena.getActivations()
           << " + workspace " << arena.getWorkspace() << "), more than the target GPU's "
           << bytesText(limit) << "; the largest stage, ";
      if (largest)
        diag << describeStage(plan, largest);
      diag << ". Try more GPUs (--gpus), fewer tokens per micro-batch (a smaller batch or "
              "sequence: --dim, --input-shape), --recompute layer, or a GPU with more memory "
              "(--gpu-memory, --target)";
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::rp
