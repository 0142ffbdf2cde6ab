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

} // namespace

void registerPipelines() {
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
        TrainingOptions options;
        options.loraRank = o.loraRank;
        options.loraAlpha = o.loraAlpha;
        options.loraTargets = o.loraTargets;
        options.freeze = o.freeze;
        buildTrainPipeline(pm, options);
      });
}

} // namespace mlir::rp
