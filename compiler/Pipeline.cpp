//===- Pipeline.cpp - rpc's pass pipelines --------------------------------===//

#include "compiler/Pipeline.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <type_traits>

namespace mlir::rp {

void buildTrainPipeline(OpPassManager &pm, const TrainingOptions &options) {
  if (!options.freeze.empty())
    pm.addPass(createFreezeParams(FreezeParamsOptions{options.freeze}));
  if (options.loraRank > 0)
    pm.addPass(createInjectLora(
        InjectLoraOptions{options.loraRank, options.loraAlpha, options.loraTargets}));
  if (!options.differentiate)
    return;
  AutodiffOptions autodiff;
  autodiff.seedArg = options.seedArg;
  pm.addPass(createAutodiff(autodiff));
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
  pm.addPass(createFuseLinearCrossEntropy());
  pm.addPass(createFuseRoutedExperts());
  pm.addPass(createCanonicalizerPass());
}

void buildLayersPipeline(OpPassManager &pm, llvm::StringRef baseWeights) {
  buildFusionPipeline(pm);
  // After the fusions, so that the routed experts' grouped GEMMs read their weights.
  if (!baseWeights.empty())
    pm.addPass(createQuantizeBaseWeights(QuantizeBaseWeightsOptions{baseWeights.str()}));
  pm.addPass(createGroupLayers());
}

void buildCompilePipeline(OpPassManager &pm, const CompileOptions &options,
                          StagePlanObserver onStagePlan) {
  TrainingOptions training = options.training;
  training.differentiate = false;
  buildTrainPipeline(pm, training);
  buildLayersPipeline(pm, training.baseWeights);
  // The partitioner sizes the residuals as the lowering will make them.
  PartitionStagesOptions partition = options.partition;
  partition.dtype = options.schedule.dtype;
  partition.recompute = options.schedule.recompute;
  pm.addPass(createPartitionStages(partition, std::move(onStagePlan)));
  buildSchedulePipeline(pm, options.schedule);
}

void addTransposeFolding(OpPassManager &pm) { pm.addPass(createFoldTransposeIntoMatmul()); }

void buildSchedulePipeline(OpPassManager &pm, const LowerToScheduleOptions &options) {
  pm.addPass(createLowerToSchedule(options));
  // After the layers' backward functions exist, so that their transposes fold too.
  addTransposeFolding(pm);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createChooseLossChunks());
  pm.addPass(createPlanMemory());
  // The planned arena against the target's memory (graph.partition's, when recorded).
  pm.addPass(createCheckDeviceMemory());
}

namespace {

template <typename Visit>
void visitOptions(TrainingOptions &options, Visit &&visit) {
  visitTrainingOptions(options, visit);
}
template <typename Visit>
void visitOptions(CompileOptions &options, Visit &&visit) {
  visitCompileOptions(options, visit);
}

/// A registered pipeline's options, declared from the list of `Struct`'s options
/// (visitTrainingOptions or visitCompileOptions): one pass option per entry, with the
/// struct's default; value() reads the parsed values back into a `Struct`.
template <typename Struct>
class ListedPipelineOptions : public PassPipelineOptions<ListedPipelineOptions<Struct>> {
public:
  ListedPipelineOptions() {
    Struct defaults;
    visitOptions(defaults, [&](auto &field, const OptionInfo &info) {
      auto option = std::make_unique<PassOption<std::decay_t<decltype(field)>>>(
          *this, info.name, llvm::cl::desc(info.description), llvm::cl::init(field));
      if (info.valueName)
        option->setValueStr(info.valueName);
      owned.push_back(std::move(option));
    });
  }

  Struct value() const {
    Struct out;
    size_t i = 0;
    visitOptions(out, [&](auto &field, const OptionInfo &) {
      using Option = PassOption<std::decay_t<decltype(field)>>;
      field = static_cast<const Option &>(*owned[i++]).getValue();
    });
    return out;
  }

private:
  template <typename T>
  using PassOption = detail::PassOptions::Option<T>;

  std::vector<std::unique_ptr<llvm::cl::Option>> owned;
};

} // namespace

void registerPipelines() {
  using CompilePipelineOptions = ListedPipelineOptions<CompileOptions>;
  using TrainPipelineOptions = ListedPipelineOptions<TrainingOptions>;
  PassPipelineRegistration<CompilePipelineOptions>(
      "rp-compile-pipeline",
      "forward -> planned schedule (as rpc-compile before writing the plan file)",
      [](OpPassManager &pm, const CompilePipelineOptions &options) {
        buildCompilePipeline(pm, options.value());
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
      [](OpPassManager &pm, const TrainPipelineOptions &options) {
        buildTrainPipeline(pm, options.value());
      });
}

} // namespace mlir::rp
