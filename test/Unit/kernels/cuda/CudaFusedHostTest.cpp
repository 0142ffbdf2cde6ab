//===- CudaFusedHostTest.cpp - GPU kernel bodies run on the host -----------===//
//
// Runs without a GPU. The CUDA kernels of kernels/cuda/{Fused,Gather,Generators,AdamW}.h keep
// their per-element (per-row for attention) bodies in RP_HOST_DEVICE functions; this test
// loops those same functions over every index on host buffers, the way the kernels'
// grid-stride loops do, and compares with the CPU reference kernels (kernels/cpu) and the
// host optimizer (runtime/optim/AdamW.h) on random tensors. It also checks every plan
// function's errors, mostly against the CPU kernel's message for the same bad input.
//
// Tolerances (the host runs the bodies with the same libm and the same operation order as the
// CPU kernels, hence the exact comparisons):
//   rope (f32, f64), swiglu (f64): bit-identical to the CPU kernels; swiglu f32: rtol 1e-6
//     (the CPU computes it in f32 with a vectorised exp, the body in double: a few ulp);
//   attention: f32 rtol 1e-5 + atol 1e-6 (the CPU computes in f32 with sgemm, the body in
//     double; the CPU kernels' own f32 tolerance), f64 rtol 1e-12 + atol 1e-12;
//   gathers, trilu, integer ranges: bit-identical (data movement, exact integers);
//   scatter_add, scatter_elements_add (f32, f64): bit-identical (same additions, same order);
//   range (f32, f64): bit-identical; f16/bf16: the correctly rounded f64 range;
//   AdamW: bit-identical to runtime::adamwStep and runtime::writeComputeWeights;
//   f16/bf16 (inputs rounded to the format, the reference is the f64 CPU kernel on the
//     decoded inputs, rounded to the format): within 2 ulps of the format at
//     max(|reference|, 2^-6) (near zero, float compute errors exceed ulps of tiny values).
//     (16-bit scatter updates are multiples of 1/64, so the float sums are exact).
//
// Not covered here (the device test test/Unit/kernels/cuda/CudaFusedTest.cpp covers them): launch
// geometry, the attention kernel's thread striding, shared memory and __syncthreads, the
// device math library (exp), the __dadd_rn / __fmul_rn ... intrinsic paths, atomicMin on the
// index-error word and its reset, the order of the scatter_add kernels on the stream, and
// readIndexError.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Gather.h"
#include "kernels/cpu/Generators.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cpu/TopK.h"
#include "kernels/cuda/AdamW.h"
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

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;
using base::StatusCode;

//===--- plan errors ------------------------------------------------------===//

/// The GPU plan fails like the CPU kernel: InvalidArgument with the same message.
template <typename T> void expectSameError(const Status &cpu, const base::StatusOr<T> &gpu) {
  EXPECT_EQ(cpu.code(), StatusCode::InvalidArgument) << cpu.toString();
  ASSERT_FALSE(gpu.ok()) << "the GPU plan accepted what the CPU rejects: " << cpu.toString();
  EXPECT_EQ(gpu.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(gpu.status().message(), cpu.message());
}

/// The plan fails with InvalidArgument and exactly `message`.
template <typename T>
void expectError(const base::StatusOr<T> &gpu, const std::string &message) {
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(gpu.status().message(), message);
}

//===--- host runs of the kernel bodies ------------------------------------===//

HostTensor hostSwiglu(const HostTensor &gate, const HostTensor &up) {
  base::StatusOr<SwigluPlan> plan =
      planSwiglu(gate.dtype(), gate.shape(), up.shape(), gate.shape());
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(gate.dtype(), gate.shape());
  visitFloatDType(gate.dtype(), [&](auto tag) {
    for (int64_t i = 0; i < plan->numel; ++i)
      swigluAt<decltype(tag)::value>(*plan, gate.raw(), up.raw(), out.raw(), i);
  });
  return out;
}

HostTensor hostRope(const HostTensor &x, const HostTensor &cos, const HostTensor &sin,
                    bool interleaved = false) {
  base::StatusOr<RopePlan> plan =
      planRope(x.dtype(), x.shape(), cos.shape(), sin.shape(), x.shape(), interleaved);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(x.dtype(), x.shape());
  visitFloatDType(x.dtype(), [&](auto tag) {
    for (int64_t i = 0; i < plan->numel; ++i)
      ropeAt<decltype(tag)::value>(*plan, x.raw(), cos.raw(), sin.raw(), out.raw(), i);
  });
  return out;
}

/// attention through attentionRow with a SerialBlock; `tile` overrides the key tile; `window`
/// a sliding window (0: none).
HostTensor hostAttention(const HostTensor &q, const HostTensor &k, const HostTensor &v,
                         double scale, bool causal, int64_t tile = kAttentionTile,
                         int64_t window = 0) {
  base::StatusOr<AttentionPlan> plan =
      planAttention(q.dtype(), q.shape(), k.shape(), v.shape(), scale, causal, q.shape(), window);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  plan->tile = tile;
  HostTensor out = poisoned(q.dtype(), q.shape());
  visitFloatDType(q.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using C = typename DTypeTraits<D>::Compute;
    std::vector<C> scratch(static_cast<size_t>(2 * plan->dim + 2 * plan->tile));
    for (int64_t row = 0; row < plan->rows; ++row)
      attentionRow<D>(*plan, q.raw(), k.raw(), v.raw(), out.raw(), row, SerialBlock{},
                      scratch.data());
  });
  return out;
}

/// Runs the index check of `spec` over every index; returns the error word.
unsigned long long hostIndexCheck(const IndexSpec &spec, const HostTensor &indices) {
  unsigned long long word = kNoIndexError;
  visitIndex(spec.dtype, [&](auto index) {
    for (int64_t p = 0; p < spec.count; ++p)
      indexCheckAt<decltype(index)::value>(spec, indices.raw(), &word, p);
  });
  return word;
}

HostTensor hostGather(const HostTensor &data, const HostTensor &indices, int64_t axis,
                      unsigned long long *error = nullptr) {
  const Shape shape = spliced(data.shape(), axis, indices.shape());
  base::StatusOr<GatherPlan> plan =
      planGather(data.dtype(), data.shape(), indices.dtype(), indices.shape(), axis, shape);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(data.dtype(), shape);
  visitBits(base::dtypeSize(data.dtype()), [&](auto bits) {
    visitIndex(indices.dtype(), [&](auto index) {
      for (int64_t o = 0; o < plan->numel; ++o)
        gatherAt<decltype(bits), decltype(index)::value>(*plan, data.raw(), indices.raw(),
                                                         out.raw(), o);
    });
  });
  if (error)
    *error = hostIndexCheck(plan->index, indices);
  return out;
}

