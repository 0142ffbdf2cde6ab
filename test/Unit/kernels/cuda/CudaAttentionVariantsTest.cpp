//===- CudaAttentionVariantsTest.cpp - attention variants on the GPU ------===//
//
// launchAttention and launchAttentionVjp with a logit soft-cap (Gemma-2) and with a value head
// size other than the query's (multi-head latent attention; the row kernels) on the device
// against
// the CPU kernels on random inputs (CudaAttentionTestUtil.h); outputs poisoned (0xA5 bytes, a
// NaN in every float format), a second launch must give the same bits. Skips without a CUDA
// device.
//  - Row kernels (plan.tensorCores cleared), every dtype: the host-replay tolerances of
//    CudaAttentionVariantsHostTest (f32 out rtol 1e-5 + atol 1e-6, dq/dk/dv atol 5e-6; f64
//    1e-12; f16/bf16 2 ulps of the format at max(|reference|, 2^-6)).
//  - Tensor-core kernels (FlashAttention.h, FlashAttentionBackward.h; f16/bf16, D = 64 and
//    128), which apply the cap to their fp32 scores: against the f64 CPU reference within the
//    bound of CudaFlashAttentionTest, |got - want| <= e (max |want| + |want|) + 1e-5, e = 2^-6
//    (bf16), 2^-9 (f16).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/Fused.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaAttentionTestUtil.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace rp::kernels::cuda::test {
namespace {

class CudaAttentionVariants : public CudaStreamTest {};

struct Case {
  Shape q, k;
  AttentionCase options;
};

std::string caseLabel(DType dtype, const Case &c) {
  return label(dtype, c.q) + " k " + formatShape(c.k) + (c.options.causal ? " causal" : "") +
         " softcap " + std::to_string(c.options.softcap) + (c.options.sinks ? " sinks" : "") +
         " Dv " + std::to_string(c.options.valueDim);
}

// Soft-caps and value head sizes other than the query's.
TEST_F(CudaAttentionVariants, RowKernelsMatchCpu) {
  std::mt19937 rng(83);
  const Case cases[] = {{{2, 4, 7, 5}, {2, 2, 7, 5}, {true, false, -3, 3, 1.5}},
                        {{2, 2, 300, 16}, {2, 1, 300, 16}, {true, false, -3, 3, 0.5}},
                        {{1, 2, 129, 16}, {1, 2, 129, 16}, {false, true, -3, 3, 1.5}},
                        {{2, 4, 130, 24}, {2, 2, 130, 24}, {true, false, -3, 3, 0, 16}},
                        {{1, 2, 70, 8}, {1, 1, 70, 8}, {false, true, -3, 3, 1.5, 20}}};
  for (DType dtype : kGpuFloatTypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(caseLabel(dtype, c));
      const SinkInputs in = randomAttentionInputs(dtype, c.q, c.k, c.options, rng);
      ASSERT_OK(in.cpuStatus);
      const DeviceResults r = runOnDevice(in, false, stream_);
      expectMatchesCpu(in, r.out, r.grads);
    }
}

TEST_F(CudaAttentionVariants, SoftcapTensorCoreKernelsMatchCpu) {
  std::mt19937 rng(89);
  const Case cases[] = {{{1, 4, 130, 64}, {1, 2, 130, 64}, {true, false, -3, 3, 1.5}},
                        {{2, 2, 64, 128}, {2, 1, 64, 128}, {false, false, -3, 3, 0.5}},
                        {{1, 2, 70, 64}, {1, 2, 70, 64}, {true, true, -3, 3, 1.5}}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : cases) {
      SCOPED_TRACE(caseLabel(dtype, c));
      const SinkInputs in = randomAttentionInputs(dtype, c.q, c.k, c.options, rng);
      ASSERT_OK(in.cpuStatus);
      expectFlashMatchesCpu(in, runOnDevice(in, true, stream_));
    }
}

} // namespace
} // namespace rp::kernels::cuda::test
