//===- CudaAttentionGradHostTest.cpp - attention_vjp's GPU bodies on the host ===//
//
// Runs without a GPU. replay::attentionVjp runs the CUDA kernel's per-row bodies
// (attentionVjpQueryRow, attentionVjpKeyRow of kernels/cuda/AttentionGrad.h) over every row
// with SerialBlock, and is compared with cpu::attentionVjp on random inputs:
//   f32: rtol 1e-5 + atol 5e-6 (the GPU bodies compute in double, the CPU kernel in f32 with
//     sgemm: dk and dv sum up to G S terms in f32; the CPU kernel's own f32 VJP tolerance);
//   f64: rtol 1e-12 + atol 1e-12;
//   f16/bf16 (compute in float; the reference is the f64 CPU kernel on the decoded inputs,
//     rounded to the format): within 2 ulps of the format at max(|reference|, 2^-6).
// Tiles of 3 (many, a partial last one) and the device's 128 with S = 300 exercise both
// passes' tiling. Also: the plan's errors (the CPU kernel's messages) and the scratch sizes.
// The launches, shared memory and __syncthreads are covered by CudaAttentionGradTest (GPU).
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

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;
using base::StatusCode;

struct Grads {
  HostTensor dq, dk, dv;
};

/// replay::attentionVjp with key/query tiles of `tile` and sliding `window` (0: none).
Grads hostAttentionVjp(const AttentionVjpInputs &in, bool causal, int64_t tile,
                       int64_t window = 0) {
  base::StatusOr<AttentionVjpPlan> plan =
      planAttentionVjp(in.q.dtype(), in.q.shape(), in.k.shape(), in.v.shape(), in.out.shape(),
                       in.dout.shape(), in.scale, causal, in.q.shape(), in.k.shape(),
                       in.k.shape(), window);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  plan->tile = tile;
  Grads g{poisoned(in.q.dtype(), in.q.shape()), poisoned(in.q.dtype(), in.k.shape()),
          poisoned(in.q.dtype(), in.k.shape())};
  std::vector<double> scratch(plan->scratchBytes / sizeof(double) + 1);
  replay::attentionVjp(*plan, in.q.raw(), in.k.raw(), in.v.raw(), in.out.raw(), in.dout.raw(),
                       g.dq.raw(), g.dk.raw(), g.dv.raw(), scratch.data());
  return g;
}

struct Case {
  Shape q, k;
  bool causal;
  int64_t tile;
};

// MHA, GQA (2 and 3 query heads per k/v head), MQA, causal and not, S = 1, tiles of 3 over
// S = 7 and 10 (partial last tiles), the device's tile of 128 over S = 300 (three tiles), and
// the device test's shapes (S = 128, 129, 257; D up to 128), every dtype.
TEST(CudaAttentionGradHost, MatchesCpu) {
  std::mt19937 rng(41);
  const Case cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, false, kAttentionTile},
      {{2, 4, 7, 5}, {2, 2, 7, 5}, true, kAttentionTile},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, true, 3},
      {{1, 6, 7, 6}, {1, 2, 7, 6}, false, 3},
      {{2, 2, 1, 8}, {2, 1, 1, 8}, true, kAttentionTile},
      {{1, 2, 1, 3}, {1, 2, 1, 3}, false, 3},
      {{1, 2, 300, 16}, {1, 1, 300, 16}, true, kAttentionTile},
      {{1, 1, 300, 8}, {1, 1, 300, 8}, false, kAttentionTile},
      {{1, 3, 128, 4}, {1, 1, 128, 4}, true, kAttentionTile},
      {{1, 2, 129, 16}, {1, 2, 129, 16}, false, kAttentionTile},
      {{2, 6, 257, 64}, {2, 2, 257, 64}, true, kAttentionTile},
      {{1, 2, 64, 128}, {1, 1, 64, 128}, false, kAttentionTile},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " tile " + std::to_string(c.tile));
      const AttentionVjpInputs in = randomAttentionVjpInputs(dtype, c.q, c.k, c.causal, rng);
      ASSERT_OK(in.cpuStatus);
      const Grads g = hostAttentionVjp(in, c.causal, c.tile);
      expectFloat(g.dq, in.wantDq, kAttentionF32Rtol, kAttentionVjpF32Atol, "dq");
      expectFloat(g.dk, in.wantDk, kAttentionF32Rtol, kAttentionVjpF32Atol, "dk");
      expectFloat(g.dv, in.wantDv, kAttentionF32Rtol, kAttentionVjpF32Atol, "dv");
    }
}

