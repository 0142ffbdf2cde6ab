//===- CudaQuantizeHostTest.cpp - graph.dequantize's GPU body on the host -===//
//
// The planner's checks and the device body (kernels/cuda/Quantize.h) replayed on the host
// against the CPU reference, bit for bit, for every format and output dtype. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/HostReplay.h"
#include "test/Unit/kernels/cuda/CudaQuantizeTestUtil.h"

#include <cstring>

namespace rp::kernels::cuda::test {
namespace {

using base::DType;

TEST(CudaQuantizeHostTest, ReplayEqualsTheCpuBitForBit) {
  for (const QuantCase &c : quantCases())
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      QuantLayout layout;
      base::HostTensor q = quantized(c, layout);
      auto plan = planDequantize(DType::U8, {layout.bytes}, c.format, c.axis, dtype, c.shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      base::HostTensor got(dtype, c.shape);
      replay::dequantize(*plan, q.raw(), got.raw());
      base::HostTensor want = cpuDequantized(c, q, dtype);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.byteSize()), 0)
          << quantFormatName(c.format) << " into " << base::dtypeName(dtype);
    }
}

TEST(CudaQuantizeHostTest, PlanRefusesWhatTheCpuRefuses) {
  auto shortStorage = planDequantize(DType::U8, {100}, QuantFormat::NF4, 1, DType::F32, {64, 128});
  ASSERT_FALSE(shortStorage.ok());
  EXPECT_EQ(shortStorage.status().message(),
            "dequantize: q is u8[100], expected u8[4232] (nf4 of [64, 128])");
  EXPECT_FALSE(planDequantize(DType::U8, {4232}, QuantFormat::NF4, 1, DType::I64, {64, 128}).ok());
  EXPECT_FALSE(planDequantize(DType::U8, {100}, QuantFormat::NF4, 1, DType::F32, {64, 100}).ok());
}

} // namespace
} // namespace rp::kernels::cuda::test
