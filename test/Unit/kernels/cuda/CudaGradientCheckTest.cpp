//===- CudaGradientCheckTest.cpp - The gradient download's non-finite flag -===//
//
// launchFlagNonFinite (kernels/cuda/Elementwise.h), the flag the CUDA backend computes on the
// device before a gradient slot's download: the kernel on the device against its host replay
// (GTEST_SKIP without a GPU; the replay is checked against the definition in
// CudaElementwiseHostTest.cpp), including several launches ORing into one flag, and the
// argument checks (no GPU needed).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/HostReplay.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/cuda/GradientCheckTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace rp::kernels::cuda {
namespace {

using test::CudaStreamTest;
using test::DeviceBuffer;
using test::finiteGradients;
using test::kNonFinite;
using test::replayFlag;

class CudaGradientCheck : public CudaStreamTest {};

// The device flag equals the replay's, for one launch and for several ORing into one flag.
TEST_F(CudaGradientCheck, DeviceFlagMatchesTheReplay) {
  std::mt19937 rng(6);
  for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
    std::vector<float> x = finiteGradients(n, rng);
    for (int variant = 0; variant < 3; ++variant) {
      if (variant > 0)
        x[(n - 1) / variant] = kNonFinite[variant];
      DeviceBuffer d(x.size() * sizeof(float));
      DeviceBuffer flag(sizeof(uint32_t));
      ASSERT_CUDA_OK(cudaMemcpy(d.get(), x.data(), x.size() * sizeof(float),
                                cudaMemcpyHostToDevice));
      ASSERT_CUDA_OK(cudaMemsetAsync(flag.get(), 0, sizeof(uint32_t), stream_));
      // Two ranges into one flag: the first half, then the rest.
      const int64_t half = static_cast<int64_t>(n / 2);
      auto *base = static_cast<const float *>(d.get());
      ASSERT_CUDA_OK(launchFlagNonFinite(base, half, static_cast<uint32_t *>(flag.get()), stream_));
      ASSERT_CUDA_OK(launchFlagNonFinite(base + half, static_cast<int64_t>(n) - half,
                                         static_cast<uint32_t *>(flag.get()), stream_));
      uint32_t got = 7;
      ASSERT_CUDA_OK(cudaMemcpyAsync(&got, flag.get(), sizeof got, cudaMemcpyDeviceToHost,
                                     stream_));
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
      EXPECT_EQ(got, replayFlag(x)) << n << " variant " << variant;
    }
  }
}

// Bad arguments are refused before anything is enqueued; an empty range does nothing.
TEST(CudaGradientCheckArgs, RefusesBadPointersAndCounts) {
  uint32_t flag = 0;
  const float x[2] = {1.0f, 2.0f};
  EXPECT_EQ(launchFlagNonFinite(nullptr, 4, &flag, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchFlagNonFinite(x, 2, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchFlagNonFinite(x, -1, &flag, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchFlagNonFinite(nullptr, 0, nullptr, nullptr), cudaSuccess);
}

} // namespace
} // namespace rp::kernels::cuda
