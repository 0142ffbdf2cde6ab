//===- MaterializeTimeline.cpp - rp-materialize-timeline ------------------===//
//
// Expands the round-robin dispatch of a plan's jobs (arXiv 2604.27085 §3; the reference
// library's scheduler.py): job j = i * S + k runs on device (ptr + j) mod N, each device
// alternating its two weight slots.
//
//===----------------------------------------------------------------------===//

#include "passes/Schedule/Passes.h"

#include "dialects/Schedule/IR/ScheduleOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::rp {

#define GEN_PASS_DEF_MATERIALIZETIMELINE
#include "passes/Schedule/Passes.h.inc"

namespace {

struct MaterializeTimelinePass : public impl::MaterializeTimelineBase<MaterializeTimelinePass> {
  using MaterializeTimelineBase::MaterializeTimelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const Twine &message) {
      module.emitError("rp-materialize-timeline: ") << message;
      signalPassFailure();
    };
    if (gpus < 1)
      return fail("gpus must be at least 1, got " + Twine(gpus));
    if (iterations < 1)
      return fail("iterations must be at least 1, got " + Twine(iterations));
    if (ptr < 0)
      return fail("ptr must be at least 0, got " + Twine(ptr));

    SmallVector<schedule::PlanOp> plans(module.getOps<schedule::PlanOp>());
    if (plans.empty())
      return fail("the module has no schedule.plan");
    if (plans.size() > 1) {
      std::string names;
      for (schedule::PlanOp plan : plans)
        names += (names.empty() ? "@" : ", @") + plan.getSymName().str();
      return fail("expected one schedule.plan, found " + Twine(plans.size()) + " (" + names + ")");
    }
    schedule::PlanOp plan = plans.front();
    SmallVector<schedule::StageOp> stages(plan.getStages());

    for (schedule::TimelineOp old :
         llvm::make_early_inc_range(module.getOps<schedule::TimelineOp>()))
      if (old.getPlan() == plan.getSymName())
        old.erase();

    Location loc = plan.getLoc();
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto timeline =
        schedule::TimelineOp::create(builder, loc, plan.getSymName(), gpus, iterations, ptr);
    builder.setInsertionPointToEnd(&timeline.getBody().emplaceBlock());
    SmallVector<Block *> devices;
    for (int d = 0; d < gpus; ++d) {
      auto device = schedule::DeviceOp::create(builder, loc, d);
      devices.push_back(&device.getBody().emplaceBlock());
    }
    SmallVector<int64_t> jobsOnDevice(gpus, 0);
    int64_t numStages = stages.size();
    for (int64_t i = 0; i < iterations; ++i)
      for (int64_t k = 0; k < numStages; ++k) {
        int64_t job = i * numStages + k;
        int64_t device = (ptr + job) % gpus;
        builder.setInsertionPointToEnd(devices[device]);
        schedule::RunOp::create(builder, loc, stages[k].getSymName(), i, job,
                                jobsOnDevice[device]++ % 2);
      }
  }
};

} // namespace
} // namespace mlir::rp
