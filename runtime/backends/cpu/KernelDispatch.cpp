//===- KernelDispatch.cpp - Plan instructions onto the CPU reference kernels ----===//
//
// Decoding: the registry entry, the shared checks (runtime/exec/InstructionDecoder.h: counts,
// types, attributes, the registry's dtype rule), then the id's builder (CpuKernelTable.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelDispatch.h"

#include "kernels/Registry.h"
#include "runtime/backends/cpu/CpuKernelTable.h"
#include "runtime/exec/InstructionDecoder.h"
#include "runtime/plan/plan.pb.h"

#include <utility>

namespace rp::runtime {
namespace {

namespace pb = ::rp::plan;
using ::rp::kernels::KernelInfo;
using TensorSig = CpuKernel::TensorSig;
using decode::typeText;

constexpr FloatPolicy kCpuFloats{false,
                                "the CPU backend runs fp32 plans; compile with --dtype fp32",
                                "f32 (the CPU backend runs fp32 plans)"};

bool sameType(const HostTensor &t, const TensorSig &sig) {
  return t.dtype() == sig.dtype && t.shape() == sig.shape;
}

} // namespace

StatusOr<CpuKernel> CpuKernel::decode(const pb::Instruction &instruction) {
  CpuKernel k;
  k.id_ = instruction.kernel();
  k.location_ = instruction.location();
  k.where_ = decode::instructionWhere(instruction);
  RP_ASSIGN_OR_RETURN(const KernelInfo *info, decode::registryEntry(instruction, k.where_));
  const CpuBuilder *build = findCpuBuilder(k.id_);
  if (!build)
    return invalidArgument(k.where_ + ": the CPU backend has no implementation of this kernel");
  decode::Decoder d(instruction, *info, k.where_, kCpuFloats);
  RP_RETURN_IF_ERROR(decode::checkInstruction(d));
  RP_ASSIGN_OR_RETURN(k.body_, (*build)(d));
  k.operandTypes_ = std::move(d.operands());
  k.resultTypes_ = std::move(d.results());
  return k;
}

Status CpuKernel::run(const std::vector<const HostTensor *> &operands,
                      const std::vector<HostTensor *> &results) const {
  RP_RETURN_IF_ERROR(decode::checkCallCounts(where_, operands.size(), results.size(),
                                             operandTypes_.size(), resultTypes_.size()));
  for (size_t j = 0; j < operands.size(); ++j)
    if (!operands[j] || !sameType(*operands[j], operandTypes_[j]))
      return invalidArgument(where_ + ": operand " + std::to_string(j) + " is " +
                             (operands[j] ? operands[j]->typeString() : std::string("null")) +
                             "; the instruction's buffer is " + typeText(operandTypes_[j]));
  for (size_t j = 0; j < results.size(); ++j)
    if (!results[j] || !sameType(*results[j], resultTypes_[j]))
      return invalidArgument(where_ + ": result " + std::to_string(j) + " is " +
                             (results[j] ? results[j]->typeString() : std::string("null")) +
                             "; the instruction's buffer is " + typeText(resultTypes_[j]));
  Status status = body_(operands, results);
  if (!status.ok())
    return Status(status.code(), where_ + ": " + status.message());
  return okStatus();
}

StatusOr<std::vector<CpuKernel>> decodeFunction(const pb::Function &function) {
  return decode::decodeEach<CpuKernel>(function, CpuKernel::decode);
}

} // namespace rp::runtime
