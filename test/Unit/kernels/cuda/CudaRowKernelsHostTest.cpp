//===- CudaRowKernelsHostTest.cpp - The GPU row kernels' math, on the host ===//
//
// Runs without a GPU. The row kernels (kernels/cuda/{Reduce,Softmax,Norm,CrossEntropy}.cu)
// are built from RP_HD functions in their headers: a thread's partial over its strided share
// of a row, the row's final writes, and the fixed combine order of RowReduce.h. This test
// replays each kernel on the host (Replay* below: for every row, the partials of all P
// threads, combineOnHost, the writes, exactly as the kernel sequences them) for P = 1, 32, 64,
// 96, 256, 1024 (those with rows * P <= 2^20) and the plan's own P, and compares with the CPU
// reference kernels on random tensors of several shapes, axes and dtypes:
//   - P = 1 is the CPU's loop: f32, f64, i64 and i32 results must equal the CPU's bit for
//     bit (same operations, same order, same libm);
//   - every other P, and 16-bit floats at any P: within the tolerances of
//     CudaRowKernelsTestUtil.h (f32 1e-6 relative + 1e-7; f64 1e-12 + 1e-12; f16 / bf16 2 ulps
//     + 2^-20 against the CPU in f32 of the rounded inputs, plus the summation slack of sums
//     and norms; integer sums and every max exactly);
//   - f64 cross-entropy at P = 1: each row's loss equals the CPU's loss of that row alone.
// It also checks the plan functions (the CPU kernels' error messages for the same bad
// arguments, the geometry they pick) and the launchers' argument checks, which return before
// touching a device.
//
// Covered only by the device test (CudaRowKernelsTest.cpp), not here: the CUDA mechanics —
// that __shfl_xor_sync / shared memory realise combineOnHost's order, the mapping of rows to
// threads, warps and blocks (RowSlot, rowGrid, grid-stride loops), __syncthreads placement,
// launch configuration and register limits — and CUDA's exp / log / sqrt and FMA contraction
// (the host runs glibc's and no contraction).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CrossEntropy.h"
#include "kernels/cpu/Norm.h"
#include "kernels/cpu/Reduce.h"
#include "kernels/cpu/Softmax.h"
#include "kernels/cuda/CrossEntropy.h"
#include "kernels/cuda/HostReplay.h"
#include "kernels/cuda/Norm.h"
#include "kernels/cuda/Reduce.h"
#include "kernels/cuda/Softmax.h"
#include "test/Unit/kernels/cuda/CudaRowKernelsTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::StatusCode;

/// The thread counts every replay runs with (besides the plan's own).
const int kThreadCounts[] = {1, 32, 64, 96, 256, 1024};

/// kThreadCounts and the plan's P, leaving out those that would replay more than 2^20 thread
/// partials (rows * P) for the many-row cases, except 1 and the plan's own.
std::vector<int> threadCountsFor(int planThreads, int64_t rows) {
  std::vector<int> counts;
  for (int threads : kThreadCounts)
    if (threads == 1 || threads == planThreads || rows * threads <= (int64_t(1) << 20))
      counts.push_back(threads);
  if (std::find(counts.begin(), counts.end(), planThreads) == counts.end())
    counts.push_back(planThreads);
  return counts;
}

const DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

// The replays of the kernels (kernels/cuda/HostReplay.h), with a chosen thread count.
using replay::visitReduceDType;

/// replay::crossEntropyRows with `scratch` sized to the plan's rows.
template <DType D>
void replayCrossEntropy(const CrossEntropyPlan &p, int threads, const void *logits,
                        const void *labels, void *out, std::vector<LossCompute<D>> &scratch) {
  scratch.assign(static_cast<size_t>(p.rows), LossCompute<D>(0));
  replay::crossEntropyRows<D>(p, threads, logits, labels, out, scratch.data());
}

//===--- reduce ---------------------------------------------------------------===//

const ReduceCase kReduceCases[] = {
    {{7}, {0}},          {{3, 5}, {1}},          {{3, 5}, {0}},       {{3, 5}, {0, 1}},
    {{2, 3, 4}, {0}},    {{2, 3, 4}, {1}},       {{2, 3, 4}, {2}},    {{2, 3, 4}, {0, 2}},
    {{2, 3, 4}, {1, 2}}, {{2, 3, 4}, {0, 1, 2}}, {{4, 1, 6, 5}, {1}}, {{4, 1, 6, 5}, {0, 2}},
    {{4, 1, 6, 5}, {3}}, {{3, 1500}, {1}}, // a block per row (P = 256)
    {{2, 70000}, {1}},                     // P = 1024
    {{1500, 3}, {0}},                      // strided rows, few of them: a block per row
    {{20, 5000}, {0}},                     // strided rows, many: a thread per row
    {{6, 40, 7}, {1}},                     // strided, a warp per row
    {{0, 3}, {0}},                         // empty rows: Sum 0, Mean NaN, Max -inf
    {{3, 0}, {1}},                         // empty rows
    {{0, 3}, {1}},                         // no outputs
};

