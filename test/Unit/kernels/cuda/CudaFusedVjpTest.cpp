//===- CudaFusedVjpTest.cpp - The fused VJP kernels on the GPU ------------===//
//
// Launches rms_norm_vjp, swiglu_vjp and rope_vjp on the device and compares with the CPU
// kernels on random tensors; outputs are poisoned (0xA5 bytes, a NaN in every float format)
// before each launch. Skipped (GTEST_SKIP) without a CUDA device; the launchers' argument
// checks need none. Tolerances: f32 rtol 1e-6 + atol 1e-7 (the device's double exp and
// rsqrt-free sqrt within an ulp of libm's, and rms_norm_vjp's summation order), f64 rtol
// 1e-12 + atol 1e-12; f16/bf16 within 2 ulps of the format at max(|reference|, 2^-6).
//
//===----------------------------------------------------------------------===//

#include "test/Unit/kernels/cuda/CudaFusedVjpTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

namespace rp::kernels::cuda::test {
namespace {

class CudaFusedVjp : public CudaStreamTest {};

TEST_F(CudaFusedVjp, RmsNormVjpMatchesCpu) {
  std::mt19937 rng(51);
  forEachRmsNormVjpCase(rng, [this](DType dtype, const Shape &shape, const RmsNormVjpCase &c,
                                    const NormPlan &plan) {
    auto dx = upload(c.x), dw = upload(c.scale), dg = upload(c.g);
    auto ox = poisonedOutput(dtype, shape), orows = poisonedOutput(dtype, shape);
    ASSERT_CUDA_OK(launchRmsNormVjp(plan, dx->get(), dw->get(), dg->get(), ox->get(),
                                    orows->get(), stream_));
    expectFloat(download(*ox, dtype, shape, stream_), c.wantDx, 1e-6, "dx");
    expectFloat(download(*orows, dtype, shape, stream_), c.wantRows, 1e-6, "dscale_rows");
  });
}

TEST_F(CudaFusedVjp, SwigluVjpMatchesCpu) {
  std::mt19937 rng(52);
  forEachSwigluVjpCase(rng, [this](DType dtype, const Shape &shape, const SwigluVjpCase &c,
                                   const SwigluPlan &plan) {
    auto da = upload(c.gate), du = upload(c.up), dg = upload(c.g);
    auto oa = poisonedOutput(dtype, shape), ou = poisonedOutput(dtype, shape);
    ASSERT_CUDA_OK(launchSwigluVjp(plan, da->get(), du->get(), dg->get(), oa->get(), ou->get(),
                                   stream_));
    expectFloat(download(*oa, dtype, shape, stream_), c.wantGate, 1e-6, "dgate");
    expectFloat(download(*ou, dtype, shape, stream_), c.wantUp, 1e-6, "dup");
  });
}

TEST_F(CudaFusedVjp, RopeVjpMatchesCpu) {
  std::mt19937 rng(53);
  forEachRopeVjpCase(rng, [this](DType dtype, const Shape &shape, const RopeVjpCase &c,
                                 const RopePlan &plan) {
    auto dg = upload(c.g), dc = upload(c.cos), ds = upload(c.sin);
    auto out = poisonedOutput(dtype, shape);
    ASSERT_CUDA_OK(launchRope(plan, dg->get(), dc->get(), ds->get(), out->get(), stream_));
    expectFloat(download(*out, dtype, shape, stream_), c.want, 1e-6, "dx");
  });
}

// The launchers refuse a bad plan or pointer without touching a device.
TEST(CudaFusedVjpArgs, LaunchersRejectBadArguments) {
  alignas(16) unsigned char raw[64] = {};
  void *f = raw;
  const SwigluPlan swiglu{DType::F32, 4};
  EXPECT_EQ(launchSwigluVjp(swiglu, nullptr, f, f, f, f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSwigluVjp(swiglu, f, f, f, raw + 1, f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSwigluVjp(SwigluPlan{DType::F32, 0}, nullptr, nullptr, nullptr, nullptr,
                            nullptr, nullptr),
            cudaSuccess);
  auto norm = planRmsNormVjp(DType::F32, {2, 4}, {4}, {2, 4}, 1, 1e-6, {2, 4}, {2, 4});
  ASSERT_TRUE(norm.ok());
  EXPECT_EQ(launchRmsNormVjp(*norm, f, f, f, f, nullptr, nullptr), cudaErrorInvalidValue);
  NormPlan layer = *norm;
  layer.rms = false; // a layer_norm plan is not rms_norm_vjp's
  EXPECT_EQ(launchRmsNormVjp(layer, f, f, f, f, f, nullptr), cudaErrorInvalidValue);
}

} // namespace
} // namespace rp::kernels::cuda::test
