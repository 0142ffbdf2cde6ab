//===- Pipeline.cpp - rpc's pass pipelines --------------------------------===//

#include "compiler/Pipeline.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::rp {

void buildTrainPipeline(OpPassManager &pm, const TrainingOptions &options) {
  if (!options.freeze.empty())
    pm.addPass(createFreezeParams(FreezeParamsOptions{options.freeze}));
  if (options.loraRank > 0)
    pm.addPass(createInjectLora(
        InjectLoraOptions{options.loraRank, options.loraAlpha, options.loraTargets}));
  if (!options.differentiate)
    return;
  pm.addPass(createAutodiff());
  pm.addPass(createCanonicalizerPass());
}

void buildFusionPipeline(OpPassManager &pm) {
  pm.addPass(createFuseNorms());
  pm.addPass(createFuseGelu());
  pm.addPass(createFuseSwiglu());
  pm.addPass(createFuseRope());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseAttention());
  pm.addPass(createFuseCrossEntropy());
  pm.addPass(createCanonicalizerPass());
}

void buildLayersPipeline(OpPassManager &pm) {
  buildFusionPipeline(pm);
  pm.addPass(createGroupLayers());
}

void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options) {
  TrainingOptions training = options.training;
  training.differentiate = false;
  buildTrainPipeline(pm, training);
  buildLayersPipeline(pm);
  PartitionStagesOptions partition;
  partition.gpus = options.partition.gpus;
  partition.gpuMemory = options.partition.gpuMemory;
  partition.microBatches = options.partition.microBatches;
  partition.profile = options.partition.profilePath;
  partition.target = options.partition.targetPath;
  partition.partitioner = options.partition.partitioner;
  pm.addPass(createPartitionStages(partition));
  buildSchedulePipeline(pm, options);
}

void buildSchedulePipeline(OpPassManager &pm, const CompileOptions &options) {
  LowerToScheduleOptions lower;
  lower.update = options.update;
  lower.recompute = options.recompute;
  lower.dtype = options.dtype;
  lower.lr = options.lr;
  lower.beta1 = options.beta1;
  lower.beta2 = options.beta2;
  lower.eps = options.eps;
  lower.weightDecay = options.weightDecay;
  lower.gradClip = options.gradClip;
  pm.addPass(createLowerToSchedule(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createPlanMemory());
}

namespace {

struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  Option<int64_t> loraRank{*this, "lora-rank", llvm::cl::desc("LoRA rank (0: no LoRA)"),
                           llvm::cl::init(0)};
  Option<double> loraAlpha{*this, "lora-alpha", llvm::cl::desc("LoRA alpha"),
                           llvm::cl::init(16.0)};
  Option<std::string> loraTargets{*this, "lora-targets",
                                  llvm::cl::desc("Regex of the weights that get adapters"),
                                  llvm::cl::init("q_proj|v_proj")};
  Option<std::string> freeze{*this, "freeze", llvm::cl::desc("Regex of params to freeze"),
                             llvm::cl::init("")};
};

struct CompilePipelineOptions : public PassPipelineOptions<CompilePipelineOptions> {
  Option<int64_t> loraRank{*this, "lora-rank", llvm::cl::desc("LoRA rank (0: no LoRA)"),
                           llvm::cl::init(0)};
  Option<double> loraAlpha{*this, "lora-alpha", llvm::cl::desc("LoRA alpha"),
                           llvm::cl::init(16.0)};
  Option<std::string> loraTargets{*this, "lora-targets",
                                  llvm::cl::desc("Regex of the weights that get adapters"),
                                  llvm::cl::init("q_proj|v_proj")};
  Option<std::string> freeze{*this, "freeze", llvm::cl::desc("Regex of params to freeze"),
                             llvm::cl::init("")};
  Option<int> gpus{*this, "gpus", llvm::cl::desc("GPU pool size N"), llvm::cl::init(8)};
  Option<std::string> gpuMemory{*this, "gpu-memory", llvm::cl::desc("Memory of one GPU"),
                                llvm::cl::init("")};
  Option<int> microBatches{*this, "micro-batches",
                           llvm::cl::desc("Micro-batches per job (0: N + 1)"), llvm::cl::init(0)};
  Option<std::string> profile{*this, "profile", llvm::cl::desc("Measured layer profile"),
                              llvm::cl::init("")};
  Option<std::string> target{*this, "target", llvm::cl::desc("Target GPU"), llvm::cl::init("")};
  Option<std::string> partitioner{*this, "partitioner",
                                  llvm::cl::desc("roundpipe, exact or auto"),
                                  llvm::cl::init("auto")};
  Option<std::string> update{*this, "update", llvm::cl::desc("sync or async"),
                             llvm::cl::init("async")};
  Option<std::string> recompute{*this, "recompute", llvm::cl::desc("stage or layer"),
                                llvm::cl::init("stage")};
  Option<std::string> dtype{*this, "dtype", llvm::cl::desc("f32, f16 or bf16"),
                            llvm::cl::init("f32")};
  Option<double> lr{*this, "lr", llvm::cl::desc("AdamW learning rate"), llvm::cl::init(3.0e-4)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("AdamW weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> gradClip{*this, "grad-clip", llvm::cl::desc("Global-norm clip (0: off)"),
                          llvm::cl::init(0.0)};
};

/// The TrainingOptions of a pipeline's lora-*/freeze options (rp-train-pipeline and
/// rp-compile-pipeline declare the same four).
template <typename PipelineOptions>
TrainingOptions trainingOptionsOf(const PipelineOptions &o) {
  TrainingOptions options;
  options.loraRank = o.loraRank;
  options.loraAlpha = o.loraAlpha;
  options.loraTargets = o.loraTargets;
  options.freeze = o.freeze;
  return options;
}

} // namespace

void registerPipelines() {
  PassPipelineRegistration<CompilePipelineOptions>(
      "rp-compile-pipeline",
      "forward -> planned schedule (as rpc-compile before writing the plan file)",
      [](OpPassManager &pm, const CompilePipelineOptions &o) {
        CompileOptions options;
        options.training = trainingOptionsOf(o);
        options.partition.gpus = o.gpus;
        options.partition.gpuMemory = o.gpuMemory;
        options.partition.microBatches = o.microBatches;
        options.partition.profilePath = o.profile;
        options.partition.targetPath = o.target;
        options.partition.partitioner = o.partitioner;
        options.update = o.update;
        options.recompute = o.recompute;
        options.dtype = o.dtype;
        options.lr = o.lr;
        options.weightDecay = o.weightDecay;
        options.gradClip = o.gradClip;
        buildCompilePipeline(pm, options);
      });
  PassPipelineRegistration<>("rp-fusion-pipeline",
                             "the fusions of exported patterns into fused graph ops",
                             [](OpPassManager &pm) { buildFusionPipeline(pm); });
  PassPipelineRegistration<>("rp-layers-pipeline",
                             "forward -> fused ops -> layer functions (as rpc-compile "
                             "--emit=layers)",
                             [](OpPassManager &pm) { buildLayersPipeline(pm); });
  PassPipelineRegistration<TrainPipelineOptions>(
      "rp-train-pipeline",
      "forward -> train_step: freeze, LoRA injection, autodiff (as rpc-compile --emit=train)",
      [](OpPassManager &pm, const TrainPipelineOptions &o) {
        buildTrainPipeline(pm, trainingOptionsOf(o));
      });
}

} // namespace mlir::rp
