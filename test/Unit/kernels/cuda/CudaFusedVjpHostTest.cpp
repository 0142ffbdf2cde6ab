//===- CudaFusedVjpHostTest.cpp - The fused VJP kernels' bodies on the host ===//
//
// Runs without a GPU: the bodies of rms_norm_vjp (Norm.h: normVjpDotPartial, normVjpWrite,
// combined in the kernel's order by replay::rmsNormVjpRows), swiglu_vjp and rope_vjp
// (Fused.h: swigluVjpAt, ropeAt with `transposed`) over every point, against the CPU kernels.
// Tolerances: f32 and f64 bit-identical (the bodies compute in double, in the CPU kernels'
// operation order; rms_norm_vjp with one thread per row, and with the plan's threads per row
// within rtol 1e-6 (f32) / 1e-12 (f64): another summation order); f16/bf16 (inputs rounded to
// the format, the reference is the f64 CPU kernel on the decoded inputs, rounded to the
// format) within 2 ulps of the format at max(|reference|, 2^-6). Also the planners' errors.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/HostReplay.h"
#include "test/Unit/kernels/cuda/CudaFusedVjpTestUtil.h"

namespace rp::kernels::cuda::test {
namespace {

TEST(CudaFusedVjpHost, RmsNormVjpMatchesCpu) {
  std::mt19937 rng(41);
  forEachRmsNormVjpCase(rng, [](DType dtype, const Shape &shape, const RmsNormVjpCase &c,
                                const NormPlan &plan) {
    for (int threads : {1, plan.threadsPerRow}) {
      SCOPED_TRACE("threads per row " + std::to_string(threads));
      HostTensor dx = poisoned(dtype, shape), rows = poisoned(dtype, shape);
      visitFloatDType(dtype, [&](auto d) {
        replay::rmsNormVjpRows<decltype(d)::value>(plan, threads, c.x.raw(), c.scale.raw(),
                                                   c.g.raw(), dx.raw(), rows.raw());
      });
      if (threads == 1) {
        expectExactOrUlps(dx, c.wantDx, "dx");
        expectExactOrUlps(rows, c.wantRows, "dscale_rows");
      } else {
        expectFloat(dx, c.wantDx, 1e-6, "dx");
        expectFloat(rows, c.wantRows, 1e-6, "dscale_rows");
      }
    }
  });
}

TEST(CudaFusedVjpHost, SwigluVjpMatchesCpu) {
  std::mt19937 rng(42);
  forEachSwigluVjpCase(rng, [](DType dtype, const Shape &shape, const SwigluVjpCase &c,
                               const SwigluPlan &plan) {
    HostTensor dgate = poisoned(dtype, shape), dup = poisoned(dtype, shape);
    replay::swigluVjp(plan, c.gate.raw(), c.up.raw(), c.g.raw(), dgate.raw(), dup.raw());
    expectExactOrUlps(dgate, c.wantGate, "dgate");
    expectExactOrUlps(dup, c.wantUp, "dup");
  });
}

TEST(CudaFusedVjpHost, RopeVjpMatchesCpu) {
  std::mt19937 rng(43);
  forEachRopeVjpCase(rng, [](DType dtype, const Shape &shape, const RopeVjpCase &c,
                             const RopePlan &plan) {
    HostTensor dx = poisoned(dtype, shape);
    replay::rope(plan, c.g.raw(), c.cos.raw(), c.sin.raw(), dx.raw());
    expectExactOrUlps(dx, c.want, "dx");
  });
}

TEST(CudaFusedVjpHost, PlannersRejectWhatTheCpuRejects) {
  const DType f = DType::F32;
  const HostTensor x(f, {2, 8}), w(f, {8}), badW(f, {4}), g24(f, {2, 4});
  HostTensor out(f, {2, 8}), out2(f, {2, 8});
  EXPECT_EQ(planRmsNormVjp(f, {2, 8}, {4}, {2, 8}, 1, 1e-6, {2, 8}, {2, 8}).status(),
            cpu::rmsNormVjp(x, badW, x, 1, 1e-6, out, out2));
  EXPECT_EQ(planRmsNormVjp(f, {2, 8}, {8}, {2, 4}, 1, 1e-6, {2, 8}, {2, 8}).status(),
            cpu::rmsNormVjp(x, w, g24, 1, 1e-6, out, out2));
  EXPECT_EQ(planSwigluVjp(f, {2, 8}, {2, 8}, {2, 4}, {2, 8}, {2, 8}).status(),
            cpu::swigluVjp(x, x, g24, out, out2));
  const HostTensor odd(f, {2, 4, 5}), t6(f, {4, 6}), t4(f, {4, 4}), g6(f, {2, 4, 6});
  HostTensor dx(f, {2, 4, 6}), dxOdd(f, {2, 4, 5});
  EXPECT_EQ(planRopeVjp(f, {2, 4, 5}, {4, 6}, {4, 6}, {2, 4, 5}).status(),
            cpu::ropeVjp(odd, t6, t6, dxOdd));
  EXPECT_EQ(planRopeVjp(f, {2, 4, 6}, {4, 4}, {4, 4}, {2, 4, 6}).status(),
            cpu::ropeVjp(g6, t4, t4, dx));
  EXPECT_EQ(planSwigluVjp(DType::I64, {2}, {2}, {2}, {2}, {2}).status().message(),
            "swiglu_vjp: gate has dtype i64, expected f32, f64, f16 or bf16");
}

} // namespace
} // namespace rp::kernels::cuda::test
