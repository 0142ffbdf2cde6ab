//===- rpc-compile.cpp - the RoundPipe compiler driver --------------------===//
//
//   rpc-compile MODEL.onnx -o MODEL.rpplan [options]
//   rpc-compile MODEL.onnx --emit=graph|train|layers|stages|schedule|plan-text [-o FILE]
//
// Imports an exported ONNX training graph and compiles it into a RoundPipe plan: the plan file
// (protobuf, runtime/plan/plan.proto) and, beside it, the initial weights as safetensors
// (`model.rpplan` -> `model.safetensors`). `--emit` prints an intermediate level instead:
// `graph` (the imported forward function), `train` (+ @train_step), `layers` (the layer
// functions), `stages` (the stage partition as a table, with each stage's planned peak device
// memory), `schedule` (the planned schedule IR), `plan-text` (the plan in protobuf text
// format). Without --emit, a `-o` ending in .rpplan writes the plan, anything else prints the
// graph. Exit codes: 0 success, 2 bad input (unreadable or malformed model, unsupported op,
// bad option, ...), 1 internal error. Nothing half-written is left behind.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanExport.h"
#include "compiler/WeightsExport.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "runtime/plan/PlanFile.h"
#include "passes/Passes.h"
#include "passes/StagePlanning.h"
#include "frontends/onnx/OnnxImporter.h"
#include "runtime/core/AtomicFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"


using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class Emit { Auto, Graph, Train, Layers, Stages, Schedule, PlanText, Plan };

cl::OptionCategory category("rpc-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx | model.onnxtext>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file (default: standard output)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<Emit> emit("emit",
                   cl::desc("What to write (default: the plan when -o ends in .rpplan, "
                            "else the graph)"),
                   cl::init(Emit::Auto),
                   cl::values(clEnumValN(Emit::Plan, "plan",
                                         "the plan file and the initial weights (.safetensors "
                                         "beside it)"),
                              clEnumValN(Emit::Graph, "graph",
                                         "the imported graph dialect (func @forward)"),
                              clEnumValN(Emit::Train, "train",
                                         "the training function @train_step (loss and gradients)"),
                              clEnumValN(Emit::Layers, "layers",
                                         "the layer functions (@prefix, @block_N, @tail)"),
                              clEnumValN(Emit::Stages, "stages",
                                         "the stage partition as a table"),
                              clEnumValN(Emit::Schedule, "schedule",
                                         "the planned schedule IR (schedule.plan)"),
                              clEnumValN(Emit::PlanText, "plan-text",
                                         "the plan in protobuf text format")),
                   cl::cat(category));
cl::list<std::string> dims("dim", cl::desc("Bind a symbolic dimension (e.g. --dim batch=4)"),
                           cl::value_desc("NAME=N"), cl::cat(category));
cl::list<std::string> inputShapes("input-shape",
                                  cl::desc("Set a graph input's shape (e.g. input_ids=4x128)"),
                                  cl::value_desc("NAME=AxB"), cl::cat(category));

cl::opt<int64_t> loraRank("lora-rank", cl::desc("Add LoRA adapters of this rank (0: none)"),
                          cl::init(0), cl::cat(category));
cl::opt<double> loraAlpha("lora-alpha", cl::desc("LoRA alpha (updates scaled by alpha/rank)"),
                          cl::init(16.0), cl::cat(category));
cl::opt<std::string> loraTargets("lora-targets",
                                 cl::desc("Regex of the weights that get LoRA adapters"),
                                 cl::init("q_proj|v_proj"), cl::cat(category));
cl::opt<std::string> freeze("freeze", cl::desc("Regex of params to freeze"), cl::init(""),
                            cl::cat(category));

cl::OptionCategory planCategory("partitioning options");
cl::opt<int> gpus("gpus", cl::desc("GPU pool size N"), cl::init(8), cl::cat(planCategory));
cl::opt<std::string> gpuMemory("gpu-memory", cl::desc("Memory of one GPU (e.g. 24GiB)"),
                               cl::init(""), cl::cat(planCategory));
cl::opt<int> microBatches("micro-batches", cl::desc("Micro-batches per job M (default N + 1)"),
                          cl::init(0), cl::cat(planCategory));
cl::opt<std::string> profilePath("profile", cl::desc("Measured layer profile (JSON)"),
                                 cl::value_desc("file"), cl::init(""), cl::cat(planCategory));
