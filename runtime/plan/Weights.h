//===- Weights.h - Checks a weights file against a plan ---------*- C++ -*-===//
//
// The initial weights of a plan are a safetensors file (Plan.weights_file) holding one
// tensor per param, keyed by the param's name, in the type the plan records (f32 for
// floating-point params, the param's own dtype otherwise: the host converts floating-point
// weights to the compute dtype when it loads them). validateWeights runs after validatePlan
// and before any weight is copied.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_WEIGHTS_H
#define RP_RUNTIME_PLAN_WEIGHTS_H

#include "runtime/core/Status.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan.pb.h"

namespace rp::runtime {

/// Checks that every param of `plan` with a stored value (init PARAM_INIT_STORED) is a tensor
/// of `weights` with the param's dtype and exact shape. A param without a stored value (LoRA
/// adapters: zeros, kaiming_uniform) may be absent; when present (a checkpoint) it is checked
/// the same way. Extra tensors in the file are ignored. `plan` has passed validatePlan.
/// Errors: NotFound "weights file <path>: has no tensor 'lm_head'"; InvalidArgument
/// "weights file <path>: tensor 'layers.0.q' has shape [32, 16], the plan expects [32, 32]"
/// (or "has dtype F16, the plan expects F32").
Status validateWeights(const rp::plan::Plan &plan, const SafetensorsFile &weights);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_WEIGHTS_H