HostTensor hostGatherElements(const HostTensor &data, const HostTensor &indices, int64_t axis,
                              unsigned long long *error = nullptr) {
  base::StatusOr<GatherElementsPlan> plan = planGatherElements(
      data.dtype(), data.shape(), indices.dtype(), indices.shape(), axis, indices.shape());
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(data.dtype(), indices.shape());
  visitBits(base::dtypeSize(data.dtype()), [&](auto bits) {
    visitIndex(indices.dtype(), [&](auto index) {
      for (int64_t i = 0; i < plan->numel; ++i)
        gatherElementsAt<decltype(bits), decltype(index)::value>(*plan, data.raw(), indices.raw(),
                                                                 out.raw(), i);
    });
  });
  if (error)
    *error = hostIndexCheck(plan->index, indices);
  return out;
}

HostTensor hostScatterAdd(const HostTensor &updates, const HostTensor &indices, int64_t axis,
                          const Shape &outShape, unsigned long long *error = nullptr) {
  base::StatusOr<ScatterAddPlan> plan = planScatterAdd(
      updates.dtype(), updates.shape(), indices.dtype(), indices.shape(), axis, outShape);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(updates.dtype(), outShape);
  EXPECT_EQ(plan->workspaceBytes, 3 * sizeof(int64_t) * static_cast<size_t>(plan->count));
  std::vector<int64_t> workspace(3 * static_cast<size_t>(plan->count) + 1, -7);
  const ScatterAddWorkspace ws = scatterAddWorkspace(*plan, workspace.data());
  visitIndex(indices.dtype(), [&](auto index) {
    for (int64_t j = 0; j < plan->count; ++j)
      scatterKeyAt<decltype(index)::value>(*plan, indices.raw(), ws.keys, j);
  });
  for (int64_t j = 0; j < plan->count; ++j)
    scatterRankAt(*plan, ws.keys, ws.sorted, ws.order, j);
  // The ranks are a permutation: every slot of `order` was written once.
  std::vector<int> seen(static_cast<size_t>(plan->count), 0);
  for (int64_t g = 0; g < plan->count; ++g) {
    EXPECT_TRUE(ws.order[g] >= 0 && ws.order[g] < plan->count);
    if (ws.order[g] >= 0 && ws.order[g] < plan->count)
      ++seen[static_cast<size_t>(ws.order[g])];
    if (g > 0) { // sorted by (target, position)
      EXPECT_TRUE(ws.sorted[g - 1] < ws.sorted[g] ||
                  (ws.sorted[g - 1] == ws.sorted[g] && ws.order[g - 1] < ws.order[g]));
    }
  }
  for (int s : seen)
    EXPECT_EQ(s, 1);
  // As the launcher: a block per row for wide rows (every lane of a 4-thread block), else a
  // thread per element.
  visitFloatDType(updates.dtype(), [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    if (plan->inner >= kScatterAddRowMinInner) {
      for (int64_t row = 0; row < plan->outer * plan->size; ++row) {
        int64_t begin = -1, end = -1;
        scatterAddGroup(*plan, ws.sorted, row % plan->size, begin, end);
        for (int64_t lane = 0; lane < 4; ++lane)
          scatterAddRowAt<D>(*plan, updates.raw(), ws.order, out.raw(), row, begin, end, lane, 4);
      }
    } else {
      for (int64_t e = 0; e < plan->numel; ++e)
        scatterAddAt<D>(*plan, updates.raw(), ws.sorted, ws.order, out.raw(), e);
    }
  });
  if (error)
    *error = hostIndexCheck(plan->index, indices);
  return out;
}

HostTensor hostScatterElementsAdd(const HostTensor &updates, const HostTensor &indices,
                                  int64_t axis, const Shape &outShape,
                                  unsigned long long *error = nullptr) {
  base::StatusOr<ScatterElementsAddPlan> plan = planScatterElementsAdd(
      updates.dtype(), updates.shape(), indices.dtype(), indices.shape(), axis, outShape);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(updates.dtype(), outShape);
  visitFloatDType(updates.dtype(), [&](auto tag) {
    visitIndex(indices.dtype(), [&](auto index) {
      for (int64_t e = 0; e < plan->numel; ++e)
        scatterElementsAddAt<decltype(tag)::value, decltype(index)::value>(
            *plan, updates.raw(), indices.raw(), out.raw(), e);
    });
  });
  if (error)
    *error = hostIndexCheck(plan->index, indices);
  return out;
}

HostTensor hostRange(const RangePlan &plan) {
  HostTensor out = poisoned(plan.dtype, {plan.n});
  visitDType(plan.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    if constexpr (D != DType::I1)
      for (int64_t i = 0; i < plan.n; ++i)
        rangeAt<D>(plan, out.raw(), i);
  });
  return out;
}

HostTensor hostTrilu(const HostTensor &x, int64_t k, bool upper) {
  base::StatusOr<TriluPlan> plan = planTrilu(x.dtype(), x.shape(), k, upper, x.shape());
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  HostTensor out = poisoned(x.dtype(), x.shape());
  visitBits(base::dtypeSize(x.dtype()), [&](auto bits) {
    for (int64_t e = 0; e < plan->numel; ++e)
      triluAt<decltype(bits)>(*plan, x.raw(), out.raw(), e);
  });
  return out;
}

//===--- swiglu -----------------------------------------------------------===//

// Every float dtype on several shapes (empty, 1-D, 3-D), gates wide enough for both sigmoid
// branches and large |gate|.
TEST(CudaFusedHost, SwigluMatchesCpu) {
  std::mt19937 rng(11);
  for (DType dtype : kGpuFloatTypes)
    for (const Shape &shape : {Shape{0}, Shape{7}, Shape{3, 5, 8}}) {
      SCOPED_TRACE(label(dtype, shape));
      const SwigluInputs in = randomSwigluInputs(dtype, shape, rng);
      ASSERT_OK(in.cpuStatus);
      expectExactOrCloseF32(hostSwiglu(in.gate, in.up), in.want, kSwigluF32Rtol, "swiglu");
    }
}

