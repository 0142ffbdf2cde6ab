//===- CudaRowKernelsTest.cpp - The GPU row kernels against the CPU kernels ===//
//
// Device tests of kernels/cuda/{Reduce,Softmax,Norm,CrossEntropy}: each case runs the GPU
// kernel (inputs copied to the device, the output poisoned with 0xFF bytes, a guard region
// after it) and compares with the CPU reference kernel (kernels/cpu) on the same inputs.
// Every case runs twice and the two outputs must be identical bit for bit (the kernels are
// deterministic). Shapes cover every threads-per-row choice (a thread, a warp, blocks of
// 256 / 512 / 1024 threads, strided rows) and the vocabulary-size rows of cross-entropy.
//
// Tolerances (CudaRowKernelsTestUtil.h), |gpu - cpu| <= bound(cpu):
//   f32   1e-6 relative + 1e-7 absolute (both compute in double and round once)
//   f64   1e-12 relative + 1e-12 absolute
//   f16   inputs rounded to binary16, reference = the CPU in f32 on the rounded inputs;
//         2 ulps of binary16 (2^-10 relative) + 2^-20 absolute
//   bf16  likewise with 2 ulps of bfloat16 (2^-7 relative) + 2^-20 absolute
//   i64, i32 reductions: exact.
// Sums and means add the accumulation bound (count / P + 10) * u * sum|x| (u the compute
// type's roundoff, P the plan's threads per row) for cancelling sums; norms add
// (cols / P + 10) * u * 8 for outputs that cancel against the bias. Out-of-range labels:
// the CPU returns OutOfRange, the GPU loss is NaN (CrossEntropy.h).
//
// Every test calls GTEST_SKIP() when no CUDA device is present.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CrossEntropy.h"
#include "kernels/cpu/Norm.h"
#include "kernels/cpu/Reduce.h"
#include "kernels/cpu/Softmax.h"
#include "kernels/cuda/CrossEntropy.h"
#include "kernels/cuda/Norm.h"
#include "kernels/cuda/Reduce.h"
#include "kernels/cuda/Softmax.h"
#include "test/Unit/kernels/cuda/CudaRowKernelsTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::StatusCode;

/// Guard bytes after every device output; they must keep the poison.
constexpr size_t kGuard = 64;
constexpr unsigned char kPoison = 0xFF; // NaN in every float format, -1 in the integers

/// A poisoned device output of `bytes` bytes and kGuard guard bytes.
std::unique_ptr<DeviceBuffer> poisonedOutput(size_t bytes) {
  return test::poisonedOutput(bytes, kPoison, kGuard);
}

/// Copies a device output back into a tensor of `dtype` and `shape`; checks the guard.
HostTensor download(const DeviceBuffer &buffer, DType dtype, const Shape &shape) {
  return test::download(buffer, dtype, shape, kPoison);
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() &&
         (a.byteSize() == 0 || std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0);
}

/// Skips without a device; stream_ for the launches.
class CudaRowKernelsTest : public CudaStreamTest {};

//===--- reduce ---------------------------------------------------------------===//

TEST_F(CudaRowKernelsTest, ReduceMatchesCpu) {
  const ReduceCase cases[] = {
      {{7}, {0}},         {{3, 5}, {1}},           {{2, 3, 4}, {0, 2}}, {{64, 4096}, {1}},
      {{4096, 64}, {0}},  {{8, 128, 256}, {0, 2}}, {{3, 200000}, {1}},  {{5000, 20}, {0}},
      {{100, 5000}, {0}}, {{6, 40, 7}, {1}},       {{2, 9000}, {1}},    {{3, 0}, {1}},
  };
  std::mt19937 rng(101);
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::F16, DType::BF16})
    for (const ReduceCase &c : cases) {
      const double range = dtype == DType::I64 ? 4e18 : dtype == DType::I32 ? 2e9 : 2.0;
      const HostTensor x = randomInput(dtype, c.shape, rng, -range, range);
      const HostTensor xRef = convertTo(x, referenceDType(dtype));
      const Shape outShape = reduceOutShape(c.shape, c.axes);
      auto dx = upload(x);
      for (cpu::ReduceKind kind : kCpuKinds) {
        SCOPED_TRACE(describe(reduceKindName(kind), dtype, c.shape) + " axes " +
                     base::formatShape(c.axes));
        HostTensor want(referenceDType(dtype), outShape);
        const base::Status cpuStatus = cpu::reduce(kind, xRef, c.axes, false, want);
        auto plan = planReduce(kind, dtype, c.shape, c.axes, false, outShape);
        if (!cpuStatus.ok()) { // the empty integer mean: both refuse it alike
          ASSERT_FALSE(plan.ok());
          EXPECT_EQ(plan.status(), cpuStatus);
          continue;
        }
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        HostTensor runs[2];
        for (HostTensor &got : runs) {
          auto dout = poisonedOutput(static_cast<size_t>(cpu::test::numElements(outShape)) *
                                     base::dtypeSize(dtype));
          ASSERT_CUDA_OK(launchReduce(*plan, dx->get(), dout->get(), stream_));
          ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
          got = download(*dout, dtype, outShape);
        }
        expectNear(runs[0], valuesOf(want),
                   reduceSlack(kind, dtype, x, c.axes, false, plan->threadsPerRow),
                   "gpu vs cpu::reduce");
        EXPECT_TRUE(sameBytes(runs[0], runs[1])) << "two runs differ";
      }
    }
}

