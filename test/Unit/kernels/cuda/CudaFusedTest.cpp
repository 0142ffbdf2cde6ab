//===- CudaFusedTest.cpp - GPU fused ops, gathers, generators, AdamW -------===//
//
// Runs the launchers of kernels/cuda/{Fused,Gather,Generators,AdamW}.h on the device and
// compares with the CPU reference kernels (kernels/cpu) and the host optimizer
// (runtime/optim/AdamW.h) on random tensors; outputs are poisoned (0xA5 bytes, a NaN in every
// float format) before each launch so that an element the kernel skips fails. The device
// tests call GTEST_SKIP() when no CUDA device is present; the argument checks need no device
// and always run.
//
// Tolerances:
//   f32: rtol 1e-6 + atol 1e-7 (the device's double exp is within 1 ulp of libm's), attention
//     rtol 1e-5 + atol 1e-6 (the CPU computes attention in f32 with sgemm; online softmax,
//     device exp);  f64: rtol 1e-12 + atol 1e-12;
//   scatter_add, scatter_elements_add (f32, f64): bit-identical to the CPU (each output is the
//     CPU's additions in the CPU's order, in IEEE double, with no contraction);
//   gathers, trilu, integer ranges: bit-identical (data movement, exact integers);
//   range (f32, f64): bit-identical (__dmul_rn / __dadd_rn: the CPU's two roundings);
//   AdamW: bit-identical to runtime::adamwStep and runtime::writeComputeWeights;
//   f16/bf16 (inputs rounded to the format; reference: the f64 CPU kernel on the decoded
//     inputs, rounded to the format): within 2 ulps of the format at max(|reference|, 2^-6).
//     (16-bit scatter updates are multiples of 1/64, so the float sums are exact).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Gather.h"
#include "kernels/cpu/Generators.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cpu/TopK.h"
#include "kernels/cuda/AdamW.h"
#include "kernels/cuda/FlashAttention.h"
#include "kernels/cuda/Fused.h"
#include "kernels/cuda/Gather.h"
#include "kernels/cuda/Generators.h"
#include "kernels/cuda/TopK.h"
#include "base/HostTensor.h"
#include "runtime/optim/AdamW.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;
using base::StatusCode;

/// Skips without a device; stream_ for the launches.
class CudaFused : public CudaStreamTest {};

//===--- swiglu, rope, attention ------------------------------------------===//