//===--- rope -------------------------------------------------------------===//

// cos/sin of the full shape, [S, D], [B, 1, S, D], [1, 1, S, D], a 1-D x, and D = 2.
TEST(CudaFusedHost, RopeMatchesCpuWithBroadcastCosSin) {
  std::mt19937 rng(12);
  const std::pair<Shape, Shape> cases[] = {{{2, 3, 5, 8}, {2, 3, 5, 8}},
                                           {{2, 3, 5, 8}, {5, 8}},
                                           {{2, 3, 5, 8}, {2, 1, 5, 8}},
                                           {{2, 3, 5, 8}, {1, 1, 5, 8}},
                                           {{6}, {6}},
                                           {{4, 2}, {1, 2}},
                                           {{3, 1, 4, 6}, {3, 1, 1, 6}},
                                           {{2, 0, 4}, {4}}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &[xs, cs] : cases) {
      SCOPED_TRACE(label(dtype, xs) + " cos " + formatShape(cs));
      const RopeInputs in = randomRopeInputs(dtype, xs, cs, rng);
      ASSERT_OK(in.cpuStatus);
      expectExactOrUlps(hostRope(in.x, in.cos, in.sin), in.want, "rope");
    }
}

// The interleaved form (GPT-J): the same cases, against cpu::rope's interleaved form; and the
// two forms differ (a body ignoring the flag fails).
TEST(CudaFusedHost, RopeInterleavedMatchesCpu) {
  std::mt19937 rng(14);
  const std::pair<Shape, Shape> cases[] = {{{2, 3, 5, 8}, {2, 3, 5, 8}},
                                           {{2, 16, 4, 4}, {1, 16, 1, 4}},
                                           {{2, 3, 5, 8}, {5, 8}},
                                           {{6}, {6}},
                                           {{4, 2}, {1, 2}},
                                           {{2, 0, 4}, {4}}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &[xs, cs] : cases) {
      SCOPED_TRACE(label(dtype, xs) + " cos " + formatShape(cs));
      const RopeInputs in = randomRopeInputs(dtype, xs, cs, rng, /*interleaved=*/true);
      ASSERT_OK(in.cpuStatus);
      expectExactOrUlps(hostRope(in.x, in.cos, in.sin, true), in.want, "rope interleaved");
    }
  const RopeInputs in = randomRopeInputs(DType::F64, {2, 8}, {2, 8}, rng, /*interleaved=*/true);
  const HostTensor halves = hostRope(in.x, in.cos, in.sin);
  double diff = 0;
  for (int64_t i = 0; i < 16; ++i)
    diff = std::max(diff, std::fabs(halves.data<double>()[i] - in.want.data<double>()[i]));
  EXPECT_GT(diff, 0.1);
}

//===--- attention --------------------------------------------------------===//

struct AttentionCase {
  Shape q, k;
  bool causal;
  int64_t tile;
};

// GQA (Hkv = 2 of Hq = 4), MQA (Hkv = 1), MHA, causal and not, one key, tiles of 3 keys (many
// tiles, a partial last one) and the device's 128 with S = 300 (three tiles).
TEST(CudaFusedHost, AttentionMatchesCpu) {
  std::mt19937 rng(13);
  const AttentionCase cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, false, kAttentionTile},
      {{2, 4, 7, 5}, {2, 2, 7, 5}, true, kAttentionTile},
      {{1, 3, 9, 4}, {1, 1, 9, 4}, true, 3},
      {{1, 2, 10, 6}, {1, 2, 10, 6}, false, 3},
      {{2, 2, 1, 8}, {2, 1, 1, 8}, true, kAttentionTile},
      {{1, 2, 300, 16}, {1, 1, 300, 16}, true, kAttentionTile},
      {{1, 1, 300, 8}, {1, 1, 300, 8}, false, kAttentionTile},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const AttentionCase &c : cases) {
      if (dtype == DType::F16 && c.q[2] > 100)
        continue; // one 16-bit format (bf16) suffices for the long sequences
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : "") +
                   " tile " + std::to_string(c.tile));
      const AttentionInputs in = randomAttentionInputs(dtype, c.q, c.k, c.causal, rng);
      ASSERT_OK(in.cpuStatus);
      HostTensor got = hostAttention(in.q, in.k, in.v, in.scale, c.causal, c.tile);
      if (is16Bit(dtype))
        expectUlps(got, convertTo(in.want, dtype), "attention");
      else if (dtype == DType::F32)
        expectClose(got, in.want, kAttentionF32Rtol, kAttentionF32Atol, "attention");
      else
        expectClose(got, in.want, 1e-12, 1e-12, "attention");
    }
}

// Sliding windows (causal): 1 key, a window inside one tile of 3, windows across tile
// boundaries (5 and 7 over tiles of 3), the device's tile of 128 with windows of 100 and 200
// over S = 300 (a row's first key falls inside a tile), and a window of S (plain causal).
TEST(CudaFusedHost, AttentionWindowMatchesCpu) {
  std::mt19937 rng(17);
  struct WindowCase {
    Shape q, k;
    int64_t tile, window;
  };
  const WindowCase cases[] = {
      {{2, 4, 7, 5}, {2, 2, 7, 5}, kAttentionTile, 1},
      {{1, 3, 9, 4}, {1, 1, 9, 4}, 3, 2},
      {{1, 3, 10, 4}, {1, 1, 10, 4}, 3, 5},
      {{1, 2, 10, 6}, {1, 2, 10, 6}, 3, 7},
      {{1, 2, 300, 16}, {1, 1, 300, 16}, kAttentionTile, 100},
      {{1, 1, 300, 8}, {1, 1, 300, 8}, kAttentionTile, 200},
      {{1, 2, 9, 4}, {1, 2, 9, 4}, 3, 9},
  };
  for (DType dtype : kGpuFloatTypes)
    for (const WindowCase &c : cases) {
      if (dtype == DType::F16 && c.q[2] > 100)
        continue; // one 16-bit format (bf16) suffices for the long sequences
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + " tile " +
                   std::to_string(c.tile) + " window " + std::to_string(c.window));
      const AttentionInputs in = randomAttentionInputs(dtype, c.q, c.k, true, rng, c.window);
      ASSERT_OK(in.cpuStatus);
      HostTensor got = hostAttention(in.q, in.k, in.v, in.scale, true, c.tile, c.window);
      if (is16Bit(dtype))
        expectUlps(got, convertTo(in.want, dtype), "attention");
      else if (dtype == DType::F32)
        expectClose(got, in.want, kAttentionF32Rtol, kAttentionF32Atol, "attention");
      else
        expectClose(got, in.want, 1e-12, 1e-12, "attention");
    }
}

