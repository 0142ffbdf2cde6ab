//===- Weights.cpp - Checks initial weights against a plan ----------------===//

#include "runtime/plan/Weights.h"

#include "base/HostTensor.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanValidator.h"

#include <optional>
#include <unordered_set>
#include <vector>

namespace rp::runtime {

namespace {

/// A tensor found for a param: its header and the file that holds it.
struct FoundTensor {
  SafetensorsDType dtype;
  const std::vector<int64_t> &shape;
  const std::string &file;
};

/// True for names the ONNX exporters make up for a tensor they created (TorchScript's
/// "onnx::MatMul_123" for a folded transpose, the dynamo optimizer's "val_107"): no checkpoint
/// holds them.
bool isExporterName(const std::string &name) {
  if (name.rfind("onnx::", 0) == 0)
    return true;
  if (name.rfind("val_", 0) != 0 || name.size() == 4)
    return false;
  return name.find_first_not_of("0123456789", 4) == std::string::npos;
}

/// The check both entry points share: every stored param is found by `lookup` (name ->
/// optional<FoundTensor>) with its shape, and its dtype (`convertFloats`: a floating-point
/// param also takes F16 and BF16); `where` names the source in a missing-tensor message.
template <typename Lookup>
Status checkParams(const rp::plan::Plan &plan, const std::string &where, bool convertFloats,
                   Lookup lookup) {
  for (const rp::plan::Param &p : plan.params()) {
    std::optional<FoundTensor> t = lookup(p.name());
    if (!t) {
      if (p.init() != rp::plan::PARAM_INIT_STORED)
        continue; // starts without a stored value
      std::string hint;
      if (isExporterName(p.name()))
        hint = "; the ONNX exporter named this param, no checkpoint holds it: export with "
               "the parameters' names kept (TorchScript: do_constant_folding=False; dynamo: "
               "optimize=False)";
      return notFound(where + ": has no tensor '" + p.name() + "' (param of layer " +
                      std::to_string(p.layer()) + ", " + formatTensorType(p.type()) + ")" + hint);
    }
    const std::string file = "weights file " + t->file;
    std::optional<DType> dtype = dtypeOf(p.type());
    if (!dtype)
      return invalidArgument(file + ": param '" + p.name() + "' has an unknown dtype " +
                             std::to_string(p.type().dtype()) + " (run validatePlan first)");
    SafetensorsDType expected = fromRuntimeDType(*dtype);
    const bool converts = convertFloats && expected == SafetensorsDType::F32;
    if (converts && !isFloat32Convertible(t->dtype))
      return invalidArgument(file + ": tensor '" + p.name() + "' has dtype " +
                             safetensorsDTypeName(t->dtype) +
                             ", which rp-run does not load: a floating-point param loads from "
                             "F32, F16 or BF16 (converted to the plan's F32 exactly)");
    if (!converts && t->dtype != expected)
      return invalidArgument(file + ": tensor '" + p.name() + "' has dtype " +
                             safetensorsDTypeName(t->dtype) + ", the plan expects " +
                             safetensorsDTypeName(expected));
    const std::vector<int64_t> shape = shapeOf(p.type());
    if (t->shape != shape)
      return invalidArgument(file + ": tensor '" + p.name() + "' has shape " +
                             formatShape(t->shape) + ", the plan expects " + formatShape(shape));
  }
  return okStatus();
}

} // namespace

Status validateWeights(const rp::plan::Plan &plan, const SafetensorsFile &weights) {
  return checkParams(plan, "weights file " + weights.path(), /*convertFloats=*/false,
                     [&](const std::string &name) -> std::optional<FoundTensor> {
                       const SafetensorsTensorView *t = weights.find(name);
                       if (!t)
                         return std::nullopt;
                       return FoundTensor{t->dtype, t->shape, weights.path()};
                     });
}

Status validateWeights(const rp::plan::Plan &plan, const WeightSource &weights,
                       bool allowExtraTensors) {
  RP_RETURN_IF_ERROR(
      checkParams(plan, weights.describe(), /*convertFloats=*/true,
                  [&](const std::string &name) -> std::optional<FoundTensor> {
                    const WeightEntry *t = weights.find(name);
                    if (!t)
                      return std::nullopt;
                    return FoundTensor{t->dtype, t->shape, weights.shards()[t->shard]};
                  }));
  if (allowExtraTensors)
    return okStatus();
  std::unordered_set<std::string> params;
  for (const rp::plan::Param &p : plan.params())
    params.insert(p.name());
  std::vector<const WeightEntry *> extra;
  for (const WeightEntry &t : weights.tensors())
    if (!params.count(t.name))
      extra.push_back(&t);
  if (extra.empty())
    return okStatus();
  constexpr size_t kListed = 5;
  std::string names;
  for (size_t i = 0; i < extra.size() && i < kListed; ++i)
    names += (i ? ", '" : "'") + extra[i]->name + "'";
  if (extra.size() > kListed)
    names += " and " + std::to_string(extra.size() - kListed) + " more";
  return invalidArgument(weights.describe() + ": " + std::to_string(extra.size()) +
                         (extra.size() == 1 ? " tensor is" : " tensors are") +
                         " no param of the plan: " + names +
                         " (a checkpoint of another model, or of a wider export? "
                         "--allow-extra-weights ignores them)");
}

} // namespace rp::runtime
