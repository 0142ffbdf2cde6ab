//===- rpc-compile.cpp - the RoundPipe compiler driver --------------------===//
//
//   rpc-compile MODEL.onnx -o MODEL.rpplan [options]
//   rpc-compile MODEL.onnx --emit=graph|train|layers|stages|schedule|plan-text|report|report-json
//       [-o FILE]
//
// Imports an exported ONNX training graph and compiles it into a RoundPipe plan: the plan file
// (protobuf, runtime/plan/plan.proto) and, beside it, the initial weights as safetensors
// (`model.rpplan` -> `model.safetensors`). `--emit` prints an intermediate level instead:
// `graph` (the imported forward function), `train` (+ @train_step), `layers` (the layer
// functions), `stages` (the stage partition as a table, with each stage's planned peak device
// memory, then the layer profile used), `schedule` (the planned schedule IR), `plan-text` (the plan in protobuf text
// format), `report` (the plan report of runtime/plan/PlanReport.h: executed and model FLOPs,
// bytes moved and device memory per stage and step), `report-json` (the same as JSON).
// Without --emit, a `-o` ending in .rpplan writes the plan, anything else prints the graph.
// Exit codes: 0 success, 2 bad input (unreadable or malformed model, unsupported op, bad
// option value, ...), 1 internal error or a malformed command line. Nothing half-written
// is left behind. The work is compiler/Driver.h's; this file is the command line.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompileOptions.h"
#include "compiler/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using mlir::rp::EmitLevel;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("rpc-compile options");
cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx | model.onnxtext>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file (default: standard output)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<EmitLevel> emit(
    "emit", cl::desc("What to write (default: the plan when -o ends in .rpplan, else the graph)"),
    cl::init(EmitLevel::Auto),
    cl::values(
        clEnumValN(EmitLevel::Plan, "plan",
                   "the plan file and the initial weights (.safetensors beside it)"),
        clEnumValN(EmitLevel::Graph, "graph", "the imported graph dialect (func @forward)"),
        clEnumValN(EmitLevel::Train, "train",
                   "the training function @train_step (loss and gradients)"),
        clEnumValN(EmitLevel::Layers, "layers", "the layer functions (@prefix, @block_N, @tail)"),
        clEnumValN(EmitLevel::Stages, "stages", "the stage partition as a table"),
        clEnumValN(EmitLevel::Schedule, "schedule", "the planned schedule IR (schedule.plan)"),
        clEnumValN(EmitLevel::PlanText, "plan-text", "the plan in protobuf text format"),
        clEnumValN(EmitLevel::Report, "report",
                   "the plan report: FLOPs, transfers and device memory per stage and step"),
        clEnumValN(EmitLevel::ReportJson, "report-json", "the plan report as JSON")),
    cl::cat(category));
cl::list<std::string> dims("dim", cl::desc("Bind a symbolic dimension (e.g. --dim batch=4)"),
                           cl::value_desc("NAME=N"), cl::cat(category));
cl::list<std::string> inputShapes("input-shape",
                                  cl::desc("Set a graph input's shape (e.g. input_ids=4x128)"),
                                  cl::value_desc("NAME=AxB"), cl::cat(category));
cl::opt<bool> writeWeights(
    "write-weights",
    cl::desc("With -o: also write the initial weights as MODEL.safetensors (f32) beside the "
             "plan. By default a model whose weights are all ONNX external data is read in "
             "place by rp-run and nothing is copied"),
    cl::cat(category));
cl::opt<int64_t> foldLimit(
    "fold-limit", cl::Hidden, cl::init(int64_t{1} << 16), cl::value_desc("N"),
    cl::desc("Fold import-time constants of at most N elements (testing: a small model keeps "
             "its attention mask as runtime ops, as a long sequence does)"),
    cl::cat(category));
cl::OptionCategory planCategory("partitioning options");
cl::OptionCategory scheduleCategory("iteration options");
cl::OptionCategory mlirCategory("MLIR debugging options");

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::rp::DriverOptions options;
  // The compile options' flags (--lora-rank, --gpus, --dtype, ...) store into `options`.
  mlir::rp::CompileCommandLine compileFlags(options.compile, "rpc-compile", category, planCategory,
                                            scheduleCategory);
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
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "rpc-compile: compile an exported ONNX training graph into a "
                                   "RoundPipe plan\n",
                                   &llvm::errs()))
    return compileFlags.hadBadValue() ? mlir::rp::kExitBadInput : mlir::rp::kExitInternalError;

  options.inputPath = inputPath;
  options.outputPath = outputPath;
  options.emit = emit;
  options.dims.assign(dims.begin(), dims.end());
  options.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  if (foldLimit < 0) {
    llvm::errs() << "rpc-compile: error: --fold-limit must be non-negative, got " << foldLimit
                 << "\n";
    return mlir::rp::kExitBadInput;
  }
  options.foldLimit = foldLimit;
  options.writeWeights = writeWeights;
  options.producer = std::string("rpc-compile ") + RP_VERSION;
  return mlir::rp::runCompileDriver(options);
}