// A bad window is the CPU kernel's error.
TEST(CudaFusedHost, AttentionWindowErrors) {
  const Shape q{1, 2, 4, 8};
  HostTensor t(DType::F32, q), out(DType::F32, q);
  expectSameError(cpu::attention(t, t, t, 1, true, out, nullptr, -1),
                  planAttention(DType::F32, q, q, q, 1, true, q, -1));
  expectError(planAttention(DType::F32, q, q, q, 1, false, q, 2),
              "attention: a sliding window (2) needs causal attention");
}

// Large scores: the running max keeps the exponentials finite (softmax of scores ~ +-400).
TEST(CudaFusedHost, AttentionLargeScoresStayFinite) {
  std::mt19937 rng(14);
  HostTensor q = randomTensor(DType::F32, {1, 1, 20, 4}, rng, -10, 10);
  HostTensor k = randomTensor(DType::F32, {1, 1, 20, 4}, rng, -10, 10);
  HostTensor v = randomTensor(DType::F32, {1, 1, 20, 4}, rng);
  HostTensor want(DType::F32, {1, 1, 20, 4});
  ASSERT_OK(cpu::attention(q, k, v, 1.0, false, want));
  expectClose(hostAttention(q, k, v, 1.0, false, 3), want, kAttentionF32Rtol, kAttentionF32Atol,
              "attention");
}

//===--- gathers ----------------------------------------------------------===//

/// A gather case: data's shape, the indices' shape and the axis.
struct GatherCase {
  Shape data, indices;
  int64_t axis;
};

/// The gather test of `op` on every dtype of `dtypes`, i64 and i32 indices and every case:
/// data random in [-50, 50], randomIndices; `replay` (hostGather, hostGatherElements) runs the
/// kernel bodies, `cpuOp` (cpu::gather, cpu::gatherElements) the CPU kernel, on f16/bf16 data
/// converted to `cpuHalfType` (the CPU has no 16-bit floats; the values are exact in f32 and
/// f64); no index error, and the CPU's result bit for bit (16-bit: rounded back, exactly).
template <size_t N, typename Replay, typename CpuOp>
void checkGather(const char *op, std::initializer_list<DType> dtypes, const GatherCase (&cases)[N],
                 DType cpuHalfType, std::mt19937 &rng, Replay replay, CpuOp cpuOp) {
  for (DType dtype : dtypes)
    for (DType index : {DType::I64, DType::I32})
      for (const GatherCase &c : cases) {
        SCOPED_TRACE(label(dtype, c.data) + " indices " + label(index, c.indices) + " axis " +
                     std::to_string(c.axis));
        HostTensor data = randomTensor(dtype, c.data, rng, -50, 50);
        HostTensor idx = randomIndices(index, c.indices, c.data[c.axis], rng);
        unsigned long long error = 0;
        HostTensor got = replay(data, idx, c.axis, &error);
        EXPECT_EQ(error, kNoIndexError);
        const bool half = is16Bit(dtype);
        HostTensor cpuData = half ? convertTo(data, cpuHalfType) : data.clone();
        HostTensor want(cpuData.dtype(), got.shape());
        ASSERT_OK(cpuOp(cpuData, idx, c.axis, want));
        expectBitsEqual(got, half ? convertTo(want, dtype) : std::move(want), op);
      }
}

// Embedding lookups and inner-axis gathers; i64 and i32 indices with negatives; data of
// every dtype the CPU takes, plus bf16/f16 (bits moved, compared with the CPU's f32 gather).
TEST(CudaFusedHost, GatherMatchesCpu) {
  std::mt19937 rng(21);
  const GatherCase cases[] = {{{10, 4}, {2, 3}, 0}, {{3, 5, 2}, {4}, 1}, {{2, 3, 6}, {2, 2}, 2},
                              {{5}, {7}, 0},        {{4, 3}, {0}, 0},    {{4, 3}, {}, 1}};
  checkGather("gather",
              {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1, DType::BF16, DType::F16},
              cases, DType::F32, rng, hostGather, cpu::gather);
}

// top_k's row body (replay::topK) against cpu::topK: every float dtype (f16/bf16 ranked by the
// CPU on their exact f64 values), every axis, k = 1, 3 and the whole axis, largest and
// smallest, on integer values with many ties and with a NaN; the indices are equal exactly.
TEST(CudaFusedHost, TopKMatchesCpu) {
  std::mt19937 rng(31);
  const Shape shape{3, 6, 4};
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (int64_t axis = 0; axis < 3; ++axis)
      for (bool largest : {true, false})
        for (int64_t k : {int64_t{1}, std::min<int64_t>(3, shape[axis]), shape[axis]}) {
          SCOPED_TRACE(label(dtype, shape) + " axis " + std::to_string(axis) + " k " +
                       std::to_string(k) + (largest ? " largest" : " smallest"));
          HostTensor x(dtype, shape);
          std::uniform_int_distribution<int> v(-4, 4);
          for (int64_t i = 0; i < x.numElements(); ++i)
            setValue(x, i, v(rng));
          setValue(x, 5, std::numeric_limits<double>::quiet_NaN());
          Shape outShape = shape;
          outShape[axis] = k;
          HostTensor want(DType::I64, outShape);
          ASSERT_OK(cpu::topK(cpuInput(x), k, axis, largest, want));
          base::StatusOr<TopKPlan> plan =
              planTopK(dtype, shape, k, axis, largest, DType::I64, outShape);
          ASSERT_TRUE(plan.ok()) << plan.status().toString();
          HostTensor got(DType::I64, outShape);
          replay::topK(*plan, x.raw(), got.raw());
          expectBitsEqual(got, want, "top_k");
        }
}

