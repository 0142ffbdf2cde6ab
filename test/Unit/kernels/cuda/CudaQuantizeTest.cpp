//===- CudaQuantizeTest.cpp - graph.dequantize on the GPU -----------------===//
//
// The launcher on a device against the CPU reference, bit for bit, for every format and output
// dtype; skipped without a CUDA device (label gpu).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Quantize.h"
#include "test/Unit/kernels/cuda/CudaQuantizeTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <cstring>

namespace rp::kernels::cuda::test {
namespace {

using base::DType;

class CudaQuantizeTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveDevice())
      GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaQuantizeTest, DeviceEqualsTheCpuBitForBit) {
  for (const QuantCase &c : quantCases())
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      QuantLayout layout;
      base::HostTensor q = quantized(c, layout);
      auto plan = planDequantize(DType::U8, {layout.bytes}, c.format, c.axis, dtype, c.shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dq = upload(q);
      base::HostTensor want = cpuDequantized(c, q, dtype);
      auto dout = poisonedOutput(want.byteSize(), 0xab, 64);
      EXPECT_CUDA_OK(launchDequantize(*plan, dq->get(), dout->get(), nullptr));
      EXPECT_CUDA_OK(cudaDeviceSynchronize());
      base::HostTensor got = download(*dout, dtype, c.shape, 0xab);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.byteSize()), 0)
          << quantFormatName(c.format) << " into " << base::dtypeName(dtype);
    }
}

} // namespace
} // namespace rp::kernels::cuda::test
