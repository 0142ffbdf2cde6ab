//===- Driver.cpp - rpc-compile's driver ----------------------------------===//

#include "compiler/Driver.h"

#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanExport.h"
#include "compiler/WeightsExport.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/StagePlanning.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanReport.h"
#include "runtime/plan/PlanValidator.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace mlir::rp {

namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "rpc-compile: error: " << message << "\n";
  return kExitBadInput;
}

/// The weights file beside `planPath`: "dir/model.rpplan" -> "dir/model.safetensors".
std::string weightsPathFor(llvm::StringRef planPath) {
  llvm::SmallString<256> path(planPath);
  llvm::sys::path::replace_extension(path, ".safetensors");
  return std::string(path);
}

/// The pipeline up to `emit`: the parameter transformations (freeze, LoRA) for the graph,
/// + @train_step for train, + the layer functions for layers, the whole compile pipeline
/// for the stage table and the plan.
void buildPipelineFor(OpPassManager &pm, EmitLevel emit, const CompileOptions &options,
                      StagePlanObserver onStagePlan) {
  TrainingOptions training = options.training;
  training.differentiate = emit == EmitLevel::Train;
  switch (emit) {
  case EmitLevel::Graph:
  case EmitLevel::Train:
    buildTrainPipeline(pm, training);
    return;
  case EmitLevel::Layers:
    buildTrainPipeline(pm, training);
    buildLayersPipeline(pm);
    return;
  default:
    buildCompilePipeline(pm, options, std::move(onStagePlan));
  }
}

/// One compilation: the model, its module, and what the pipeline reported.
class Driver {
public:
  explicit Driver(const DriverOptions &options)
      : options(options), context(registry()), handler(sourceMgr, &context) {
    // Diagnostics name the model file and node; printing the whole op adds nothing for users.
    context.printOpOnDiagnostic(false);
  }

  int run() {
    if (int status = importModel())
      return status;
    emit = options.emit;
    if (emit == EmitLevel::Auto)
      emit = llvm::StringRef(options.outputPath).ends_with(".rpplan") ? EmitLevel::Plan
                                                                      : EmitLevel::Graph;
    if (emit == EmitLevel::Plan && options.outputPath == "-")
      return fail("the plan is a binary file: give -o FILE.rpplan (or --emit=plan-text to "
                  "print it)");
    if (failed(runPipeline()))
      return kExitBadInput;
    if (emit == EmitLevel::Plan)
      return writePlan();
    std::string text;
    if (failed(emitText(text)))
      return kExitBadInput;
    return writeOutput(text);
  }

private:
  static DialectRegistry registry() {
    DialectRegistry registry;
    registerAllDialects(registry);
    return registry;
  }

  /// Reads and imports the model with the --dim and --input-shape bindings.
  int importModel() {
    onnx::ImportOptions importOptions;
    importOptions.foldLimit = options.foldLimit;
    for (const std::string &d : options.dims)
      if (llvm::Error e = onnx::parseDimBinding(d, importOptions))
        return fail(llvm::toString(std::move(e)));
    for (const std::string &s : options.inputShapes)
      if (llvm::Error e = onnx::parseInputShape(s, importOptions))
        return fail(llvm::toString(std::move(e)));
    llvm::Expected<onnx::OnnxModel> loaded = onnx::loadOnnxModel(options.inputPath);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    model.emplace(std::move(*loaded));
    module = onnx::importOnnxModel(context, *model, importOptions);
    return module ? kExitOk : kExitBadInput;
  }

  /// Runs the pipeline up to `emit` (with the MLIR pass-manager flags: timing, IR printing);
  /// nothing when it is empty.
  LogicalResult runPipeline() {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    applyDefaultTimingPassManagerCLOptions(pm);
    StagePlanObserver onStagePlan;
    if (emit == EmitLevel::Stages)
      onStagePlan = [this](const StagePlan &plan) { stagePlan = plan; };
    buildPipelineFor(pm, emit, options.compile, std::move(onStagePlan));
    if (pm.size() == 0)
      return success();
    return pm.run(*module);
  }

