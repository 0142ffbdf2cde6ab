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
#include "compiler/LayerCosts.h"
#include "compiler/Pipeline.h"
#include "compiler/partition/Partitioner.h"
#include "passes/Passes.h"
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

#include <cstdio>
#include <optional>

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
cl::opt<std::string> targetPath("target", cl::desc("Target GPU description (JSON)"),
                                cl::value_desc("file"), cl::init(""), cl::cat(planCategory));
cl::opt<std::string> partitioner("partitioner",
                                 cl::desc("roundpipe (the paper's), exact, or auto: both, and "
                                          "the plan with the lower estimated step time"),
                                 cl::init("auto"), cl::cat(planCategory));

constexpr int kBadInput = 2;

/// Parses "24GiB", "24GB", "512MiB", "1e9" (bytes).
std::optional<uint64_t> parseBytes(llvm::StringRef text) {
  struct Unit { const char *suffix; double scale; };
  static const Unit units[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0},
                               {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1.0}};
  double scale = 1.0;
  for (const Unit &u : units)
    if (text.consume_back(u.suffix)) {
      scale = u.scale;
      break;
    }
  double value;
  if (text.trim().getAsDouble(value) || !(value > 0))
    return std::nullopt;
  return static_cast<uint64_t>(value * scale);
}

/// The stage table of --emit=stages.
std::string formatStages(const ::rp::partition::Plan &plan,
                         const ::rp::partition::Profile &profile) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-10s %-28s %12s %12s\n", "stage", "kind", "layers",
                "est. ms/mb", "memory");
  out += line;
  int index = 0;
  auto row = [&](const ::rp::partition::PlannedStage &st) {
    std::string layers = profile.layers[st.begin].name;
    if (st.end - st.begin > 1)
      layers += " .. " + profile.layers[st.end - 1].name;
    std::snprintf(line, sizeof line, "%-6d %-10s %-28s %12.3f %12s\n", index++,
                  ::rp::partition::stageKindName(st.kind), layers.c_str(), st.cost.timeMs,
                  ::rp::partition::formatBytes(st.cost.memoryBytes).c_str());
    out += line;
  };
  for (const auto &st : plan.forward)
    row(st);
  for (const auto &st : plan.backward)
    row(st);
  out += ::rp::partition::formatPlan(plan) + "\n";
  for (const std::string &w : plan.warnings)
    out += "warning: " + w + "\n";
  return out;
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
    auto fail = [](const std::string &message) {
      llvm::errs() << "rpc-compile: error: " << message << "\n";
      return kBadInput;
    };
    namespace part = ::rp::partition;
    part::TargetSpec target;
    if (!targetPath.empty()) {
      auto t = part::loadTarget(targetPath);
      if (!t.ok())
        return fail(t.status().message());
      target = t.value();
    } else {
      // An RTX 4090 (the paper's machine): 165 dense bf16 TFLOP/s, PCIe 4.0 x16.
      target = part::makeTarget("rtx4090", 165, 1008, 25, 24ull << 30).value();
    }
    if (!gpuMemory.empty()) {
      std::optional<uint64_t> bytes = parseBytes(gpuMemory);
      if (!bytes)
        return fail("invalid --gpu-memory '" + gpuMemory + "': expected a size like 24GiB");
      target.memoryBytes = *bytes;
    }
    auto layers = (*module)->getAttrOfType<ArrayAttr>("graph.layers");
    part::Profile profile;
    if (!profilePath.empty()) {
      auto p = part::loadProfile(profilePath);
      if (!p.ok())
        return fail(p.status().message());
      profile = p.value();
      if (profile.layers.size() != layers.size())
        return fail(profilePath + ": the profile has " + std::to_string(profile.layers.size()) +
                    " layers, the model has " + std::to_string(layers.size()) +
                    " (prefix, " + std::to_string(layers.size() - 2) + " blocks, tail)");
    } else {
      FailureOr<part::Profile> estimated = mlir::rp::estimateProfile(*module, target);
      if (failed(estimated))
        return kBadInput;
      profile = *estimated;
    }
    if (gpus < 1)
      return fail("--gpus must be at least 1");
    int m = microBatches > 0 ? microBatches : gpus + 1;
    auto costs = part::CostModel::create(profile, target.pcieGbps, m);
    if (!costs.ok())
      return fail(costs.status().message());
    part::PartitionOptions options;
    options.numGpus = gpus;
    options.modelMemoryLimitBytes = part::defaultModelMemoryLimit(target);
    std::vector<part::PartitionAlgorithm> algorithms;
    if (partitioner == "auto") {
      algorithms = {part::PartitionAlgorithm::RoundPipe, part::PartitionAlgorithm::Exact};
    } else {
      auto algorithm = part::parsePartitionAlgorithm(partitioner);
      if (!algorithm.ok())
        return fail(algorithm.status().message() + " (or auto)");
      algorithms = {algorithm.value()};
    }
    std::optional<part::Plan> best;
    for (part::PartitionAlgorithm algorithm : algorithms) {
      auto plan = part::partition(algorithm, costs.value(), options);
      if (!plan.ok())
        return fail(plan.status().message());
      if (!best || part::estimatedStepMs(plan.value(), true) < part::estimatedStepMs(*best, true))
        best = plan.value();
    }
    text = formatStages(*best, profile);
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
