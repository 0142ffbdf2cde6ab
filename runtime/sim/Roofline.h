//===- Roofline.h - The simulator's cost of a plan instruction --*- C++ -*-===//
//
// Without a layer profile, the simulator backend (SimBackend.h) charges each call of a plan
// function the roofline time of its instructions on the target GPU: per instruction
//
//   ms = max(flops / (peak_tflops x efficiency x 1e9), bytes / (hbm_gbps x 1e6))
//
// flops = instructionFlops (runtime/plan/Instruction.h: the FLOP rules of kernels/FlopRules.h,
// the same count as the plan report's), bytes = the operand and result bytes (a reshape is a
// view: 0 bytes, 0 ms). The FLOPs are the rule's; no rule of its own lives here.
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_ROOFLINE_H
#define RP_RUNTIME_SIM_ROOFLINE_H

#include "runtime/partition/Profile.h"
#include "runtime/plan/plan.pb.h"

#include <vector>

namespace rp::runtime {

/// The roofline cost of one execution of a plan instruction.
struct InstructionCost {
  double flops = 0; ///< instructionFlops of the instruction.
  double bytes = 0; ///< Operand + result bytes (0 for a reshape).
  double ms = 0;    ///< The larger of the compute time and the memory time.
};

/// The roofline cost of one call of a plan function: its instructions' costs, summed.
struct FunctionCost {
  double ms = 0;    ///< Sum over the instructions, in body order.
  double flops = 0; ///< Sum over the instructions, in body order.
  std::vector<double> instructionFlops; ///< Per instruction of the body, in order.
};

/// The cost of `ins` on `target` at `efficiency` (the fraction of peak_tflops reached).
/// Requires the target's peak_tflops and hbm_gbps > 0 (validateSimConfig, SimBackend.h).
InstructionCost instructionCost(const rp::plan::Instruction &ins,
                                const rp::partition::TargetSpec &target, double efficiency);

/// The cost of one call of `function`: instructionCost of each of its instructions.
FunctionCost functionCost(const rp::plan::Function &function,
                          const rp::partition::TargetSpec &target, double efficiency);

/// functionCost(function, target, efficiency).ms: the roofline time of one call, ms.
double rooflineMs(const rp::plan::Function &function, const rp::partition::TargetSpec &target,
                  double efficiency);

} // namespace rp::runtime

#endif // RP_RUNTIME_SIM_ROOFLINE_H
