//===- PlanValidator.h - Checks a plan before the runtime uses it -*- C++ -*-===//
//
// A plan comes from a file: the runtime trusts none of its numbers. validatePlan checks every
// index, size and offset of a plan (runtime/plan/plan.proto) against the repeated fields and
// arenas they refer to, every instruction against the kernel registry (kernels/Registry.h),
// and the RoundPipe invariants the compiler's schedule verifier checks (stage order and layer
// coverage, uploads after the downloads they read), so that the executor can index and offset
// without checks of its own. rp-run runs it right after readPlanFile.
//
// Checks, by family (each message names the item: stage, function + instruction index +
// kernel id, buffer, param, and the offending numbers):
//  - config: micro_batches >= 1, gpus >= 1, compute dtype f32/f16/bf16, dispatch
//    "round_robin", AdamW lr > 0, betas in [0, 1), eps > 0, weight_decay and grad_clip >= 0;
//  - arenas: every size >= 0 and a multiple of 256; host activations == micro_batches * record;
//  - tensor types: a known dtype, dims >= 0 (0-D: no dims), at most 2^48 bytes;
//  - params: layer in range, listed by exactly that layer, a name shared only by entries of
//    the same type, init and trainability in ascending layers (one entry per layer that reads
//    it; for a trainable param every later entry is a copy naming the first as `primary`,
//    sharing its state_offset, with its own grad_offset), f32 when floating-point, weights
//    (compute dtype when floating-point) within host weights, fp32 state within one host state
//    region and an fp32 gradient slot within host grads when trainable (-1 and no primary when
//    frozen), a floating-point type for a param without a stored value;
//  - layers: function and param indices in range;
//  - functions: workspace within the device workspace; every instruction's kernel id, operand
//    and result counts and attributes as the registry says; every buffer reference in range
//    (ARG/RESULT: the function's args/results; PARAM, CONSTANT: the plan's) and within its
//    buffer (WORKSPACE: the function's workspace_bytes);
//  - constants: within the device constants region, data size == the type's bytes;
//  - host buffers: within one micro-batch record; INPUT buffers name their model input;
//  - stages: forward* (ascending contiguously from layer 0), exactly one fused_tail (ending at
//    the number of layers), backward* (descending contiguously to layer 0); weights + grads
//    fit the device slot; the weight range lies in host weights and holds the weights of the
//    stage's params; (backward kinds) the gradient range lies in host grads and holds the
//    trainable params' gradient slots; activations and workspace fit the device arena;
//  - stage bodies: every upload/download/call/accumulate value lies in the device activation
//    set; calls pass as many offsets as the function has args and results; exactly one
//    prefetch_next, after at least one upload; an upload of a non-INPUT buffer names an earlier
//    stage (after_stage) whose body downloads the buffer, an INPUT upload names none (-1);
//    accumulate only in backward kinds, for a trainable param of a layer of the stage (the
//    value: the param's shape in the compute dtype, added into fp32 accumulators);
//  - optimizer steps: layer and stage indices in range; only layers owning a trainable param
//    (not only copies) have one, each exactly one; the grads stage is a backward kind covering
//    the layer and accumulates each owned param once; the upload stages are exactly the stages
//    holding the layer or a copy of a shared param it owns; the shared grads stages are
//    backward kinds and, with the grads stage, accumulate each copy exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PLANVALIDATOR_H
#define RP_RUNTIME_PLAN_PLANVALIDATOR_H

#include "base/DType.h"
#include "base/Status.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rp::runtime {

/// The largest tensor, buffer or region a plan may describe, in bytes (2^48).
constexpr int64_t kMaxPlanBytes = int64_t(1) << 48;
/// Every arena size is a multiple of this many bytes.
constexpr int64_t kPlanArenaAlignment = 256;

/// Checks `plan` as the file comment says. Returns the first problem found.
/// Errors: InvalidArgument "invalid plan: <item>: <what is wrong, with the numbers>".
Status validatePlan(const rp::plan::Plan &plan);

/// The runtime dtype of a plan dtype (F32, F16, BF16, I64, I32, I1); nullopt for
/// DTYPE_UNSPECIFIED and values this build does not know.
std::optional<DType> fromPlanDType(int dtype);

/// "forward", "fused_tail", "backward" (the schedule dialect's keywords); "unknown kind"
/// for another value.
const char *stageKindName(int kind);

/// "[2, 8] f32" (an unknown dtype prints as "dtype(<n>)").
std::string formatTensorType(const rp::plan::TensorType &type);

/// The number of elements of a valid type (see tensorTypeBytes).
/// Errors: InvalidArgument "<what>: ..." for a negative dim or more than 2^48 elements.
StatusOr<int64_t> tensorTypeElements(const rp::plan::TensorType &type, const std::string &what);

/// The bytes of `type`: elements * element size, at most 2^48.
/// Errors: InvalidArgument "<what>: ..." for an unknown dtype, a negative dim, an overflow.
StatusOr<int64_t> tensorTypeBytes(const rp::plan::TensorType &type, const std::string &what);

/// True for F32, F16 and BF16 (the floating-point plan dtypes).
bool isPlanFloat(int dtype);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANVALIDATOR_H
