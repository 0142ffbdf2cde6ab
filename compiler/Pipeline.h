//===- Pipeline.h - rpc's pass pipelines ------------------------*- C++ -*-===//
//
// The pass pipelines of rpc-compile, as functions, and their registration with the pass
// registry so that `rp-opt --rp-train-pipeline="..."` reproduces `rpc-compile --emit=train`.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_PIPELINE_H
#define RP_COMPILER_PIPELINE_H

#include "passes/StagePlanning.h"

#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::rp {

/// Options shared by rpc-compile and rp-ref.
struct TrainingOptions {
  /// LoRA rank; 0 disables LoRA.
  int64_t loraRank = 0;
  double loraAlpha = 16.0;
  /// Regex of the weights that get adapters.
  std::string loraTargets = "q_proj|v_proj";
  /// Regex of params to freeze (empty: none).
  std::string freeze;
  /// Build @train_step (rp-autodiff); off, only the parameter transformations run.
  bool differentiate = true;
};

/// forward -> train_step: rp-freeze-params (if `freeze`), rp-inject-lora (if `loraRank` > 0),
/// rp-autodiff and canonicalize (if `differentiate`).
void buildTrainPipeline(OpPassManager &pm, const TrainingOptions &options);

/// The fusions of exported patterns: rp-fuse-norms, -gelu, -swiglu, -rope, canonicalize,
/// rp-fuse-attention (after canonicalize composed the key's transposes), -cross-entropy.
void buildFusionPipeline(OpPassManager &pm);

/// forward -> layer functions: the fusion pipeline, then rp-group-layers.
void buildLayersPipeline(OpPassManager &pm);

/// Options of the whole compilation (rpc-compile -o model.rpplan).
struct CompileOptions {
  TrainingOptions training;
  /// Partitioning (rp-partition-stages).
  StageOptions partition;
  /// The iteration (rp-lower-to-schedule).
  std::string update = "async";
  std::string recompute = "stage";
  std::string dtype = "f32"; ///< f32|fp32, f16|fp16 or bf16
  double lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weightDecay = 0.0,
         gradClip = 0.0;
};

/// partitioned layers -> planned schedule: rp-lower-to-schedule, canonicalize, rp-plan-memory.
void buildSchedulePipeline(OpPassManager &pm, const CompileOptions &options);

/// forward -> planned schedule: the parameter transformations of buildTrainPipeline (freeze,
/// LoRA; no @train_step), buildLayersPipeline, rp-partition-stages, buildSchedulePipeline. The plan exporter reads the result.
void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options);

/// Registers `rp-fusion-pipeline`, `rp-layers-pipeline`, `rp-train-pipeline` (options
/// lora-rank, lora-alpha, lora-targets, freeze) and `rp-compile-pipeline` (all of
/// CompileOptions).
void registerPipelines();

} // namespace mlir::rp

#endif // RP_COMPILER_PIPELINE_H