TEST_F(CudaFused, SwigluMatchesCpu) {
  std::mt19937 rng(11);
  for (DType dtype : kGpuFloatTypes)
    for (const Shape &shape : {Shape{7}, Shape{3, 5, 8}, Shape{4, 64, 688}}) {
      SCOPED_TRACE(label(dtype, shape));
      const SwigluInputs in = randomSwigluInputs(dtype, shape, rng);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<SwigluPlan> plan = planSwiglu(dtype, shape, shape, shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dGate = upload(in.gate), dUp = upload(in.up);
      auto dOut = poisonedOutput(dtype, shape);
      ASSERT_CUDA_OK(launchSwiglu(*plan, dGate->get(), dUp->get(), dOut->get(), stream_));
      expectFloat(download(*dOut, dtype, shape, stream_), in.want, 1e-6, "swiglu");
    }
}

// The interleaved form (GPT-J) on the device against cpu::rope's.
TEST_F(CudaFused, RopeInterleavedMatchesCpu) {
  std::mt19937 rng(15);
  const std::pair<Shape, Shape> cases[] = {{{2, 16, 4, 4}, {1, 16, 1, 4}},
                                           {{2, 8, 128, 64}, {128, 64}}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &[xs, cs] : cases) {
      SCOPED_TRACE(label(dtype, xs) + " cos " + formatShape(cs));
      const RopeInputs in = randomRopeInputs(dtype, xs, cs, rng, /*interleaved=*/true);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<RopePlan> plan = planRope(dtype, xs, cs, cs, xs, /*interleaved=*/true);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dX = upload(in.x), dC = upload(in.cos), dS = upload(in.sin);
      auto dOut = poisonedOutput(dtype, xs);
      ASSERT_CUDA_OK(launchRope(*plan, dX->get(), dC->get(), dS->get(), dOut->get(), stream_));
      expectFloat(download(*dOut, dtype, xs, stream_), in.want, 1e-6, "rope interleaved");
    }
}

TEST_F(CudaFused, RopeMatchesCpu) {
  std::mt19937 rng(12);
  const std::pair<Shape, Shape> cases[] = {
      {{2, 3, 5, 8}, {2, 3, 5, 8}}, {{2, 3, 5, 8}, {5, 8}},
      {{2, 3, 5, 8}, {2, 1, 5, 8}}, {{6}, {6}},
      {{2, 8, 128, 64}, {128, 64}}, {{2, 4, 16, 32}, {2, 1, 16, 32}}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &[xs, cs] : cases) {
      SCOPED_TRACE(label(dtype, xs) + " cos " + formatShape(cs));
      const RopeInputs in = randomRopeInputs(dtype, xs, cs, rng);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<RopePlan> plan = planRope(dtype, xs, cs, cs, xs);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dX = upload(in.x), dC = upload(in.cos), dS = upload(in.sin);
      auto dOut = poisonedOutput(dtype, xs);
      ASSERT_CUDA_OK(launchRope(*plan, dX->get(), dC->get(), dS->get(), dOut->get(), stream_));
      expectFloat(download(*dOut, dtype, xs, stream_), in.want, 1e-6, "rope");
    }
}

// GQA, MQA, MHA, causal and not, S below, at and above the 128-key tile, D from 4 to 128;
// sliding windows of 1, 100 and 200 keys.
TEST_F(CudaFused, AttentionMatchesCpu) {
  std::mt19937 rng(13);
  const struct {
    Shape q, k;
    bool causal;
    int64_t window;
  } cases[] = {{{2, 4, 7, 5}, {2, 2, 7, 5}, false, 0},      {{2, 4, 7, 5}, {2, 2, 7, 5}, true, 0},
               {{1, 3, 128, 4}, {1, 1, 128, 4}, true, 0},   {{1, 2, 129, 16}, {1, 2, 129, 16}, false, 0},
               {{2, 8, 257, 64}, {2, 2, 257, 64}, true, 0}, {{1, 2, 64, 128}, {1, 1, 64, 128}, false, 0},
               {{2, 2, 1, 8}, {2, 1, 1, 8}, true, 0},       {{2, 4, 7, 5}, {2, 2, 7, 5}, true, 1},
               {{2, 8, 257, 64}, {2, 2, 257, 64}, true, 100},
               {{1, 2, 300, 16}, {1, 1, 300, 16}, true, 200}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " window " + std::to_string(c.window));
      const AttentionInputs in = randomAttentionInputs(dtype, c.q, c.k, c.causal, rng, c.window);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<AttentionPlan> plan =
          planAttention(dtype, c.q, c.k, c.k, in.scale, c.causal, c.q, c.window);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      plan->tensorCores = false; // the row kernel; FlashAttentionMatchesCpu tests the other
      auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v);
      auto dOut = poisonedOutput(dtype, c.q);
      ASSERT_CUDA_OK(launchAttention(*plan, dQ->get(), dK->get(), dV->get(), dOut->get(), stream_));
      HostTensor got = download(*dOut, dtype, c.q, stream_);
      expectFloat(got, in.want, kAttentionF32Rtol, kAttentionF32Atol, "attention");
      // Deterministic: a second run gives the same bits.
      ASSERT_CUDA_OK(launchAttention(*plan, dQ->get(), dK->get(), dV->get(), dOut->get(), stream_));
      expectBitsEqual(download(*dOut, dtype, c.q, stream_), got, "attention rerun");
    }
}

