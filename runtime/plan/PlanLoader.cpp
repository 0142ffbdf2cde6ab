//===- PlanLoader.cpp - load a compiled plan and its weights --------------===//

#include "runtime/plan/PlanLoader.h"

#include "base/FormatBytes.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/plan/Weights.h"

#include <cstdio>
#include <optional>
#include <unordered_map>
#include <vector>

namespace rp::runtime {

namespace {

/// The directory part of `path` with its trailing '/', or "" for a bare file name.
std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// The plan's external weights as WeightSource ranges (shapes from the params).
StatusOr<WeightSource> openExternalWeights(const rp::plan::Plan &plan) {
  std::unordered_map<std::string, const rp::plan::Param *> params;
  for (const rp::plan::Param &p : plan.params())
    params.emplace(p.name(), &p);
  std::vector<ExternalTensor> tensors;
  for (const rp::plan::ExternalWeight &w : plan.external_weights()) {
    const rp::plan::Param &p = *params.at(w.name()); // validatePlan checked the name
    const std::optional<DType> dtype = fromPlanDType(w.dtype());
    tensors.push_back({w.name(), w.file(), w.offset(), w.bytes(),
                       fromRuntimeDType(dtype.value_or(DType::F32)),
                       shapeOf(p.type())});
  }
  return WeightSource::fromExternal(std::move(tensors));
}

} // namespace

StatusOr<LoadedPlan> loadPlan(const std::string &planPath, const std::string &weightsPath,
                              bool allowExtraWeights) {
  LoadedPlan loaded;
  loaded.planPath = planPath;
  StatusOr<rp::plan::Plan> plan = readPlanFile(planPath);
  if (!plan.ok())
    return plan.status();
  loaded.plan = std::move(plan.value());
  Status valid = validatePlan(loaded.plan);
  if (!valid.ok())
    return Status(valid.code(), planPath + ": " + valid.message());

  if (!weightsPath.empty()) {
    loaded.weightsPath = weightsPath;
  } else if (loaded.plan.weights_file().empty()) {
    // Compiled without a copy of the weights: read them where the model stores them.
    RP_ASSIGN_OR_RETURN(loaded.weights, openExternalWeights(loaded.plan));
    loaded.weightsPath = loaded.weights.describe();
    RP_RETURN_IF_ERROR(validateWeights(loaded.plan, loaded.weights, allowExtraWeights));
    return loaded;
  } else {
    const std::string &name = loaded.plan.weights_file();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return invalidArgument(planPath + ": the weights file name '" + name +
                                     "' must be a file name beside the plan");
    loaded.weightsPath = directoryOf(planPath) + name;
  }
  StatusOr<WeightSource> weights = WeightSource::open(loaded.weightsPath);
  if (!weights.ok())
    return weights.status();
  loaded.weights = std::move(weights.value());
  Status match = validateWeights(loaded.plan, loaded.weights, allowExtraWeights);
  if (!match.ok())
    return match;
  return loaded;
}

std::string describePlan(const LoadedPlan &loaded) {
  const rp::plan::Plan &p = loaded.plan;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "plan %s (%s, from %s)\n", loaded.planPath.c_str(),
                p.producer().c_str(), p.model().c_str());
  out += line;
  int trainable = 0;
  for (const auto &param : p.params())
    trainable += param.trainable() ? 1 : 0;
  std::snprintf(line, sizeof line,
                "  %d layers, %d params (%d trainable), %d functions, %d stages, M = %lld, "
                "partitioned for N = %lld, %s update\n",
                p.layers_size(), p.params_size(), trainable, p.functions_size(), p.stages_size(),
                static_cast<long long>(p.config().micro_batches()),
                static_cast<long long>(p.config().gpus()),
                p.config().update() == rp::plan::SYNC ? "sync" : "async");
  out += line;
  const auto &h = p.host_arena();
  std::snprintf(line, sizeof line,
                "  host arena: %s (weights %s, 3 x state %s, grads %s, 2 x activations %s)\n",
                formatBytes(hostArenaBytes(p)).c_str(), formatBytes(h.weights()).c_str(),
                formatBytes(h.state()).c_str(), formatBytes(h.grads()).c_str(),
                formatBytes(h.activations()).c_str());
  out += line;
  const auto &d = p.device_arena();
  std::snprintf(line, sizeof line,
                "  device arena: %s (constants %s, 2 x slot %s, 2 x activations %s, "
                "workspace %s)\n",
                formatBytes(deviceArenaBytes(p)).c_str(),
                formatBytes(d.constants()).c_str(), formatBytes(d.slot()).c_str(),
                formatBytes(d.activations()).c_str(), formatBytes(d.workspace()).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %s%s: %zu tensors",
                loaded.weights.external() ? "" : "weights ", loaded.weightsPath.c_str(),
                loaded.weights.tensors().size());
  out += line;
  const size_t shards = loaded.weights.shards().size();
  out += loaded.weights.indexPath().empty() ? "\n" : " in " + std::to_string(shards) + " shards\n";
  return out;
}

} // namespace rp::runtime
