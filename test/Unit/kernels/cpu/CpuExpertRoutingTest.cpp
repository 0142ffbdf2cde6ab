//===- CpuExpertRoutingTest.cpp - moe_sort, moe_dispatch, moe_combine ----===//
//
// moe_sort is exact: compared with a reference that std::stable_sorts the flat pair indices
// q = t * k + j by expert (ties by q: token, then choice), and with a hand-computed case.
// moe_dispatch is data movement (exact); moe_combine against a naive double loop, f32:
// |got - want| <= 1e-6 + 1e-5 |want| (kF32), f64: 1e-12. The end-to-end routed-experts case
// (sort, dispatch, grouped matmul, combine) is compared with the per-(token, choice) naive
// expert loop: f32 1e-5 + 1e-4 |want| (K-term dot products), f64 1e-12. Bad positions and
// expert indices are errors; the results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/ExpertRouting.h"
#include "kernels/cpu/GroupedMatMul.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace rp::kernels::cpu::test {
namespace {

HostTensor randomIndices(int64_t tokens, int64_t k, int64_t experts, std::mt19937 &rng) {
  HostTensor idx(DType::I64, {tokens, k});
  std::vector<int64_t> all(experts);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    std::shuffle(all.begin(), all.end(), rng); // k distinct experts per token, like top-k
    for (int64_t j = 0; j < k; ++j)
      idx.data<int64_t>()[t * k + j] = all[j];
  }
  return idx;
}

/// positions and offsets of the reference stable sort.
void referenceSort(const HostTensor &idx, int64_t experts, std::vector<double> &positions,
                   std::vector<double> &offsets) {
  const int64_t pairs = idx.numElements();
  const int64_t *e = idx.data<int64_t>();
  std::vector<int64_t> order(pairs);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return e[a] < e[b]; });
  positions.assign(pairs, 0);
  for (int64_t r = 0; r < pairs; ++r)
    positions[order[r]] = static_cast<double>(r);
  offsets.assign(experts + 1, 0);
  for (int64_t q = 0; q < pairs; ++q)
    offsets[e[q] + 1] += 1;
  for (int64_t x = 0; x < experts; ++x)
    offsets[x + 1] += offsets[x];
}

TEST(CpuMoeSort, HandComputed) {
  // Tokens 0..2 pick experts (2, 0), (0, 1), (2, 1) of 4: expert 0 gets pairs (0,1), (1,0);
  // expert 1 (1,1), (2,1); expert 2 (0,0), (2,0); expert 3 none.
  HostTensor idx = tensor(DType::I64, {3, 2}, {2, 0, 0, 1, 2, 1});
  HostTensor pos = poisoned(DType::I64, {3, 2}), off = poisoned(DType::I64, {5});
  ASSERT_OK(moeSort(idx, pos, off));
  expectEqual(pos, {4, 0, 1, 2, 5, 3});
  expectEqual(off, {0, 2, 4, 6, 6});
}

TEST(CpuMoeSort, MatchesStableSortReference) {
  std::mt19937 rng(3);
  for (auto [tokens, k, experts] : {std::array<int64_t, 3>{1, 1, 1}, {7, 2, 4}, {33, 3, 8},
                                    {300, 4, 64}, {16, 1, 3}}) {
    HostTensor idx = randomIndices(tokens, k, experts, rng);
    HostTensor pos = poisoned(DType::I64, {tokens, k}), off = poisoned(DType::I64, {experts + 1});
    ASSERT_OK(moeSort(idx, pos, off));
    std::vector<double> wantPos, wantOff;
    referenceSort(idx, experts, wantPos, wantOff);
    expectEqual(pos, wantPos, "positions");
    expectEqual(off, wantOff, "offsets");
  }
}

TEST(CpuMoeSort, Errors) {
  HostTensor idx = tensor(DType::I64, {2, 2}, {0, 3, 1, 0});
  HostTensor pos(DType::I64, {2, 2}), off(DType::I64, {4});
  EXPECT_ERROR(moeSort(idx, pos, off), StatusCode::OutOfRange,
               "moe_sort: indices[0, 1] = 3 is outside [0, 3)");
  HostTensor neg = tensor(DType::I64, {2, 2}, {0, -1, 1, 0});
  EXPECT_STATUS(moeSort(neg, pos, off), StatusCode::OutOfRange);
  HostTensor i32(DType::I32, {2, 2});
  EXPECT_STATUS(moeSort(i32, pos, off), StatusCode::InvalidArgument);
  HostTensor rank1(DType::I64, {4});
  EXPECT_ERROR(moeSort(rank1, pos, off), StatusCode::InvalidArgument, "expected rank 2 [T, k]");
  HostTensor offTooSmall(DType::I64, {1});
  EXPECT_ERROR(moeSort(idx, pos, offTooSmall), StatusCode::InvalidArgument, "E >= 1");
}