// The tensor-core kernel (FlashAttention.h) for f16 and bf16: GQA, MQA, MHA, causal and not,
// S below, at and past the 64-row/64-key tiles, D = 16 to 128. P is rounded to the storage
// type before P V, so the bound is |got - want| <= 2^-7 max|v| + 2^-7 |want| (bf16; f16: 2^-10
// for both), a few times the rounding of P and of the output; the row kernel's plans
// (tensorCores false) are the f32 and f64 cases of AttentionMatchesCpu. Sliding windows of 1,
// 64 and 100 keys: key tiles wholly before the band are skipped, the band starts inside a tile.
TEST_F(CudaFused, FlashAttentionMatchesCpu) {
  std::mt19937 rng(14);
  const struct {
    Shape q, k;
    bool causal;
    int64_t window;
  } cases[] = {{{1, 16, 1024, 128}, {1, 8, 1024, 128}, true, 0},
               {{2, 4, 100, 64}, {2, 4, 100, 64}, false, 0},
               {{1, 2, 65, 16}, {1, 1, 65, 16}, true, 0},
               {{1, 8, 257, 128}, {1, 2, 257, 128}, true, 0},
               {{2, 2, 1, 32}, {2, 1, 1, 32}, true, 0},
               {{1, 4, 192, 96}, {1, 4, 192, 96}, false, 0},
               {{1, 2, 64, 80}, {1, 1, 64, 80}, true, 0},
               {{1, 8, 1024, 128}, {1, 4, 1024, 128}, true, 100},
               {{1, 2, 257, 64}, {1, 1, 257, 64}, true, 64},
               {{1, 2, 130, 16}, {1, 2, 130, 16}, true, 1}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " window " + std::to_string(c.window));
      const AttentionInputs in = randomAttentionInputs(dtype, c.q, c.k, c.causal, rng, c.window);
      ASSERT_OK(in.cpuStatus);
      base::StatusOr<AttentionPlan> plan =
          planAttention(dtype, c.q, c.k, c.k, in.scale, c.causal, c.q, c.window);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      ASSERT_TRUE(plan->tensorCores);
      auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v);
      auto dOut = poisonedOutput(dtype, c.q);
      ASSERT_CUDA_OK(
          launchFlashAttention(*plan, dQ->get(), dK->get(), dV->get(), dOut->get(), stream_));
      const HostTensor got = convertTo(download(*dOut, dtype, c.q, stream_), DType::F64);
      const HostTensor want = convertTo(in.want, DType::F64);
      const HostTensor v = convertTo(in.v, DType::F64);
      double vmax = 0;
      for (int64_t i = 0; i < v.numElements(); ++i)
        vmax = std::max(vmax, std::fabs(v.data<double>()[i]));
      const double rel = dtype == DType::BF16 ? 0x1p-7 : 0x1p-10;
      int failures = 0;
      for (int64_t i = 0; i < got.numElements() && failures < 5; ++i) {
        const double g = got.data<double>()[i], w = want.data<double>()[i];
        if (!(std::fabs(g - w) <= rel * vmax + rel * std::fabs(w))) {
          ++failures;
          ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
        }
      }
      // launchAttention takes the same kernel; a second run gives the same bits.
      auto dOut2 = poisonedOutput(dtype, c.q);
      ASSERT_CUDA_OK(launchAttention(*plan, dQ->get(), dK->get(), dV->get(), dOut2->get(), stream_));
      expectBitsEqual(download(*dOut2, dtype, c.q, stream_), download(*dOut, dtype, c.q, stream_),
                      "flash attention rerun");
    }
}

//===--- gathers ----------------------------------------------------------===//