cl::opt<std::string> targetPath("target", cl::desc("Target GPU: a JSON file or name=X,peak_tflops=T,pcie_gbps=B,memory_bytes=M"),
                                cl::value_desc("file"), cl::init(""), cl::cat(planCategory));
cl::opt<std::string> partitioner("partitioner",
                                 cl::desc("roundpipe (the paper's), exact, or auto: both, and "
                                          "the plan with the lower estimated step time"),
                                 cl::init("auto"), cl::cat(planCategory));

cl::OptionCategory scheduleCategory("iteration options");
cl::opt<std::string> computeDType("dtype", cl::desc("Compute dtype of weights and activations: "
                                                    "bf16, fp16 or fp32"),
                                  cl::init("fp32"), cl::cat(scheduleCategory));
cl::opt<std::string> update("update",
                            cl::desc("Optimizer update: sync (exact) or async (staleness 1, "
                                     "the paper's default)"),
                            cl::init("async"), cl::cat(scheduleCategory));
cl::opt<std::string> recompute("recompute",
                               cl::desc("Recomputation grain of backward stages: stage or layer"),
                               cl::init("stage"), cl::cat(scheduleCategory));
cl::opt<double> lr("lr", cl::desc("AdamW learning rate"), cl::init(3.0e-4),
                   cl::cat(scheduleCategory));
cl::opt<double> weightDecay("weight-decay", cl::desc("AdamW decoupled weight decay"),
                            cl::init(0.0), cl::cat(scheduleCategory));
cl::opt<double> gradClip("grad-clip", cl::desc("Clip gradients to this global L2 norm (0: off)"),
                         cl::init(0.0), cl::cat(scheduleCategory));

cl::OptionCategory mlirCategory("MLIR debugging options");

constexpr int kBadInput = 2;

int fail(const llvm::Twine &message) {
  llvm::errs() << "rpc-compile: error: " << message << "\n";
  return kBadInput;
}

