//===- CudnnAttentionTest.cpp - cuDNN SDPA selection without a GPU ---------===//
//
// The parts of kernels/cuda/CudnnAttention.h that run anywhere: --attention-kernel parsing,
// the rules that decline a case before cuDNN is asked, the plan cache's key (every field
// matters, equal cases share a graph), the VJP's scratch size, and what a runner says when
// cuDNN cannot be used (on a machine without a GPU, or in a build without the frontend).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CudnnAttention.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>

namespace rp::kernels::cuda {
namespace {

using base::DType;

AttentionPlan planOf(DType dtype, int64_t heads, int64_t kvHeads, int64_t seq, int64_t dim,
                     bool causal = true) {
  base::StatusOr<AttentionPlan> p =
      planAttention(dtype, {2, heads, seq, dim}, {2, kvHeads, seq, dim}, {2, kvHeads, seq, dim},
                    0.125, causal, {2, heads, seq, dim});
  EXPECT_TRUE(p.ok()) << p.status().toString();
  return p.ok() ? p.value() : AttentionPlan{};
}

TEST(CudnnAttention, ParsesTheKernelChoice) {
  EXPECT_EQ(parseAttentionKernel("auto").value(), AttentionKernel::Auto);
  EXPECT_EQ(parseAttentionKernel("cudnn").value(), AttentionKernel::Cudnn);
  EXPECT_EQ(parseAttentionKernel("flash").value(), AttentionKernel::Flash);
  for (AttentionKernel k : {AttentionKernel::Auto, AttentionKernel::Cudnn, AttentionKernel::Flash})
    EXPECT_EQ(parseAttentionKernel(attentionKernelName(k)).value(), k);
  for (const char *bad : {"", "CUDNN", "fa2", "auto "}) {
    base::StatusOr<AttentionKernel> k = parseAttentionKernel(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.status().code(), base::StatusCode::InvalidArgument);
    EXPECT_EQ(k.status().message(), "unknown --attention-kernel '" + std::string(bad) +
                                        "' (expected auto, cudnn or flash)");
  }
}

TEST(CudnnAttention, TakesHalfPrecisionGqaUpToDim128) {
  for (DType dtype : {DType::BF16, DType::F16})
    for (int64_t dim : {8, 64, 96, 128}) {
      EXPECT_EQ(cudnnSdpaDecline(planOf(dtype, 16, 8, 256, dim)), "") << dim;
      EXPECT_EQ(cudnnSdpaDecline(planOf(dtype, 4, 4, 33, dim, false)), "") << dim;
      EXPECT_EQ(cudnnSdpaDecline(planOf(dtype, 4, 1, 1, dim)), "") << dim;
    }
}

TEST(CudnnAttention, DeclinesWhatItDoesNotTake) {
  EXPECT_EQ(cudnnSdpaDecline(planOf(DType::F32, 4, 2, 16, 64)),
            "dtype f32 (cuDNN SDPA takes f16 and bf16)");
  const std::string dimRule = " (cuDNN SDPA here: a multiple of 8 up to 128)";
  EXPECT_EQ(cudnnSdpaDecline(planOf(DType::BF16, 4, 2, 16, 60)), "head dimension 60" + dimRule);
  EXPECT_EQ(cudnnSdpaDecline(planOf(DType::BF16, 4, 2, 16, 256)), "head dimension 256" + dimRule);
  EXPECT_EQ(cudnnSdpaDecline(planOf(DType::F16, 4, 2, 16, 4)), "head dimension 4" + dimRule);
  const AttentionPlan ok = planOf(DType::BF16, 4, 2, 16, 64);
  SdpaExtras sinks;
  sinks.sinks = true;
  EXPECT_EQ(cudnnSdpaDecline(ok, sinks), "attention sinks (not handed to cuDNN yet)");
  SdpaExtras window;
  window.window = 128;
  EXPECT_EQ(cudnnSdpaDecline(ok, window), "a sliding window (not handed to cuDNN yet)");
}

TEST(CudnnAttention, KeysTellEveryGraphApart) {
  const AttentionPlan base = planOf(DType::BF16, 16, 8, 256, 128);
  const CudnnSdpaKey k = cudnnSdpaKey(base, SdpaGraph::Forward);
  EXPECT_EQ(k, cudnnSdpaKey(planOf(DType::BF16, 16, 8, 256, 128), SdpaGraph::Forward));
  EXPECT_EQ(CudnnSdpaKeyHash()(k),
            CudnnSdpaKeyHash()(cudnnSdpaKey(planOf(DType::BF16, 16, 8, 256, 128),
                                            SdpaGraph::Forward)));
  EXPECT_EQ(k.text(), "forward bf16 B=2 Hq=16 Hkv=8 S=256 D=128 scale=0.125 causal");
  std::vector<CudnnSdpaKey> variants = {
      k,
      cudnnSdpaKey(base, SdpaGraph::ForwardStats),
      cudnnSdpaKey(base, SdpaGraph::Backward),
      cudnnSdpaKey(planOf(DType::F16, 16, 8, 256, 128), SdpaGraph::Forward),
      cudnnSdpaKey(planOf(DType::BF16, 16, 16, 256, 128), SdpaGraph::Forward),
      cudnnSdpaKey(planOf(DType::BF16, 8, 8, 256, 128), SdpaGraph::Forward),
      cudnnSdpaKey(planOf(DType::BF16, 16, 8, 255, 128), SdpaGraph::Forward),
      cudnnSdpaKey(planOf(DType::BF16, 16, 8, 256, 64), SdpaGraph::Forward),
      cudnnSdpaKey(planOf(DType::BF16, 16, 8, 256, 128, false), SdpaGraph::Forward)};
  AttentionPlan batch = base, scale = base;
  batch.batch = 3;
  scale.scale = 0.25;
  variants.push_back(cudnnSdpaKey(batch, SdpaGraph::Forward));
  variants.push_back(cudnnSdpaKey(scale, SdpaGraph::Forward));
  std::unordered_set<CudnnSdpaKey, CudnnSdpaKeyHash> distinct(variants.begin(), variants.end());
  EXPECT_EQ(distinct.size(), variants.size());
  EXPECT_EQ(cudnnSdpaKey(base, SdpaGraph::Backward).text(),
            "backward bf16 B=2 Hq=16 Hkv=8 S=256 D=128 scale=0.125 causal");
  EXPECT_EQ(cudnnSdpaKey(planOf(DType::F16, 4, 4, 8, 16, false), SdpaGraph::ForwardStats).text(),
            "forward+stats f16 B=2 Hq=4 Hkv=4 S=8 D=16 scale=0.125");
}

TEST(CudnnAttention, BackwardScratchHoldsOutputThenStats) {
  // O': 2 * 16 * 256 rows of 128 bf16 = 2 MiB (a multiple of 256); stats: 8192 floats.
  EXPECT_EQ(cudnnSdpaBackwardScratchBytes(planOf(DType::BF16, 16, 8, 256, 128)),
            size_t(2) * 16 * 256 * 128 * 2 + size_t(2) * 16 * 256 * 4);
  // O': 2 * 1 * 3 rows of 8 f16 = 96 bytes, rounded up to 256; stats: 6 floats.
  EXPECT_EQ(cudnnSdpaBackwardScratchBytes(planOf(DType::F16, 1, 1, 3, 8)), size_t(256 + 24));
}

bool haveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Auto never fails to create: it gives a runner, or none and says why (always without a GPU,
// or in a build without the frontend, where the message names the fix); cudnn gives the same
// runner or fails with that reason. Runs in both builds (rp-cuda-cudnn-attention-host-test
// with the frontend, rp-cuda-cudnn-attention-nofrontend-test without).
TEST(CudnnAttention, RunnerReportsWhyCudnnIsUnusable) {
  std::string why;
  base::StatusOr<std::unique_ptr<CudnnSdpaRunner>> automatic =
      CudnnSdpaRunner::create(AttentionKernel::Auto, &why);
  ASSERT_TRUE(automatic.ok()) << automatic.status().toString();
  base::StatusOr<std::unique_ptr<CudnnSdpaRunner>> forced =
      CudnnSdpaRunner::create(AttentionKernel::Cudnn, nullptr);
  if (!cudnnSdpaBuilt() || !haveGpu()) {
    EXPECT_EQ(automatic.value(), nullptr);
    EXPECT_FALSE(why.empty());
  }
  if (!cudnnSdpaBuilt()) {
    EXPECT_EQ(why, "this build has no cuDNN frontend (scripts/install-deps.sh fetches its "
                   "headers; CMake then enables cuDNN attention)");
  }
  if (automatic.value()) {
    EXPECT_TRUE(why.empty()) << why;
    EXPECT_EQ(automatic.value()->kernel(), AttentionKernel::Auto);
    EXPECT_EQ(automatic.value()->cachedGraphs(), 0u);
    ASSERT_TRUE(forced.ok()) << forced.status().toString();
    EXPECT_EQ(forced.value()->kernel(), AttentionKernel::Cudnn);
  } else {
    ASSERT_FALSE(forced.ok());
    EXPECT_EQ(forced.status().code(), base::StatusCode::Unavailable);
    EXPECT_EQ(forced.status().message(), "--attention-kernel cudnn: " + why);
  }
}

} // namespace
} // namespace rp::kernels::cuda
