//===- Pipeline.h - rpc's pass pipelines ------------------------*- C++ -*-===//
//
// The pass pipelines of rpc-compile, as functions, and their registration with the pass
// registry so that `rp-opt --rp-train-pipeline="..."` reproduces `rpc-compile --emit=train`.
// Their options are CompileOptions.h's.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_PIPELINE_H
#define RP_COMPILER_PIPELINE_H

#include "compiler/CompileOptions.h"
#include "passes/Schedule/StagePlanning.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::rp {

/// forward -> train_step: rp-freeze-params (if `freeze`), rp-inject-lora (if `loraRank` > 0),
/// rp-autodiff and canonicalize (if `differentiate`).
void buildTrainPipeline(OpPassManager &pm, const TrainingOptions &options);

/// The fusions of exported patterns: rp-fuse-norms, -gelu, -swiglu, -rope, canonicalize,
/// rp-fuse-attention (after canonicalize composed the key's transposes), -cross-entropy.
void buildFusionPipeline(OpPassManager &pm);

/// forward -> layer functions: the fusion pipeline, then rp-group-layers.
void buildLayersPipeline(OpPassManager &pm, llvm::StringRef baseWeights = "");

/// Folds transposes of the last two dimensions into graph.matmul's transpose_a/transpose_b
/// flags (rp-fold-transpose-into-matmul): what buildSchedulePipeline runs after lowering, for
/// tools that evaluate the same GEMMs (rp-ref --train).
void addTransposeFolding(OpPassManager &pm);

/// partitioned layers -> planned schedule: rp-lower-to-schedule, canonicalize, rp-plan-memory.
void buildSchedulePipeline(OpPassManager &pm, const LowerToScheduleOptions &options);

/// forward -> planned schedule: the parameter transformations of buildTrainPipeline (freeze,
/// LoRA; no @train_step), buildLayersPipeline, rp-partition-stages (which hands its plan to
/// `onStagePlan` when given), buildSchedulePipeline. The plan exporter reads the result.
void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options,
                          StagePlanObserver onStagePlan = {});

/// Registers `rp-fusion-pipeline`, `rp-layers-pipeline`, `rp-train-pipeline` (the options of
/// visitTrainingOptions) and `rp-compile-pipeline` (those of visitCompileOptions).
void registerPipelines();

} // namespace mlir::rp

#endif // RP_COMPILER_PIPELINE_H