// Sliding windows: 1 key, windows inside and across query/key tiles of 3, the device's tile
// of 128 with windows of 100 and 200 over S = 300 (pass 2's query range ends inside a
// tile), grouped-query heads, every dtype.
TEST(CudaAttentionGradHost, WindowMatchesCpu) {
  std::mt19937 rng(47);
  struct WindowCase {
    Shape q, k;
    int64_t tile, window;
  };
  const WindowCase cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, kAttentionTile, 1},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, 3, 2},
      {{1, 6, 11, 6}, {1, 2, 11, 6}, 3, 5},
      {{1, 2, 300, 16}, {1, 1, 300, 16}, kAttentionTile, 100},
      {{1, 2, 300, 8}, {1, 2, 300, 8}, kAttentionTile, 200},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const WindowCase &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + " tile " +
                   std::to_string(c.tile) + " window " + std::to_string(c.window));
      const AttentionVjpInputs in = randomAttentionVjpInputs(dtype, c.q, c.k, true, rng, c.window);
      ASSERT_OK(in.cpuStatus);
      const Grads g = hostAttentionVjp(in, true, c.tile, c.window);
      expectFloat(g.dq, in.wantDq, kAttentionF32Rtol, kAttentionVjpF32Atol, "dq");
      expectFloat(g.dk, in.wantDk, kAttentionF32Rtol, kAttentionVjpF32Atol, "dk");
      expectFloat(g.dv, in.wantDv, kAttentionF32Rtol, kAttentionVjpF32Atol, "dv");
    }
}

// The tile does not change the sums' order within a key row, only where the lse's online
// rescaling happens: tiles of 3 and 128 agree to rounding (f64).
TEST(CudaAttentionGradHost, TileOnlyRounds) {
  std::mt19937 rng(43);
  const AttentionVjpInputs in =
      randomAttentionVjpInputs(DType::F64, {1, 2, 20, 4}, {1, 1, 20, 4}, true, rng);
  ASSERT_OK(in.cpuStatus);
  const Grads a = hostAttentionVjp(in, true, 3), b = hostAttentionVjp(in, true, kAttentionTile);
  expectClose(a.dq, b.dq, 1e-13, 1e-13, "dq");
  expectClose(a.dk, b.dk, 1e-13, 1e-13, "dk");
  expectClose(a.dv, b.dv, 1e-13, 1e-13, "dv");
}

TEST(CudaAttentionGradHost, PlanGeometry) {
  base::StatusOr<AttentionVjpPlan> p = planAttentionVjp(
      DType::BF16, {2, 6, 5, 16}, {2, 3, 5, 16}, {2, 3, 5, 16}, {2, 6, 5, 16}, {2, 6, 5, 16}, 0.5,
      true, {2, 6, 5, 16}, {2, 3, 5, 16}, {2, 3, 5, 16});
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->forward.groups, 2);
  EXPECT_EQ(p->forward.rows, 60);
  EXPECT_EQ(p->keyRows, 30);
  EXPECT_EQ(p->sharedBytes, (4 * 16 + 2 * kAttentionTile) * sizeof(float));
  EXPECT_EQ(p->scratchBytes, 2 * 60 * sizeof(float));
  EXPECT_TRUE(p->tensorCores); // bf16, D = 16: the tensor-core backward's
  EXPECT_EQ(p->forward.rows, 60);
  EXPECT_GE(p->scratchBytes, flashAttentionBackwardScratchBytes(p->forward));
  base::StatusOr<AttentionVjpPlan> d =
      planAttentionVjp(DType::F32, {1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4},
                       {1, 1, 2, 4}, 1, false, {1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->scratchBytes, 2 * 2 * sizeof(double)); // f32 computes in double
  EXPECT_FALSE(d->tensorCores);
  const Shape h{1, 2, 3, 8}; // f16 with D = 8: below the tensor cores' 16
  base::StatusOr<AttentionVjpPlan> small =
      planAttentionVjp(DType::F16, h, h, h, h, h, 1, false, h, h, h);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->tensorCores);
}