// planTopK rejects what cpu::topK rejects, with the same message.
TEST(CudaFusedHost, TopKPlanErrorsMatchCpu) {
  const DType f = DType::F32;
  HostTensor x(f, {3, 4});
  HostTensor out(DType::I64, {3, 2});
  expectSameError(cpu::topK(x, 5, 1, true, out), planTopK(f, {3, 4}, 5, 1, true, DType::I64, {3, 5}));
  expectSameError(cpu::topK(x, 2, 2, true, out), planTopK(f, {3, 4}, 2, 2, true, DType::I64, {3, 2}));
  HostTensor wrong(DType::I32, {3, 2});
  expectSameError(cpu::topK(x, 2, 1, true, wrong),
                  planTopK(f, {3, 4}, 2, 1, true, DType::I32, {3, 2}));
  expectError(planTopK(DType::I64, {3, 4}, 2, 1, true, DType::I64, {3, 2}),
              "top_k: x has dtype i64, expected f32, f16, bf16 or f64");
}

// gather_elements with indices smaller than data off the axis, on every axis (bf16: the CPU
// gathers the f64 values).
TEST(CudaFusedHost, GatherElementsMatchesCpu) {
  std::mt19937 rng(22);
  const GatherCase cases[] = {{{4, 6}, {4, 1}, 1},       {{4, 6}, {3, 9}, 1},
                              {{5, 3}, {2, 3}, 0},       {{2, 3, 4}, {2, 2, 5}, 2},
                              {{2, 3, 4}, {1, 7, 3}, 1}, {{6}, {10}, 0}};
  checkGather("gather_elements", {DType::F32, DType::I64, DType::I1, DType::BF16}, cases,
              DType::F64, rng, hostGatherElements, cpu::gatherElements);
}

// An out-of-range index: the CPU fails with OutOfRange; the GPU body writes zeros where it
// selects, the rest as usual, and the index check leaves the first bad position.
TEST(CudaFusedHost, GatherOutOfRangeWritesZerosAndRecordsFirstPosition) {
  HostTensor data = cpu::test::tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor idx = cpu::test::tensor(DType::I64, {4}, {2, 3, -4, -1});
  HostTensor out(DType::F32, {4, 2});
  const Status cpuStatus = cpu::gather(data, idx, 0, out);
  EXPECT_EQ(cpuStatus.code(), StatusCode::OutOfRange);
  unsigned long long error = 0;
  HostTensor got = hostGather(data, idx, 0, &error);
  expectBitsEqual(got, cpu::test::tensor(DType::F32, {4, 2}, {5, 6, 0, 0, 0, 0, 5, 6}), "gather");
  EXPECT_EQ(error, 1u);
  base::StatusOr<GatherPlan> plan = planGather(DType::F32, {3, 2}, DType::I64, {4}, 0, {4, 2});
  ASSERT_TRUE(plan.ok());
  const Status s = indexOutOfRange(plan->index, 1, 3);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "gather: index 3 at row-major position 1 of indices (i64, 4 elements) "
                         "is outside [-3, 3) (dimension 0 of data)");

  HostTensor idx32 = cpu::test::tensor(DType::I32, {2, 2}, {0, 1, 1, 5});
  HostTensor d2 = cpu::test::tensor(DType::I32, {2, 2}, {7, 8, 9, 10});
  HostTensor ge = hostGatherElements(d2, idx32, 0, &error);
  expectBitsEqual(ge, cpu::test::tensor(DType::I32, {2, 2}, {7, 10, 9, 0}), "gather_elements");
  EXPECT_EQ(error, 3u);
}

//===--- scatters ---------------------------------------------------------===//

/// A scatter case: out's shape, the indices' shape (of updates and indices for
/// scatter_elements_add) and the axis.
struct ScatterCase {
  Shape out, indices;
  int64_t axis;
};

/// The scatter test of `op` on every GPU float dtype, i64 and i32 indices and every case:
/// `randomInputs` (randomScatterAddInputs, randomScatterElementsAddInputs) draws the inputs
/// and runs the CPU kernel, `replay` (hostScatterAdd, hostScatterElementsAdd) runs the kernel
/// bodies; no index error, and the CPU's result bit for bit (2 ulps for f16/bf16).
template <size_t N, typename RandomInputs, typename Replay>
void checkScatter(const char *op, const ScatterCase (&cases)[N], std::mt19937 &rng,
                  RandomInputs randomInputs, Replay replay) {
  for (DType dtype : kGpuFloatTypes)
    for (DType index : {DType::I64, DType::I32})
      for (const ScatterCase &c : cases) {
        SCOPED_TRACE(label(dtype, c.out) + " indices " + label(index, c.indices) + " axis " +
                     std::to_string(c.axis));
        const ScatterInputs in = randomInputs(dtype, index, c.out, c.indices, c.axis, rng);
        ASSERT_OK(in.cpuStatus);
        unsigned long long error = 0;
        HostTensor got = replay(in.updates, in.indices, c.axis, c.out, &error);
        EXPECT_EQ(error, kNoIndexError);
        expectExactOrUlps(got, in.want, op);
      }
}

// scatter_add: the embedding gradient (axis 0), inner axes with an outer dimension, 2-D
// indices, targets nothing hits, i64/i32 indices with negatives, rows wide enough for a block
// per row (kScatterAddRowMinInner); f32/f64 bit for bit.
TEST(CudaFusedHost, ScatterAddMatchesCpu) {
  std::mt19937 rng(31);
  const ScatterCase cases[] = {{{11, 6}, {40}, 0},     {{7, 3}, {2, 5}, 0}, {{3, 5, 4}, {9}, 1},
                               {{2, 3, 6}, {3, 3}, 2}, {{4, 3}, {0}, 0},    {{5}, {12}, 0},
                               {{64, 3}, {300}, 0},    {{20, 130}, {50}, 0}, {{2, 7, 160}, {9}, 1}};
  checkScatter("scatter_add", cases, rng, randomScatterAddInputs, hostScatterAdd);
}

// scatter_elements_add: the cross-entropy gradient shape ([N, 1] into [N, V]), long lines
// with repeats, updates smaller than out off the axis (the rest of out stays zero).
TEST(CudaFusedHost, ScatterElementsAddMatchesCpu) {
  std::mt19937 rng(32);
  const ScatterCase cases[] = {{{6, 10}, {6, 1}, 1},      {{4, 5}, {4, 12}, 1},
                               {{5, 3}, {9, 2}, 0},       {{2, 3, 4}, {1, 3, 7}, 2},
                               {{3, 4, 2}, {2, 6, 1}, 1}, {{8}, {20}, 0},
                               {{1, 5, 1}, {1, 9, 1}, 1}};
  checkScatter("scatter_elements_add", cases, rng, randomScatterElementsAddInputs,
               hostScatterElementsAdd);
}

