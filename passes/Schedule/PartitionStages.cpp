//===- PartitionStages.cpp - stage planning and rp-partition-stages -------===//

#include "passes/Schedule/StagePlanning.h"

#include "passes/Schedule/LayerCosts.h"
#include "passes/Schedule/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_PARTITIONSTAGES
#include "passes/Schedule/Passes.h.inc"

namespace part = ::rp::partition;

namespace {

/// Parses "24GiB", "24GB", "512MiB", "1e9" (bytes).
std::optional<uint64_t> parseBytes(llvm::StringRef text) {
  struct Unit {
    const char *suffix;
    double scale;
  };
  static const Unit units[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0},
                               {"GB", 1e9},          {"MB", 1e6},        {"KB", 1e3},
                               {"B", 1.0}};
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

/// The layer profile of the partition: the measured one of `options.profile` (the saved
/// bytes it does not give estimated) or the FLOP estimate on `target`; activations in the
/// compute dtype. Emits at the module and fails on an unreadable or mismatched profile.
FailureOr<part::Profile> layerProfile(ModuleOp module, const PartitionStagesOptions &options,
                                      const part::TargetSpec &target, size_t numLayers) {
  const int64_t floatBytes = options.dtype == ComputeDType::F32 ? 4 : 2;
  if (options.profile.empty())
    return estimateProfile(module, target, 0.5, floatBytes);
  auto p = part::loadProfile(options.profile);
  if (!p.ok())
    return module.emitError(p.status().message());
  part::Profile profile = p.value();
  if (profile.layers.size() != numLayers)
    return module.emitError(options.profile + ": the profile has " +
                            std::to_string(profile.layers.size()) + " layers, the model has " +
                            std::to_string(numLayers) + " (prefix, " +
                            std::to_string(numLayers - 2) + " blocks, tail)");
  // Residuals the profile does not give: the compiler's estimate.
  if (llvm::none_of(profile.layers, [](const part::LayerProfile &l) { return !l.savedBytes; }))
    return profile;
  FailureOr<SmallVector<uint64_t>> saved = estimateSavedBytes(module, floatBytes);
  if (failed(saved))
    return failure();
  for (auto [layer, bytes] : llvm::zip_equal(profile.layers, *saved))
    if (!layer.savedBytes)
      layer.savedBytes = bytes;
  return profile;
}

} // namespace

FailureOr<StagePlan> planStages(ModuleOp module, const PartitionStagesOptions &options) {
  auto fail = [&](const std::string &message) -> FailureOr<StagePlan> {
    return module.emitError(message);
  };
  auto layers = module->getAttrOfType<ArrayAttr>("graph.layers");
  if (!layers)
    return fail("no 'graph.layers' attribute: run rp-group-layers first");
  if (options.gpus < 1)
    return fail("the GPU count must be at least 1, got " + std::to_string(options.gpus));
  part::TargetSpec target;
  if (!options.target.empty()) {
    // A JSON file, a preset name ("rtx4090", "rtx5090", "h100"), or the flag form
    // "name=rtx4090,peak_tflops=165,pcie_gbps=25,...".
    bool isFlag = (options.target.find('=') != std::string::npos ||
                   part::targetPreset(options.target)) &&
                  !llvm::sys::fs::exists(options.target);
    auto t = isFlag ? part::parseTargetFlag(options.target) : part::loadTarget(options.target);
    if (!t.ok())
      return fail(t.status().message());
    target = t.value();
  } else {
    // An RTX 4090 (the paper's machine): 165 dense bf16 TFLOP/s, PCIe 4.0 x16, 24 GiB.
    target = part::makeTarget("rtx4090", 165, 1008, 25, 24ull << 30).value();
  }
  if (!options.gpuMemory.empty()) {
    std::optional<uint64_t> bytes = parseBytes(options.gpuMemory);
    if (!bytes)
      return fail("invalid GPU memory '" + options.gpuMemory + "': expected a size like 24GiB");
    target.memoryBytes = *bytes;
  }
  StagePlan result;
  result.target = target;
  FailureOr<part::Profile> profile = layerProfile(module, options, target, layers.size());
  if (failed(profile))
    return failure();
  result.profile = std::move(*profile);
  int m = options.microBatches > 0 ? options.microBatches : options.gpus + 1;
  auto costs = part::CostModel::create(result.profile, target.pcieGbps, m,
                                       options.recompute == schedule::RecomputeGrain::layer
                                           ? part::ResidualLifetime::Layer
                                           : part::ResidualLifetime::Stage);
  if (!costs.ok())
    return fail(costs.status().message());
  part::PartitionOptions po;
  po.numGpus = options.gpus;
  po.modelMemoryLimitBytes = part::defaultModelMemoryLimit(target);
  std::vector<part::PartitionAlgorithm> algorithms;
  if (options.partitioner != Partitioner::Exact)
    algorithms.push_back(part::PartitionAlgorithm::RoundPipe);
  if (options.partitioner != Partitioner::RoundPipe)
    algorithms.push_back(part::PartitionAlgorithm::Exact);
  std::optional<part::Plan> best;
  for (part::PartitionAlgorithm algorithm : algorithms) {
    auto plan = part::partition(algorithm, costs.value(), po);
    if (!plan.ok())
      return fail(plan.status().message());
    if (!best || part::estimatedStepMs(plan.value(), true) < part::estimatedStepMs(*best, true))
      best = plan.value();
  }
  result.plan = *best;
  return result;
}