/// x with a NaN and +-inf planted (floats only), so max and sum propagate them.
void plantSpecials(HostTensor &x, std::mt19937 &rng) {
  if (!base::isFloat(x.dtype()) || x.numElements() < 40)
    return;
  HostTensor f64 = convertTo(x, DType::F64);
  f64.data<double>()[rng() % x.numElements()] = NAN;
  f64.data<double>()[rng() % x.numElements()] = INFINITY;
  f64.data<double>()[rng() % x.numElements()] = -INFINITY;
  x = convertTo(f64, x.dtype());
}

void checkReduce(DType dtype, const ReduceCase &c, bool keepdims, bool specials,
                 std::mt19937 &rng) {
  const double range = dtype == DType::I64 ? 4e18 : dtype == DType::I32 ? 2e9 : 2.0;
  HostTensor x = randomInput(dtype, c.shape, rng, -range, range); // integers: sums wrap
  if (specials)
    plantSpecials(x, rng);
  const HostTensor xRef = convertTo(x, referenceDType(dtype));
  const Shape outShape = reduceOutShape(c.shape, c.axes, keepdims);
  for (cpu::ReduceKind kind : kCpuKinds) {
    SCOPED_TRACE(describe(reduceKindName(kind), dtype, c.shape) + " axes " +
                 base::formatShape(c.axes) + (keepdims ? " keepdims" : ""));
    HostTensor want = cpu::test::poisoned(referenceDType(dtype), outShape);
    const base::Status cpuStatus = cpu::reduce(kind, xRef, c.axes, keepdims, want);
    auto plan = planReduce(kind, dtype, c.shape, c.axes, keepdims, outShape);
    if (!cpuStatus.ok()) { // the empty integer mean
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status(), cpuStatus);
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    const std::vector<double> wantValues = valuesOf(want);
    for (int threads : threadCountsFor(plan->threadsPerRow, plan->rows)) {
      SCOPED_TRACE("threads per row " + std::to_string(threads));
      HostTensor got(dtype, outShape);
      visitReduceDType(dtype, [&](auto d) {
        replay::reduceRows<decltype(d)::value>(*plan, threads, x.raw(), got.raw());
      });
      if (threads == 1 && !is16Bit(dtype))
        expectSame(got, wantValues, "P=1 replay vs cpu::reduce");
      else
        expectNear(got, wantValues, reduceSlack(kind, dtype, x, c.axes, keepdims, threads),
                   "replay vs cpu::reduce");
    }
    // reduceRowSerial is the P = 1 replay.
    if (!is16Bit(dtype)) {
      HostTensor serial(dtype, outShape);
      for (int64_t row = 0; row < plan->rows; ++row)
        visitReduceDType(dtype, [&](auto d) {
          reduceRowSerial<decltype(d)::value>(*plan, x.raw(), serial.raw(), row);
        });
      expectSame(serial, wantValues, "reduceRowSerial vs cpu::reduce");
    }
  }
}

TEST(CudaRowKernelsHost, ReduceMatchesCpu) {
  std::mt19937 rng(11);
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::F16, DType::BF16})
    for (const ReduceCase &c : kReduceCases)
      for (bool keepdims : {false, true})
        checkReduce(dtype, c, keepdims, false, rng);
}

TEST(CudaRowKernelsHost, ReduceNanAndInfinity) {
  std::mt19937 rng(12);
  for (DType dtype : kFloatTypes)
    for (const ReduceCase &c : {ReduceCase{{4, 64}, {1}}, ReduceCase{{300, 5}, {0}}})
      checkReduce(dtype, c, false, true, rng);
}

TEST(CudaRowKernelsHost, ReducePlanGeometry) {
  auto p = planReduce(ReduceKind::Sum, DType::F32, {4, 4096}, {1}, false, {4});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 256);
  EXPECT_EQ(p->rows, 4);
  EXPECT_EQ(p->count, 4096);
  p = planReduce(ReduceKind::Sum, DType::F32, {3000, 5000}, {0}, false, {5000});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 1); // strided, 5000 outputs
  p = planReduce(ReduceKind::Max, DType::BF16, {8, 300}, {1}, true, {8, 1});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 32);
  // [2, 3, 4, 5] over axes 1, 2: one reduced dimension of 12 after merging.
  p = planReduce(ReduceKind::Mean, DType::F32, {2, 3, 4, 5}, {1, 2}, false, {2, 5});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->reduced.rank, 1);
  EXPECT_EQ(p->reduced.sizes[0], 12);
  EXPECT_EQ(p->reduced.strides[0][0], 5);
  EXPECT_EQ(p->kept.rank, 2);
}

