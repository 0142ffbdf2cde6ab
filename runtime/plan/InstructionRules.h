//===- InstructionRules.h - A plan instruction against the kernel registry -*- C++ -*-===//
//
// The registry rules of one plan instruction (runtime/plan/plan.proto `Instruction`) that the
// plan validator (PlanValidator.h, once per plan at load) and the instruction decoder of the
// backends (runtime/exec/InstructionDecoder.h, which also decodes a lone instruction) both
// apply: whether an attribute value has the kind the registry (kernels/Registry.h) gives it,
// and the first problem of an instruction's attributes. The two word an attribute's value
// differently ("holds int" in the validator, "holds an int" in the decoder): ValueWording
// says which.
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_INSTRUCTIONRULES_H
#define RP_RUNTIME_PLAN_INSTRUCTIONRULES_H

#include "kernels/Registry.h"
#include "runtime/plan/plan.pb.h"

#include <optional>
#include <string>

namespace rp::runtime {

/// How a message names what an attribute holds.
enum class ValueWording {
  Bare,    ///< "int", "float", "string", "ints", "bool" (the plan validator)
  Article, ///< "an int", "a float", "a string", "ints", "a bool" (the instruction decoder)
};

/// What a plan attribute holds, for messages; "no value" when nothing is set.
const char *attrValueName(rp::plan::Attribute::ValueCase value, ValueWording wording);

/// True when an attribute holding `value` has the registry kind `kind` (IntOrFloat: an int or
/// a float).
bool attrKindMatches(kernels::AttrKind kind, rp::plan::Attribute::ValueCase value);

/// The first problem of `ins`'s attributes against the registry entry `info`, or nullopt:
/// "missing required attribute '<name>' (<kind>)" (the registry's order), "attribute '<name>'
/// holds <value>, expected <kind>", "unknown attribute '<name>' (the kernel takes <names> |
/// none)" (the first unknown name in sorted order, whatever the map order).
std::optional<std::string> attributeProblem(const kernels::KernelInfo &info,
                                            const rp::plan::Instruction &ins, ValueWording wording);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_INSTRUCTIONRULES_H