  /// The plan of the planned module, naming the model by its file name.
  FailureOr<::rp::plan::Plan> buildPlan(llvm::StringRef weightsFile) {
    PlanExportOptions exportOptions;
    exportOptions.producer = options.producer;
    exportOptions.model = llvm::sys::path::filename(options.inputPath).str();
    exportOptions.weightsFile = weightsFile.str();
    return exportPlan(*module, exportOptions);
  }

  /// The text of a textual --emit level.
  LogicalResult emitText(std::string &text) {
    llvm::raw_string_ostream os(text);
    if (emit == EmitLevel::Stages) {
      // The planned device memory of each stage, in dispatch order.
      SmallVector<int64_t> peaks;
      for (auto plan : module->getOps<schedule::PlanOp>())
        for (auto stage : plan.getStages())
          peaks.push_back(stage.getPeakBytes().value_or(0));
      os << formatStageTable(*stagePlan, peaks);
    } else if (emit == EmitLevel::PlanText || emit == EmitLevel::Report ||
               emit == EmitLevel::ReportJson) {
      FailureOr<::rp::plan::Plan> plan =
          buildPlan(llvm::sys::path::stem(options.inputPath).str() + ".safetensors");
      if (failed(plan))
        return failure();
      if (emit == EmitLevel::PlanText) {
        os << ::rp::runtime::planToText(*plan);
        return success();
      }
      // The report reads indices unchecked: validate the plan as rp-run would.
      if (::rp::runtime::Status status = ::rp::runtime::validatePlan(*plan); !status.ok()) {
        fail("the exported plan is invalid: " + status.message());
        return failure();
      }
      const ::rp::runtime::PlanReport report = ::rp::runtime::computePlanReport(*plan);
      os << (emit == EmitLevel::Report ? ::rp::runtime::formatPlanReport(report, *plan)
                                       : ::rp::runtime::formatPlanReportJson(report, *plan));
    } else {
      module->print(os);
    }
    return success();
  }

  /// Writes `text` to the output file (atomically) or to stdout.
  int writeOutput(const std::string &text) {
    if (options.outputPath == "-") {
      llvm::outs() << text;
      return kExitOk;
    }
    ::rp::runtime::Status status =
        ::rp::runtime::writeFileAtomic(options.outputPath, text.data(), text.size());
    if (!status.ok())
      return fail(status.message());
    return kExitOk;
  }

  /// Writes the initial weights, then the plan file: a plan file is never left without its
  /// weights.
  int writePlan() {
    std::string weightsPath = weightsPathFor(options.outputPath);
    FailureOr<::rp::plan::Plan> plan = buildPlan(llvm::sys::path::filename(weightsPath));
    if (failed(plan))
      return kExitBadInput;
    onnx::InitializerTable initializers(*model);
    auto loadParam = [&](graph::ParamOp param) { return initializers.load(param); };
    if (failed(writeInitialWeights(*module, loadParam, weightsPath)))
      return kExitBadInput;
    ::rp::runtime::Status status = ::rp::runtime::writePlanFile(options.outputPath, *plan);
    if (!status.ok()) {
      llvm::sys::fs::remove(weightsPath);
      return fail(status.message());
    }
    llvm::errs() << "rpc-compile: wrote " << options.outputPath << " (" << plan->stages_size()
                 << " stages, " << plan->params_size() << " params) and " << weightsPath << "\n";
    return kExitOk;
  }

  const DriverOptions &options;
  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler;
  std::optional<onnx::OnnxModel> model;
  OwningOpRef<ModuleOp> module;
  EmitLevel emit = EmitLevel::Auto;
  std::optional<StagePlan> stagePlan;
};

} // namespace

int runCompileDriver(const DriverOptions &options) { return Driver(options).run(); }

} // namespace mlir::rp