//===--- softmax --------------------------------------------------------------===//

const AxisCase kSoftmaxCases[] = {
    {{5}, 0},       {{3, 7}, 1},     {{3, 7}, 0},     {{4, 33}, 1},
    {{2, 3, 4}, 0}, {{2, 3, 4}, 1},  {{2, 3, 4}, 2},  {{2, 1500}, 1}, // P = 256
    {{2, 9000}, 1}, {{1, 70000}, 1},                                  // 512, 1024
    {{3000, 5}, 0}, {{100, 50}, 0},  {{70, 4096}, 0},                 // strided
    {{2, 0, 3}, 1}, {{0, 4}, 1},
};

void checkSoftmax(DType dtype, const AxisCase &c, bool specials, std::mt19937 &rng) {
  HostTensor x = randomInput(dtype, c.shape, rng);
  if (specials && x.numElements() >= 12) { // a NaN line, a +inf line, an all -inf line
    HostTensor f64 = convertTo(x, DType::F64);
    const int64_t inner =
        cpu::test::numElements(Shape(c.shape.begin() + c.axis + 1, c.shape.end()));
    double *v = f64.data<double>();
    v[0] = NAN;                                     // line 0
    v[inner == 1 ? c.shape[c.axis] : 1] = INFINITY; // element 0 of line 1
    x = convertTo(f64, dtype);
  }
  const HostTensor xRef = convertTo(x, referenceDType(dtype));
  for (bool log : {false, true}) {
    SCOPED_TRACE(describe(log ? "log_softmax" : "softmax", dtype, c.shape) + " axis " +
                 std::to_string(c.axis));
    HostTensor want = cpu::test::poisoned(referenceDType(dtype), c.shape);
    ASSERT_TRUE(cpu::softmax(xRef, c.axis, log, want).ok());
    auto plan = planSoftmax(dtype, c.shape, c.axis, log, c.shape);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    const std::vector<double> wantValues = valuesOf(want);
    for (int threads : threadCountsFor(plan->threadsPerRow, plan->lines)) {
      SCOPED_TRACE("threads per row " + std::to_string(threads));
      HostTensor got(dtype, c.shape);
      visitFloatDType(dtype, [&](auto d) {
        replay::softmaxLines<decltype(d)::value>(*plan, threads, x.raw(), got.raw());
      });
      if (threads == 1 && !is16Bit(dtype))
        expectSame(got, wantValues, "P=1 replay vs cpu::softmax");
      else
        expectNear(got, wantValues, {}, "replay vs cpu::softmax");
    }
    if (!is16Bit(dtype)) {
      HostTensor serial(dtype, c.shape);
      for (int64_t line = 0; line < plan->lines; ++line)
        visitFloatDType(dtype, [&](auto d) {
          softmaxLineSerial<decltype(d)::value>(*plan, x.raw(), serial.raw(), line);
        });
      expectSame(serial, wantValues, "softmaxLineSerial vs cpu::softmax");
    }
  }
}

TEST(CudaRowKernelsHost, SoftmaxMatchesCpu) {
  std::mt19937 rng(21);
  for (DType dtype : kFloatTypes)
    for (const AxisCase &c : kSoftmaxCases)
      checkSoftmax(dtype, c, false, rng);
}

TEST(CudaRowKernelsHost, SoftmaxNanAndInfinityLines) {
  std::mt19937 rng(22);
  for (DType dtype : kFloatTypes)
    for (const AxisCase &c : {AxisCase{{4, 40}, 1}, AxisCase{{40, 3}, 0}, AxisCase{{3, 4}, 1}})
      checkSoftmax(dtype, c, true, rng);
  // A line of -inf only: its maximum is -inf, the CPU writes NaN.
  HostTensor x(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    x.data<float>()[i] = i < 3 ? -INFINITY : static_cast<float>(i);
  HostTensor want(DType::F32, {2, 3});
  ASSERT_TRUE(cpu::softmax(x, 1, false, want).ok());
  auto plan = planSoftmax(DType::F32, {2, 3}, 1, false, {2, 3});
  ASSERT_TRUE(plan.ok());
  HostTensor got(DType::F32, {2, 3});
  replay::softmaxLines<DType::F32>(*plan, 32, x.raw(), got.raw());
  EXPECT_TRUE(std::isnan(got.data<float>()[0]));
  expectSame(got, valuesOf(want), "-inf line");
}

TEST(CudaRowKernelsHost, SoftmaxPlanGeometry) {
  auto p = planSoftmax(DType::BF16, {8, 100}, 1, false, {8, 100});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 32);
  EXPECT_EQ(p->lines, 8);
  EXPECT_EQ(p->inner, 1);
  p = planSoftmax(DType::F32, {6, 100, 50}, 1, true, {6, 100, 50});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->lines, 300);
  EXPECT_EQ(p->dim, 100);
  EXPECT_EQ(p->inner, 50);
  EXPECT_EQ(p->threadsPerRow, 32); // strided, 300 lines: a warp each
  p = planSoftmax(DType::F32, {2, 0, 3}, 1, false, {2, 0, 3});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->lines, 0);
}

