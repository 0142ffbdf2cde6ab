//===- Roofline.cpp - The simulator's cost of a plan instruction ----------===//

#include "runtime/sim/Roofline.h"

#include "runtime/plan/Instruction.h"

#include <algorithm>

namespace rp::runtime {

namespace pb = rp::plan;

InstructionCost instructionCost(const pb::Instruction &ins,
                                const rp::partition::TargetSpec &target, double efficiency) {
  InstructionCost cost;
  if (ins.kernel() == "reshape")
    return cost; // a view
  for (const pb::BufferRef &r : ins.operands())
    cost.bytes += static_cast<double>(byteCount(r.type()));
  for (const pb::BufferRef &r : ins.results())
    cost.bytes += static_cast<double>(byteCount(r.type()));
  cost.flops = instructionFlops(ins);
  const double computeMs = cost.flops / (target.peakTflops * efficiency * 1e9);
  const double memoryMs = cost.bytes / (target.hbmGbps * 1e6);
  cost.ms = std::max(computeMs, memoryMs);
  return cost;
}

FunctionCost functionCost(const pb::Function &function, const rp::partition::TargetSpec &target,
                          double efficiency) {
  FunctionCost cost;
  cost.instructionFlops.reserve(static_cast<size_t>(function.body_size()));
  for (const pb::Instruction &ins : function.body()) {
    const InstructionCost c = instructionCost(ins, target, efficiency);
    cost.ms += c.ms;
    cost.flops += c.flops;
    cost.instructionFlops.push_back(c.flops);
  }
  return cost;
}

double rooflineMs(const pb::Function &function, const rp::partition::TargetSpec &target,
                  double efficiency) {
  return functionCost(function, target, efficiency).ms;
}

} // namespace rp::runtime
