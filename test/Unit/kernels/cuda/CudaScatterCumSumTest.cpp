//===- CudaScatterCumSumTest.cpp - GPU scatter, scatter_elements, cumsum, mod ===//
//
// Runs on the device the launchers of the ops the ONNX importer added: the overwriting
// scatters (kernels/cuda/Gather.h), cumsum (kernels/cuda/CumSum.h) and the elementwise
// softplus, floor and mod (kernels/cuda/Elementwise.h), and compares with the CPU reference
// kernels; outputs are poisoned (0xA5 bytes, a NaN in every float format) before each launch,
// so that an element the kernel skips fails. The tests call GTEST_SKIP() without a CUDA
// device; CudaScatterCumSumHostTest.cpp checks the same bodies on the host.
//
// Tolerances:
//   scatter, scatter_elements: bit-identical for every dtype (data movement; repeated indices
//     keep their last update: the integer atomicMax and the per-line walk are deterministic);
//   cumsum: f32, f64 and integers bit-identical (the CPU's sums, in its order, in double or
//     wrapping int64); f16/bf16 within 2 ulps of the format at max(|reference|, 2^-6);
//   floor, mod: bit-identical (exact, or one rounded addition); softplus: rtol 1e-6 (the
//     device's double exp and log1p are within a few ulps of glibc's before rounding to f32).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CumSum.h"
#include "kernels/cpu/Elementwise.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cuda/CumSum.h"
#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/Gather.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::Status;
using base::StatusCode;

/// Skips without a device; stream_ for the launches.
class CudaScatterCumSum : public CudaStreamTest {};

TEST_F(CudaScatterCumSum, ScatterMatchesCpuBitForBit) {
  std::mt19937 rng(71);
  const std::vector<OverwriteCase> cases = {
      {{64, 128}, {16}, 0}, {{2, 6, 3}, {2, 2}, 1}, {{4, 3}, {300}, 0}, {{3, 4}, {}, 1}};
  forEachOverwriteCase(false, cases, rng, [this](const OverwriteInputs &in, DType dtype,
                                                 DType index, const OverwriteCase &c) {
    base::StatusOr<ScatterPlan> plan =
        planScatter(dtype, c.data, index, c.indices, in.updates.shape(), c.axis, c.data);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    auto dData = upload(in.data), dIdx = upload(in.indices), dUpd = upload(in.updates);
    auto dOut = poisonedOutput(dtype, c.data);
    DeviceBuffer workspace(plan->workspaceBytes);
    ASSERT_CUDA_OK(launchScatter(*plan, dData->get(), dIdx->get(), dUpd->get(), dOut->get(),
                                 workspace.get(), nullptr, stream_));
    expectBitsEqual(download(*dOut, dtype, c.data, stream_), in.want, "scatter");
  });
}

TEST_F(CudaScatterCumSum, ScatterElementsMatchesCpuBitForBit) {
  std::mt19937 rng(72);
  const std::vector<OverwriteCase> cases = {
      {{4096, 8}, {4096, 2}, 1}, {{4, 5, 3}, {3, 5, 2}, 0}, {{2, 6}, {2, 11}, 1}};
  forEachOverwriteCase(true, cases, rng, [this](const OverwriteInputs &in, DType dtype,
                                                DType index, const OverwriteCase &c) {
    base::StatusOr<ScatterElementsPlan> plan =
        planScatterElements(dtype, c.data, index, c.indices, c.indices, c.axis, c.data);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    auto dData = upload(in.data), dIdx = upload(in.indices), dUpd = upload(in.updates);
    auto dOut = poisonedOutput(dtype, c.data);
    ASSERT_CUDA_OK(launchScatterElements(*plan, dData->get(), dIdx->get(), dUpd->get(),
                                         dOut->get(), nullptr, stream_));
    expectBitsEqual(download(*dOut, dtype, c.data, stream_), in.want, "scatter_elements");
  });
}

