//===- CompileOptions.h - the options of rpc's compile pipeline --*- C++ -*-===//
//
// One structure for the options of the compilation (CompileOptions) and one list of their
// names and help texts (visitCompileOptions). rpc-compile binds the list to its flags
// (CompileCommandLine, below); rp-opt's registered pipelines (Pipeline.h) parse the same list
// from their option strings. The options of rp-partition-stages and rp-lower-to-schedule are
// those passes' own option structs, so their types and defaults are declared once, in the
// passes' .td files.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_COMPILEOPTIONS_H
#define RP_COMPILER_COMPILEOPTIONS_H

#include "passes/Passes.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::rp {

/// The parameter transformations and the training function (rpc-compile, rp-ref).
struct TrainingOptions {
  /// LoRA rank; 0 disables LoRA.
  int64_t loraRank = 0;
  double loraAlpha = 16.0;
  /// Regex of the weights that get adapters.
  std::string loraTargets = "q_proj|v_proj";
  /// Regex of params to freeze (empty: none).
  std::string freeze;
  /// How the frozen weights the GEMMs read are held (rp-quantize-base-weights' format: nf4,
  /// nf4-fp32-absmax, int8, fp8); empty: in the compute dtype.
  std::string baseWeights;
  /// Build @train_step (rp-autodiff); off, only the parameter transformations run. Not an
  /// option: the driver decides.
  bool differentiate = true;
  /// @train_step takes the loss's seed as its last argument (rp-autodiff seed-arg): rp-ref
  /// --train, which seeds as the pipelined fused tail does. Not an option either.
  bool seedArg = false;
};

/// Options of the whole compilation (rpc-compile -o model.rpplan, rp-compile-pipeline).
struct CompileOptions {
  TrainingOptions training;
  /// Partitioning: rp-partition-stages' options.
  PartitionStagesOptions partition;
  /// The iteration: rp-lower-to-schedule's options (beta1, beta2, eps and the plan's name are
  /// not options of the pipeline: their defaults hold).
  LowerToScheduleOptions schedule;
};

/// Where an option shows in rpc-compile's --help.
enum class OptionGroup { Training, Partitioning, Iteration };

/// The name and help of one option.
struct OptionInfo {
  const char *name;
  const char *description;
  OptionGroup group;
  const char *valueName = nullptr; ///< --help's placeholder for the value; null: the type's.
};

/// Calls `visit(field, info)` for every option of `options` (lora-rank, lora-alpha,
/// lora-targets, freeze), in a fixed order.
template <typename Visit>
void visitTrainingOptions(TrainingOptions &options, Visit &&visit) {
  auto g = OptionGroup::Training;
  visit(options.loraRank, OptionInfo{"lora-rank", "Add LoRA adapters of this rank (0: none)", g});
  visit(options.loraAlpha,
        OptionInfo{"lora-alpha", "LoRA alpha (updates scaled by alpha/rank)", g});
  visit(options.loraTargets,
        OptionInfo{"lora-targets", "Regex of the weights that get LoRA adapters", g});
  visit(options.freeze, OptionInfo{"freeze", "Regex of params to freeze", g});
  visit(options.baseWeights,
        OptionInfo{"base-weights",
                   "Hold the frozen GEMM weights as nf4, nf4-fp32-absmax, int8 or fp8 "
                   "(default: the compute dtype)",
                   g, "format"});
}

/// Calls `visit(field, info)` for every option of `options`: the training options, then the
/// partitioning and iteration options, in a fixed order. The one list of the compile options'
/// names and help texts.
template <typename Visit>
void visitCompileOptions(CompileOptions &options, Visit &&visit) {
  visitTrainingOptions(options.training, visit);
  PartitionStagesOptions &p = options.partition;
  auto g = OptionGroup::Partitioning;
  visit(p.gpus, OptionInfo{"gpus", "GPU pool size N", g});
  visit(p.gpuMemory, OptionInfo{"gpu-memory", "Memory of one GPU (e.g. 24GiB)", g});
  visit(p.microBatches, OptionInfo{"micro-batches", "Micro-batches per job M (default N + 1)", g});
  visit(p.profile, OptionInfo{"profile", "Measured layer profile (JSON)", g, "file"});
  visit(p.target, OptionInfo{"target",
                             "Target GPU: rtx4090, rtx5090, h100, a JSON file, or "
                             "name=X,peak_tflops=T,pcie_gbps=B,memory_bytes=M",
                             g, "file"});
  visit(p.partitioner, OptionInfo{"partitioner",
                                  "roundpipe (the paper's), exact, or auto: both, and the plan "
                                  "with the lower estimated step time",
                                  g});
  LowerToScheduleOptions &s = options.schedule;
  g = OptionGroup::Iteration;
  visit(s.dtype,
        OptionInfo{"dtype", "Compute dtype of weights and activations: bf16, fp16 or fp32", g});
  visit(s.update, OptionInfo{"update",
                             "Optimizer update: sync (exact) or async (staleness 1, the paper's "
                             "default)",
                             g});
  visit(s.recompute,
        OptionInfo{"recompute", "Recomputation grain of backward stages: stage or layer", g});
  visit(s.lr, OptionInfo{"lr", "AdamW learning rate", g});
  visit(s.weightDecay, OptionInfo{"weight-decay", "AdamW decoupled weight decay", g});
  visit(s.gradClip, OptionInfo{"grad-clip", "Clip gradients to this global L2 norm (0: off)", g});
}

/// A tool's flags for a CompileOptions: one llvm::cl option per entry of visitCompileOptions,
/// in the category of its group, storing into `options`. Construct it before
/// llvm::cl::ParseCommandLineOptions and keep it alive while `options` is read. An enum flag
/// with an unknown value prints "<tool>: error: <message>" and sets hadBadValue() (the tool
/// exits with its bad-input code, as for the other bad inputs).
class CompileCommandLine {
public:
  CompileCommandLine(CompileOptions &options, StringRef tool, llvm::cl::OptionCategory &training,
                     llvm::cl::OptionCategory &partitioning, llvm::cl::OptionCategory &iteration);
  ~CompileCommandLine();
  CompileCommandLine(const CompileCommandLine &) = delete;
  CompileCommandLine &operator=(const CompileCommandLine &) = delete;

  /// True once an enum flag had an unknown value.
  bool hadBadValue() const { return badValue; }

private:
  std::string tool;
  bool badValue = false;
  std::vector<std::unique_ptr<llvm::cl::Option>> flags;
};

} // namespace mlir::rp

#endif // RP_COMPILER_COMPILEOPTIONS_H
