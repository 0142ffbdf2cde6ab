//===- KernelDispatch.h - Plan instructions onto the CPU reference kernels -*- C++ -*-===//
//
// The CPU backend runs a plan function (runtime/plan/plan.proto, `Function.body`) as a list
// of instructions, each naming a kernel of the registry (kernels/Registry.h) by its stable id,
// with attributes and typed buffer references. CpuKernel decodes one instruction once, when
// the plan is loaded: it resolves the id to a CPU reference kernel (kernels/cpu), parses and
// checks the attributes and the dtypes, and keeps a closure that calls the kernel with them,
// so that running an instruction in the training loop does no string or map work.
//
// The mapping from kernel id to kernel call (CpuKernelTable.h) is the one the reference
// interpreter uses for graph ops (dialects/Graph/Eval/Evaluator.cpp), with the attributes as
// the plan exporter (compiler/PlanExport.cpp) writes them: enum attributes are keywords ("lt",
// "tanh", "mean"), UnitAttrs optional bools (absent = false), graph.range's bounds Int or
// Float. `reshape` and `copy` copy bytes (cpu::copyInto).
//
// Dtypes: the CPU backend runs fp32 plans. Tensors are f32, i64, i32 or i1; an f16 or bf16
// operand or result is rejected when decoding ("the CPU backend runs fp32 plans; compile with
// --dtype fp32") rather than computed in the wrong precision.
//
//   RP_ASSIGN_OR_RETURN(std::vector<CpuKernel> body, decodeFunction(plan.functions(f)));
//   for (size_t k = 0; k < body.size(); ++k)
//     RP_RETURN_IF_ERROR(body[k].run(operandViews[k], resultViews[k]));
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CPU_KERNELDISPATCH_H
#define RP_RUNTIME_BACKENDS_CPU_KERNELDISPATCH_H

#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"
#include "runtime/exec/InstructionDecoder.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rp::plan {
class Instruction;
class Function;
} // namespace rp::plan

namespace rp::runtime {

/// A plan instruction decoded once: the kernel id resolved and its attributes parsed and
/// checked, so that running it does no string work. Copyable and movable.
class CpuKernel {
public:
  /// Decodes `instruction` against the kernel registry and the CPU kernels.
  /// Errors (InvalidArgument "kernel '<id>' at <location>: <what>"): an id that is not in the
  /// registry or has no CPU implementation; operand or result counts the registry does not
  /// accept; an unknown, missing or ill-typed attribute; an enum keyword the kernel does not
  /// know; an operand or result dtype the kernel does not take (f16/bf16 anywhere: "the CPU
  /// backend runs fp32 plans; compile with --dtype fp32"). Shapes are checked by the kernel
  /// when it runs.
  static StatusOr<CpuKernel> decode(const rp::plan::Instruction &instruction);

  /// Runs the kernel. `operands` and `results` are tensors (typically HostTensor::view()s
  /// into the backend's arena) of exactly the instruction's BufferRef types, in its order;
  /// results are written in place, never reallocated. Results must not overlap operands.
  /// Errors: InvalidArgument for wrong counts, a null pointer or a tensor whose dtype or shape
  /// differs from the instruction's; otherwise the kernel's own Status (its code kept), its
  /// message prefixed with "kernel '<id>' at <location>: ". Results are unspecified after an
  /// error.
  Status run(const std::vector<const HostTensor *> &operands,
             const std::vector<HostTensor *> &results) const;

  /// The kernel id ("matmul", "copy").
  const std::string &id() const { return id_; }
  /// The instruction's location (the graph op's source location; may be empty).
  const std::string &location() const { return location_; }

  /// A tensor type of the instruction: what run() expects of each operand and result.
  using TensorSig = runtime::TensorSig;
  const std::vector<TensorSig> &operandTypes() const { return operandTypes_; }
  const std::vector<TensorSig> &resultTypes() const { return resultTypes_; }

  /// The decoded kernel call, with its attributes bound.
  using Body = std::function<Status(const std::vector<const HostTensor *> &operands,
                                    const std::vector<HostTensor *> &results)>;

private:
  CpuKernel() = default;

  std::string id_;
  std::string location_;
  std::string where_; ///< "kernel '<id>' at <location>", the prefix of every message.
  std::vector<TensorSig> operandTypes_;
  std::vector<TensorSig> resultTypes_;
  Body body_;
};

/// Decodes every instruction of `function`, in order.
/// Errors: the first CpuKernel::decode error, prefixed with
/// "function '<name>' instruction <k>: " (k is the 0-based index in `body`).
StatusOr<std::vector<CpuKernel>> decodeFunction(const rp::plan::Function &function);

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CPU_KERNELDISPATCH_H
