//===- CudaAttentionSinksHostTest.cpp - GPU attention bodies with sinks, on the host ===//
//
// Runs without a GPU. replay::attention and replay::attentionVjp run the CUDA row kernels'
// bodies (attentionRow, attentionVjpQueryRow, attentionVjpKeyRow and the sink-gradient pass
// attentionVjpSinkHead of kernels/cuda/{Fused,AttentionGrad}.h) with attention sinks (GPT-OSS,
// sinks [Hq]) and are compared with cpu::attention / cpu::attentionVjp on random inputs:
//   f32: out rtol 1e-5 + atol 1e-6, dq/dk/dv rtol 1e-5 + atol 5e-6 (the sink-free tolerances
//     of CudaAttentionGradHostTest: the GPU bodies compute in double, the CPU in f32), dsinks
//     rtol 1e-5 + atol 2e-5 (a sum of B S f32-rounded terms on the CPU side; the CPU kernel's
//     own dsinks tolerance, CpuAttentionSinksTest);
//   f64: rtol 1e-12 + atol 1e-12;
//   f16/bf16 (compute in float; the reference is the f64 CPU kernel on the decoded inputs,
//     rounded to the format): within 2 ulps of the format at max(|reference|, 2^-6).
// Sinks are drawn in [-3, 3] and in [5, 8] (a sink that takes most of each row). A sink of
// -inf must give the sink-free kernels' bits and dsinks = 0. Also: the sinks operand's plan
// errors (the CPU kernel's messages) and the launchers' refusal of a sinks pointer that does
// not match the plan. The tensor-core kernels have no host replay; CudaAttentionSinksTest
// (GPU) covers them and the launches.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/Fused.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaAttentionTestUtil.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;
using base::StatusCode;

struct Case {
  Shape q, k;
  bool causal;
  int64_t tile;
  double sinkLo, sinkHi;
};

// MHA, GQA, MQA, causal and not, S = 1 (the sink and one key), tiles of 3 (partial last
// tiles), S = 300 over 128-key tiles and the 128 lanes of the sink pass (several rows per
// lane, two batch rows), sinks small and dominant; every dtype.
TEST(CudaAttentionSinksHost, MatchesCpu) {
  std::mt19937 rng(53);
  const Case cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, false, kAttentionTile, -3, 3},
      {{2, 4, 7, 5}, {2, 2, 7, 5}, true, kAttentionTile, -3, 3},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, true, 3, -3, 3},
      {{1, 6, 7, 6}, {1, 2, 7, 6}, false, 3, 5, 8},
      {{2, 2, 1, 8}, {2, 1, 1, 8}, true, kAttentionTile, -3, 3},
      {{2, 2, 300, 16}, {2, 1, 300, 16}, true, kAttentionTile, -3, 3},
      {{1, 2, 129, 16}, {1, 2, 129, 16}, false, kAttentionTile, 5, 8},
      {{1, 4, 64, 64}, {1, 2, 64, 64}, true, kAttentionTile, -3, 3},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " tile " + std::to_string(c.tile) + " sinks in [" + std::to_string(c.sinkLo) +
                   ", " + std::to_string(c.sinkHi) + "]");
      const SinkInputs in =
          randomSinkInputs(dtype, c.q, c.k, c.causal, c.sinkLo, c.sinkHi, rng);
      ASSERT_OK(in.cpuStatus);
      expectMatchesCpu(in, hostForward(in, c.tile, &in.sinks), hostVjp(in, c.tile, &in.sinks));
    }
}

// A sink of -inf takes no share of any row: the sink-free kernels' bits, and dsinks = 0.
TEST(CudaAttentionSinksHost, MinusInfinityIsNoSink) {
  std::mt19937 rng(59);
  for (DType dtype : kGpuFloatTypes) {
    SCOPED_TRACE(base::dtypeName(dtype));
    SinkInputs in = randomSinkInputs(dtype, {2, 4, 9, 8}, {2, 2, 9, 8}, true, -3, 3, rng);
    ASSERT_OK(in.cpuStatus);
    HostTensor none = in.sinks.clone();
    for (int64_t h = 0; h < none.numElements(); ++h)
      setValue(none, h, -INFINITY);
    expectBitsEqual(hostForward(in, 3, &none), hostForward(in, 3, nullptr), "out");
    const Grads with = hostVjp(in, 3, &none), without = hostVjp(in, 3, nullptr);
    expectBitsEqual(with.dq, without.dq, "dq");
    expectBitsEqual(with.dk, without.dk, "dk");
    expectBitsEqual(with.dv, without.dv, "dv");
    for (int64_t h = 0; h < with.dsinks.numElements(); ++h)
      EXPECT_EQ(valueAt(with.dsinks, h), 0.0) << "dsinks " << h;
  }
}

// The sink shifts every row: with a finite sink the output differs from the sink-free one
// (the comparison above could not tell a kernel that ignores the sink from one that uses it
// only if the sink were negligible; here it is not).
TEST(CudaAttentionSinksHost, SinkChangesTheRows) {
  std::mt19937 rng(61);
  const SinkInputs in = randomSinkInputs(DType::F64, {1, 2, 5, 4}, {1, 2, 5, 4}, false, 1, 2, rng);
  ASSERT_OK(in.cpuStatus);
  const HostTensor with = hostForward(in, kAttentionTile, &in.sinks);
  const HostTensor without = hostForward(in, kAttentionTile, nullptr);
  for (int64_t i = 0; i < with.numElements(); ++i)
    EXPECT_LT(std::fabs(valueAt(with, i)), std::fabs(valueAt(without, i))) << "element " << i;
}

