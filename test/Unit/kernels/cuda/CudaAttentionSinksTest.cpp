//===- CudaAttentionSinksTest.cpp - attention with sinks on the GPU -------===//
//
// launchAttention and launchAttentionVjp with attention sinks (GPT-OSS, [Hq]) on the device
// against the CPU kernels on random inputs (CudaAttentionTestUtil.h); outputs poisoned
// (0xA5 bytes, a NaN in every float format), a second launch must give the same bits. Skips
// without a CUDA device.
//  - Row kernels (plan.tensorCores cleared), every dtype: the host-replay tolerances of
//    CudaAttentionSinksHostTest (f32 out rtol 1e-5 + atol 1e-6, dq/dk/dv atol 5e-6, dsinks
//    atol 2e-5; f64 1e-12; f16/bf16 2 ulps of the format at max(|reference|, 2^-6)).
//  - Tensor-core kernels (FlashAttention.h, FlashAttentionBackward.h; f16/bf16, D = 64 and
//    128): P and dS are rounded to the storage type, so against the f64 CPU reference
//    |got - want| <= e (max |want| + |want|) + 1e-5, e = 2^-6 (bf16), 2^-9 (f16), the bound of
//    CudaFlashAttentionTest; dsinks (pass 3 from the flash pass 1's float L and D) within the
//    same bound.
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

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace rp::kernels::cuda::test {
namespace {

class CudaAttentionSinks : public CudaStreamTest {};

TEST_F(CudaAttentionSinks, RowKernelsMatchCpu) {
  std::mt19937 rng(67);
  const struct {
    Shape q, k;
    bool causal;
    double sinkLo, sinkHi;
  } cases[] = {{{2, 4, 7, 5}, {2, 2, 7, 5}, true, -3, 3},
               {{2, 2, 300, 16}, {2, 1, 300, 16}, true, -3, 3},
               {{1, 2, 129, 16}, {1, 2, 129, 16}, false, 5, 8},
               {{2, 2, 1, 8}, {2, 1, 1, 8}, true, -3, 3}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : ""));
      const SinkInputs in = randomSinkInputs(dtype, c.q, c.k, c.causal, c.sinkLo, c.sinkHi, rng);
      ASSERT_OK(in.cpuStatus);
      const DeviceResults r = runOnDevice(in, false, stream_);
      expectMatchesCpu(in, r.out, r.grads);
    }
}

TEST_F(CudaAttentionSinks, TensorCoreKernelsMatchCpu) {
  std::mt19937 rng(71);
  const struct {
    Shape q, k;
    bool causal;
    double sinkLo, sinkHi;
  } cases[] = {{{1, 4, 130, 64}, {1, 2, 130, 64}, true, -3, 3},
               {{2, 2, 64, 128}, {2, 1, 64, 128}, false, 5, 8},
               {{1, 2, 1, 64}, {1, 2, 1, 64}, true, -3, 3}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : ""));
      const SinkInputs in = randomSinkInputs(dtype, c.q, c.k, c.causal, c.sinkLo, c.sinkHi, rng);
      ASSERT_OK(in.cpuStatus);
      expectFlashMatchesCpu(in, runOnDevice(in, true, stream_));
    }
}

} // namespace
} // namespace rp::kernels::cuda::test
