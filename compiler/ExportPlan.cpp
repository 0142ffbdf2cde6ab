//===- ExportPlan.cpp - write the plan of a memory-planned module ---------===//
//
// rp-export-plan runs the plan exporter (compiler/PlanExport.h) and writes the plan as a
// .rpplan file or as protobuf text (runtime/plan/PlanFile.h). The module is unchanged.
//
//===----------------------------------------------------------------------===//

#include "compiler/ExportPasses.h"

#include "compiler/PlanExport.h"
#include "runtime/plan/PlanFile.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::rp {

#define GEN_PASS_DEF_EXPORTPLAN
#include "compiler/ExportPasses.h.inc"

namespace {

struct ExportPlan : impl::ExportPlanBase<ExportPlan> {
  using ExportPlanBase::ExportPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    PlanExportOptions options;
    options.producer = producer;
    options.model = model;
    options.weightsFile = weightsFile;
    FailureOr<::rp::plan::Plan> plan = exportPlan(module, options);
    if (failed(plan))
      return signalPassFailure();

    if (!text) {
      if (output == "-") {
        emitError(module.getLoc())
            << "rp-export-plan: a binary plan needs a file; give output=FILE or text=true";
        return signalPassFailure();
      }
      ::rp::base::Status status = ::rp::runtime::writePlanFile(output, *plan);
      if (!status.ok()) {
        emitError(module.getLoc()) << "rp-export-plan: " << status.message();
        return signalPassFailure();
      }
      return;
    }

    std::string planText = ::rp::runtime::planToText(*plan);
    if (output == "-") {
      llvm::outs() << planText;
      llvm::outs().flush();
      return;
    }
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      emitError(module.getLoc()) << "rp-export-plan: " << error;
      return signalPassFailure();
    }
    file->os() << planText;
    file->keep();
  }
};

} // namespace
} // namespace mlir::rp
