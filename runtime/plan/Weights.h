//===- Weights.h - Checks initial weights against a plan --------*- C++ -*-===//
//
// The initial weights of a plan are a safetensors file (Plan.weights_file) holding one
// tensor per param, keyed by the param's name, in the type the plan records (f32 for
// floating-point params, the param's own dtype otherwise: the host converts floating-point
// weights to the compute dtype when it loads them). rp-run --weights also takes a Hugging
// Face checkpoint (runtime/io/WeightSource.h: one file or shards): a param matches the tensor
// of the same name, no other (the exporters keep the state-dict names; see
// docs/DECISIONS.md), and a floating-point param also loads from F16 or BF16 (converted to
// f32 exactly). validateWeights runs after validatePlan and before any weight is copied.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_WEIGHTS_H
#define RP_RUNTIME_PLAN_WEIGHTS_H

#include "base/Status.h"
#include "runtime/io/Safetensors.h"
#include "runtime/io/WeightSource.h"
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

/// Checks `weights` (one file or a sharded checkpoint) against `plan` like the function above,
/// with two differences: a floating-point param (f32 in the plan) may be stored as F32, F16 or
/// BF16; and a tensor that no param of the plan names is an error unless `allowExtraTensors`.
/// Errors (each naming the file and the tensor): NotFound "weights index <path>: has no tensor
/// 'lm_head.weight' ..." (or "weights file <path>"; with a hint when the param's name is one an
/// ONNX exporter made up, "onnx::MatMul_12" or "val_7"); InvalidArgument for a wrong shape, an
/// unsupported dtype ("tensor 'w' has dtype F64, which rp-run does not load: ...") and extra
/// tensors ("3 tensors are no param of the plan: 'a', 'b', 'c' (...)", the first five named).
Status validateWeights(const rp::plan::Plan &plan, const WeightSource &weights,
                       bool allowExtraTensors);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_WEIGHTS_H