/// The weights file beside `planPath`: "dir/model.rpplan" -> "dir/model.safetensors".
std::string weightsPathFor(llvm::StringRef planPath) {
  llvm::SmallString<256> path(planPath);
  llvm::sys::path::replace_extension(path, ".safetensors");
  return std::string(path);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "rpc-compile " << RP_VERSION << " (the RoundPipe compiler; MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // Debian's LLVM library registers every backend's options in the general category; --help
  // shows ours and MLIR's debugging options (--mlir-print-ir-after-all, --mlir-timing, ...).
  // The hidden ones still parse; --help-hidden lists them.
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.first.starts_with("mlir-"))
      entry.second->addCategory(mlirCategory);
  cl::HideUnrelatedOptions({&category, &planCategory, &scheduleCategory, &mlirCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "rpc-compile: compile an exported ONNX training graph into a "
                              "RoundPipe plan\n");

  mlir::rp::onnx::ImportOptions options;
  for (const std::string &d : dims)
    if (llvm::Error e = mlir::rp::onnx::parseDimBinding(d, options)) {
      llvm::errs() << "rpc-compile: error: " << llvm::toString(std::move(e)) << "\n";
      return kBadInput;
    }
  for (const std::string &s : inputShapes)
    if (llvm::Error e = mlir::rp::onnx::parseInputShape(s, options)) {
      llvm::errs() << "rpc-compile: error: " << llvm::toString(std::move(e)) << "\n";
      return kBadInput;
    }

  llvm::Expected<mlir::rp::onnx::OnnxModel> model = mlir::rp::onnx::loadOnnxModel(inputPath);
  if (!model) {
    llvm::errs() << "rpc-compile: error: " << llvm::toString(model.takeError()) << "\n";
    return kBadInput;
  }

  DialectRegistry registry;
  mlir::rp::registerAllDialects(registry);
  MLIRContext context(registry);
  // Diagnostics name the model file and node; printing the whole op adds nothing for users.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = mlir::rp::onnx::importOnnxModel(context, *model, options);
  if (!module)
    return kBadInput;
  if (emit == Emit::Auto)
    emit = llvm::StringRef(outputPath).ends_with(".rpplan") ? Emit::Plan : Emit::Graph;
  if (emit == Emit::Plan && outputPath == "-")
    return fail("the plan is a binary file: give -o FILE.rpplan (or --emit=plan-text to print it)");
  if (computeDType != "bf16" && computeDType != "fp16" && computeDType != "fp32")
    return fail("unknown --dtype '" + computeDType + "': expected bf16, fp16 or fp32");

  mlir::rp::TrainingOptions training;
  training.loraRank = loraRank;
  training.loraAlpha = loraAlpha;
  training.loraTargets = loraTargets;
  training.freeze = freeze;
  auto runPipeline = [&](llvm::function_ref<void(PassManager &)> build) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    applyDefaultTimingPassManagerCLOptions(pm);
    build(pm);
    return pm.run(*module);
  };
  bool planned = emit == Emit::Schedule || emit == Emit::PlanText || emit == Emit::Plan;
  if (emit == Emit::Train || (!planned && (loraRank > 0 || !freeze.empty()))) {
    training.differentiate = emit == Emit::Train;
    if (failed(runPipeline([&](PassManager &pm) { mlir::rp::buildTrainPipeline(pm, training); })))
      return kBadInput;
  }

  std::string text;
  if (emit == Emit::Layers || emit == Emit::Stages) {
    if (failed(runPipeline([&](PassManager &pm) { mlir::rp::buildLayersPipeline(pm); })))
      return kBadInput;
  }
  mlir::rp::CompileOptions compile;
  compile.training = training;
  compile.partition.gpus = gpus;
  compile.partition.gpuMemory = gpuMemory;
  compile.partition.microBatches = microBatches;
  compile.partition.profilePath = profilePath;
  compile.partition.targetPath = targetPath;
  compile.partition.partitioner = partitioner;
  compile.update = update;
  compile.recompute = recompute;
  compile.dtype = computeDType;
  compile.lr = lr;
  compile.weightDecay = weightDecay;
  compile.gradClip = gradClip;
  if (emit == Emit::Stages) {
    FailureOr<mlir::rp::StagePlan> plan = mlir::rp::planStages(*module, compile.partition);
    if (failed(plan))
      return kBadInput;
    // The planned device memory of each stage: lower the partition and plan memory.
    mlir::rp::recordPlan(*module, *plan);
    if (failed(runPipeline([&](PassManager &pm) { mlir::rp::buildSchedulePipeline(pm, compile); })))
      return kBadInput;
    SmallVector<int64_t> peaks;
    for (auto p : module->getOps<mlir::rp::schedule::PlanOp>())
      for (auto stage : p.getStages())
        peaks.push_back(stage.getPeakBytes().value_or(0));
    text = mlir::rp::formatStageTable(*plan, peaks);
  } else if (planned) {
    if (failed(runPipeline([&](PassManager &pm) { mlir::rp::buildCompilePipeline(pm, compile); })))
      return kBadInput;
    if (emit == Emit::Schedule) {
      llvm::raw_string_ostream os(text);
      module->print(os);
    } else {
      std::string weightsPath = emit == Emit::Plan ? weightsPathFor(outputPath) : "";
      mlir::rp::PlanExportOptions exportOptions;
      exportOptions.producer = std::string("rpc-compile ") + RP_VERSION;
      exportOptions.model = inputPath;
      exportOptions.weightsFile =
          emit == Emit::Plan ? std::string(llvm::sys::path::filename(weightsPath))
                             : std::string(llvm::sys::path::stem(inputPath)) + ".safetensors";
      FailureOr<::rp::plan::Plan> plan = mlir::rp::exportPlan(*module, exportOptions);
      if (failed(plan))
        return kBadInput;
      if (emit == Emit::PlanText) {
        text = ::rp::runtime::planToText(*plan);
      } else {
        // Weights first, then the plan: a plan file is never left without its weights.
        mlir::rp::onnx::InitializerTable initializers(*model);
        auto loadParam = [&](mlir::rp::graph::ParamOp param) { return initializers.load(param); };
        if (failed(mlir::rp::writeInitialWeights(*module, loadParam, weightsPath)))
          return kBadInput;
        ::rp::runtime::Status status = ::rp::runtime::writePlanFile(outputPath, *plan);
        if (!status.ok()) {
          llvm::sys::fs::remove(weightsPath);
          return fail(status.message());
        }
        llvm::errs() << "rpc-compile: wrote " << outputPath << " (" << plan->stages_size()
                     << " stages, " << plan->params_size() << " params) and " << weightsPath
                     << "\n";
        return 0;
      }
    }
  } else {
    llvm::raw_string_ostream os(text);
    module->print(os);
    os.flush();
  }
  if (outputPath == "-") {
    llvm::outs() << text;
    return 0;
  }
  ::rp::runtime::Status status =
      ::rp::runtime::writeFileAtomic(outputPath, text.data(), text.size());
  if (!status.ok()) {
    llvm::errs() << "rpc-compile: error: " << status.message() << "\n";
    return kBadInput;
  }
  return 0;
}
