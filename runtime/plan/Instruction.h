//===- Instruction.h - Typed reads of a plan instruction --------*- C++ -*-===//
//
// How the runtime reads one plan instruction (runtime/plan/plan.proto `Instruction`) and its
// tensor types: the shapes as kernels::Shape, the dtypes, the byte and element counts, the
// attributes by kind with a default, and instructionFlops, the one mapping of an instruction
// onto the FLOP rules of kernels/FlopRules.h. The plan report (PlanReport.h), the paper FLOPs
// (PaperFlops.h), the simulator's roofline (runtime/sim/Roofline.h), the instruction decoder
// of the backends (runtime/exec/InstructionDecoder.h) and the kernel profile's names
// (runtime/exec/InstructionProfile.h) all read instructions through these functions, so an
// attribute means one thing everywhere.
//
// The readers check nothing and never fail: an absent attribute, or one holding another kind,
// reads as the default. Checking is the plan validator's and the decoder's
// (InstructionRules.h, with their own messages); after validation every required attribute is
// present with the registry's kind (kernels/Registry.h), so these reads are exact.
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_INSTRUCTION_H
#define RP_RUNTIME_PLAN_INSTRUCTION_H

#include "base/DType.h"
#include "kernels/FlopRules.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rp::runtime {

//===--- tensor types -------------------------------------------------------===//

/// The dims of `type`, outermost first.
kernels::Shape shapeOf(const rp::plan::TensorType &type);

/// The runtime dtype of `type`; nullopt for a dtype this build does not know.
std::optional<DType> dtypeOf(const rp::plan::TensorType &type);

/// The elements of `type`, the product of its dims as a double (exact up to 2^53; a validated
/// type has at most 2^48). 1 for a scalar.
double elementCount(const rp::plan::TensorType &type);

/// The bytes of `type`: elements x element size, saturating at INT64_MAX (a validated type
/// has at most 2^48 bytes); 0 for an unknown dtype.
int64_t byteCount(const rp::plan::TensorType &type);

/// "f32[4,64,128]" ("?[..]" for an unknown dtype): the compact form of the report and the
/// kernel profile (the validator's messages use formatTensorType, PlanValidator.h).
std::string typeText(const rp::plan::TensorType &type);

//===--- operands and results -------------------------------------------------===//

/// The shapes of `ins`'s operands, in order.
std::vector<kernels::Shape> operandShapes(const rp::plan::Instruction &ins);

/// The shapes of `ins`'s results, in order.
std::vector<kernels::Shape> resultShapes(const rp::plan::Instruction &ins);

//===--- attributes -----------------------------------------------------------===//

/// Attribute `name` of `ins`, or null when absent.
const rp::plan::Attribute *findAttr(const rp::plan::Instruction &ins, std::string_view name);

/// A bool attribute (a UnitAttr such as attention's `causal` or matmul's `transpose_a`):
/// false when absent or not a bool.
bool boolAttr(const rp::plan::Instruction &ins, std::string_view name);

/// An int attribute (attention's `window`, gather's `axis`): `fallback` when absent or not an
/// int.
int64_t intAttr(const rp::plan::Instruction &ins, std::string_view name, int64_t fallback = 0);

/// A float attribute (attention's `scale`): `fallback` when absent or not a float.
double floatAttr(const rp::plan::Instruction &ins, std::string_view name, double fallback = 0);

/// A string attribute (an enum keyword: cross_entropy's `reduction`): `fallback` when absent
/// or not a string.
std::string stringAttr(const rp::plan::Instruction &ins, std::string_view name,
                       std::string_view fallback = {});

/// An ints attribute (slice's `axes`): empty when absent or not ints.
std::vector<int64_t> intsAttr(const rp::plan::Instruction &ins, std::string_view name);

//===--- FLOPs ----------------------------------------------------------------===//

/// One kernel call as the FLOP rules take it (the arguments of kernels::kernelFlops).
struct FlopQuery {
  std::string kernel;                     ///< The kernel id.
  std::vector<kernels::Shape> operands;   ///< Operand shapes, in order.
  std::vector<kernels::Shape> results;    ///< Result shapes, in order.
  bool causal = false;     ///< attention(_vjp): `causal` (only the unmasked pairs count).
  bool transposeA = false; ///< matmul: `transpose_a` (K is A's second-to-last dim).
  int64_t window = 0;      ///< attention(_vjp): the sliding `window` (0: none).

  /// kernels::kernelFlops of this call (0 for a kernel without a FLOP rule).
  double flops() const;
};

/// The FLOP query of `ins`: its kernel id, shapes, `causal`, `transpose_a` and `window`.
/// Callers that count another call from the same instruction (the model FLOPs' non-causal
/// attention, the paper FLOPs' adjoints) change fields of it before flops().
FlopQuery flopQuery(const rp::plan::Instruction &ins);

/// The FLOPs one execution of `ins` performs: kernels::kernelFlops (kernels/FlopRules.h) of
/// its kernel id, operand and result shapes and attributes; an exact integer up to 2^53.
/// The one rule: the plan report, the paper FLOPs and the simulator's roofline all count an
/// instruction with this.
double instructionFlops(const rp::plan::Instruction &ins);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_INSTRUCTION_H