TEST_F(CudaFused, GatherMatchesCpu) {
  std::mt19937 rng(21);
  const struct {
    Shape data, indices;
    int64_t axis;
  } cases[] = {{{1000, 64}, {4, 128}, 0},
               {{3, 5, 2}, {4}, 1},
               {{2, 3, 6}, {2, 2}, 2},
               {{5}, {7}, 0},
               {{4, 3}, {0}, 0}};
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1, DType::BF16})
    for (DType index : {DType::I64, DType::I32})
      for (const auto &c : cases) {
        SCOPED_TRACE(label(dtype, c.data) + " indices " + label(index, c.indices));
        HostTensor data = randomTensor(dtype, c.data, rng, -50, 50);
        HostTensor idx = randomIndices(index, c.indices, c.data[c.axis], rng);
        const Shape shape = spliced(c.data, c.axis, c.indices);
        HostTensor cpuData = dtype == DType::BF16 ? convertTo(data, DType::F64) : data.clone();
        HostTensor want(cpuData.dtype(), shape);
        ASSERT_OK(cpu::gather(cpuData, idx, c.axis, want));
        base::StatusOr<GatherPlan> plan =
            planGather(dtype, c.data, index, c.indices, c.axis, shape);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dData = upload(data), dIdx = upload(idx);
        auto dOut = poisonedOutput(dtype, shape);
        DeviceBuffer error(8);
        ASSERT_CUDA_OK(launchGather(*plan, dData->get(), dIdx->get(), dOut->get(),
                                    static_cast<unsigned long long *>(error.get()), stream_));
        HostTensor got = download(*dOut, dtype, shape, stream_);
        ASSERT_OK(readIndexError(plan->index, static_cast<unsigned long long *>(error.get()),
                                 dIdx->get(), stream_));
        expectBitsEqual(got, dtype == DType::BF16 ? convertTo(want, dtype) : std::move(want),
                        "gather");
      }
}

TEST_F(CudaFused, GatherElementsMatchesCpu) {
  std::mt19937 rng(22);
  const struct {
    Shape data, indices;
    int64_t axis;
  } cases[] = {{{64, 1000}, {64, 1}, 1},
               {{4, 6}, {3, 9}, 1},
               {{5, 3}, {2, 3}, 0},
               {{2, 3, 4}, {2, 2, 5}, 2},
               {{6}, {10}, 0}};
  for (DType dtype : {DType::F32, DType::I64, DType::I1, DType::F16})
    for (DType index : {DType::I64, DType::I32})
      for (const auto &c : cases) {
        SCOPED_TRACE(label(dtype, c.data) + " indices " + label(index, c.indices));
        HostTensor data = randomTensor(dtype, c.data, rng, -50, 50);
        HostTensor idx = randomIndices(index, c.indices, c.data[c.axis], rng);
        HostTensor cpuData = is16Bit(dtype) ? convertTo(data, DType::F64) : data.clone();
        HostTensor want(cpuData.dtype(), c.indices);
        ASSERT_OK(cpu::gatherElements(cpuData, idx, c.axis, want));
        base::StatusOr<GatherElementsPlan> plan =
            planGatherElements(dtype, c.data, index, c.indices, c.axis, c.indices);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dData = upload(data), dIdx = upload(idx);
        auto dOut = poisonedOutput(dtype, c.indices);
        ASSERT_CUDA_OK(
            launchGatherElements(*plan, dData->get(), dIdx->get(), dOut->get(), nullptr, stream_));
        expectBitsEqual(download(*dOut, dtype, c.indices, stream_),
                        is16Bit(dtype) ? convertTo(want, dtype) : std::move(want),
                        "gather_elements");
      }
}

// top_k on the GPU equals cpu::topK exactly: router-shaped rows (128 experts, top-8), an inner
// axis, and the whole axis; values with ties.
TEST_F(CudaFused, TopKMatchesCpu) {
  std::mt19937 rng(23);
  const struct {
    Shape x;
    int64_t k, axis;
  } cases[] = {{{300, 128}, 8, 1}, {{4, 9, 5}, 3, 1}, {{6, 7}, 6, 0}};
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool largest : {true, false})
      for (const auto &c : cases) {
        SCOPED_TRACE(label(dtype, c.x) + " k " + std::to_string(c.k));
        HostTensor x(dtype, c.x);
        std::uniform_int_distribution<int> v(-20, 20);
        for (int64_t i = 0; i < x.numElements(); ++i)
          setValue(x, i, v(rng) / 4.0);
        Shape outShape = c.x;
        outShape[c.axis] = c.k;
        HostTensor want(DType::I64, outShape);
        ASSERT_OK(cpu::topK(cpuInput(x), c.k, c.axis, largest, want));
        base::StatusOr<TopKPlan> plan =
            planTopK(dtype, c.x, c.k, c.axis, largest, DType::I64, outShape);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dX = upload(x);
        auto dOut = poisonedOutput(DType::I64, outShape);
        ASSERT_CUDA_OK(launchTopK(*plan, dX->get(), dOut->get(), stream_));
        expectBitsEqual(download(*dOut, DType::I64, outShape, stream_), want, "top_k");
      }
}

