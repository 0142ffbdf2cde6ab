//===- CudaScatterCumSumHostTest.cpp - GPU scatter, scatter_elements, cumsum on the host ===//
//
// The bodies of the overwriting scatters (kernels/cuda/Gather.h: scatterLastAt, scatterAt,
// scatterElementsAt) and of cumsum (kernels/cuda/CumSum.h: cumsumLaneAt), replayed on the host
// (kernels/cuda/HostReplay.h) over every point of the planned launch, against the CPU
// reference kernels; no GPU needed.
//
// Tolerances: the scatters move bits: bit-identical for every dtype (f32, f64, f16, bf16, i64,
// i32, i1), with repeated and negative indices (the last update of a target wins in both).
// cumsum: f32, f64 and the integers bit-identical (the same sums in the same order, in double
// or wrapping int64); f16/bf16 (summed in float, the reference in double on the decoded
// inputs) within 2 ulps of the format at max(|reference|, 2^-6). The plans refuse what the
// CPU kernels refuse, with their messages.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CumSum.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cuda/CumSum.h"
#include "kernels/cuda/Gather.h"
#include "kernels/cuda/HostReplay.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

TEST(CudaScatterHost, ScatterMatchesCpuBitForBit) {
  std::mt19937 rng(61);
  // Rows (ScatterND's form), a middle axis with 2-D indices, more indices than the dimension
  // (repeats), a scalar index.
  const std::vector<OverwriteCase> cases = {
      {{8, 5}, {3}, 0}, {{2, 6, 3}, {2, 2}, 1}, {{4, 3}, {9}, 0}, {{3, 4}, {}, 1}};
  forEachOverwriteCase(false, cases, rng, [](const OverwriteInputs &in, DType dtype,
                                             DType index, const OverwriteCase &c) {
    base::StatusOr<ScatterPlan> plan =
        planScatter(dtype, c.data, index, c.indices, in.updates.shape(), c.axis, c.data);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    HostTensor got = poisoned(dtype, c.data);
    std::vector<unsigned char> workspace(plan->workspaceBytes);
    replay::scatter(*plan, in.data.raw(), in.indices.raw(), in.updates.raw(), got.raw(),
                    workspace.data());
    expectBitsEqual(got, in.want, "scatter");
  });
}

TEST(CudaScatterHost, ScatterElementsMatchesCpuBitForBit) {
  std::mt19937 rng(62);
  // A router's [tokens, experts] mask, smaller updates, long lines.
  const std::vector<OverwriteCase> cases = {
      {{32, 8}, {32, 2}, 1}, {{4, 5, 3}, {3, 5, 2}, 0}, {{2, 6}, {2, 11}, 1}};
  forEachOverwriteCase(true, cases, rng, [](const OverwriteInputs &in, DType dtype, DType index,
                                            const OverwriteCase &c) {
    base::StatusOr<ScatterElementsPlan> plan =
        planScatterElements(dtype, c.data, index, c.indices, c.indices, c.axis, c.data);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    HostTensor got = poisoned(dtype, c.data);
    replay::scatterElements(*plan, in.data.raw(), in.indices.raw(), in.updates.raw(), got.raw());
    expectBitsEqual(got, in.want, "scatter_elements");
  });
}

TEST(CudaCumSumHost, MatchesCpu) {
  std::mt19937 rng(63);
  forEachCumSumCase({{9}, {3, 17}, {2, 5, 4}}, rng,
                    [](const CumSumInputs &in, DType dtype, const Shape &shape, int64_t axis,
                       bool exclusive, bool reverse) {
                      base::StatusOr<CumSumPlan> plan =
                          planCumSum(dtype, shape, axis, exclusive, reverse, shape);
                      ASSERT_TRUE(plan.ok()) << plan.status().toString();
                      HostTensor got = poisoned(dtype, shape);
                      replay::cumsum(*plan, in.x.raw(), got.raw());
                      expectExactOrUlps(got, in.want, "cumsum");
                    });
}

/// Expects the plan's status to equal the CPU kernel's: code and message.
template <typename Plan>
void expectSameError(const base::Status &cpu, const base::StatusOr<Plan> &gpu) {
  ASSERT_FALSE(cpu.ok());
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().code(), cpu.code());
  EXPECT_EQ(gpu.status().message(), cpu.message());
}

TEST(CudaScatterCumSumHost, PlansRefuseWhatTheCpuRefuses) {
  const DType f = DType::F32;
  HostTensor data(f, {3, 2}), out(f, {3, 2}), idx(DType::I64, {2}), badUpd(f, {3, 2});
  expectSameError(cpu::scatter(data, idx, badUpd, 0, out),
                  planScatter(f, {3, 2}, DType::I64, {2}, {3, 2}, 0, {3, 2}));
  HostTensor wrongOut(f, {2, 2}), upd(f, {2, 2});
  expectSameError(cpu::scatter(data, idx, upd, 0, wrongOut),
                  planScatter(f, {3, 2}, DType::I64, {2}, {2, 2}, 0, {2, 2}));
  HostTensor eidx(DType::I64, {3, 1}), eupd(f, {2, 1});
  expectSameError(cpu::scatterElements(data, eidx, eupd, 1, out),
                  planScatterElements(f, {3, 2}, DType::I64, {3, 1}, {2, 1}, 1, {3, 2}));
  HostTensor bigIdx(DType::I64, {4, 1}), bigUpd(f, {4, 1});
  expectSameError(cpu::scatterElements(data, bigIdx, bigUpd, 1, out),
                  planScatterElements(f, {3, 2}, DType::I64, {4, 1}, {4, 1}, 1, {3, 2}));
  HostTensor x(f, {2, 3}), sums(f, {2, 3});
  expectSameError(cpu::cumsum(x, 2, false, false, sums),
                  planCumSum(f, {2, 3}, 2, false, false, {2, 3}));
  HostTensor wrong(f, {3, 2});
  expectSameError(cpu::cumsum(x, 0, false, false, wrong),
                  planCumSum(f, {2, 3}, 0, false, false, {3, 2}));
  EXPECT_FALSE(planCumSum(DType::I1, {2}, 0, false, false, {2}).ok());
}

} // namespace
} // namespace rp::kernels::cuda::test