//===--- norm -----------------------------------------------------------------===//

const AxisCase kNormCases[] = {
    {{4, 8}, 1},     {{5, 3}, 1},    {{3, 4, 5}, 0}, {{3, 4, 5}, 1},
    {{3, 4, 5}, 2},  {{2, 1500}, 1}, {{3, 5000}, 1}, {{1, 70000}, 1},
    {{6, 4, 64}, 1}, {{0, 8}, 1},    {{3, 0}, 1},
};

void checkNorm(DType dtype, const AxisCase &c, bool rms, bool withBias, std::mt19937 &rng) {
  const NormInputs in = randomNormInputs(dtype, c, rms, withBias, rng);
  SCOPED_TRACE(in.trace);
  HostTensor want = cpu::test::poisoned(referenceDType(dtype), c.shape);
  const base::Status cpuStatus = in.reference(want);
  ASSERT_TRUE(cpuStatus.ok()) << cpuStatus.toString();
  auto plan = in.plan();
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  const void *b = withBias && !rms ? in.bias.raw() : nullptr;
  const std::vector<double> wantValues = valuesOf(want);
  for (int threads : threadCountsFor(plan->threadsPerRow, plan->rows)) {
    SCOPED_TRACE("threads per row " + std::to_string(threads));
    HostTensor got(dtype, c.shape);
    visitFloatDType(dtype, [&](auto d) {
      replay::normRows<decltype(d)::value>(*plan, threads, in.x.raw(), in.scale.raw(), b,
                                           got.raw());
    });
    if (threads == 1 && !is16Bit(dtype))
      expectSame(got, wantValues, "P=1 replay vs cpu norm");
    else
      expectNear(got, wantValues, normSlack(dtype, plan->cols, threads, in.x.numElements()),
                 "replay vs cpu norm");
  }
  if (!is16Bit(dtype)) {
    HostTensor serial(dtype, c.shape);
    for (int64_t row = 0; row < plan->rows; ++row)
      visitFloatDType(dtype, [&](auto d) {
        normRowSerial<decltype(d)::value>(*plan, in.x.raw(), in.scale.raw(), b, serial.raw(), row);
      });
    expectSame(serial, wantValues, "normRowSerial vs cpu norm");
  }
}

TEST(CudaRowKernelsHost, NormMatchesCpu) {
  std::mt19937 rng(31);
  for (DType dtype : kFloatTypes)
    for (const AxisCase &c : kNormCases) {
      checkNorm(dtype, c, true, false, rng);
      checkNorm(dtype, c, false, false, rng);
      checkNorm(dtype, c, false, true, rng);
    }
}

TEST(CudaRowKernelsHost, NormPlanGeometry) {
  auto p = planRmsNorm(DType::BF16, {8, 4096}, {4096}, 1, 1e-6, {8, 4096});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 256);
  EXPECT_EQ(p->rows, 8);
  EXPECT_EQ(p->cols, 4096);
  EXPECT_TRUE(p->rms);
  EXPECT_FALSE(p->hasBias);
  const Shape bias{4, 5};
  p = planLayerNorm(DType::F32, {3, 4, 5}, {4, 5}, &bias, 1, 1e-5, {3, 4, 5});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->rows, 3);
  EXPECT_EQ(p->cols, 20);
  EXPECT_TRUE(p->hasBias);
  EXPECT_EQ(p->threadsPerRow, 32);
}

//===--- cross-entropy ----------------------------------------------------------===//

const Shape kLossShapes[] = {
    {6, 10},      // a thread per row
    {5, 100},     // a warp per row
    {3, 2000},    // a block of 256
    {2, 151936},  // a block of 1024 (Qwen's vocabulary)
    {4, 7, 3},    // strided classes
    {2, 300, 5},  // strided classes, a warp per row
    {2, 5, 3, 2}, // rank 4
    {300, 20},    // > 256 rows: the finishing chunks hold 2 rows
    {0, 5},       // no rows
};

