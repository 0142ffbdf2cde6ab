//===- Driver.cpp - rpc-compile's driver ----------------------------------===//

#include "compiler/Driver.h"

#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanExport.h"
#include "compiler/WeightsExport.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Schedule/StagePlanning.h"
#include "base/AtomicFile.h"
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
#include <set>

namespace mlir::rp {

namespace {

/// The plan's dtype of a runtime dtype (nullopt for f64, which plans do not store).
std::optional<::rp::plan::DType> planDTypeOf(::rp::base::DType dtype) {
  using ::rp::base::DType;
  switch (dtype) {
  case DType::F32:
    return ::rp::plan::F32;
  case DType::F16:
    return ::rp::plan::F16;
  case DType::BF16:
    return ::rp::plan::BF16;
  case DType::I64:
    return ::rp::plan::I64;
  case DType::I32:
    return ::rp::plan::I32;
  case DType::I1:
    return ::rp::plan::I1;
  default:
    return std::nullopt;
  }
}

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
    buildLayersPipeline(pm, training.baseWeights);
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
    FailureOr<::rp::plan::Plan> plan = exportPlan(*module, exportOptions);
    // The exporter's note that the model's weights are placeholders (plan.proto).
    if (succeeded(plan)) {
      plan->set_placeholder_weights(
          onnx::metadataValue(*model, "rp.placeholder_weights").value_or(""));
      plan->set_checkpoint_dir(onnx::metadataValue(*model, "rp.checkpoint").value_or(""));
    }
    return plan;
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
      FailureOr<::rp::plan::Plan> plan = buildPlan("");
      if (failed(plan))
        return failure();
      // As -o would write it: the external data in place, or a weights file beside.
      FailureOr<std::optional<std::vector<::rp::plan::ExternalWeight>>> external =
          externalWeights(*plan);
      if (failed(external))
        return failure();
      if (*external)
        for (::rp::plan::ExternalWeight &w : **external)
          *plan->add_external_weights() = std::move(w);
      else
        plan->set_weights_file(llvm::sys::path::stem(options.inputPath).str() + ".safetensors");
      if (emit == EmitLevel::PlanText) {
        os << ::rp::runtime::planToText(*plan);
        return success();
      }
      // The report reads indices unchecked: validate the plan as rp-run would.
      if (::rp::base::Status status = ::rp::runtime::validatePlan(*plan); !status.ok()) {
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
    ::rp::base::Status status =
        ::rp::base::writeFileAtomic(options.outputPath, text.data(), text.size());
    if (!status.ok())
      return fail(status.message());
    return kExitOk;
  }

  /// Where each stored param of `plan` lies when every one of them is ONNX external data (the
  /// model's files are then read in place by rp-run); nullopt when one is stored inline (or
  /// with --write-weights), so the weights are written beside the plan instead. Fails (after
  /// emitting) on a param whose external data is invalid.
  FailureOr<std::optional<std::vector<::rp::plan::ExternalWeight>>>
  externalWeights(const ::rp::plan::Plan &plan) {
    using Result = std::optional<std::vector<::rp::plan::ExternalWeight>>;
    if (options.writeWeights)
      return Result();
    onnx::InitializerTable initializers(*model);
    std::vector<::rp::plan::ExternalWeight> out;
    std::set<std::string> done;
    for (const ::rp::plan::Param &p : plan.params()) {
      if (p.init() != ::rp::plan::PARAM_INIT_STORED || !done.insert(p.name()).second)
        continue;
      auto param = module->lookupSymbol<graph::ParamOp>(p.name());
      if (!param)
        return Result();
      FailureOr<std::optional<onnx::InitializerTable::External>> found =
          initializers.external(param);
      if (failed(found))
        return failure();
      std::optional<::rp::plan::DType> stored =
          *found ? planDTypeOf((*found)->dtype) : std::nullopt;
      if (!stored)
        return Result(); // stored inline (or as f64): write the weights file
      ::rp::plan::ExternalWeight w;
      w.set_name(p.name());
      w.set_file((*found)->range.path);
      w.set_offset((*found)->range.offset);
      w.set_bytes((*found)->range.length);
      w.set_dtype(*stored);
      out.push_back(std::move(w));
    }
    return Result(std::move(out));
  }

  /// Writes the plan file and, unless the model's external data is read in place, first the
  /// initial weights beside it (streamed param by param): a plan file is never left without
  /// its weights.
  int writePlan() {
    FailureOr<::rp::plan::Plan> plan = buildPlan("");
    if (failed(plan))
      return kExitBadInput;
    FailureOr<std::optional<std::vector<::rp::plan::ExternalWeight>>> external =
        externalWeights(*plan);
    if (failed(external))
      return kExitBadInput;
    std::string weightsPath;
    if (*external) {
      for (::rp::plan::ExternalWeight &w : **external)
        *plan->add_external_weights() = std::move(w);
    } else {
      weightsPath = weightsPathFor(options.outputPath);
      plan->set_weights_file(llvm::sys::path::filename(weightsPath).str());
      onnx::InitializerTable initializers(*model);
      auto loadParam = [&](graph::ParamOp param) { return initializers.load(param); };
      if (failed(writeInitialWeights(*module, loadParam, weightsPath)))
        return kExitBadInput;
    }
    ::rp::base::Status status = ::rp::runtime::writePlanFile(options.outputPath, *plan);
    if (!status.ok()) {
      if (!weightsPath.empty())
        llvm::sys::fs::remove(weightsPath);
      return fail(status.message());
    }
    llvm::errs() << "rpc-compile: wrote " << options.outputPath << " (" << plan->stages_size()
                 << " stages, " << plan->params_size() << " params) and ";
    if (weightsPath.empty())
      llvm::errs() << "no weights file (rp-run reads the " << plan->external_weights_size()
                   << " stored params from the model's external data in place)\n";
    else
      llvm::errs() << weightsPath << "\n";
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
