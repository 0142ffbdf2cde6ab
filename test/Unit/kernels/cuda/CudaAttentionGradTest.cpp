//===- CudaAttentionGradTest.cpp - attention_vjp on the GPU ---------------===//
//
// Runs launchAttentionVjp on the device and compares dq, dk, dv with cpu::attentionVjp on
// random inputs; outputs are poisoned (0xA5 bytes, a NaN in every float format) so that a
// skipped element fails. Device tests call GTEST_SKIP() without a CUDA device; the argument
// checks need none.
//
// Tolerances: f32 rtol 1e-5 + atol 5e-6 (the CPU kernel computes in f32 with sgemm, the
// device in double with online softmax, its own exp and log, possible FMA contraction); f64 rtol 1e-12 + atol 1e-12; f16/bf16 (compute in
// float; reference: the f64 CPU kernel on the decoded inputs, rounded to the format): within
// 2 ulps of the format at max(|reference|, 2^-6). A second launch must give the same bits.
// These run the row kernels (plan.tensorCores cleared); the tensor-core path is checked to be
// FlashAttentionBackward's kernel, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/FlashAttentionBackward.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

namespace rp::kernels::cuda::test {
namespace {

/// Skips without a device; stream_ for the launches.
class CudaAttentionGrad : public CudaStreamTest {};

// GQA, MQA, MHA, causal and not, S below, at and above the 128-row tile (partial tiles in
// both passes), S = 1, D from 4 to 128.
TEST_F(CudaAttentionGrad, MatchesCpu) {
  std::mt19937 rng(47);
  const struct {
    Shape q, k;
    bool causal;
    int64_t window; ///< sliding window (0: none)
  } cases[] = {{{2, 4, 7, 5}, {2, 2, 7, 5}, false, 0},      {{2, 4, 7, 5}, {2, 2, 7, 5}, true, 0},
               {{1, 3, 128, 4}, {1, 1, 128, 4}, true, 0},   {{1, 2, 129, 16}, {1, 2, 129, 16}, false, 0},
               {{2, 6, 257, 64}, {2, 2, 257, 64}, true, 0}, {{1, 2, 64, 128}, {1, 1, 64, 128}, false, 0},
               {{2, 2, 1, 8}, {2, 1, 1, 8}, true, 0},       {{2, 4, 7, 5}, {2, 2, 7, 5}, true, 2},
               {{2, 6, 257, 64}, {2, 2, 257, 64}, true, 100}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " window " + std::to_string(c.window));
      const AttentionVjpInputs in =
          randomAttentionVjpInputs(dtype, c.q, c.k, c.causal, rng, c.window);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<AttentionVjpPlan> plan = planAttentionVjp(
          dtype, c.q, c.k, c.k, c.q, c.q, in.scale, c.causal, c.q, c.k, c.k, c.window);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      plan->tensorCores = false; // the row kernels (the tensor-core one: the test below)
      auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v), dO = upload(in.out),
           dDo = upload(in.dout);
      auto gQ = poisonedOutput(dtype, c.q), gK = poisonedOutput(dtype, c.k),
           gV = poisonedOutput(dtype, c.k);
      DeviceBuffer scratch(plan->scratchBytes);
      auto launch = [&] {
        return launchAttentionVjp(*plan, dQ->get(), dK->get(), dV->get(), dO->get(), dDo->get(),
                                  gQ->get(), gK->get(), gV->get(), scratch.get(), stream_);
      };
      ASSERT_CUDA_OK(launch());
      const HostTensor dq = download(*gQ, dtype, c.q, stream_),
                       dk = download(*gK, dtype, c.k, stream_),
                       dv = download(*gV, dtype, c.k, stream_);
      expectFloat(dq, in.wantDq, kAttentionF32Rtol, kAttentionVjpF32Atol, "dq");
      expectFloat(dk, in.wantDk, kAttentionF32Rtol, kAttentionVjpF32Atol, "dk");
      expectFloat(dv, in.wantDv, kAttentionF32Rtol, kAttentionVjpF32Atol, "dv");
      // Deterministic: a second run gives the same bits.
      ASSERT_CUDA_OK(launch());
      expectBitsEqual(download(*gQ, dtype, c.q, stream_), dq, "dq rerun");
      expectBitsEqual(download(*gK, dtype, c.k, stream_), dk, "dk rerun");
      expectBitsEqual(download(*gV, dtype, c.k, stream_), dv, "dv rerun");
    }
}