void checkCrossEntropy(DType dtype, DType labelType, const Shape &shape, int64_t ignore,
                       cpu::LossReduction reduction, const HostTensor *labelsIn,
                       std::mt19937 &rng) {
  const Shape labelShape = labelShapeOf(shape);
  const HostTensor logits = randomInput(dtype, shape, rng, -8, 8);
  const HostTensor labels =
      labelsIn ? labelsIn->clone() : randomLabels(labelType, labelShape, shape[1], ignore, rng);
  const HostTensor logitsRef = convertTo(logits, referenceDType(dtype));
  SCOPED_TRACE(describe("cross_entropy", dtype, shape) + " labels " +
               base::dtypeName(labelType) + " ignore " + std::to_string(ignore) +
               (reduction == cpu::LossReduction::Mean ? " mean" : " sum"));
  HostTensor want = cpu::test::poisoned(referenceDType(dtype), {});
  ASSERT_TRUE(cpu::crossEntropy(logitsRef, labels, ignore, reduction, want).ok());
  auto plan = planCrossEntropy(dtype, shape, labelType, labelShape, ignore, reduction, {});
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  for (int threads : threadCountsFor(plan->threadsPerRow, plan->rows)) {
    if (threads > 32 && shape[1] > 100000 && threads != plan->threadsPerRow)
      continue; // the vocabulary-size rows: the plan's P and the small ones suffice
    SCOPED_TRACE("threads per row " + std::to_string(threads));
    HostTensor got(dtype, {});
    visitFloatDType(dtype, [&](auto d) {
      std::vector<LossCompute<decltype(d)::value>> scratch;
      replayCrossEntropy<decltype(d)::value>(*plan, threads, logits.raw(), labels.raw(), got.raw(),
                                             scratch);
      // Rank 2, f64, P = 1: each row's loss is the CPU's loss of that row alone, bit for bit.
      if constexpr (decltype(d)::value == DType::F64) {
        if (threads == 1 && shape.size() == 2) {
          for (int64_t row = 0; row < plan->rows; ++row) {
            const int64_t label = lossLabel(*plan, labels.raw(), row);
            if (label == ignore)
              continue;
            HostTensor rowLogits(DType::F64, {1, shape[1]});
            std::copy_n(logits.data<double>() + row * shape[1], shape[1], rowLogits.data<double>());
            HostTensor rowLabel = cpu::test::tensor(DType::I64, {1}, {double(label)});
            HostTensor rowLoss(DType::F64, {});
            ASSERT_TRUE(
                cpu::crossEntropy(rowLogits, rowLabel, ignore, cpu::LossReduction::Sum, rowLoss)
                    .ok());
            EXPECT_EQ(scratch[row], rowLoss.data<double>()[0]) << "row " << row;
          }
        }
      }
    });
    expectNear(got, valuesOf(want), {}, "replay vs cpu::crossEntropy");
  }
}

TEST(CudaRowKernelsHost, CrossEntropyMatchesCpu) {
  std::mt19937 rng(41);
  for (DType dtype : kFloatTypes)
    for (DType labelType : {DType::I64, DType::I32})
      for (const Shape &shape : kLossShapes)
        for (cpu::LossReduction r : {cpu::LossReduction::Mean, cpu::LossReduction::Sum}) {
          if (shape[1] > 100000 &&
              (labelType == DType::I32 || dtype == DType::F64 || dtype == DType::F16))
            continue; // the vocabulary case: f32 and bf16 with i64 labels
          checkCrossEntropy(dtype, labelType, shape, kIgnore, r, nullptr, rng);
        }
}

// ignore_index inside [0, C) skips those rows; every row ignored: Mean NaN, Sum 0.
TEST(CudaRowKernelsHost, CrossEntropyIgnoreIndex) {
  std::mt19937 rng(42);
  for (DType dtype : {DType::F32, DType::BF16})
    for (cpu::LossReduction r : {cpu::LossReduction::Mean, cpu::LossReduction::Sum}) {
      checkCrossEntropy(dtype, DType::I32, {9, 6}, 3, r, nullptr, rng);
      const HostTensor allIgnored = cpu::test::tensor(DType::I64, {4}, {7, 7, 7, 7});
      checkCrossEntropy(dtype, DType::I64, {4, 50}, 7, r, &allIgnored, rng);
    }
  // The replay itself: all ignored gives NaN for Mean and 0 for Sum.
  const HostTensor logits = randomInput(DType::F32, {2, 5}, rng);
  const HostTensor labels = cpu::test::tensor(DType::I64, {2}, {kIgnore, kIgnore});
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
    auto plan = planCrossEntropy(DType::F32, {2, 5}, DType::I64, {2}, kIgnore, r, {});
    ASSERT_TRUE(plan.ok());
    HostTensor got(DType::F32, {});
    std::vector<double> scratch;
    replayCrossEntropy<DType::F32>(*plan, 1, logits.raw(), labels.raw(), got.raw(), scratch);
    if (r == LossReduction::Mean)
      EXPECT_TRUE(std::isnan(got.data<float>()[0]));
    else
      EXPECT_EQ(got.data<float>()[0], 0.0f);
  }
}