// Out-of-range indices: zeros where they select, the first bad position in the error word,
// and readIndexError's OutOfRange message.
TEST_F(CudaFused, GatherOutOfRangeReportsFirstBadIndex) {
  HostTensor data = cpu::test::tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor idx = cpu::test::tensor(DType::I32, {5}, {2, 0, 3, -4, 7});
  base::StatusOr<GatherPlan> plan = planGather(DType::F32, {3, 2}, DType::I32, {5}, 0, {5, 2});
  ASSERT_TRUE(plan.ok());
  auto dData = upload(data), dIdx = upload(idx);
  auto dOut = poisonedOutput(DType::F32, {5, 2});
  DeviceBuffer error(8);
  auto *word = static_cast<unsigned long long *>(error.get());
  ASSERT_CUDA_OK(cudaMemset(word, 0, 8)); // the launcher resets it
  ASSERT_CUDA_OK(launchGather(*plan, dData->get(), dIdx->get(), dOut->get(), word, stream_));
  expectBitsEqual(download(*dOut, DType::F32, {5, 2}, stream_),
                  cpu::test::tensor(DType::F32, {5, 2}, {5, 6, 1, 2, 0, 0, 0, 0, 0, 0}), "gather");
  const Status s = readIndexError(plan->index, word, dIdx->get(), stream_);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "gather: index 3 at row-major position 2 of indices (i32, 5 elements) "
                         "is outside [-3, 3) (dimension 0 of data)");
}

//===--- scatters ---------------------------------------------------------===//

// scatter_add, including the embedding gradient [1000, 64] from 4096 tokens with hot rows
// (a thread per element) and [3000, 256] (a block per row, kScatterAddRowMinInner): f32/f64
// bit for bit with the CPU.
TEST_F(CudaFused, ScatterAddMatchesCpuBitForBit) {
  std::mt19937 rng(31);
  const struct {
    Shape out, indices;
    int64_t axis;
  } cases[] = {{{1000, 64}, {4096}, 0}, {{3000, 256}, {4096}, 0}, {{7, 3}, {2, 5}, 0},
               {{3, 5, 4}, {9}, 1},     {{2, 3, 6}, {3, 3}, 2},    {{4, 3}, {0}, 0},
               {{5}, {12}, 0},          {{2, 7, 160}, {9}, 1}};
  for (DType dtype : kGpuFloatTypes)
    for (DType index : {DType::I64, DType::I32})
      for (const auto &c : cases) {
        SCOPED_TRACE(label(dtype, c.out) + " indices " + label(index, c.indices));
        const ScatterInputs in =
            randomScatterAddInputs(dtype, index, c.out, c.indices, c.axis, rng);
        ASSERT_OK(in.cpuStatus);
        base::StatusOr<ScatterAddPlan> plan =
            planScatterAdd(dtype, in.updates.shape(), index, c.indices, c.axis, c.out);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dUpd = upload(in.updates), dIdx = upload(in.indices);
        auto dOut = poisonedOutput(dtype, c.out);
        DeviceBuffer workspace(plan->workspaceBytes), error(8);
        auto *word = static_cast<unsigned long long *>(error.get());
        ASSERT_CUDA_OK(launchScatterAdd(*plan, dUpd->get(), dIdx->get(), dOut->get(),
                                        workspace.get(), word, stream_));
        HostTensor got = download(*dOut, dtype, c.out, stream_);
        ASSERT_OK(readIndexError(plan->index, word, dIdx->get(), stream_));
        expectExactOrUlps(got, in.want, "scatter_add");
      }
}