// An out-of-range index lands nowhere; the error word names the first one, as the CPU does.
TEST_F(CudaScatterCumSum, ScatterReportsTheFirstBadIndex) {
  HostTensor data = cpu::test::tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor idx = cpu::test::tensor(DType::I64, {3}, {2, 7, -3});
  HostTensor upd = cpu::test::tensor(DType::F32, {3, 2}, {10, 20, 30, 40, 50, 60});
  base::StatusOr<ScatterPlan> plan =
      planScatter(DType::F32, {3, 2}, DType::I64, {3}, {3, 2}, 0, {3, 2});
  ASSERT_TRUE(plan.ok());
  auto dData = upload(data), dIdx = upload(idx), dUpd = upload(upd);
  auto dOut = poisonedOutput(DType::F32, {3, 2});
  DeviceBuffer workspace(plan->workspaceBytes), error(8);
  auto *word = static_cast<unsigned long long *>(error.get());
  ASSERT_CUDA_OK(launchScatter(*plan, dData->get(), dIdx->get(), dUpd->get(), dOut->get(),
                               workspace.get(), word, stream_));
  expectBitsEqual(download(*dOut, DType::F32, {3, 2}, stream_),
                  cpu::test::tensor(DType::F32, {3, 2}, {50, 60, 3, 4, 10, 20}), "scatter");
  const Status s = readIndexError(plan->index, word, dIdx->get(), stream_);
  EXPECT_EQ(s.code(), StatusCode::OutOfRange);
  EXPECT_EQ(s.message(), "scatter: index 7 at row-major position 1 of indices (i64, 3 "
                         "elements) is outside [-3, 3) (dimension 0 of data)");
}

TEST_F(CudaScatterCumSum, CumSumMatchesCpu) {
  std::mt19937 rng(73);
  forEachCumSumCase({{2, 4096}, {3, 17, 5}}, rng,
                    [this](const CumSumInputs &in, DType dtype, const Shape &shape, int64_t axis,
                           bool exclusive, bool reverse) {
                      base::StatusOr<CumSumPlan> plan =
                          planCumSum(dtype, shape, axis, exclusive, reverse, shape);
                      ASSERT_TRUE(plan.ok()) << plan.status().toString();
                      auto dX = upload(in.x);
                      auto dOut = poisonedOutput(dtype, shape);
                      ASSERT_CUDA_OK(launchCumSum(*plan, dX->get(), dOut->get(), stream_));
                      expectExactOrUlps(download(*dOut, dtype, shape, stream_), in.want,
                                        "cumsum");
                    });
}

TEST_F(CudaScatterCumSum, SoftplusFloorModMatchCpu) {
  std::mt19937 rng(74);
  const Shape shape = {5, 300};
  HostTensor x = randomTensor(DType::F32, shape, rng, -40, 40);
  for (auto [op, rtol] : {std::pair{UnaryOp::Softplus, 1e-6}, std::pair{UnaryOp::Floor, 0.0}}) {
    SCOPED_TRACE(unaryKindName(op));
    HostTensor want(DType::F32, shape);
    ASSERT_OK(cpu::unary(op, x, want));
    base::StatusOr<UnaryPlan> plan = planUnary(op, DType::F32, shape, shape);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    auto dX = upload(x);
    auto dOut = poisonedOutput(DType::F32, shape);
    ASSERT_CUDA_OK(launchUnary(*plan, dX->get(), dOut->get(), stream_));
    expectExactOrCloseF32(download(*dOut, DType::F32, shape, stream_), want, rtol,
                          unaryKindName(op));
  }
  for (DType dtype : {DType::F32, DType::I64, DType::I32})
    for (BinaryOp op : {BinaryOp::Mod, BinaryOp::Fmod}) {
      SCOPED_TRACE(std::string(binaryKindName(op)) + " " + base::dtypeName(dtype));
      HostTensor a = randomTensor(dtype, shape, rng, -50, 50);
      HostTensor b = randomTensor(dtype, {300}, rng, 1, 9);
      for (int64_t i = 0; i < 300; i += 2) // divisors of both signs, never 0
        setValue(b, i, -valueAt(b, i));
      HostTensor want(dtype, shape);
      ASSERT_OK(cpu::binary(op, a, b, want));
      base::StatusOr<BinaryPlan> plan = planBinary(op, dtype, shape, {300}, shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dA = upload(a), dB = upload(b);
      auto dOut = poisonedOutput(dtype, shape);
      ASSERT_CUDA_OK(launchBinary(*plan, dA->get(), dB->get(), dOut->get(), stream_));
      expectBitsEqual(download(*dOut, dtype, shape, stream_), want, "mod");
    }
}

} // namespace
} // namespace rp::kernels::cuda::test