// A label outside [0, C) that is not ignore_index: the CPU returns OutOfRange; the kernel's
// row loss is NaN, so the loss is NaN (CrossEntropy.h), and the other rows are unaffected.
TEST(CudaRowKernelsHost, CrossEntropyOutOfRangeLabelGivesNan) {
  std::mt19937 rng(43);
  const HostTensor logits = randomInput(DType::F32, {3, 5}, rng);
  for (double bad : {5.0, -1.0}) {
    const HostTensor labels = cpu::test::tensor(DType::I32, {3}, {1, bad, 2});
    HostTensor cpuOut(DType::F32, {});
    EXPECT_EQ(cpu::crossEntropy(logits, labels, kIgnore, cpu::LossReduction::Mean, cpuOut).code(),
              StatusCode::OutOfRange);
    for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
      auto plan = planCrossEntropy(DType::F32, {3, 5}, DType::I32, {3}, kIgnore, r, {});
      ASSERT_TRUE(plan.ok());
      HostTensor got(DType::F32, {});
      std::vector<double> scratch;
      replayCrossEntropy<DType::F32>(*plan, 32, logits.raw(), labels.raw(), got.raw(), scratch);
      EXPECT_TRUE(std::isnan(got.data<float>()[0]));
      EXPECT_TRUE(std::isnan(scratch[1]));
      EXPECT_FALSE(std::isnan(scratch[0]));
      EXPECT_FALSE(std::isnan(scratch[2]));
    }
  }
}

TEST(CudaRowKernelsHost, CrossEntropyPlanGeometry) {
  auto p = planCrossEntropy(DType::BF16, {4096, 151936}, DType::I64, {4096}, kIgnore,
                            LossReduction::Mean, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->threadsPerRow, 1024);
  EXPECT_EQ(p->rows, 4096);
  EXPECT_EQ(p->classes, 151936);
  EXPECT_EQ(p->inner, 1);
  EXPECT_EQ(p->scratchBytes, 4096 * sizeof(float));
  p = planCrossEntropy(DType::F32, {2, 7, 3, 4}, DType::I32, {2, 3, 4}, 0, LossReduction::Sum, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->rows, 24);
  EXPECT_EQ(p->inner, 12);
  EXPECT_EQ(p->threadsPerRow, 1);
  EXPECT_EQ(p->scratchBytes, 24 * sizeof(double));
}

//===--- plan errors: the CPU kernels' messages ------------------------------------===//

/// The plan's error equals the CPU kernel's status for the same arguments.
void expectSameError(const base::Status &gpu, const base::Status &cpu) {
  EXPECT_FALSE(cpu.ok());
  EXPECT_EQ(gpu, cpu) << "gpu: " << gpu.toString() << "\ncpu: " << cpu.toString();
}

TEST(CudaRowKernelsHost, ReducePlanErrorsMatchCpu) {
  const Shape xs{2, 3, 4};
  const HostTensor x(DType::F32, xs);
  struct Bad {
    std::vector<int64_t> axes;
    Shape out;
  };
  for (const Bad &b : {Bad{{}, {2, 3, 4}}, Bad{{3}, {2, 3}}, Bad{{-1}, {3, 4}}, Bad{{1, 1}, {2, 4}},
                       Bad{{2, 0}, {3}}, Bad{{1}, {2, 3}}, Bad{{0, 2}, {3, 1}}})
    for (cpu::ReduceKind k : kCpuKinds) {
      HostTensor out(DType::F32, b.out);
      expectSameError(planReduce(k, DType::F32, xs, b.axes, false, b.out).status(),
                      cpu::reduce(k, x, b.axes, false, out));
    }
  // keepdims shape mismatch
  HostTensor out(DType::F32, {2, 3});
  expectSameError(planReduce(ReduceKind::Sum, DType::F32, xs, {2}, true, {2, 3}).status(),
                  cpu::reduce(cpu::ReduceKind::Sum, x, {2}, true, out));
  // the empty integer mean
  const HostTensor empty(DType::I64, {0, 3});
  HostTensor emptyOut(DType::I64, {3});
  expectSameError(planReduce(ReduceKind::Mean, DType::I64, {0, 3}, {0}, false, {3}).status(),
                  cpu::reduce(cpu::ReduceKind::Mean, empty, {0}, false, emptyOut));
  // dtype: the GPU's list
  auto bad = planReduce(ReduceKind::Sum, DType::I1, xs, {0}, false, {3, 4});
  EXPECT_EQ(bad.status(),
            base::invalidArgument(
                "reduce_sum: x has dtype i1, expected f32, f16, bf16, f64, i64 or i32"));
  // more than 8 dimensions in a group after merging
  Shape wide(18, 2), alternate, keptShape;
  for (int64_t d = 0; d < 18; d += 2)
    alternate.push_back(d);
  for (int64_t d = 1; d < 18; d += 2)
    keptShape.push_back(2);
  bad = planReduce(ReduceKind::Sum, DType::F32, wide, alternate, false, keptShape);
  EXPECT_EQ(bad.status(),
            base::invalidArgument("reduce_sum: rank 9 (after merging contiguous dimensions) "
                                     "exceeds the GPU kernels' limit of 8"));
}