// scatter_elements_add: the cross-entropy gradient ([N, 1] into [N, V]) and long lines.
TEST_F(CudaFused, ScatterElementsAddMatchesCpuBitForBit) {
  std::mt19937 rng(32);
  const struct {
    Shape out, updates;
    int64_t axis;
  } cases[] = {{{256, 1000}, {256, 1}, 1},
               {{4, 5}, {4, 12}, 1},
               {{5, 3}, {9, 2}, 0},
               {{2, 3, 4}, {1, 3, 7}, 2},
               {{8}, {20}, 0}};
  for (DType dtype : kGpuFloatTypes)
    for (DType index : {DType::I64, DType::I32})
      for (const auto &c : cases) {
        SCOPED_TRACE(label(dtype, c.out) + " updates " + formatShape(c.updates));
        const ScatterInputs in =
            randomScatterElementsAddInputs(dtype, index, c.out, c.updates, c.axis, rng);
        ASSERT_OK(in.cpuStatus);
        base::StatusOr<ScatterElementsAddPlan> plan =
            planScatterElementsAdd(dtype, c.updates, index, c.updates, c.axis, c.out);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dUpd = upload(in.updates), dIdx = upload(in.indices);
        auto dOut = poisonedOutput(dtype, c.out);
        ASSERT_CUDA_OK(launchScatterElementsAdd(*plan, dUpd->get(), dIdx->get(), dOut->get(),
                                                nullptr, stream_));
        expectExactOrUlps(download(*dOut, dtype, c.out, stream_), in.want, "scatter_elements_add");
      }
}

TEST_F(CudaFused, ScattersSkipOutOfRangeIndices) {
  HostTensor updates = cpu::test::tensor(DType::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor idx = cpu::test::tensor(DType::I64, {4}, {1, -1, 9, -4});
  base::StatusOr<ScatterAddPlan> plan =
      planScatterAdd(DType::F32, {4, 2}, DType::I64, {4}, 0, {3, 2});
  ASSERT_TRUE(plan.ok());
  auto dUpd = upload(updates), dIdx = upload(idx);
  auto dOut = poisonedOutput(DType::F32, {3, 2});
  DeviceBuffer workspace(plan->workspaceBytes), error(8);
  auto *word = static_cast<unsigned long long *>(error.get());
  ASSERT_CUDA_OK(launchScatterAdd(*plan, dUpd->get(), dIdx->get(), dOut->get(), workspace.get(),
                                  word, stream_));
  expectBitsEqual(download(*dOut, DType::F32, {3, 2}, stream_),
                  cpu::test::tensor(DType::F32, {3, 2}, {0, 0, 1, 2, 3, 4}), "scatter_add");
  const Status s = readIndexError(plan->index, word, dIdx->get(), stream_);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "scatter_add: index 9 at row-major position 2 of indices (i64, 4 "
                         "elements) is outside [-3, 3) (dimension 0 of out)");

  base::StatusOr<ScatterElementsAddPlan> plan2 =
      planScatterElementsAdd(DType::F32, {1, 4}, DType::I64, {1, 4}, 1, {1, 3});
  ASSERT_TRUE(plan2.ok());
  HostTensor u2 = cpu::test::tensor(DType::F32, {1, 4}, {1, 2, 4, 8});
  HostTensor i2 = cpu::test::tensor(DType::I64, {1, 4}, {0, 5, 0, -3});
  auto dU2 = upload(u2), dI2 = upload(i2);
  auto dOut2 = poisonedOutput(DType::F32, {1, 3});
  ASSERT_CUDA_OK(
      launchScatterElementsAdd(*plan2, dU2->get(), dI2->get(), dOut2->get(), word, stream_));
  expectBitsEqual(download(*dOut2, DType::F32, {1, 3}, stream_),
                  cpu::test::tensor(DType::F32, {1, 3}, {13, 0, 0}), "scatter_elements_add");
  EXPECT_EQ(readIndexError(plan2->index, word, dI2->get(), stream_).code(), StatusCode::OutOfRange);
}

//===--- range, trilu -----------------------------------------------------===//

