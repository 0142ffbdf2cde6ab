//===- CudaKernel.cpp - Plan instructions onto the CUDA kernels -----------===//
//
// Decoding: the registry entry, the shared checks (runtime/exec/InstructionDecoder.h: counts,
// types, attributes, the registry's dtype rule; f32, f16 and bf16 floats), then the id's
// builder (CudaKernelTable.h), whose planner messages get the instruction's location.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernel.h"

#include "kernels/Registry.h"
#include "runtime/backends/cuda/CudaKernelTable.h"

#include <algorithm>
#include <utility>

namespace rp::runtime {
namespace {

namespace pb = ::rp::plan;

constexpr FloatPolicy kCudaFloats{true, "", "f32, f16 or bf16"};

} // namespace

std::string cudaErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

namespace {

/// What to try after `error`, for the message ("" when there is nothing to add).
const char *cudaHint(cudaError_t error) {
  switch (error) {
  case cudaErrorMemoryAllocation:
    return " (out of GPU memory: run fewer logical workers per GPU, or compile the plan for "
           "more memory headroom: a smaller --micro-batches batch, --recompute layer)";
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorMisalignedAddress:
  case cudaErrorIllegalInstruction:
  case cudaErrorAssert:
  case cudaErrorHardwareStackError:
    return " (a kernel fault, which ends the GPU context and may be reported by a later "
           "call than the faulting kernel's: rerun with CUDA_LAUNCH_BLOCKING=1, or under "
           "compute-sanitizer, to find the kernel)";
  case cudaErrorLaunchTimeout:
    return " (the display watchdog killed a long kernel: use a GPU without a display)";
  default:
    return "";
  }
}

} // namespace

Status cudaStatus(cudaError_t error, const std::string &what) {
  if (error == cudaSuccess)
    return okStatus();
  const Status status = internal(what + ": " + cudaErrorText(error) + cudaHint(error));
  return error == cudaErrorMemoryAllocation ? resourceExhausted(status.message()) : status;
}

StatusOr<CudaKernel> CudaKernel::decode(const pb::Instruction &instruction) {
  CudaKernel k;
  k.id_ = instruction.kernel();
  k.location_ = instruction.location();
  k.where_ = decode::instructionWhere(instruction);
  RP_ASSIGN_OR_RETURN(const kernels::KernelInfo *info, decode::registryEntry(instruction, k.where_));
  const CudaBuilder *build = findCudaBuilder(k.id_);
  if (!build)
    return invalidArgument(k.where_ + ": the CUDA backend has no implementation of this kernel");
  decode::Decoder d(instruction, *info, k.where_, kCudaFloats);
  RP_RETURN_IF_ERROR(decode::checkInstruction(d));
  StatusOr<CudaBuilt> built = (*build)(d);
  if (!built.ok()) {
    const std::string &m = built.status().message();
    // Planner messages name the op but not the instruction: add the location.
    if (m.rfind(k.where_, 0) == 0)
      return built.status();
    return Status(built.status().code(), k.where_ + ": " + m);
  }
  k.body_ = std::move(built.value().body);
  k.hostBody_ = std::move(built.value().hostBody);
  k.scratchBytes_ = built.value().scratchBytes;
  k.variant_ = std::move(built.value().variant);
  k.prepare_ = std::move(built.value().prepare);
  k.operandTypes_ = std::move(d.operands());
  k.resultTypes_ = std::move(d.results());
  return k;
}

Status CudaKernel::checkCounts(size_t operands, size_t results) const {
  return decode::checkCallCounts(where_, operands, results, operandTypes_.size(),
                                 resultTypes_.size());
}

Status CudaKernel::launch(const std::vector<const void *> &operands,
                          const std::vector<void *> &results, const CudaContext &ctx) const {
  RP_RETURN_IF_ERROR(checkCounts(operands.size(), results.size()));
  if (scratchBytes_ > 0 && !ctx.scratch)
    return internal(where_ + ": " + id_ + " needs device scratch; none was allocated");
  Status status = body_(operands, results, ctx);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

Status CudaKernel::runOnHost(const std::vector<const void *> &operands,
                             const std::vector<void *> &results, void *scratch) const {
  RP_RETURN_IF_ERROR(checkCounts(operands.size(), results.size()));
  Status status = hostBody_(operands, results, scratch);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

StatusOr<std::vector<CudaInstr>> decodeCudaFunction(const pb::Function &function) {
  return decode::decodeEach<CudaInstr>(
      function, [](const pb::Instruction &ins) -> StatusOr<CudaInstr> {
        RP_ASSIGN_OR_RETURN(CudaKernel kernel, CudaKernel::decode(ins));
        return CudaInstr{std::move(kernel),
                         {ins.operands().begin(), ins.operands().end()},
                         {ins.results().begin(), ins.results().end()}};
      });
}

StatusOr<CudaPlanKernels> decodeCudaPlan(const pb::Plan &plan) {
  CudaPlanKernels kernels;
  for (const pb::Function &f : plan.functions()) {
    RP_ASSIGN_OR_RETURN(std::vector<CudaInstr> body, decodeCudaFunction(f));
    for (const CudaInstr &i : body)
      kernels.scratchBytes = std::max(kernels.scratchBytes, i.kernel.scratchBytes());
    kernels.functions.push_back(std::move(body));
  }
  return kernels;
}

} // namespace rp::runtime