TEST(CudaRowKernelsHost, SoftmaxPlanErrorsMatchCpu) {
  const HostTensor x(DType::F32, {2, 3});
  for (bool log : {false, true}) {
    HostTensor out(DType::F32, {2, 3}), wrong(DType::F32, {3, 2});
    expectSameError(planSoftmax(DType::F32, {2, 3}, 2, log, {2, 3}).status(),
                    cpu::softmax(x, 2, log, out));
    expectSameError(planSoftmax(DType::F32, {2, 3}, -1, log, {2, 3}).status(),
                    cpu::softmax(x, -1, log, out));
    expectSameError(planSoftmax(DType::F32, {2, 3}, 1, log, {3, 2}).status(),
                    cpu::softmax(x, 1, log, wrong));
    const HostTensor scalar(DType::F32, {});
    HostTensor scalarOut(DType::F32, {});
    expectSameError(planSoftmax(DType::F32, {}, 0, log, {}).status(),
                    cpu::softmax(scalar, 0, log, scalarOut));
  }
  EXPECT_EQ(
      planSoftmax(DType::I64, {2, 3}, 1, true, {2, 3}).status(),
      base::invalidArgument("log_softmax: x has dtype i64, expected f32, f16, bf16 or f64"));
}

TEST(CudaRowKernelsHost, NormPlanErrorsMatchCpu) {
  const Shape xs{2, 3, 4};
  const HostTensor x(DType::F32, xs), scale(DType::F32, {3, 4}), badScale(DType::F32, {4}),
      bias(DType::F32, {3, 4}), badBias(DType::F32, {3, 5});
  HostTensor out(DType::F32, xs), badOut(DType::F32, {2, 12});
  const Shape scaleShape{3, 4}, badScaleShape{4}, badBiasShape{3, 5};
  // axis out of range, scale shape, bias shape, out shape
  expectSameError(planLayerNorm(DType::F32, xs, scaleShape, nullptr, 3, 1e-5, xs).status(),
                  cpu::layerNorm(x, scale, nullptr, 3, 1e-5, out));
  expectSameError(planLayerNorm(DType::F32, xs, badScaleShape, nullptr, 1, 1e-5, xs).status(),
                  cpu::layerNorm(x, badScale, nullptr, 1, 1e-5, out));
  expectSameError(planLayerNorm(DType::F32, xs, scaleShape, &badBiasShape, 1, 1e-5, xs).status(),
                  cpu::layerNorm(x, scale, &badBias, 1, 1e-5, out));
  expectSameError(planLayerNorm(DType::F32, xs, scaleShape, &scaleShape, 1, 1e-5, {2, 12}).status(),
                  cpu::layerNorm(x, scale, &bias, 1, 1e-5, badOut));
  expectSameError(planRmsNorm(DType::F32, xs, scaleShape, -1, 1e-6, xs).status(),
                  cpu::rmsNorm(x, scale, -1, 1e-6, out));
  expectSameError(planRmsNorm(DType::F32, xs, badScaleShape, 1, 1e-6, xs).status(),
                  cpu::rmsNorm(x, badScale, 1, 1e-6, out));
  expectSameError(planRmsNorm(DType::F32, xs, scaleShape, 1, 1e-6, {2, 12}).status(),
                  cpu::rmsNorm(x, scale, 1, 1e-6, badOut));
  EXPECT_EQ(planRmsNorm(DType::I32, xs, scaleShape, 1, 1e-6, xs).status(),
            base::invalidArgument("rms_norm: x has dtype i32, expected f32, f16, bf16 or f64"));
}