//===--- softmax --------------------------------------------------------------===//

TEST_F(CudaRowKernelsTest, SoftmaxMatchesCpu) {
  const AxisCase cases[] = {
      {{5}, 0},           {{64, 1000}, 1}, {{16, 32000}, 1}, {{4, 151936}, 1}, {{1000, 10}, 0},
      {{32, 128, 64}, 1}, {{4096, 33}, 1}, {{70, 4096}, 0},  {{2, 3, 4}, 2},   {{3, 9000}, 1},
  };
  std::mt19937 rng(102);
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const AxisCase &c : cases) {
      HostTensor x = randomInput(dtype, c.shape, rng, -8, 8);
      if (c.shape.size() == 2 && c.axis == 1 && c.shape[0] >= 4) { // NaN and +inf lines
        HostTensor f64 = convertTo(x, DType::F64);
        f64.data<double>()[c.shape[1] + 3] = NAN;
        f64.data<double>()[2 * c.shape[1]] = INFINITY;
        x = convertTo(f64, dtype);
      }
      const HostTensor xRef = convertTo(x, referenceDType(dtype));
      auto dx = upload(x);
      for (bool log : {false, true}) {
        SCOPED_TRACE(describe(log ? "log_softmax" : "softmax", dtype, c.shape) + " axis " +
                     std::to_string(c.axis));
        HostTensor want(referenceDType(dtype), c.shape);
        ASSERT_TRUE(cpu::softmax(xRef, c.axis, log, want).ok());
        auto plan = planSoftmax(dtype, c.shape, c.axis, log, c.shape);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        HostTensor runs[2];
        for (HostTensor &got : runs) {
          auto dout = poisonedOutput(x.byteSize());
          ASSERT_CUDA_OK(launchSoftmax(*plan, dx->get(), dout->get(), stream_));
          ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
          got = download(*dout, dtype, c.shape);
        }
        expectNear(runs[0], valuesOf(want), {}, "gpu vs cpu::softmax");
        EXPECT_TRUE(sameBytes(runs[0], runs[1])) << "two runs differ";
      }
    }
}

//===--- norm -----------------------------------------------------------------===//

TEST_F(CudaRowKernelsTest, NormMatchesCpu) {
  const AxisCase cases[] = {
      {{64, 4096}, 1},   {{17, 768}, 1}, {{3, 100000}, 1}, {{4096, 8}, 1},
      {{2, 3, 4, 5}, 1}, {{5, 9000}, 1}, {{33, 1024}, 1},
  };
  std::mt19937 rng(103);
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const AxisCase &c : cases)
      for (int variant = 0; variant < 3; ++variant) { // rms, layer, layer + bias
        const bool rms = variant == 0, withBias = variant == 2;
        const NormInputs in = randomNormInputs(dtype, c, rms, withBias, rng);
        SCOPED_TRACE(in.trace);
        HostTensor want(referenceDType(dtype), c.shape);
        ASSERT_TRUE(in.reference(want).ok());
        auto plan = in.plan();
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        auto dx = upload(in.x), dscale = upload(in.scale), dbias = upload(in.bias);
        HostTensor runs[2];
        for (HostTensor &got : runs) {
          auto dout = poisonedOutput(in.x.byteSize());
          ASSERT_CUDA_OK(launchNorm(*plan, dx->get(), dscale->get(),
                                    withBias ? dbias->get() : nullptr, dout->get(), stream_));
          ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
          got = download(*dout, dtype, c.shape);
        }
        expectNear(runs[0], valuesOf(want),
                   normSlack(dtype, plan->cols, plan->threadsPerRow, in.x.numElements()),
                   "gpu vs cpu norm");
        EXPECT_TRUE(sameBytes(runs[0], runs[1])) << "two runs differ";
      }
}

//===--- cross-entropy ----------------------------------------------------------===//

