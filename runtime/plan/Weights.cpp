//===- Weights.cpp - Checks a weights file against a plan -----------------===//

#include "runtime/plan/Weights.h"

#include "runtime/core/HostTensor.h"
#include "runtime/plan/PlanValidator.h"

#include <vector>

namespace rp::runtime {

Status validateWeights(const rp::plan::Plan &plan, const SafetensorsFile &weights) {
  const std::string where = "weights file " + weights.path();
  for (const rp::plan::Param &p : plan.params()) {
    const SafetensorsTensorView *t = weights.find(p.name());
    if (!t) {
      if (p.init() != rp::plan::PARAM_INIT_STORED)
        continue; // starts without a stored value
      return notFound(where + ": has no tensor '" + p.name() + "' (param of layer " +
                      std::to_string(p.layer()) + ", " + formatTensorType(p.type()) + ")");
    }
    std::optional<DType> dtype = fromPlanDType(p.type().dtype());
    if (!dtype)
      return invalidArgument(where + ": param '" + p.name() + "' has an unknown dtype " +
                             std::to_string(p.type().dtype()) + " (run validatePlan first)");
    SafetensorsDType expected = fromRuntimeDType(*dtype);
    if (t->dtype != expected)
      return invalidArgument(where + ": tensor '" + p.name() + "' has dtype " +
                             safetensorsDTypeName(t->dtype) + ", the plan expects " +
                             safetensorsDTypeName(expected));
    std::vector<int64_t> shape(p.type().shape().begin(), p.type().shape().end());
    if (t->shape != shape)
      return invalidArgument(where + ": tensor '" + p.name() + "' has shape " +
                             formatShape(t->shape) + ", the plan expects " + formatShape(shape));
  }
  return okStatus();
}

} // namespace rp::runtime
