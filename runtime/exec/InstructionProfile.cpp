//===- InstructionProfile.cpp - Plan instructions as a profile names them ===//

#include "runtime/exec/InstructionProfile.h"

#include "runtime/plan/Instruction.h"

namespace rp::runtime {

std::string instructionSignature(const rp::plan::Instruction &instruction) {
  std::string out;
  for (int i = 0; i < instruction.operands_size(); ++i)
    out += (i ? ", " : "") + typeText(instruction.operands(i).type());
  out += " ->";
  for (int i = 0; i < instruction.results_size(); ++i)
    out += (i ? ", " : " ") + typeText(instruction.results(i).type());
  for (const char *flag : {"transpose_a", "transpose_b"})
    if (boolAttr(instruction, flag))
      out += std::string(" ") + flag;
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