TEST(CpuMoeDispatchCombine, MatchReference) {
  std::mt19937 rng(5);
  for (DType dt : kFloatDTypes) {
    const int64_t tokens = 9, k = 3, experts = 5, h = 7;
    HostTensor idx = randomIndices(tokens, k, experts, rng);
    HostTensor pos(DType::I64, {tokens, k}), off(DType::I64, {experts + 1});
    ASSERT_OK(moeSort(idx, pos, off));
    HostTensor x = randomTensor(dt, {tokens, h}, rng);
    HostTensor rows = poisoned(dt, {tokens * k, h});
    ASSERT_OK(moeDispatch(x, pos, rows));
    std::vector<double> wantRows(tokens * k * h);
    for (int64_t q = 0; q < tokens * k; ++q)
      for (int64_t c = 0; c < h; ++c)
        wantRows[pos.data<int64_t>()[q] * h + c] = get(x, (q / k) * h + c);
    expectEqual(rows, wantRows, "dispatch");

    HostTensor w = randomTensor(dt, {tokens, k}, rng);
    HostTensor y = poisoned(dt, {tokens, h});
    ASSERT_OK(moeCombine(rows, w, pos, y));
    std::vector<double> wantY(tokens * h, 0.0);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t c = 0; c < h; ++c)
          wantY[t * h + c] += get(w, t * k + j) * get(rows, pos.data<int64_t>()[t * k + j] * h + c);
    expectClose(y, wantY, toleranceFor(dt), "combine");
  }
}

TEST(CpuMoeDispatchCombine, Errors) {
  HostTensor x(DType::F32, {2, 3}), rows(DType::F32, {4, 3}), y(DType::F32, {2, 3});
  HostTensor w(DType::F32, {2, 2});
  HostTensor dup = tensor(DType::I64, {2, 2}, {0, 1, 1, 3});
  EXPECT_ERROR(moeDispatch(x, dup, rows), StatusCode::OutOfRange,
               "moe_dispatch: positions[1, 0] = 1 is not part of a permutation of [0, 4)");
  HostTensor outside = tensor(DType::I64, {2, 2}, {0, 1, 2, 4});
  EXPECT_STATUS(moeCombine(rows, w, outside, y), StatusCode::OutOfRange);
  HostTensor pos = tensor(DType::I64, {2, 2}, {0, 1, 2, 3});
  HostTensor shortRows(DType::F32, {3, 3});
  EXPECT_ERROR(moeDispatch(x, pos, shortRows), StatusCode::InvalidArgument,
               "moe_dispatch: rows is f32[3, 3], expected f32[4, 3]");
  HostTensor wF64(DType::F64, {2, 2});
  EXPECT_ERROR(moeCombine(rows, wF64, pos, y), StatusCode::InvalidArgument,
               "moe_combine: weights is f64[2, 2], expected f32[2, 2]");
  HostTensor posI32(DType::I32, {2, 2});
  EXPECT_ERROR(moeCombine(rows, w, posI32, y), StatusCode::InvalidArgument,
               "moe_combine: positions is i32[2, 2], expected i64");
}

/// The whole routed-experts forward in grouped form against the naive per-pair expert loop:
/// y[t] = sum_j w[t, j] * (x[t] @ W[idx[t, j]]).
TEST(CpuRoutedExperts, GroupedFormMatchesNaiveExperts) {
  std::mt19937 rng(11);
  for (DType dt : kFloatDTypes) {
    const int64_t tokens = 70, k = 2, experts = 6, h = 16, n = 24; // > one 64-row block
    HostTensor idx = randomIndices(tokens, k, experts, rng);
    HostTensor x = randomTensor(dt, {tokens, h}, rng), weights = randomTensor(dt, {experts, h, n}, rng);
    HostTensor w = randomTensor(dt, {tokens, k}, rng);
    HostTensor pos(DType::I64, {tokens, k}), off(DType::I64, {experts + 1});
    HostTensor rows(dt, {tokens * k, h}), out(dt, {tokens * k, n}), y(dt, {tokens, n});
    ASSERT_OK(moeSort(idx, pos, off));
    ASSERT_OK(moeDispatch(x, pos, rows));
    ASSERT_OK(groupedMatmul(rows, weights, off, false, out));
    ASSERT_OK(moeCombine(out, w, pos, y));
    std::vector<double> want(tokens * n, 0.0);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = idx.data<int64_t>()[t * k + j];
        for (int64_t c = 0; c < n; ++c) {
          double dot = 0;
          for (int64_t i = 0; i < h; ++i)
            dot += get(x, t * h + i) * get(weights, (e * h + i) * n + c);
          want[t * n + c] += get(w, t * k + j) * dot;
        }
      }
    expectClose(y, want, dt == DType::F32 ? Tolerance{1e-4, 1e-5} : kF64);
  }
}

// One and four threads give the same bytes (tensors above the parallel threshold).
TEST(CpuMoeDispatchCombine, ThreadCountIndependent) {
  std::mt19937 rng(13);
  const int64_t tokens = 2048, k = 4, experts = 16, h = 32;
  HostTensor idx = randomIndices(tokens, k, experts, rng);
  HostTensor pos(DType::I64, {tokens, k}), off(DType::I64, {experts + 1});
  ASSERT_OK(moeSort(idx, pos, off));
  HostTensor x = randomTensor(DType::F32, {tokens, h}, rng);
  HostTensor w = randomTensor(DType::F32, {tokens, k}, rng);
  HostTensor rows(DType::F32, {tokens * k, h});
  HostTensor one(DType::F32, {tokens, h}), four(DType::F32, {tokens, h});
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_OK(moeDispatch(x, pos, rows));
  ASSERT_OK(moeCombine(rows, w, pos, one));
  omp_set_num_threads(4);
  ASSERT_OK(moeDispatch(x, pos, rows));
  ASSERT_OK(moeCombine(rows, w, pos, four));
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(one.raw(), four.raw(), one.byteSize()), 0);
}

} // namespace
} // namespace rp::kernels::cpu::test