// Out-of-range indices: their updates land nowhere, the rest is summed as usual, and the
// index check records the first bad position.
TEST(CudaFusedHost, ScattersSkipOutOfRangeIndices) {
  HostTensor updates = cpu::test::tensor(DType::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor idx = cpu::test::tensor(DType::I32, {4}, {1, 9, -1, -4});
  unsigned long long error = 0;
  HostTensor got = hostScatterAdd(updates, idx, 0, {3, 2}, &error);
  expectBitsEqual(got, cpu::test::tensor(DType::F32, {3, 2}, {0, 0, 1, 2, 5, 6}), "scatter_add");
  EXPECT_EQ(error, 1u);

  HostTensor u2 = cpu::test::tensor(DType::F64, {1, 3}, {1, 2, 4});
  HostTensor i2 = cpu::test::tensor(DType::I64, {1, 3}, {0, 0, 3});
  HostTensor got2 = hostScatterElementsAdd(u2, i2, 1, {1, 3}, &error);
  expectBitsEqual(got2, cpu::test::tensor(DType::F64, {1, 3}, {3, 0, 0}), "scatter_elements_add");
  EXPECT_EQ(error, 2u);
}

//===--- range and trilu --------------------------------------------------===//

// Float ranges (including ones whose start + i * delta rounds), bit for bit with cpu::range;
// f16/bf16 as the correctly rounded f64 range.
TEST(CudaFusedHost, RangeMatchesCpu) {
  const double args[][3] = {{0, 10, 1},          {0.1, 1.7, 0.3}, {5, -3, -0.7},
                            {1e7, 1e7 + 3, 0.1}, {2, 2, 1},       {-1.5, 2, 0.25}};
  for (const auto &a : args)
    for (DType dtype : kGpuFloatTypes) {
      const double n = std::fmax(std::ceil((a[1] - a[0]) / a[2]), 0.0);
      const Shape shape{static_cast<int64_t>(n)};
      SCOPED_TRACE(label(dtype, shape) + " start " + std::to_string(a[0]));
      base::StatusOr<RangePlan> plan = planRange(dtype, a[0], a[1], a[2], shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      HostTensor want(cpuDType(dtype), shape);
      ASSERT_OK(cpu::range(a[0], a[1], a[2], want));
      HostTensor got = hostRange(*plan);
      if (is16Bit(dtype))
        expectBitsEqual(got, convertTo(want, dtype), "range");
      else
        expectBitsEqual(got, want, "range");
    }
}

// Integer ranges through planRange (float arguments) and planRangeInt (exact int64).
TEST(CudaFusedHost, IntegerRangeMatchesCpu) {
  const int64_t args[][3] = {{0, 10, 1},
                             {7, -8, -3},
                             {-5, 5, 4},
                             {int64_t(1) << 40, (int64_t(1) << 40) + 9, 2},
                             {3, 3, 1}};
  for (const auto &a : args)
    for (DType dtype : {DType::I64, DType::I32}) {
      if (dtype == DType::I32 && a[0] > (int64_t(1) << 31))
        continue;
      const int64_t span = a[1] - a[0]; // ceil(span / delta), at least 0
      const int64_t n =
          std::max<int64_t>(0, span / a[2] + (span % a[2] != 0 && (span > 0) == (a[2] > 0)));
      SCOPED_TRACE(label(dtype, {n}) + " start " + std::to_string(a[0]));
      HostTensor want(dtype, {n});
      ASSERT_OK(cpu::rangeInt(a[0], a[1], a[2], want));
      base::StatusOr<RangePlan> plan = planRangeInt(dtype, a[0], a[1], a[2], {n});
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      expectBitsEqual(hostRange(*plan), want, "rangeInt");
      if (a[0] < (int64_t(1) << 40)) {
        base::StatusOr<RangePlan> viaDouble =
            planRange(dtype, static_cast<double>(a[0]), static_cast<double>(a[1]),
                      static_cast<double>(a[2]), {n});
        ASSERT_TRUE(viaDouble.ok()) << viaDouble.status().toString();
        expectBitsEqual(hostRange(*viaDouble), want, "range");
      }
    }
}

// trilu: upper/lower, k negative, zero, positive and past the matrix; batched; every dtype
// (the CPU's, and 16-bit floats as bits).
TEST(CudaFusedHost, TriluMatchesCpu) {
  std::mt19937 rng(41);
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I1, DType::BF16})
    for (const Shape &shape : {Shape{4, 6}, Shape{2, 5, 3}, Shape{1, 1}, Shape{2, 0, 3}})
      for (int64_t k : {-7, -1, 0, 2, 9})
        for (bool upper : {true, false}) {
          SCOPED_TRACE(label(dtype, shape) + " k " + std::to_string(k) +
                       (upper ? " upper" : " lower"));
          HostTensor x = randomTensor(dtype, shape, rng, -9, 9);
          HostTensor cpuX = convertTo(x, dtype == DType::BF16 ? DType::F64 : dtype);
          HostTensor want(cpuX.dtype(), shape);
          ASSERT_OK(cpu::trilu(cpuX, k, upper, want));
          HostTensor got = hostTrilu(x, k, upper);
          expectBitsEqual(got, dtype == DType::BF16 ? convertTo(want, dtype) : std::move(want),
                          "trilu");
        }
}

//===--- AdamW ------------------------------------------------------------===//

