//===- InstructionProfile.cpp - Plan instructions as a profile names them ===//

#include "runtime/exec/InstructionProfile.h"

#include "base/DType.h"
#include "runtime/plan/PlanValidator.h"

namespace rp::runtime {
namespace {

std::string typeText(const rp::plan::TensorType &type) {
  std::optional<DType> dtype = fromPlanDType(type.dtype());
  std::string out = dtype ? dtypeName(*dtype) : "?";
  out += "[";
  for (int i = 0; i < type.shape_size(); ++i)
    out += (i ? "," : "") + std::to_string(type.shape(i));
  return out + "]";
}

} // namespace

std::string instructionSignature(const rp::plan::Instruction &instruction) {
  std::string out;
  for (int i = 0; i < instruction.operands_size(); ++i)
    out += (i ? ", " : "") + typeText(instruction.operands(i).type());
  out += " ->";
  for (int i = 0; i < instruction.results_size(); ++i)
    out += (i ? ", " : " ") + typeText(instruction.results(i).type());
  for (const char *flag : {"transpose_a", "transpose_b"}) {
    auto it = instruction.attrs().find(flag);
    if (it != instruction.attrs().end() && it->second.b())
      out += std::string(" ") + flag;
  }
  return out;
}

std::vector<std::vector<ProfiledInstruction>> profiledInstructions(const rp::plan::Plan &plan) {
  std::vector<std::vector<ProfiledInstruction>> out(static_cast<size_t>(plan.functions_size()));
  for (int f = 0; f < plan.functions_size(); ++f) {
    const rp::plan::Function &fn = plan.functions(f);
    for (int i = 0; i < fn.body_size(); ++i)
      out[static_cast<size_t>(f)].push_back(ProfiledInstruction{
          fn.name(), i, fn.body(i).kernel(), fn.body(i).location(),
          instructionSignature(fn.body(i))});
  }
  return out;
}

} // namespace rp::runtime
