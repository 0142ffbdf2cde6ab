//===- CudaHostKernels.cpp - The CUDA backend's kernels, run on the host --===//

#include "runtime/backends/cuda/CudaHostKernels.h"

#include "kernels/cuda/HostReplay.h"
#include "runtime/backends/cuda/CudaKernel.h"

namespace rp::runtime {
namespace {

namespace pb = rp::plan;

class CudaHostKernels final : public HostKernelSet {
public:
  std::string name() const override { return "cuda-host"; }

  Status prepare(const pb::Plan &plan) override {
    kernels_ = CudaPlanKernels();
    RP_ASSIGN_OR_RETURN(kernels_, decodeCudaPlan(plan));
    return okStatus();
  }

  int64_t scratchBytes() const override { return kernels_.scratchBytes; }

  Status run(int function, const std::function<uint8_t *(const pb::BufferRef &)> &address,
             void *scratch) const override {
    return forEachInstruction(
        kernels_.functions[static_cast<size_t>(function)], address,
        [scratch](const CudaKernel &k, const std::vector<const void *> &in,
                  const std::vector<void *> &out) { return k.runOnHost(in, out, scratch); });
  }

  Status accumulate(float *acc, const void *gradient, int64_t elements, DType dtype,
                    bool first) const override {
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
      return invalidArgument(std::string("gradient accumulation of ") + dtypeName(dtype) +
                             "; the CUDA kernels accumulate f32, f16 or bf16");
    kernels::cuda::replay::accumulate(dtype, gradient, acc, elements, first);
    return okStatus();
  }

private:
  CudaPlanKernels kernels_;
};

} // namespace

std::unique_ptr<HostKernelSet> makeCudaHostKernels() { return std::make_unique<CudaHostKernels>(); }

} // namespace rp::runtime