// Several steps (bias corrections change), a gradient scale, weight decay; master, m, v and
// the compute weights bit for bit with runtime::adamwStep + writeComputeWeights.
TEST(CudaFusedHost, AdamWMatchesHostOptimizer) {
  std::mt19937 rng(51);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t n = 1000;
  for (DType wdt : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(base::dtypeName(wdt));
    std::vector<float> master(n), grad(n), m(n, 0), v(n, 0);
    for (auto &x : master)
      x = dist(rng);
    std::vector<float> cMaster = master, cM = m, cV = v;
    std::vector<float> gMaster = master, gM = m, gV = v;
    std::vector<unsigned char> gWeights(static_cast<size_t>(n) * base::dtypeSize(wdt), 0xA5);
    std::vector<unsigned char> cWeights(gWeights.size());
    for (int64_t step = 1; step <= 4; ++step) {
      for (auto &g : grad)
        g = dist(rng) * (step == 3 ? 1e-3f : 1.0f);
      const float scale = step == 2 ? 0.37f : 1.0f;
      const runtime::AdamWConfig config{1e-3 * static_cast<double>(step), 0.9, 0.95, 1e-8, 0.1};
      runtime::adamwStep(cMaster.data(), cM.data(), cV.data(), grad.data(), n, config, step, scale);
      ASSERT_OK(runtime::writeComputeWeights(cMaster.data(), wdt, cWeights.data(), n));
      AdamWParams params;
      params.lr = config.lr;
      params.beta1 = config.beta1;
      params.beta2 = config.beta2;
      params.eps = config.eps;
      params.weightDecay = config.weightDecay;
      params.step = step;
      params.gradScale = scale;
      base::StatusOr<AdamWPlan> plan = planAdamW(params, n, wdt);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      for (int64_t i = 0; i < n; ++i) {
        if (wdt == DType::F32)
          adamwAt<DType::F32>(*plan, gMaster.data(), gM.data(), gV.data(), grad.data(),
                              gWeights.data(), i);
        else if (wdt == DType::BF16)
          adamwAt<DType::BF16>(*plan, gMaster.data(), gM.data(), gV.data(), grad.data(),
                               gWeights.data(), i);
        else
          adamwAt<DType::F16>(*plan, gMaster.data(), gM.data(), gV.data(), grad.data(),
                              gWeights.data(), i);
      }
      ASSERT_EQ(std::memcmp(gMaster.data(), cMaster.data(), n * sizeof(float)), 0) << step;
      ASSERT_EQ(std::memcmp(gM.data(), cM.data(), n * sizeof(float)), 0) << step;
      ASSERT_EQ(std::memcmp(gV.data(), cV.data(), n * sizeof(float)), 0) << step;
      ASSERT_EQ(std::memcmp(gWeights.data(), cWeights.data(), gWeights.size()), 0) << step;
    }
  }
}

// A null weights pointer updates master, m and v only.
TEST(CudaFusedHost, AdamWWithoutWeightCopy) {
  AdamWParams params;
  params.lr = 0.1;
  base::StatusOr<AdamWPlan> plan = planAdamW(params, 1, DType::BF16);
  ASSERT_TRUE(plan.ok());
  float master = 1, m = 0, v = 0;
  const float grad = 0.5f;
  adamwAt<DType::BF16>(*plan, &master, &m, &v, &grad, nullptr, 0);
  EXPECT_NE(master, 1.0f);
}

//===--- plan errors ------------------------------------------------------===//