TEST_F(CudaFused, RangeMatchesCpu) {
  const double args[][3] = {
      {0, 10, 1}, {0.1, 1.7, 0.3}, {5, -3, -0.7}, {1e7, 1e7 + 3, 0.1}, {-1.5, 100000, 0.25}};
  for (const auto &a : args)
    for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I64, DType::I32}) {
      const bool integer = dtype == DType::I64 || dtype == DType::I32;
      if (integer && (a[0] != std::trunc(a[0]) || a[2] != std::trunc(a[2])))
        continue;
      const double n = std::fmax(std::ceil((a[1] - a[0]) / a[2]), 0.0);
      const Shape shape{static_cast<int64_t>(n)};
      SCOPED_TRACE(label(dtype, shape) + " start " + std::to_string(a[0]));
      base::StatusOr<RangePlan> plan = planRange(dtype, a[0], a[1], a[2], shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      HostTensor want(is16Bit(dtype) ? DType::F64 : dtype, shape);
      ASSERT_OK(cpu::range(a[0], a[1], a[2], want));
      auto dOut = poisonedOutput(dtype, shape);
      ASSERT_CUDA_OK(launchRange(*plan, dOut->get(), stream_));
      expectBitsEqual(download(*dOut, dtype, shape, stream_),
                      is16Bit(dtype) ? convertTo(want, dtype) : std::move(want), "range");
    }
}

TEST_F(CudaFused, TriluMatchesCpu) {
  std::mt19937 rng(41);
  for (DType dtype : {DType::F32, DType::I64, DType::I1, DType::BF16})
    for (const Shape &shape : {Shape{4, 6}, Shape{3, 33, 17}})
      for (int64_t k : {-7, -1, 0, 2})
        for (bool upper : {true, false}) {
          SCOPED_TRACE(label(dtype, shape) + " k " + std::to_string(k) + (upper ? " u" : " l"));
          HostTensor x = randomTensor(dtype, shape, rng, -9, 9);
          HostTensor cpuX = dtype == DType::BF16 ? convertTo(x, DType::F64) : x.clone();
          HostTensor want(cpuX.dtype(), shape);
          ASSERT_OK(cpu::trilu(cpuX, k, upper, want));
          base::StatusOr<TriluPlan> plan = planTrilu(dtype, shape, k, upper, shape);
          ASSERT_TRUE(plan.ok());
          auto dX = upload(x);
          auto dOut = poisonedOutput(dtype, shape);
          ASSERT_CUDA_OK(launchTrilu(*plan, dX->get(), dOut->get(), stream_));
          expectBitsEqual(download(*dOut, dtype, shape, stream_),
                          dtype == DType::BF16 ? convertTo(want, dtype) : std::move(want), "trilu");
        }
}

//===--- AdamW ------------------------------------------------------------===//

TEST_F(CudaFused, AdamWMatchesHostOptimizerBitForBit) {
  std::mt19937 rng(51);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t n = 100003;
  for (DType wdt : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(base::dtypeName(wdt));
    std::vector<float> master(n), grad(n), zeros(n, 0.0f);
    for (auto &x : master)
      x = dist(rng);
    std::vector<float> cMaster = master, cM = zeros, cV = zeros;
    const size_t wBytes = static_cast<size_t>(n) * base::dtypeSize(wdt);
    std::vector<unsigned char> cWeights(wBytes), gWeights(wBytes);
    DeviceBuffer dMaster(n * 4), dM(n * 4), dV(n * 4), dGrad(n * 4), dWeights(wBytes);
    ASSERT_CUDA_OK(cudaMemcpy(dMaster.get(), master.data(), n * 4, cudaMemcpyHostToDevice));
    ASSERT_CUDA_OK(cudaMemset(dM.get(), 0, n * 4));
    ASSERT_CUDA_OK(cudaMemset(dV.get(), 0, n * 4));
    for (int64_t step = 1; step <= 3; ++step) {
      for (auto &g : grad)
        g = dist(rng);
      const float scale = step == 2 ? 0.37f : 1.0f;
      const runtime::AdamWConfig config{1e-3 * static_cast<double>(step), 0.9, 0.95, 1e-8, 0.1};
      runtime::adamwStep(cMaster.data(), cM.data(), cV.data(), grad.data(), n, config, step, scale);
      ASSERT_OK(runtime::writeComputeWeights(cMaster.data(), wdt, cWeights.data(), n));
      AdamWParams params{config.lr,          config.beta1, config.beta2, config.eps,
                         config.weightDecay, step,         scale};
      base::StatusOr<AdamWPlan> plan = planAdamW(params, n, wdt);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      ASSERT_CUDA_OK(cudaMemcpy(dGrad.get(), grad.data(), n * 4, cudaMemcpyHostToDevice));
      ASSERT_CUDA_OK(launchAdamW(*plan, static_cast<float *>(dMaster.get()),
                                 static_cast<float *>(dM.get()), static_cast<float *>(dV.get()),
                                 static_cast<const float *>(dGrad.get()), dWeights.get(), stream_));
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
      std::vector<float> gMaster(n), gM(n), gV(n);
      ASSERT_CUDA_OK(cudaMemcpy(gMaster.data(), dMaster.get(), n * 4, cudaMemcpyDeviceToHost));
      ASSERT_CUDA_OK(cudaMemcpy(gM.data(), dM.get(), n * 4, cudaMemcpyDeviceToHost));
      ASSERT_CUDA_OK(cudaMemcpy(gV.data(), dV.get(), n * 4, cudaMemcpyDeviceToHost));
      ASSERT_CUDA_OK(cudaMemcpy(gWeights.data(), dWeights.get(), wBytes, cudaMemcpyDeviceToHost));
      ASSERT_EQ(std::memcmp(gMaster.data(), cMaster.data(), n * 4), 0) << "master, step " << step;
      ASSERT_EQ(std::memcmp(gM.data(), cM.data(), n * 4), 0) << "m, step " << step;
      ASSERT_EQ(std::memcmp(gV.data(), cV.data(), n * 4), 0) << "v, step " << step;
      ASSERT_EQ(std::memcmp(gWeights.data(), cWeights.data(), wBytes), 0)
          << "weights, step " << step;
    }
  }
}