/// The plan fails with the CPU kernel's InvalidArgument message.
template <typename T> void expectSameError(const Status &cpu, const base::StatusOr<T> &gpu) {
  EXPECT_EQ(cpu.code(), StatusCode::InvalidArgument) << cpu.toString();
  ASSERT_FALSE(gpu.ok()) << "the GPU plan accepted what the CPU rejects: " << cpu.toString();
  EXPECT_EQ(gpu.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(gpu.status().message(), cpu.message());
}

TEST(CudaAttentionGradHost, PlanErrors) {
  const DType f = DType::F32;
  auto t = [](DType d, const Shape &s) { return HostTensor(d, s); };
  const Shape q{2, 4, 3, 8}, k{2, 2, 3, 8};
  HostTensor dq = t(f, q), dk = t(f, k), dv = t(f, k);
  // q of rank 2; k with 3 heads for 4; v, out, dout, dq, dk, dv of the wrong shape.
  expectSameError(
      cpu::attentionVjp(t(f, {2, 3}), t(f, k), t(f, k), t(f, q), t(f, q), 1, false, dq, dk, dv),
      planAttentionVjp(f, {2, 3}, k, k, q, q, 1, false, q, k, k));
  const Shape k3{2, 3, 3, 8};
  expectSameError(
      cpu::attentionVjp(t(f, q), t(f, k3), t(f, k3), t(f, q), t(f, q), 1, false, dq, dk, dv),
      planAttentionVjp(f, q, k3, k3, q, q, 1, false, q, k, k));
  const Shape bad{2, 4, 2, 8};
  struct Bad {
    int which; // 0 v, 1 out, 2 dout, 3 dq, 4 dk, 5 dv
    const char *message;
  };
  for (Bad b : {Bad{0, "attention_vjp: v is [2, 4, 2, 8], expected [2, 2, 3, Dv]"},
                Bad{1, "attention_vjp: out is f32[2, 4, 2, 8], expected f32[2, 4, 3, 8]"},
                Bad{2, "attention_vjp: dout is f32[2, 4, 2, 8], expected f32[2, 4, 3, 8]"},
                Bad{3, "attention_vjp: dq is f32[2, 4, 2, 8], expected f32[2, 4, 3, 8]"},
                Bad{4, "attention_vjp: dk is f32[2, 4, 2, 8], expected f32[2, 2, 3, 8]"},
                Bad{5, "attention_vjp: dv is f32[2, 4, 2, 8], expected f32[2, 2, 3, 8]"}}) {
    SCOPED_TRACE(b.message);
    Shape s[6] = {k, q, q, q, k, k};
    s[b.which] = bad;
    HostTensor r[3] = {t(f, s[3]), t(f, s[4]), t(f, s[5])};
    const Status cpu = cpu::attentionVjp(t(f, q), t(f, k), t(f, s[0]), t(f, s[1]), t(f, s[2]), 1,
                                         false, r[0], r[1], r[2]);
    EXPECT_EQ(cpu.message(), b.message);
    expectSameError(cpu, planAttentionVjp(f, q, k, s[0], s[1], s[2], 1, false, s[3], s[4], s[5]));
  }
  const Shape wide{1, 1, 2, 2048};
  base::StatusOr<AttentionVjpPlan> p =
      planAttentionVjp(f, wide, wide, wide, wide, wide, 1, false, wide, wide, wide);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "attention_vjp: head dimension 2048 exceeds the GPU kernel's limit of 1024");
  base::StatusOr<AttentionVjpPlan> i = planAttentionVjp(
      DType::I64, q, k, k, q, q, 1, false, q, k, k);
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(i.status().message().find("attention_vjp: q has dtype i64"), std::string::npos)
      << i.status().message();
}

} // namespace
} // namespace rp::kernels::cuda::test