TEST(CudaRowKernelsHost, CrossEntropyPlanErrorsMatchCpu) {
  const HostTensor logits(DType::F32, {4, 10}), labels(DType::I64, {4}),
      badLabels(DType::I64, {4, 1}), floatLabels(DType::F32, {4}), rank1(DType::F32, {10}),
      rank1Labels(DType::I64, {10});
  HostTensor out(DType::F32, {}), badOut(DType::F32, {1});
  const auto mean = LossReduction::Mean;
  const auto cpuMean = cpu::LossReduction::Mean;
  expectSameError(
      planCrossEntropy(DType::F32, {4, 10}, DType::F32, {4}, kIgnore, mean, {}).status(),
      cpu::crossEntropy(logits, floatLabels, kIgnore, cpuMean, out));
  expectSameError(planCrossEntropy(DType::F32, {10}, DType::I64, {10}, kIgnore, mean, {}).status(),
                  cpu::crossEntropy(rank1, rank1Labels, kIgnore, cpuMean, out));
  expectSameError(
      planCrossEntropy(DType::F32, {4, 10}, DType::I64, {4, 1}, kIgnore, mean, {}).status(),
      cpu::crossEntropy(logits, badLabels, kIgnore, cpuMean, out));
  expectSameError(
      planCrossEntropy(DType::F32, {4, 10}, DType::I64, {4}, kIgnore, mean, {1}).status(),
      cpu::crossEntropy(logits, labels, kIgnore, cpuMean, badOut));
  EXPECT_EQ(planCrossEntropy(DType::I64, {4, 10}, DType::I64, {4}, kIgnore, mean, {}).status(),
            base::invalidArgument(
                "cross_entropy: logits has dtype i64, expected f32, f16, bf16 or f64"));
}

//===--- launcher argument checks (no device touched) ------------------------------===//

TEST(CudaRowKernelsHost, LaunchersRejectBadArguments) {
  alignas(16) unsigned char raw[64] = {};
  void *p = raw;
  void *misaligned = raw + 2;

  auto reduce = planReduce(ReduceKind::Sum, DType::F32, {2, 3}, {1}, false, {2});
  ASSERT_TRUE(reduce.ok());
  EXPECT_EQ(launchReduce(*reduce, nullptr, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchReduce(*reduce, p, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchReduce(*reduce, misaligned, p, nullptr), cudaErrorInvalidValue);
  ReducePlan tampered = *reduce;
  tampered.threadsPerRow = 48;
  EXPECT_EQ(launchReduce(tampered, p, p, nullptr), cudaErrorInvalidValue);
  auto noRows = planReduce(ReduceKind::Sum, DType::F32, {0, 3}, {1}, false, {0});
  ASSERT_TRUE(noRows.ok());
  EXPECT_EQ(launchReduce(*noRows, nullptr, nullptr, nullptr), cudaSuccess); // nothing to do

  auto softmax = planSoftmax(DType::BF16, {2, 3}, 1, false, {2, 3});
  ASSERT_TRUE(softmax.ok());
  EXPECT_EQ(launchSoftmax(*softmax, nullptr, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchSoftmax(*softmax, p, raw + 1, nullptr), cudaErrorInvalidValue);

  const Shape scale{3};
  auto layer = planLayerNorm(DType::F32, {2, 3}, scale, &scale, 1, 1e-5, {2, 3});
  ASSERT_TRUE(layer.ok());
  EXPECT_EQ(launchNorm(*layer, p, p, nullptr, p, nullptr), cudaErrorInvalidValue); // no bias
  auto rms = planRmsNorm(DType::F32, {2, 3}, scale, 1, 1e-6, {2, 3});
  ASSERT_TRUE(rms.ok());
  EXPECT_EQ(launchNorm(*rms, p, p, p, p, nullptr), cudaErrorInvalidValue); // a bias for rms
  EXPECT_EQ(launchNorm(*rms, p, nullptr, nullptr, p, nullptr), cudaErrorInvalidValue);

  auto loss =
      planCrossEntropy(DType::F32, {2, 3}, DType::I64, {2}, kIgnore, LossReduction::Mean, {});
  ASSERT_TRUE(loss.ok());
  EXPECT_EQ(launchCrossEntropy(*loss, p, p, p, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchCrossEntropy(*loss, p, nullptr, p, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launchCrossEntropy(*loss, p, p, nullptr, p, nullptr), cudaErrorInvalidValue);
  CrossEntropyPlan wrongScratch = *loss;
  wrongScratch.scratchBytes = 4;
  EXPECT_EQ(launchCrossEntropy(wrongScratch, p, p, p, p, nullptr), cudaErrorInvalidValue);
}

} // namespace
} // namespace rp::kernels::cuda::test