// The plans reject what the CPU kernels reject, with the CPU's message.
TEST(CudaFusedHost, PlanErrorsMatchCpuMessages) {
  using S = Shape;
  auto t = [](DType d, S s) { return HostTensor(d, std::move(s)); };
  const DType f = DType::F32;
  HostTensor out;
  // swiglu
  out = t(f, {2, 3});
  expectSameError(cpu::swiglu(t(f, {2, 3}), t(f, {2, 4}), out),
                  planSwiglu(f, {2, 3}, {2, 4}, {2, 3}));
  out = t(f, {3, 2});
  expectSameError(cpu::swiglu(t(f, {2, 3}), t(f, {2, 3}), out),
                  planSwiglu(f, {2, 3}, {2, 3}, {3, 2}));
  // rope
  out = t(f, {3, 5});
  expectSameError(cpu::rope(t(f, {3, 5}), t(f, {5}), t(f, {5}), out),
                  planRope(f, {3, 5}, {5}, {5}, {3, 5}));
  out = t(f, {2, 5, 8});
  expectSameError(cpu::rope(t(f, {2, 5, 8}), t(f, {5, 6}), t(f, {5, 6}), out),
                  planRope(f, {2, 5, 8}, {5, 6}, {5, 6}, {2, 5, 8}));
  expectSameError(cpu::rope(t(f, {2, 5, 8}), t(f, {3, 8}), t(f, {3, 8}), out),
                  planRope(f, {2, 5, 8}, {3, 8}, {3, 8}, {2, 5, 8}));
  expectSameError(cpu::rope(t(f, {2, 5, 8}), t(f, {5, 8}), t(f, {1, 8}), out),
                  planRope(f, {2, 5, 8}, {5, 8}, {1, 8}, {2, 5, 8}));
  expectSameError(cpu::rope(t(f, {2, 5, 8}), t(f, {1, 1, 2, 5, 8}), t(f, {1, 1, 2, 5, 8}), out),
                  planRope(f, {2, 5, 8}, {1, 1, 2, 5, 8}, {1, 1, 2, 5, 8}, {2, 5, 8}));
  expectError(planRope(f, {}, {}, {}, {}),
              "rope: x is [], expected rank >= 1 with an even last dimension");
  // attention
  out = t(f, {2, 4, 3, 8});
  expectSameError(cpu::attention(t(f, {2, 3}), t(f, {2, 3}), t(f, {2, 3}), 1, false, out),
                  planAttention(f, {2, 3}, {2, 3}, {2, 3}, 1, false, {2, 4, 3, 8}));
  expectSameError(
      cpu::attention(t(f, {2, 4, 3, 8}), t(f, {2, 3, 3, 8}), t(f, {2, 3, 3, 8}), 1, false, out),
      planAttention(f, {2, 4, 3, 8}, {2, 3, 3, 8}, {2, 3, 3, 8}, 1, false, {2, 4, 3, 8}));
  expectSameError(
      cpu::attention(t(f, {2, 4, 3, 8}), t(f, {2, 0, 3, 8}), t(f, {2, 0, 3, 8}), 1, false, out),
      planAttention(f, {2, 4, 3, 8}, {2, 0, 3, 8}, {2, 0, 3, 8}, 1, false, {2, 4, 3, 8}));
  expectSameError(
      cpu::attention(t(f, {2, 4, 3, 8}), t(f, {2, 2, 3, 8}), t(f, {2, 2, 4, 8}), 1, false, out),
      planAttention(f, {2, 4, 3, 8}, {2, 2, 3, 8}, {2, 2, 4, 8}, 1, false, {2, 4, 3, 8}));
  expectError(planAttention(f, {1, 1, 2, 4096}, {1, 1, 2, 4096}, {1, 1, 2, 4096}, 1, false,
                            {1, 1, 2, 4096}),
              "attention: head dimension 4096 exceeds the GPU kernel's limit of 2048");
  // gather, gather_elements
  out = t(f, {2, 3});
  expectSameError(cpu::gather(t(f, {4, 3}), t(DType::F32, {2}), 0, out),
                  planGather(f, {4, 3}, DType::F32, {2}, 0, {2, 3}));
  expectSameError(cpu::gather(t(f, {4, 3}), t(DType::I64, {2}), 2, out),
                  planGather(f, {4, 3}, DType::I64, {2}, 2, {2, 3}));
  expectSameError(cpu::gather(t(f, {4, 3}), t(DType::I64, {2}), -1, out),
                  planGather(f, {4, 3}, DType::I64, {2}, -1, {2, 3}));
  out = t(f, {3});
  expectSameError(cpu::gather(t(f, {4, 3}), t(DType::I64, {2}), 0, out),
                  planGather(f, {4, 3}, DType::I64, {2}, 0, {3}));
  out = t(f, {3, 4});
  expectSameError(cpu::gatherElements(t(f, {2, 4}), t(DType::I64, {3, 4}), 1, out),
                  planGatherElements(f, {2, 4}, DType::I64, {3, 4}, 1, {3, 4}));
  expectSameError(cpu::gatherElements(t(f, {2, 4}), t(DType::I64, {4}), 1, out),
                  planGatherElements(f, {2, 4}, DType::I64, {4}, 1, {4}));
  out = t(f, {2, 5});
  expectSameError(cpu::gatherElements(t(f, {2, 4}), t(DType::I32, {2, 4}), 1, out),
                  planGatherElements(f, {2, 4}, DType::I32, {2, 4}, 1, {2, 5}));
  // scatter_add, scatter_elements_add
  out = t(f, {5, 3});
  expectSameError(cpu::scatterAdd(t(f, {4, 3}), t(DType::I64, {2}), 0, out),
                  planScatterAdd(f, {4, 3}, DType::I64, {2}, 0, {5, 3}));
  expectSameError(cpu::scatterAdd(t(f, {2, 3}), t(DType::I64, {2}), 2, out),
                  planScatterAdd(f, {2, 3}, DType::I64, {2}, 2, {5, 3}));
  expectSameError(cpu::scatterAdd(t(f, {2, 3}), t(DType::F32, {2}), 0, out),
                  planScatterAdd(f, {2, 3}, DType::F32, {2}, 0, {5, 3}));
  out = t(f, {2, 4});
  expectSameError(cpu::scatterElementsAdd(t(f, {3}), t(DType::I64, {2}), 0, out),
                  planScatterElementsAdd(f, {3}, DType::I64, {2}, 0, {2, 4}));
  expectSameError(cpu::scatterElementsAdd(t(f, {3, 4}), t(DType::I64, {3, 4}), 1, out),
                  planScatterElementsAdd(f, {3, 4}, DType::I64, {3, 4}, 1, {2, 4}));
  expectSameError(cpu::scatterElementsAdd(t(f, {2}), t(DType::I64, {2}), 0, out),
                  planScatterElementsAdd(f, {2}, DType::I64, {2}, 0, {2, 4}));
  // range
  out = t(f, {4});
  expectSameError(cpu::range(0, 5, 1, out), planRange(f, 0, 5, 1, {4}));
  expectSameError(cpu::range(0, 5, 0, out), planRange(f, 0, 5, 0, {4}));
  expectSameError(cpu::range(0, INFINITY, 1, out), planRange(f, 0, INFINITY, 1, {4}));
  out = t(f, {2, 2});
  expectSameError(cpu::range(0, 4, 1, out), planRange(f, 0, 4, 1, {2, 2}));
  out = t(DType::I64, {4});
  expectSameError(cpu::range(0, 2, 0.5, out), planRange(DType::I64, 0, 2, 0.5, {4}));
  expectSameError(cpu::rangeInt(0, 5, 1, out), planRangeInt(DType::I64, 0, 5, 1, {4}));
  expectSameError(cpu::rangeInt(0, 5, 0, out), planRangeInt(DType::I64, 0, 5, 0, {4}));
  out = t(DType::I32, {3});
  expectSameError(cpu::rangeInt(2147483646, 2147483649, 1, out),
                  planRangeInt(DType::I32, 2147483646, 2147483649, 1, {3}));
  // trilu
  out = t(f, {4});
  expectSameError(cpu::trilu(t(f, {4}), 0, true, out), planTrilu(f, {4}, 0, true, {4}));
  out = t(f, {2, 3});
  expectSameError(cpu::trilu(t(f, {3, 3}), 0, true, out), planTrilu(f, {3, 3}, 0, true, {2, 3}));
}

// Messages the CPU cannot give (dtypes it does not take) or gives differently.
TEST(CudaFusedHost, PlanErrorsOfTheGpuKernels) {
  expectError(planSwiglu(DType::I64, {2}, {2}, {2}),
              "swiglu: gate has dtype i64, expected f32, f64, f16 or bf16");
  expectError(
      planAttention(DType::I1, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, 1, false, {1, 1, 1, 1}),
      "attention: q has dtype i1, expected f32, f64, f16 or bf16");
  expectError(planScatterAdd(DType::I32, {2}, DType::I64, {2}, 0, {3}),
              "scatter_add: updates has dtype i32, expected f32, f64, f16 or bf16");
  expectError(planRange(DType::I1, 0, 2, 1, {2}),
              "range: out has dtype i1, expected f32, f64, f16, bf16, i64 or i32");
  expectError(planRangeInt(DType::F32, 0, 2, 1, {2}),
              "range: out has dtype f32, expected i64 or i32");
  expectError(
      planScatterElementsAdd(DType::F32, Shape(9, 2), DType::I64, Shape(9, 2), 0, Shape(9, 2)),
      "scatter_elements_add: out f32[2, 2, 2, 2, 2, 2, 2, 2, 2] has more than 8 "
      "dimensions that are not 1 in both out and updates (the GPU kernel's limit)");
  AdamWParams params;
  params.step = 0;
  expectError(planAdamW(params, 4, DType::F32), "adamw: step 0 must be >= 1");
  params.step = 1;
  expectError(planAdamW(params, -1, DType::F32), "adamw: negative element count -1");
  expectError(planAdamW(params, 4, DType::I64), "adamw: compute dtype i64 is not f32, bf16 or f16");
  // Unit dimensions drop out of scatter_elements_add's rank limit.
  EXPECT_TRUE(
      planScatterElementsAdd(DType::F32, Shape(12, 1), DType::I64, Shape(12, 1), 3, Shape(12, 1))
          .ok());
}

} // namespace
} // namespace rp::kernels::cuda::test
