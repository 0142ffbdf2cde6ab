//===- CudaGradientNormTest.cpp - The norm's lane sums on the GPU ----------===//
//
// kernels/cuda/GradientNorm.h against runtime::sumOfSquares, bit for bit: the lane body run on
// the host over every (block, lane) and summed by sumSquaresLanes (no GPU needed: the index
// arithmetic and the order), the launcher's argument checks (no GPU), and the launch on the
// device (skipped without one; a poisoned output shows a lane the kernel skipped).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/GradientNorm.h"

#include "runtime/optim/AdamW.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

/// Element counts around the block (65536) and lane (16) boundaries.
const int64_t kSizes[] = {0, 1, 15, 16, 17, 65535, 65536, 65537, 2 * 65536 + 37};

std::vector<float> gradient(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.f, 3.f);
  std::vector<float> g(static_cast<size_t>(n));
  for (float &x : g)
    x = dist(rng);
  return g;
}

void expectSameBits(double got, double want, int64_t n) {
  EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "n = " << n << ": " << got << " vs "
                                                      << want;
}

TEST(CudaGradientNormHost, LanesSumToSumOfSquares) {
  const float scale = 1.0f / 3.0f;
  for (int64_t n : kSizes) {
    const std::vector<float> g = gradient(n, static_cast<uint32_t>(n) + 1);
    std::vector<double> lanes(static_cast<size_t>(squaresLaneCount(n)));
    for (size_t t = 0; t < lanes.size(); ++t)
      lanes[t] = squaresLaneAt(g.data(), n, scale, static_cast<int64_t>(t) / kSquaresLanes,
                               static_cast<int>(t % kSquaresLanes));
    expectSameBits(sumSquaresLanes(lanes.data(), n), runtime::sumOfSquares(g.data(), n, scale),
                   n);
  }
}

TEST(CudaGradientNormHost, LauncherChecksItsArguments) {
  double lane = 0;
  const float x = 1;
  EXPECT_EQ(launchSquaresLanes(nullptr, 4, 1.f, &lane, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSquaresLanes(&x, 1, 1.f, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSquaresLanes(&x, -1, 1.f, &lane, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSquaresLanes(nullptr, 0, 1.f, nullptr, nullptr), cudaSuccess);
}

class CudaGradientNorm : public CudaStreamTest {};

TEST_F(CudaGradientNorm, DeviceLanesSumToSumOfSquares) {
  const float scale = 0.3f;
  for (int64_t n : kSizes) {
    if (n == 0)
      continue;
    const std::vector<float> g = gradient(n, static_cast<uint32_t>(n) + 7);
    HostTensor x(DType::F32, {n});
    std::memcpy(x.raw(), g.data(), g.size() * sizeof(float));
    const std::unique_ptr<DeviceBuffer> in = upload(x);
    const int64_t count = squaresLaneCount(n);
    const std::unique_ptr<DeviceBuffer> out =
        poisonedOutput(static_cast<size_t>(count) * sizeof(double), 0xA5, 64);
    ASSERT_CUDA_OK(launchSquaresLanes(in->as<float>(), n, scale, out->as<double>(), stream_));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
    const HostTensor lanes = download(*out, DType::F64, {count}, 0xA5);
    expectSameBits(sumSquaresLanes(lanes.data<double>(), n),
                   runtime::sumOfSquares(g.data(), n, scale), n);
  }
}

} // namespace
} // namespace rp::kernels::cuda::test