// With plan.tensorCores (f16/bf16, D a multiple of 16 up to 128) the launcher runs the
// tensor-core backward of FlashAttentionBackward.h (tested against the definition by
// CudaFlashAttentionTest): its results are that kernel's, bit for bit.
TEST_F(CudaAttentionGrad, TensorCorePathIsTheFlashKernel) {
  std::mt19937 rng(53);
  const Shape q{1, 4, 96, 64}, k{1, 2, 96, 64};
  for (DType dtype : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(label(dtype, q));
    const AttentionVjpInputs in = randomAttentionVjpInputs(dtype, q, k, true, rng);
    ASSERT_OK(in.cpuStatus);
    base::StatusOr<AttentionVjpPlan> plan =
        planAttentionVjp(dtype, q, k, k, q, q, in.scale, true, q, k, k);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    ASSERT_TRUE(plan->tensorCores);
    auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v), dO = upload(in.out),
         dDo = upload(in.dout);
    auto gQ = poisonedOutput(dtype, q), gK = poisonedOutput(dtype, k),
         gV = poisonedOutput(dtype, k);
    auto fQ = poisonedOutput(dtype, q), fK = poisonedOutput(dtype, k),
         fV = poisonedOutput(dtype, k);
    DeviceBuffer scratch(plan->scratchBytes);
    ASSERT_CUDA_OK(launchAttentionVjp(*plan, dQ->get(), dK->get(), dV->get(), dO->get(),
                                      dDo->get(), gQ->get(), gK->get(), gV->get(), scratch.get(),
                                      stream_));
    const cudaError_t flash = launchFlashAttentionBackward(
        plan->forward, dQ->get(), dK->get(), dV->get(), dO->get(), dDo->get(), fQ->get(),
        fK->get(), fV->get(), scratch.get(), stream_);
    if (flash == cudaErrorNotSupported)
      GTEST_SKIP() << "this device's shared memory does not take the tensor-core backward";
    ASSERT_CUDA_OK(flash);
    expectBitsEqual(download(*gQ, dtype, q, stream_), download(*fQ, dtype, q, stream_), "dq");
    expectBitsEqual(download(*gK, dtype, k, stream_), download(*fK, dtype, k, stream_), "dk");
    expectBitsEqual(download(*gV, dtype, k, stream_), download(*fV, dtype, k, stream_), "dv");
  }
}

// The launcher rejects null pointers (the scratch too) before touching the device, and
// launches nothing for empty outputs.
TEST(CudaAttentionGradArgs, RejectsBadPointersWithoutADevice) {
  const Shape s{1, 1, 2, 4};
  base::StatusOr<AttentionVjpPlan> plan =
      planAttentionVjp(DType::F32, s, s, s, s, s, 1, false, s, s, s);
  ASSERT_TRUE(plan.ok());
  alignas(8) float f[8] = {};
  alignas(8) double scratch[4] = {};
  EXPECT_EQ(launchAttentionVjp(*plan, f, f, f, f, f, f, f, nullptr, scratch, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchAttentionVjp(*plan, f, f, f, f, f, f, f, f, nullptr, nullptr),
            cudaErrorInvalidValue);
  AttentionVjpPlan other = *plan;
  other.tile = 3; // not a plan of planAttentionVjp
  EXPECT_EQ(launchAttentionVjp(other, f, f, f, f, f, f, f, f, scratch, nullptr),
            cudaErrorInvalidValue);
  AttentionVjpPlan empty = *plan;
  empty.forward.rows = 0;
  EXPECT_EQ(launchAttentionVjp(empty, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                               nullptr, nullptr, nullptr, nullptr),
            cudaSuccess);
}

} // namespace
} // namespace rp::kernels::cuda::test