/// Runs the GPU loss twice (the runs must agree bit for bit) and returns it as a tensor.
HostTensor gpuLoss(const CrossEntropyPlan &plan, const HostTensor &logits, const HostTensor &labels,
                   cudaStream_t stream) {
  auto dlogits = upload(logits), dlabels = upload(labels);
  DeviceBuffer scratch(plan.scratchBytes, kGuard);
  EXPECT_EQ(scratch.status(), cudaSuccess);
  HostTensor runs[2];
  for (HostTensor &got : runs) {
    auto dout = poisonedOutput(base::dtypeSize(plan.dtype));
    EXPECT_EQ(launchCrossEntropy(plan, dlogits->get(), dlabels->get(), dout->get(), scratch.get(),
                                 stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    got = download(*dout, plan.dtype, {});
  }
  EXPECT_TRUE(sameBytes(runs[0], runs[1])) << "two runs differ";
  return std::move(runs[0]);
}

TEST_F(CudaRowKernelsTest, CrossEntropyMatchesCpu) {
  const Shape shapes[] = {{64, 151936}, {1000, 50},   {4, 100, 16}, {5000, 10},
                          {3, 2000},    {2, 7, 3, 4}, {0, 5}};
  std::mt19937 rng(104);
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (DType labelType : {DType::I64, DType::I32})
      for (const Shape &shape : shapes)
        for (cpu::LossReduction r : {cpu::LossReduction::Mean, cpu::LossReduction::Sum}) {
          if (shape[1] > 100000 && (dtype == DType::F64 || dtype == DType::F16))
            continue; // the vocabulary rows: f32 and bf16
          SCOPED_TRACE(describe("cross_entropy", dtype, shape) + " labels " +
                       base::dtypeName(labelType) +
                       (r == LossReduction::Mean ? " mean" : " sum"));
          const Shape labelShape = labelShapeOf(shape);
          const HostTensor logits = randomInput(dtype, shape, rng, -8, 8);
          const HostTensor labels = randomLabels(labelType, labelShape, shape[1], kIgnore, rng);
          HostTensor want(referenceDType(dtype), {});
          ASSERT_TRUE(
              cpu::crossEntropy(convertTo(logits, referenceDType(dtype)), labels, kIgnore, r, want)
                  .ok());
          auto plan = planCrossEntropy(dtype, shape, labelType, labelShape, kIgnore, r, {});
          ASSERT_TRUE(plan.ok()) << plan.status().toString();
          expectNear(gpuLoss(*plan, logits, labels, stream_), valuesOf(want), {},
                     "gpu vs cpu::crossEntropy");
        }
}

// Every label ignored: Mean NaN, Sum 0; ignore_index inside [0, C) skips those rows.
TEST_F(CudaRowKernelsTest, CrossEntropyIgnoreIndex) {
  std::mt19937 rng(105);
  const HostTensor logits = randomInput(DType::BF16, {6, 40}, rng);
  const HostTensor all = cpu::test::tensor(DType::I32, {6}, {3, 3, 3, 3, 3, 3});
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
    auto plan = planCrossEntropy(DType::BF16, {6, 40}, DType::I32, {6}, 3, r, {});
    ASSERT_TRUE(plan.ok());
    const double got = valueAt(gpuLoss(*plan, logits, all, stream_), 0);
    if (r == LossReduction::Mean)
      EXPECT_TRUE(std::isnan(got)) << got;
    else
      EXPECT_EQ(got, 0.0);
  }
  const HostTensor some = cpu::test::tensor(DType::I32, {6}, {3, 1, 3, 0, 39, 3});
  HostTensor want(DType::F32, {});
  ASSERT_TRUE(
      cpu::crossEntropy(convertTo(logits, DType::F32), some, 3, cpu::LossReduction::Mean, want)
          .ok());
  auto plan = planCrossEntropy(DType::BF16, {6, 40}, DType::I32, {6}, 3, LossReduction::Mean, {});
  ASSERT_TRUE(plan.ok());
  expectNear(gpuLoss(*plan, logits, some, stream_), valuesOf(want), {}, "ignore_index 3");
}

// A label outside [0, C) that is not ignore_index: the CPU returns OutOfRange, the GPU loss
// is NaN (CrossEntropy.h).
TEST_F(CudaRowKernelsTest, CrossEntropyOutOfRangeLabelGivesNan) {
  std::mt19937 rng(106);
  const HostTensor logits = randomInput(DType::F32, {4, 300}, rng);
  for (double bad : {300.0, -1.0}) {
    const HostTensor labels = cpu::test::tensor(DType::I64, {4}, {1, bad, kIgnore, 2});
    HostTensor cpuOut(DType::F32, {});
    EXPECT_EQ(cpu::crossEntropy(logits, labels, kIgnore, cpu::LossReduction::Sum, cpuOut).code(),
              StatusCode::OutOfRange);
    for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
      auto plan = planCrossEntropy(DType::F32, {4, 300}, DType::I64, {4}, kIgnore, r, {});
      ASSERT_TRUE(plan.ok());
      EXPECT_TRUE(std::isnan(valueAt(gpuLoss(*plan, logits, labels, stream_), 0)));
    }
  }
}

} // namespace
} // namespace rp::kernels::cuda::test
