//===- CudaRoutedExpertsHostTest.cpp - routed experts' GPU bodies on the host ===//
//
// The bodies of the CUDA routed-experts kernels (kernels/cuda/RoutedExperts.h), run by the
// host replay, against the CPU kernels: moe_sort and moe_dispatch exactly (integers, copies);
// moe_combine and the grouped matmuls in f64 within 1e-12 and in f32 within 1e-5 + 1e-4 |want|
// (the CPU sums a dot product through OpenBLAS, the GPU body in order). Segments include an
// empty expert and one longer than a CPU row block. The planners' errors name the op.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/ExpertRouting.h"
#include "kernels/cpu/GroupedMatMul.h"
#include "kernels/cuda/RoutedExperts.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <algorithm>
#include <numeric>

namespace rp::kernels::cpu::test {
namespace {

namespace kc = ::rp::kernels::cuda;

HostTensor routing(int64_t tokens, int64_t k, int64_t experts, std::mt19937 &rng) {
  HostTensor idx(DType::I64, {tokens, k});
  std::vector<int64_t> all(experts);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t j = 0; j < k; ++j) // expert 0 never chosen when it is shuffled past k
      idx.data<int64_t>()[t * k + j] = all[j] == 0 && experts > k ? all[k] : all[j];
  }
  return idx;
}

Tolerance tol(DType dt) { return dt == DType::F32 ? Tolerance{1e-4, 1e-5} : kF64; }

TEST(CudaRoutedExpertsHost, MatchCpuKernels) {
  std::mt19937 rng(41);
  const int64_t tokens = 120, k = 3, experts = 5, h = 6, n = 7; // ~90 rows per used expert
  HostTensor idx = routing(tokens, k, experts, rng);
  HostTensor pos(DType::I64, {tokens, k}), off(DType::I64, {experts + 1});
  ASSERT_OK(moeSort(idx, pos, off));
  HostTensor gpos(DType::I64, {tokens, k}), goff(DType::I64, {experts + 1});
  auto sortPlan = kc::planMoeSort(DType::I64, {tokens, k}, DType::I64, {tokens, k}, DType::I64,
                                  {experts + 1});
  ASSERT_TRUE(sortPlan.ok()) << sortPlan.status().toString();
  kc::replay::moeSort(*sortPlan, idx.raw(), gpos.raw(), goff.raw());
  expectEqual(gpos, values(pos), "positions");
  expectEqual(goff, values(off), "offsets");
  const int64_t r = tokens * k;
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(base::dtypeName(dt));
    HostTensor x = randomTensor(dt, {tokens, h}, rng), w = randomTensor(dt, {tokens, k}, rng);
    HostTensor rows(dt, {r, h}), grows(dt, {r, h});
    ASSERT_OK(moeDispatch(x, pos, rows));
    auto rowsPlan = kc::planMoeDispatch(dt, {tokens, h}, DType::I64, {tokens, k}, dt, {r, h});
    ASSERT_TRUE(rowsPlan.ok()) << rowsPlan.status().toString();
    kc::replay::moeDispatch(*rowsPlan, x.raw(), pos.raw(), grows.raw());
    expectEqual(grows, values(rows), "dispatch");

    for (bool tb : {false, true}) {
      HostTensor wt = randomTensor(dt, tb ? Shape{experts, n, h} : Shape{experts, h, n}, rng);
      HostTensor y(dt, {r, n}), gy(dt, {r, n});
      ASSERT_OK(groupedMatmul(rows, wt, off, tb, y));
      auto plan = kc::planGroupedMatmul(dt, {r, h}, dt, wt.shape(), DType::I64, {experts + 1},
                                        tb, dt, {r, n});
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      kc::replay::groupedMatmul(*plan, rows.raw(), wt.raw(), off.raw(), gy.raw());
      expectClose(gy, values(y), tol(dt), tb ? "grouped_matmul transpose_b" : "grouped_matmul");

      HostTensor dw(dt, {experts, h, n}), gdw(dt, {experts, h, n});
      ASSERT_OK(groupedMatmulWgrad(rows, y, off, dw));
      auto wplan = kc::planGroupedMatmulWgrad(dt, {r, h}, dt, {r, n}, DType::I64, {experts + 1},
                                              dt, {experts, h, n});
      ASSERT_TRUE(wplan.ok()) << wplan.status().toString();
      kc::replay::groupedMatmulWgrad(*wplan, rows.raw(), y.raw(), off.raw(), gdw.raw());
      expectClose(gdw, values(dw), tol(dt), "grouped_matmul_wgrad");

      HostTensor out(dt, {tokens, n}), gout(dt, {tokens, n});
      ASSERT_OK(moeCombine(y, w, pos, out));
      auto cplan = kc::planMoeCombine(dt, {r, n}, dt, {tokens, k}, DType::I64, {tokens, k}, dt,
                                      {tokens, n});
      ASSERT_TRUE(cplan.ok()) << cplan.status().toString();
      kc::replay::moeCombine(*cplan, y.raw(), w.raw(), pos.raw(), gout.raw());
      expectClose(gout, values(out), tol(dt), "moe_combine");
    }
  }
}

TEST(CudaRoutedExpertsHost, PlannerErrors) {
  EXPECT_ERROR(kc::planMoeSort(DType::I64, {8}, DType::I64, {8}, DType::I64, {5}).status(),
               StatusCode::InvalidArgument, "moe_sort: indices is [8], expected rank 2 [T, k]");
  EXPECT_ERROR(kc::planMoeSort(DType::I64, {4, 2}, DType::I64, {4, 2}, DType::I64, {1}).status(),
               StatusCode::InvalidArgument, "moe_sort: offsets is i64[1], expected i64[E + 1]");
  EXPECT_ERROR(kc::planMoeDispatch(DType::F32, {4, 3}, DType::I64, {2, 2}, DType::F32, {8, 3})
                   .status(),
               StatusCode::InvalidArgument, "moe_dispatch: positions is i64[2, 2], expected");
  EXPECT_ERROR(kc::planMoeCombine(DType::F32, {7, 3}, DType::F32, {4, 2}, DType::I64, {4, 2},
                                  DType::F32, {4, 3})
                   .status(),
               StatusCode::InvalidArgument, "moe_combine: rows is [7, 3], expected [T * k, N]");
  EXPECT_ERROR(kc::planGroupedMatmul(DType::F32, {8, 4}, DType::F32, {3, 5, 6}, DType::I64, {4},
                                     false, DType::F32, {8, 6})
                   .status(),
               StatusCode::InvalidArgument,
               "grouped_matmul: weights is f32[3, 5, 6], expected f32[3, 4, 6]");
  EXPECT_ERROR(kc::planGroupedMatmulWgrad(DType::F32, {8, 4}, DType::BF16, {8, 6}, DType::I64,
                                          {4}, DType::F32, {3, 4, 6})
                   .status(),
               StatusCode::InvalidArgument, "grouped_matmul_wgrad: rhs has dtype bf16");
  EXPECT_STATUS(kc::planGroupedMatmul(DType::I64, {8, 4}, DType::I64, {3, 4, 6}, DType::I64,
                                      {4}, false, DType::I64, {8, 6})
                    .status(),
                StatusCode::InvalidArgument);
}

} // namespace
} // namespace rp::kernels::cpu::test