//===--- argument checks (no device needed) --------------------------------===//

// The launchers reject null pointers before touching the device and launch nothing for
// empty outputs.
TEST(CudaFusedArgs, RejectsBadPointersWithoutADevice) {
  SwigluPlan swiglu{DType::F32, 4};
  float f[4] = {};
  EXPECT_EQ(launchSwiglu(swiglu, nullptr, f, f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSwiglu(SwigluPlan{DType::F32, 0}, nullptr, nullptr, nullptr, nullptr),
            cudaSuccess);
  alignas(8) unsigned char raw[16] = {};
  EXPECT_EQ(launchSwiglu(swiglu, raw + 1, f, f, nullptr), cudaErrorInvalidValue); // misaligned
  base::StatusOr<AttentionPlan> attention =
      planAttention(DType::F32, {1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}, 1, false, {1, 1, 2, 4});
  ASSERT_TRUE(attention.ok());
  EXPECT_EQ(launchAttention(*attention, f, f, nullptr, f, nullptr), cudaErrorInvalidValue);
  base::StatusOr<GatherPlan> gather = planGather(DType::F32, {4}, DType::I64, {2}, 0, {2});
  ASSERT_TRUE(gather.ok());
  EXPECT_EQ(launchGather(*gather, f, nullptr, f, nullptr, nullptr), cudaErrorInvalidValue);
  base::StatusOr<ScatterAddPlan> scatter =
      planScatterAdd(DType::F32, {2}, DType::I64, {2}, 0, {4});
  ASSERT_TRUE(scatter.ok());
  int64_t idx[2] = {};
  EXPECT_EQ(launchScatterAdd(*scatter, f, idx, f, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue); // no workspace
  base::StatusOr<RangePlan> range = planRange(DType::F32, 0, 4, 1, {4});
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(launchRange(*range, nullptr, nullptr), cudaErrorInvalidValue);
  base::StatusOr<AdamWPlan> adamw = planAdamW(AdamWParams{}, 4, DType::F32);
  ASSERT_TRUE(adamw.ok());
  EXPECT_EQ(launchAdamW(*adamw, f, f, nullptr, f, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchAdamW(*planAdamW(AdamWParams{}, 0, DType::F32), nullptr, nullptr, nullptr,
                        nullptr, nullptr, nullptr),
            cudaSuccess);
}

} // namespace
} // namespace rp::kernels::cuda::test
