//===- CpuKernelTable.h - Kernel ids onto the CPU reference kernels -*- C++ -*-===//
//
// The CPU backend's one table from kernel id (kernels/Registry.h) to its implementation: a
// builder that reads the instruction's attributes from a checked Decoder
// (runtime/exec/InstructionDecoder.h) and returns the bound call of a CPU reference kernel
// (kernels/cpu). The registry gives each id its counts, attributes and dtype rule; an entry
// here adds only the call. The calls follow dialects/Graph/Eval/Evaluator.cpp (evaluateOp).
//
// Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CPU_CPUKERNELTABLE_H
#define RP_RUNTIME_BACKENDS_CPU_CPUKERNELTABLE_H

#include "runtime/backends/cpu/KernelDispatch.h"
#include "runtime/exec/InstructionDecoder.h"

#include <functional>
#include <string_view>

namespace rp::runtime {

/// Builds the call of one instruction from its checked Decoder. Errors: InvalidArgument
/// (through Decoder::fail) for an attribute value the kernel does not take (an unknown
/// keyword, slice bounds of different lengths, split sizes other than the results').
using CpuBuilder = std::function<StatusOr<CpuKernel::Body>(const decode::Decoder &)>;

/// The CPU builder of kernel id `id`, or null when the CPU backend does not implement it.
const CpuBuilder *findCpuBuilder(std::string_view id);

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CPU_CPUKERNELTABLE_H