// No query row (B = 0): dsinks is +0 for every head, as the CPU kernel's (the device
// launcher zeroes it the same way).
TEST(CudaAttentionSinksHost, EmptyBatchGivesZeroDsinks) {
  const Shape q{0, 3, 4, 8};
  base::StatusOr<AttentionVjpPlan> plan =
      planAttentionVjp(DType::F32, q, q, q, q, q, 0.5, true, q, q, q);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  ASSERT_OK(planAttentionSinks("attention_vjp", plan->forward, DType::F32, {3}));
  HostTensor sinks(DType::F32, {3}), dsinks = poisoned(DType::F32, {3});
  for (int64_t h = 0; h < 3; ++h)
    setValue(sinks, h, 1.0 + static_cast<double>(h));
  std::vector<double> scratch(plan->scratchBytes / sizeof(double) + 1);
  float none = 0;
  replay::attentionVjp(*plan, &none, &none, &none, &none, &none, &none, &none, &none,
                       scratch.data(), sinks.raw(), dsinks.raw());
  for (int64_t h = 0; h < 3; ++h) {
    EXPECT_EQ(valueAt(dsinks, h), 0.0) << "dsinks " << h;
    EXPECT_FALSE(std::signbit(valueAt(dsinks, h))) << "dsinks " << h << " is -0";
  }
}

TEST(CudaAttentionSinksHost, PlanErrors) {
  const DType f = DType::F32;
  const Shape q{2, 4, 3, 8}, k{2, 2, 3, 8};
  auto t = [](DType d, const Shape &s) { return HostTensor(d, s); };
  struct Bad {
    DType dtype;
    Shape shape;
    const char *message;
  };
  for (const Bad &b : {Bad{f, {3}, "attention: sinks is f32[3], expected f32[4]"},
                       Bad{DType::F64, {4}, "attention: sinks is f64[4], expected f32[4]"},
                       Bad{f, {1, 4}, "attention: sinks is f32[1, 4], expected f32[4]"}}) {
    SCOPED_TRACE(b.message);
    HostTensor out = t(f, q), sinks = t(b.dtype, b.shape);
    const Status cpu = cpu::attention(t(f, q), t(f, k), t(f, k), 1, false, out, &sinks);
    EXPECT_EQ(cpu.message(), b.message);
    base::StatusOr<AttentionPlan> plan = planAttention(f, q, k, k, 1, false, q);
    ASSERT_TRUE(plan.ok());
    const Status gpu = planAttentionSinks("attention", *plan, b.dtype, b.shape);
    EXPECT_EQ(gpu.code(), StatusCode::InvalidArgument);
    EXPECT_EQ(gpu.message(), cpu.message());
    EXPECT_FALSE(plan->sinks);
  }
  base::StatusOr<AttentionVjpPlan> vjp =
      planAttentionVjp(f, q, k, k, q, q, 1, false, q, k, k);
  ASSERT_TRUE(vjp.ok());
  const Status s = planAttentionSinks("attention_vjp", vjp->forward, f, {2});
  EXPECT_EQ(s.message(), "attention_vjp: sinks is f32[2], expected f32[4]");
  ASSERT_OK(planAttentionSinks("attention_vjp", vjp->forward, f, {4}));
  EXPECT_TRUE(vjp->forward.sinks);
}

// The launchers refuse, before touching a device, sinks that do not match the plan.
TEST(CudaAttentionSinksHost, LaunchersCheckTheSinksPointer) {
  const Shape q{1, 2, 4, 8};
  base::StatusOr<AttentionPlan> plain = planAttention(DType::F32, q, q, q, 1, false, q);
  ASSERT_TRUE(plain.ok());
  AttentionPlan withSinks = *plain;
  ASSERT_OK(planAttentionSinks("attention", withSinks, DType::F32, {2}));
  alignas(16) float buf[64] = {};
  void *p = buf;
  EXPECT_EQ(launchAttention(withSinks, p, p, p, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchAttention(*plain, p, p, p, p, nullptr, p), cudaErrorInvalidValue);
  base::StatusOr<AttentionVjpPlan> vjp =
      planAttentionVjp(DType::F32, q, q, q, q, q, 1, false, q, q, q);
  ASSERT_TRUE(vjp.ok());
  AttentionVjpPlan vjpSinks = *vjp;
  ASSERT_OK(planAttentionSinks("attention_vjp", vjpSinks.forward, DType::F32, {2}));
  EXPECT_EQ(launchAttentionVjp(vjpSinks, p, p, p, p, p, p, p, p, p, nullptr),
            cudaErrorInvalidValue); // no sinks
  EXPECT_EQ(launchAttentionVjp(vjpSinks, p, p, p, p, p, p, p, p, p, nullptr, p, nullptr),
            cudaErrorInvalidValue); // sinks without dsinks
  EXPECT_EQ(launchAttentionVjp(*vjp, p, p, p, p, p, p, p, p, p, nullptr, p, p),
            cudaErrorInvalidValue); // sinks for a plan without
}

} // namespace
} // namespace rp::kernels::cuda::test
