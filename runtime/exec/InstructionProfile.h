//===- InstructionProfile.h - Plan instructions as a profile names them -*- C++ -*-===//
//
// The backends that time instructions for `rp-run --profile-kernels` (runtime/trace/
// KernelProfile.h) name each one by its function, index, kernel id, location and types. They
// build these names once, when a profile is attached, so the timed loop formats nothing.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_EXEC_INSTRUCTIONPROFILE_H
#define RP_RUNTIME_EXEC_INSTRUCTIONPROFILE_H

#include "runtime/plan/plan.pb.h"
#include "runtime/trace/KernelProfile.h"

#include <string>
#include <vector>

namespace rp::runtime {

/// "bf16[4096,2048], bf16[6144,2048] -> bf16[4096,6144]" (operands -> results), with the
/// matmul transpose flags that are set (" transpose_b").
std::string instructionSignature(const rp::plan::Instruction &instruction);

/// [function][instruction] of `plan`, named for a KernelProfile.
std::vector<std::vector<ProfiledInstruction>> profiledInstructions(const rp::plan::Plan &plan);

} // namespace rp::runtime

#endif // RP_RUNTIME_EXEC_INSTRUCTIONPROFILE_H
