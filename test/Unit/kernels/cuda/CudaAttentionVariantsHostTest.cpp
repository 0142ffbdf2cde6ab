//===- CudaAttentionVariantsHostTest.cpp - attention variants' GPU bodies, on the host ===//
//
// Runs without a GPU. replay::attention and replay::attentionVjp run the CUDA row kernels'
// bodies (attentionRow, attentionVjpQueryRow, attentionVjpKeyRow of
// kernels/cuda/{Fused,AttentionGrad}.h) with a logit soft-cap (Gemma-2: each score s becomes
// c tanh(s / c), dS times 1 - tanh^2) and with a value head size Dv other than the query's D
// (multi-head latent attention: the output and value rows have their own length) and are
// compared with cpu::attention /
// cpu::attentionVjp on random inputs, at the tolerances of CudaAttentionSinksHostTest:
//   f32: out rtol 1e-5 + atol 1e-6, dq/dk/dv rtol 1e-5 + atol 5e-6, dsinks atol 2e-5;
//   f64: rtol 1e-12 + atol 1e-12;
//   f16/bf16 (compute in float; the reference is the f64 CPU kernel on the decoded inputs,
//     rounded to the format): within 2 ulps of the format at max(|reference|, 2^-6).
// Caps of 0.5 and 1.5 (past the bend of most scores) and 30, causal and not, grouped-query
// heads, tiles of 3 and S = 300 over 128-key tiles, with and without sinks; Dv below and
// above D. Also: the cap changes the rows (a kernel ignoring it fails), the plans' errors are
// the CPU kernel's, and cuDNN SDPA and the tensor-core kernels decline a Dv other than D
// (cuDNN also a soft-cap). The tensor-core kernels have no host replay;
// CudaAttentionVariantsTest (GPU) covers them and the launches.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/CudnnAttention.h"
#include "kernels/cuda/Fused.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaAttentionTestUtil.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;

struct Case {
  Shape q, k;
  AttentionCase options;
  int64_t tile = kAttentionTile;
};

/// Runs one case through the replay and compares it with the CPU kernels.
void checkCase(DType dtype, const Case &c, std::mt19937 &rng) {
  SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) +
               (c.options.causal ? " causal" : "") + " softcap " +
               std::to_string(c.options.softcap) + (c.options.sinks ? " sinks" : "") + " Dv " +
               std::to_string(c.options.valueDim) + " tile " + std::to_string(c.tile));
  const SinkInputs in = randomAttentionInputs(dtype, c.q, c.k, c.options, rng);
  ASSERT_OK(in.cpuStatus);
  const HostTensor *sinks = in.sinksOrNull();
  expectMatchesCpu(in, hostForward(in, c.tile, sinks), hostVjp(in, c.tile, sinks));
}

TEST(CudaAttentionVariantsHost, SoftcapMatchesCpu) {
  std::mt19937 rng(73);
  const AttentionCase causal{true, false, -3, 3, 1.5}, full{false, false, -3, 3, 0.5},
      wide{true, false, -3, 3, 30}, sinks{true, true, -3, 3, 0.5};
  const Case cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, full},
      {{2, 4, 7, 5}, {2, 2, 7, 5}, causal},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, causal, 3},
      {{1, 2, 9, 8}, {1, 2, 9, 8}, wide, 3},
      {{2, 2, 300, 16}, {2, 1, 300, 16}, causal},
      {{1, 4, 12, 8}, {1, 2, 12, 8}, sinks, 5},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const Case &c : cases)
      checkCase(dtype, c, rng);
}

TEST(CudaAttentionVariantsHost, ValueDimMatchesCpu) {
  std::mt19937 rng(97);
  const AttentionCase smaller{true, false, -3, 3, 0, 4}, larger{false, false, -3, 3, 0, 12},
      capped{true, true, -3, 3, 1.5, 6};
  const Case cases[] = {
      {{2, 4, 7, 8}, {2, 2, 7, 8}, smaller},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, larger, 3},
      {{2, 2, 300, 16}, {2, 1, 300, 16}, smaller},
      {{1, 4, 12, 8}, {1, 2, 12, 8}, capped, 5},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const Case &c : cases)
      checkCase(dtype, c, rng);
}

