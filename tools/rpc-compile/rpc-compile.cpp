//===- rpc-compile.cpp - the RoundPipe compiler driver --------------------===//
//
//   rpc-compile MODEL.onnx --emit=graph|train [-o FILE] [--dim NAME=N]... [--input-shape NAME=AxB]...
//               [--lora-rank R --lora-alpha A --lora-targets REGEX] [--freeze REGEX]
//
// Imports an exported ONNX training graph and prints the requested level: `graph` (the imported
// forward function), `train` (+ @train_step: loss and gradients, after the optional --freeze
// and --lora-* transformations), `layers` (the layer functions of rp-group-layers) or
// `stages` (the stage partition as a table, from a measured --profile or the FLOP estimate of
// compiler/LayerCosts.h). Later levels (schedule, plan-text) and the plan file come with the
// passes that produce them. Exit codes: 0 success, 2 bad input (unreadable or malformed model,
// unsupported op, unbound dimension, ...), 1 internal error.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "passes/Passes.h"
#include "passes/StagePlanning.h"
#include "frontends/onnx/OnnxImporter.h"
#include "runtime/core/AtomicFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"


using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class Emit { Graph, Train, Layers, Stages };

cl::OptionCategory category("rpc-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx | model.onnxtext>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file (default: standard output)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<Emit> emit("emit", cl::desc("The IR level to print"), cl::init(Emit::Graph),
                   cl::values(clEnumValN(Emit::Graph, "graph",
                                         "the imported graph dialect (func @forward)"),
                              clEnumValN(Emit::Train, "train",
                                         "the training function @train_step (loss and gradients)"),
                              clEnumValN(Emit::Layers, "layers",
                                         "the layer functions (@prefix, @block_N, @tail)"),
                              clEnumValN(Emit::Stages, "stages",
                                         "the stage partition as a table")),
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

cl::OptionCategory planCategory("partitioning options (--emit=stages)");
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

constexpr int kBadInput = 2;

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "rpc-compile " << RP_VERSION << " (the RoundPipe compiler; MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
  cl::HideUnrelatedOptions({&category, &planCategory, &cl::getGeneralCategory()});
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
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = mlir::rp::onnx::importOnnxModel(context, *model, options);
  if (!module)
    return kBadInput;
  if (emit == Emit::Train || loraRank > 0 || !freeze.empty()) {
    mlir::rp::TrainingOptions training;
    training.loraRank = loraRank;
    training.loraAlpha = loraAlpha;
    training.loraTargets = loraTargets;
    training.freeze = freeze;
    training.differentiate = emit == Emit::Train;
    PassManager pm(&context);
    mlir::rp::buildTrainPipeline(pm, training);
    if (failed(pm.run(*module)))
      return kBadInput;
  }

  std::string text;
  if (emit == Emit::Layers || emit == Emit::Stages) {
    PassManager pm(&context);
    mlir::rp::buildLayersPipeline(pm);
    if (failed(pm.run(*module)))
      return kBadInput;
  }
  if (emit == Emit::Stages) {
    mlir::rp::StageOptions options;
    options.gpus = gpus;
    options.gpuMemory = gpuMemory;
    options.microBatches = microBatches;
    options.profilePath = profilePath;
    options.targetPath = targetPath;
    options.partitioner = partitioner;
    FailureOr<mlir::rp::StagePlan> plan = mlir::rp::planStages(*module, options);
    if (failed(plan))
      return kBadInput;
    text = mlir::rp::formatStageTable(*plan);
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