void recordPlan(ModuleOp module, const StagePlan &sp) {
  Builder b(module.getContext());
  auto ranges = [&](const std::vector<part::PlannedStage> &stages) {
    SmallVector<Attribute> out;
    for (const part::PlannedStage &st : stages)
      out.push_back(b.getDenseI64ArrayAttr({st.begin, st.end}));
    return b.getArrayAttr(out);
  };
  const part::Plan &p = sp.plan;
  module->setAttr(
      "graph.partition",
      b.getDictionaryAttr({
          b.getNamedAttr("algorithm",
                         b.getStringAttr(p.algorithm == part::PartitionAlgorithm::Exact
                                             ? "exact"
                                             : "roundpipe")),
          b.getNamedAttr("gpus", b.getI64IntegerAttr(p.numGpus)),
          b.getNamedAttr("memory_bytes",
                         b.getI64IntegerAttr(static_cast<int64_t>(sp.target.memoryBytes))),
          b.getNamedAttr("micro_batches", b.getI64IntegerAttr(p.numMicroBatches)),
          b.getNamedAttr("stage_time_ms", b.getF64FloatAttr(p.stageTimeMs)),
          b.getNamedAttr("objective_ms", b.getF64FloatAttr(p.objective)),
          b.getNamedAttr("forward", ranges(p.forward)),
          b.getNamedAttr("backward", ranges(p.backward)),
      }));
}

std::string formatStageTable(const StagePlan &sp, ArrayRef<int64_t> devicePeakBytes) {
  std::string out;
  char line[256];
  bool peaks = !devicePeakBytes.empty();
  std::snprintf(line, sizeof line, "%-6s %-10s %-28s %12s %12s%s\n", "stage", "kind", "layers",
                "est. ms/mb", "memory", peaks ? "  device peak" : "");
  out += line;
  int index = 0;
  auto row = [&](const part::PlannedStage &st) {
    std::string layers = sp.profile.layers[st.begin].name;
    if (st.end - st.begin > 1)
      layers += " .. " + sp.profile.layers[st.end - 1].name;
    std::string peak;
    if (peaks && index < static_cast<int>(devicePeakBytes.size()))
      peak = "  " + part::formatBytes(static_cast<uint64_t>(devicePeakBytes[index]));
    std::snprintf(line, sizeof line, "%-6d %-10s %-28s %12.3f %12s%s\n", index,
                  part::stageKindName(st.kind), layers.c_str(), st.cost.timeMs,
                  part::formatBytes(st.cost.memoryBytes).c_str(), peak.c_str());
    ++index;
    out += line;
  };
  for (const auto &st : sp.plan.forward)
    row(st);
  for (const auto &st : sp.plan.backward)
    row(st);
  out += part::formatPlan(sp.plan) + "\n";
  for (const std::string &w : sp.plan.warnings)
    out += "warning: " + w + "\n";
  // The layer profile the partition used (measured, or the FLOP estimate of LayerCosts.h).
  std::snprintf(line, sizeof line, "%-6s %-16s %14s %14s %14s %14s %14s\n", "layer", "name",
                "fwd ms", "bwd ms", "param bytes", "trainable", "act bytes");
  out += line;
  for (auto [i, l] : llvm::enumerate(sp.profile.layers)) {
    std::snprintf(line, sizeof line, "%-6zu %-16s %14.10g %14.10g %14llu %14llu %14llu\n", i,
                  l.name.c_str(), l.fwdMs, l.bwdMs, static_cast<unsigned long long>(l.paramBytes),
                  static_cast<unsigned long long>(l.trainableBytes),
                  static_cast<unsigned long long>(l.actBytes));
    out += line;
  }
  return out;
}

namespace {

struct PartitionStagesPass : public impl::PartitionStagesBase<PartitionStagesPass> {
  using PartitionStagesBase::PartitionStagesBase;

  PartitionStagesPass(const PartitionStagesOptions &options, StagePlanObserver observer)
      : PartitionStagesBase(options), observer(std::move(observer)) {}

  void runOnOperation() override {
    PartitionStagesOptions options{gpus,   gpuMemory,   microBatches, profile,
                                   target, partitioner, dtype,        recompute};
    FailureOr<StagePlan> plan = planStages(getOperation(), options);
    if (failed(plan))
      return signalPassFailure();
    recordPlan(getOperation(), *plan);
    if (observer)
      observer(*plan);
  }

  StagePlanObserver observer;
};

} // namespace

std::unique_ptr<Pass> createPartitionStages(const PartitionStagesOptions &options,
                                            StagePlanObserver observer) {
  return std::make_unique<PartitionStagesPass>(options, std::move(observer));
}
} // namespace mlir::rp