TEST(CudaAttentionVariantsHost, ValueDimPlans) {
  const Shape q{1, 4, 64, 64}, k{1, 2, 64, 64}, v{1, 2, 64, 32}, out{1, 4, 64, 32};
  base::StatusOr<AttentionPlan> plan = planAttention(DType::BF16, q, k, v, 0.125, true, out);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_EQ(plan->valueDim, 32);
  EXPECT_FALSE(plan->tensorCores); // the row kernels take Dv != D
  EXPECT_EQ(cudnnSdpaDecline(*plan, SdpaExtras{}),
            "a value head size (32) other than the query's (64) (not handed to cuDNN)");
  base::StatusOr<AttentionVjpPlan> vjp =
      planAttentionVjp(DType::BF16, q, k, v, out, out, 0.125, true, q, k, v);
  ASSERT_TRUE(vjp.ok()) << vjp.status().toString();
  EXPECT_FALSE(vjp->tensorCores);
  // The CPU kernel's messages for a value or an output of the wrong shape.
  base::StatusOr<AttentionPlan> badV =
      planAttention(DType::F32, q, k, {1, 1, 64, 32}, 0.125, true, out);
  EXPECT_EQ(badV.status().message(), "attention: v is [1, 1, 64, 32], expected [1, 2, 64, Dv]");
  base::StatusOr<AttentionPlan> badOut = planAttention(DType::F32, q, k, v, 0.125, true, q);
  EXPECT_EQ(badOut.status().message(),
            "attention: out is f32[1, 4, 64, 64], expected f32[1, 4, 64, 32]");
  base::StatusOr<AttentionVjpPlan> badDv =
      planAttentionVjp(DType::F32, q, k, v, out, out, 0.125, true, q, k, k);
  EXPECT_EQ(badDv.status().message(),
            "attention_vjp: dv is f32[1, 2, 64, 64], expected f32[1, 2, 64, 32]");
}

// The cap bends the scores: the capped output differs from the uncapped one by far more than
// the tolerances above (a kernel that ignored the cap would fail them).
TEST(CudaAttentionVariantsHost, SoftcapChangesTheRows) {
  std::mt19937 rng(79);
  SinkInputs in =
      randomAttentionInputs(DType::F64, {1, 2, 6, 4}, {1, 2, 6, 4}, {true, false, 0, 0, 0.5}, rng);
  ASSERT_OK(in.cpuStatus);
  const HostTensor capped = hostForward(in, kAttentionTile, nullptr);
  in.options.softcap = 0;
  const HostTensor uncapped = hostForward(in, kAttentionTile, nullptr);
  double largest = 0;
  for (int64_t i = 0; i < capped.numElements(); ++i)
    largest = std::max(largest, std::fabs(valueAt(capped, i) - valueAt(uncapped, i)));
  EXPECT_GT(largest, 0.05);
}

TEST(CudaAttentionVariantsHost, SoftcapPlanErrorsAreTheCpuKernels) {
  const DType f = DType::F32;
  const Shape q{1, 4, 3, 8}, k{1, 2, 3, 8};
  for (double cap : {-1.0, static_cast<double>(INFINITY)}) {
    HostTensor out(f, q);
    const Status cpu = cpu::attention(HostTensor(f, q), HostTensor(f, k), HostTensor(f, k), 1,
                                      true, out, nullptr, 0, cap);
    ASSERT_FALSE(cpu.ok());
    base::StatusOr<AttentionPlan> plan = planAttention(f, q, k, k, 1, true, q, 0, cap);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().message(), cpu.message());
    base::StatusOr<AttentionVjpPlan> vjp =
        planAttentionVjp(f, q, k, k, q, q, 1, true, q, k, k, 0, cap);
    ASSERT_FALSE(vjp.ok());
    EXPECT_EQ(vjp.status().message(),
              "attention_vjp" + cpu.message().substr(std::string("attention").size()));
  }
}

TEST(CudaAttentionVariantsHost, CudnnDeclinesSoftcap) {
  const Shape q{1, 4, 64, 64}, k{1, 2, 64, 64};
  base::StatusOr<AttentionPlan> plan = planAttention(DType::BF16, q, k, k, 0.125, true, q, 0, 50);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->tensorCores); // rpc's flash kernels take it
  EXPECT_EQ(cudnnSdpaDecline(*plan, SdpaExtras{false, 0, plan->softcap}),
            "a logit soft-cap (cuDNN SDPA has none)");
  EXPECT_EQ(cudnnSdpaDecline(*plan, SdpaExtras{}), "");
}

} // namespace
} // namespace rp::kernels::cuda::test
