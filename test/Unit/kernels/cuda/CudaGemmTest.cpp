//===- CudaGemmTest.cpp - graph.matmul through cuBLASLt -------------------===//
//
// Planner tests (no GPU, always run): exact plans for the batch fold, strided
// batches, numpy broadcasts that need several calls, 1-D operands and empty
// products; every error with its full message; and a property check on random
// broadcast shapes that the plan's calls cover every output row exactly once
// with the a row and b matrix that a naive numpy.matmul would use.
//
// Device tests (GTEST_SKIP() when no CUDA device is present) run the plans
// through GemmRunner on random data in [-1, 1] and compare with the CPU
// reference kernels/cpu/MatMul.h (cpu::matmul in f32, OpenBLAS), the output
// poisoned with NaNs first. With mag = sum_k |a_ik b_kj| (computed as
// cpu::matmul(|a|, |b|)) and ref the CPU result, an element passes when
//   f32:  |gpu - ref| <= 1e-5 * mag + 1e-6                  (no TF32 allowed)
//   bf16: |gpu - ref| <= 2^-7 * mag + 2^-8 * |ref| + 2^-24
//   f16:  |gpu - ref| <= 2^-10 * mag + 2^-11 * |ref| + 2^-24
// where the 16-bit inputs are rounded to bf16/f16 first and ref is the f32
// product of the rounded inputs; the 2^-8 / 2^-11 terms are the rounding of
// the output to bf16 / f16 (unit roundoff), 2^-24 covers f16 subnormals.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Gemm.h"

#include "kernels/cpu/MatMul.h"
#include "base/Float16.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rp::kernels::cuda {
namespace {

using base::DType;
using base::HostTensor;
using base::StatusCode;
using Shape = std::vector<int64_t>;
using Call = MatMulPlan::Call;

using test::DeviceBuffer;
using test::haveDevice;

// A Status or a StatusOr (KernelTestUtil.h's ASSERT_OK, which CudaTestUtil.h brings, takes a
// Status only).
#undef ASSERT_OK
#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    const auto &rp_st_ = (expr);                                                                   \
    ASSERT_TRUE(rp_st_.ok()) << #expr << ": "                                                      \
                             << ::rp::base::detail::toStatus(rp_st_).toString();                \
  } while (0)

//===--- planner ------------------------------------------------------------===//

MatMulPlan planOrDie(DType t, const Shape &a, const Shape &b, const Shape &out, bool ta = false,
                     bool tb = false) {
  base::StatusOr<MatMulPlan> p = planMatMul(t, a, b, out, ta, tb);
  EXPECT_TRUE(p.ok()) << p.status().toString();
  return p.ok() ? *p : MatMulPlan{};
}

/// The plan's fields in one line, for failure messages.
std::string dump(const MatMulPlan &p) {
  std::string s =
      "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
      " batch=" + std::to_string(p.batchCount) + " strides=(" + std::to_string(p.aBatchStride) +
      "," + std::to_string(p.bBatchStride) + "," + std::to_string(p.outBatchStride) + ") calls=";
  for (const Call &c : p.calls)
    s += "(" + std::to_string(c.aOffset) + "," + std::to_string(c.bOffset) + "," +
         std::to_string(c.outOffset) + ")";
  return s + " out=" + std::to_string(p.outElements);
}

void expectPlan(const MatMulPlan &p, int64_t m, int64_t n, int64_t k, int64_t batch, int64_t sa,
                int64_t sb, int64_t so, const std::vector<Call> &calls, int64_t outElements) {
  SCOPED_TRACE(dump(p));
  EXPECT_EQ(p.m, m);
  EXPECT_EQ(p.n, n);
  EXPECT_EQ(p.k, k);
  EXPECT_EQ(p.batchCount, batch);
  EXPECT_EQ(p.aBatchStride, sa);
  EXPECT_EQ(p.bBatchStride, sb);
  EXPECT_EQ(p.outBatchStride, so);
  EXPECT_EQ(p.calls, calls);
  EXPECT_EQ(p.outElements, outElements);
}

TEST(CudaGemmPlanTest, SingleGemm) {
  const MatMulPlan p = planOrDie(DType::F32, {3, 4}, {4, 5}, {3, 5});
  EXPECT_EQ(p.dtype, DType::F32);
  expectPlan(p, 3, 5, 4, 1, 0, 0, 0, {{0, 0, 0}}, 15);
}

TEST(CudaGemmPlanTest, BatchOfAFoldsIntoM) {
  // b has no batch dimensions: [2, 3, 5, 4] x [4, 6] is one [30, 4] x [4, 6] GEMM.
  expectPlan(planOrDie(DType::BF16, {2, 3, 5, 4}, {4, 6}, {2, 3, 5, 6}), 30, 6, 4, 1, 0, 0, 0,
             {{0, 0, 0}}, 180);
  // A b batch of ones broadcasts the same way.
  expectPlan(planOrDie(DType::F16, {3, 5, 4}, {1, 1, 4, 6}, {1, 3, 5, 6}), 15, 6, 4, 1, 0, 0, 0,
             {{0, 0, 0}}, 90);
  // Extent-1 batch dimensions on both sides change nothing.
  expectPlan(planOrDie(DType::F32, {1, 5, 4}, {1, 1, 4, 6}, {1, 1, 5, 6}), 5, 6, 4, 1, 0, 0, 0,
             {{0, 0, 0}}, 30);
}

TEST(CudaGemmPlanTest, StridedBatch) {
  expectPlan(planOrDie(DType::F32, {7, 5, 4}, {7, 4, 6}, {7, 5, 6}), 5, 6, 4, 7, 20, 24, 30,
             {{0, 0, 0}}, 210);
  // Nested batch dimensions merge into one batch of 6.
  expectPlan(planOrDie(DType::F32, {2, 3, 5, 4}, {2, 3, 4, 6}, {2, 3, 5, 6}), 5, 6, 4, 6, 20, 24,
             30, {{0, 0, 0}}, 180);
}

TEST(CudaGemmPlanTest, BroadcastAIsStrideZero) {
  expectPlan(planOrDie(DType::F32, {5, 4}, {3, 4, 6}, {3, 5, 6}), 5, 6, 4, 3, 0, 24, 30,
             {{0, 0, 0}}, 90);
  expectPlan(planOrDie(DType::F32, {1, 5, 4}, {2, 3, 4, 6}, {2, 3, 5, 6}), 5, 6, 4, 6, 0, 24, 30,
             {{0, 0, 0}}, 180);
}

TEST(CudaGemmPlanTest, TwoWayBroadcastNeedsSeveralCalls) {
  // [2, 1, 5, 4] x [3, 4, 6]: batch [2, 3] with a strides (20, 0) and b strides (0, 24); the
  // larger dimension (3) is the strided batch, the other gives 2 calls.
  expectPlan(planOrDie(DType::F32, {2, 1, 5, 4}, {3, 4, 6}, {2, 3, 5, 6}), 5, 6, 4, 3, 0, 24, 30,
             {{0, 0, 0}, {20, 0, 90}}, 180);
  // [3, 1, 5, 4] x [1, 2, 4, 6]: the outer dimension is the batch (out stride 60), the inner
  // one gives the calls.
  expectPlan(planOrDie(DType::F32, {3, 1, 5, 4}, {1, 2, 4, 6}, {3, 2, 5, 6}), 5, 6, 4, 3, 20, 0, 60,
             {{0, 0, 0}, {0, 24, 30}}, 180);
}

TEST(CudaGemmPlanTest, InnerBroadcastOfBFoldsIntoM) {
  // [2, 3, 5, 4] x [2, 1, 4, 6]: the inner batch (3) keeps b and moves a by M*K, so it folds
  // into M = 15; the outer one is a strided batch of 2.
  expectPlan(planOrDie(DType::F32, {2, 3, 5, 4}, {2, 1, 4, 6}, {2, 3, 5, 6}), 15, 6, 4, 2, 60, 24,
             90, {{0, 0, 0}}, 180);
}

TEST(CudaGemmPlanTest, VectorOperands) {
  // 1-D a: [1, K] with the unit dimension removed from the result.
  expectPlan(planOrDie(DType::F32, {4}, {4, 6}, {6}), 1, 6, 4, 1, 0, 0, 0, {{0, 0, 0}}, 6);
  expectPlan(planOrDie(DType::F32, {4}, {3, 4, 6}, {3, 6}), 1, 6, 4, 3, 0, 24, 6, {{0, 0, 0}}, 18);
  // 1-D b: [K, 1]; the batch of a folds into M.
  expectPlan(planOrDie(DType::F32, {2, 3, 4}, {4}, {2, 3}), 6, 1, 4, 1, 0, 0, 0, {{0, 0, 0}}, 6);
  // Both: a dot product with a 0-D result.
  expectPlan(planOrDie(DType::F32, {4}, {4}, {}), 1, 1, 4, 1, 0, 0, 0, {{0, 0, 0}}, 1);
}

TEST(CudaGemmPlanTest, EmptyProducts) {
  // No output elements: no calls.
  expectPlan(planOrDie(DType::F32, {0, 4}, {4, 5}, {0, 5}), 0, 5, 4, 1, 0, 0, 0, {}, 0);
  expectPlan(planOrDie(DType::F32, {2, 0, 5, 4}, {4, 5}, {2, 0, 5, 5}), 5, 5, 4, 1, 0, 0, 0, {}, 0);
  // K = 0: no calls; run() writes the 15 zeros.
  expectPlan(planOrDie(DType::F32, {3, 0}, {0, 5}, {3, 5}), 3, 5, 0, 1, 0, 0, 0, {}, 15);
}

void expectError(DType t, const Shape &a, const Shape &b, const Shape &out,
                 const std::string &message) {
  const base::StatusOr<MatMulPlan> p = planMatMul(t, a, b, out);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(p.status().message(), message);
}

TEST(CudaGemmPlanTest, Errors) {
  expectError(DType::I32, {2, 3}, {3, 4}, {2, 4},
              "matmul on the GPU takes f32, f16 or bf16, got i32");
  expectError(DType::F64, {2, 3}, {3, 4}, {2, 4},
              "matmul on the GPU takes f32, f16 or bf16, got f64");
  expectError(DType::F32, {}, {3}, {},
              "matmul: expected operands of rank >= 1, got a [] and b [3]");
  expectError(DType::F32, {2, -3}, {-3, 4}, {2, 4},
              "matmul: a: invalid tensor shape [2, -3]: dimensions must be >= 0");
  expectError(DType::F32, {2, 3}, {3, 4}, {2, -4},
              "matmul: out: invalid tensor shape [2, -4]: dimensions must be >= 0");
  expectError(DType::F32, {2, 3}, {4, 5}, {2, 5},
              "matmul: contraction dimensions differ: a [2, 3] has K = 3, b [4, 5] has K = 4");
  expectError(DType::BF16, {3}, {2}, {},
              "matmul: contraction dimensions differ: a [3] has K = 3, b [2] has K = 2");
  expectError(DType::F32, {2, 3, 4}, {3, 4, 5}, {2, 3, 5},
              "matmul: batch dimensions do not broadcast: a [2, 3, 4] has batch [2], b [3, 4, 5] "
              "has batch [3] (2 vs 3)");
  expectError(DType::F16, {2, 3, 5, 4}, {3, 2, 4, 6}, {2, 3, 5, 6},
              "matmul: batch dimensions do not broadcast: a [2, 3, 5, 4] has batch [2, 3], b "
              "[3, 2, 4, 6] has batch [3, 2] (2 vs 3)");
}

TEST(CudaGemmPlanTest, OutShapeErrors) {
  expectError(DType::F32, {2, 3}, {3, 4}, {2, 5},
              "matmul: out has shape [2, 5], expected [2, 4] (a [2, 3] @ b [3, 4])");
  expectError(DType::F32, {3}, {3}, {1}, "matmul: out has shape [1], expected [] (a [3] @ b [3])");
  expectError(DType::F32, {2, 1, 5, 4}, {3, 4, 6}, {3, 2, 5, 6},
              "matmul: out has shape [3, 2, 5, 6], expected [2, 3, 5, 6] (a [2, 1, 5, 4] @ b "
              "[3, 4, 6])");
  expectError(DType::F32, {5, 4}, {4, 6}, {1, 5, 6},
              "matmul: out has shape [1, 5, 6], expected [5, 6] (a [5, 4] @ b [4, 6])");
}

TEST(CudaGemmPlanTest, BatchCountBeyondInt32) {
  const int64_t big = int64_t(1) << 31;
  expectError(DType::F32, {big, 1, 1}, {big, 1, 1}, {big, 1, 1},
              "matmul: a strided batch of 2147483648 products exceeds cuBLASLt's int32 batch "
              "count (a [2147483648, 1, 1] @ b [2147483648, 1, 1])");
}

/// out row offset -> (a row offset, b matrix offset) for every output row,
/// from the plan's calls; fails on a row written twice.
std::map<int64_t, std::pair<int64_t, int64_t>> rowsOfPlan(const MatMulPlan &p) {
  std::map<int64_t, std::pair<int64_t, int64_t>> rows;
  for (const Call &c : p.calls)
    for (int64_t j = 0; j < p.batchCount; ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        const int64_t outRow = c.outOffset + j * p.outBatchStride + i * p.n;
        const auto [it, inserted] =
            rows.emplace(outRow, std::make_pair(c.aOffset + j * p.aBatchStride + i * p.k,
                                                c.bOffset + j * p.bBatchStride));
        EXPECT_TRUE(inserted) << "out row at " << outRow << " written twice";
        (void)it;
      }
  return rows;
}

/// The same map from a naive numpy.matmul: every broadcast batch index in
/// row-major order, each operand indexed by its own (right-aligned) dims.
std::map<int64_t, std::pair<int64_t, int64_t>> rowsOfNumpy(Shape sa, Shape sb) {
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(ba.size(), bb.size());
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + ba.size() >= rank ? ba[i + ba.size() - rank] : 1;
    const int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    batch[i] = std::max(da, db);
  }
  int64_t count = 1;
  for (int64_t d : batch)
    count *= d;
  std::map<int64_t, std::pair<int64_t, int64_t>> rows;
  for (int64_t t = 0; t < count; ++t) {
    // Unravel t, then re-ravel into each operand (index 0 where it has extent 1).
    Shape idx(rank);
    for (size_t i = rank, rest = static_cast<size_t>(t); i-- > 0;) {
      idx[i] = static_cast<int64_t>(rest % static_cast<size_t>(batch[i]));
      rest /= static_cast<size_t>(batch[i]);
    }
    auto ravel = [&](const Shape &own) {
      int64_t flat = 0;
      for (size_t i = 0; i < own.size(); ++i) {
        const int64_t dim = own[i];
        flat = flat * dim + (dim == 1 ? 0 : idx[i + rank - own.size()]);
      }
      return flat;
    };
    const int64_t ta = ravel(ba), tb = ravel(bb);
    for (int64_t i = 0; i < m; ++i)
      rows[(t * m + i) * n] = {ta * m * k + i * k, tb * k * n};
  }
  return rows;
}

TEST(CudaGemmPlanTest, RandomBroadcastsCoverEveryRowOnce) {
  std::mt19937 rng(1234);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + rng() % values.size());
  };
  int multiCall = 0, folded = 0, strided = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    const int64_t m = pick({1, 2, 3, 5}), k = pick({1, 2, 4}), n = pick({1, 3, 4});
    const size_t rank = rng() % 4;
    Shape ba, bb;
    for (size_t i = 0; i < rank; ++i) {
      const int64_t d = pick({1, 2, 3, 4});
      const uint32_t pattern = rng() % 3; // both d, or one of them broadcast from 1
      ba.push_back(pattern == 1 ? 1 : d);
      bb.push_back(pattern == 2 ? 1 : d);
    }
    // Sometimes drop leading batch dims of one operand (numpy aligns on the right).
    if (!ba.empty() && rng() % 3 == 0)
      ba.erase(ba.begin(), ba.begin() + static_cast<std::ptrdiff_t>(rng() % (ba.size() + 1)));
    if (!bb.empty() && rng() % 3 == 0)
      bb.erase(bb.begin(), bb.begin() + static_cast<std::ptrdiff_t>(rng() % (bb.size() + 1)));
    Shape sa = ba, sb = bb, out;
    // 1-D operands now and then (only without batch dimensions of their own).
    const bool aVector = ba.empty() && rng() % 4 == 0, bVector = bb.empty() && rng() % 4 == 0;
    if (!aVector)
      sa.push_back(m);
    sa.push_back(k);
    sb.push_back(k);
    if (!bVector)
      sb.push_back(n);
    for (size_t i = 0; i < std::max(ba.size(), bb.size()); ++i) {
      const size_t r = std::max(ba.size(), bb.size());
      const int64_t da = i + ba.size() >= r ? ba[i + ba.size() - r] : 1;
      const int64_t db = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
      out.push_back(std::max(da, db));
    }
    if (!aVector)
      out.push_back(m);
    if (!bVector)
      out.push_back(n);
    SCOPED_TRACE(base::formatShape(sa) + " @ " + base::formatShape(sb));
    const MatMulPlan p = planOrDie(DType::F32, sa, sb, out);
    const auto got = rowsOfPlan(p);
    const auto want = rowsOfNumpy(sa, sb);
    ASSERT_EQ(got, want) << dump(p);
    int64_t outElements = 1;
    for (int64_t d : out)
      outElements *= d;
    EXPECT_EQ(p.outElements, outElements);
    multiCall += p.calls.size() > 1;
    folded += p.m > (aVector ? 1 : m);
    strided += p.batchCount > 1;
  }
  // The generator reaches every kind of plan.
  EXPECT_GT(multiCall, 10);
  EXPECT_GT(folded, 10);
  EXPECT_GT(strided, 10);
}

// Without a device create() fails cleanly (no abort); with one it succeeds.
TEST(CudaGemmRunnerTest, CreateReportsMissingDevice) {
  base::StatusOr<std::unique_ptr<GemmRunner>> runner = GemmRunner::create();
  if (haveDevice()) {
    ASSERT_OK(runner);
    EXPECT_EQ((*runner)->workspaceBytes(), size_t(32) << 20);
    EXPECT_EQ((*runner)->cachedAlgorithms(), 0u);
  } else {
    ASSERT_FALSE(runner.ok());
    EXPECT_EQ(runner.status().code(), StatusCode::Unavailable);
  }
}

//===--- device -------------------------------------------------------------===//

int64_t elementsOf(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Storage bytes of `values` in `dtype` (f32 as is, f16/bf16 rounded).
std::vector<unsigned char> encode(DType dtype, const std::vector<float> &values) {
  std::vector<unsigned char> bytes(values.size() * base::dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h =
          dtype == DType::BF16 ? base::floatToBf16(values[i]) : base::floatToHalf(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(DType dtype, const std::vector<unsigned char> &bytes) {
  const size_t esize = base::dtypeSize(dtype);
  std::vector<float> values(bytes.size() / esize);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      values[i] = dtype == DType::BF16 ? base::bf16ToFloat(h) : base::halfToFloat(h);
    }
  }
  return values;
}

/// Uniform values in [-1, 1], exactly representable in `dtype`.
std::vector<float> randomValues(DType dtype, int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return decode(dtype, encode(dtype, v));
}

// transpose_a / transpose_b: the K x M (N x K) stored operand is read transposed; the plan
// keeps the strides of the logical product, and a flagged a never folds its batch into M.
TEST(CudaGemmPlanTest, TransposedOperands) {
  MatMulPlan p = planOrDie(DType::F32, {3, 4}, {5, 4}, {3, 5}, false, true);
  EXPECT_FALSE(p.transA);
  EXPECT_TRUE(p.transB);
  expectPlan(p, 3, 5, 4, 1, 0, 0, 0, {{0, 0, 0}}, 15);
  // b has no batch, but a flagged a's rows are not contiguous: a strided batch, no fold.
  p = planOrDie(DType::F32, {2, 4, 3}, {4, 5}, {2, 3, 5}, true, false);
  EXPECT_TRUE(p.transA);
  expectPlan(p, 3, 5, 4, 2, 12, 0, 15, {{0, 0, 0}}, 30);
  // The same with transpose_b only still folds.
  expectPlan(planOrDie(DType::F32, {2, 3, 4}, {5, 4}, {2, 3, 5}, false, true), 6, 5, 4, 1, 0, 0,
             0, {{0, 0, 0}}, 30);
  base::StatusOr<MatMulPlan> bad = planMatMul(DType::F32, {4}, {4, 5}, {5}, true, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "matmul: expected a transposed operand of rank >= 2, got a [4] (transposed) and b "
            "[4, 5]");
  bad = planMatMul(DType::F32, {3, 4}, {4, 5}, {3, 5}, false, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("contraction"), std::string::npos)
      << bad.status().message();
}

/// `values` of a row-major tensor of `shape`, its last two dimensions swapped.
std::vector<float> swapLastTwo(const Shape &shape, const std::vector<float> &values) {
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  std::vector<float> out(values.size());
  for (size_t base = 0; base < values.size(); base += static_cast<size_t>(rows * cols))
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[base + static_cast<size_t>(j * rows + i)] =
            values[base + static_cast<size_t>(i * cols + j)];
  return out;
}

HostTensor tensorOf(const Shape &shape, const std::vector<float> &values, bool absolute);

// The host replay (rp-run --kernels cuda-host) of flagged plans against cpu::matmul of the
// logical operands: |replay - ref| <= 1e-5 * sum_k |a_ik b_kj| + 1e-6 (both accumulate in f32).
TEST(CudaGemmPlanTest, TransposedHostReplayMatchesCpu) {
  struct Shapes {
    Shape a, b, out;
  };
  const Shapes cases[] = {{{7, 13}, {13, 5}, {7, 5}},
                          {{2, 3, 5, 8}, {8, 6}, {2, 3, 5, 6}},
                          {{7, 5, 8}, {7, 8, 6}, {7, 5, 6}},
                          {{2, 1, 5, 8}, {3, 8, 6}, {2, 3, 5, 6}}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shapes &c : cases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(base::formatShape(c.a) + " @ " + base::formatShape(c.b) +
                     (ta ? " transpose_a" : "") + (tb ? " transpose_b" : ""));
        std::vector<float> a(static_cast<size_t>(elementsOf(c.a)));
        std::vector<float> b(static_cast<size_t>(elementsOf(c.b)));
        for (float &x : a)
          x = dist(rng);
        for (float &x : b)
          x = dist(rng);
        Shape sa = c.a, sb = c.b;
        if (ta)
          std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
        if (tb)
          std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
        const MatMulPlan p = planOrDie(DType::F32, sa, sb, c.out, ta, tb);
        const std::vector<float> storedA = ta ? swapLastTwo(c.a, a) : a;
        const std::vector<float> storedB = tb ? swapLastTwo(c.b, b) : b;
        std::vector<float> got(static_cast<size_t>(elementsOf(c.out)), NAN);
        replay::matmul(p, storedA.data(), storedB.data(), got.data());
        HostTensor ref(DType::F32, c.out), mag(DType::F32, c.out);
        ASSERT_OK(cpu::matmul(tensorOf(c.a, a, false), tensorOf(c.b, b, false), ref));
        ASSERT_OK(cpu::matmul(tensorOf(c.a, a, true), tensorOf(c.b, b, true), mag));
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(got[i] - ref.data<float>()[i]), 1e-5 * mag.data<float>()[i] + 1e-6)
              << "element " << i;
      }
}

HostTensor tensorOf(const Shape &shape, const std::vector<float> &values, bool absolute) {
  HostTensor t(DType::F32, shape);
  for (size_t i = 0; i < values.size(); ++i)
    t.data<float>()[i] = absolute ? std::fabs(values[i]) : values[i];
  return t;
}

class CudaGemmTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveDevice())
      GTEST_SKIP() << "no CUDA device";
    base::StatusOr<std::unique_ptr<GemmRunner>> r = GemmRunner::create();
    ASSERT_TRUE(r.ok()) << r.status().toString();
    runner_ = std::move(*r);
    ASSERT_CUDA_OK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_)
      cudaStreamDestroy(stream_);
  }

  /// Runs a @ b on the device (a, b: values exactly representable in
  /// `dtype`) with the operands and the output placed `offset` elements into
  /// their buffers, the output poisoned with NaNs; *out gets the result.
  void runOnDevice(GemmRunner &runner, DType dtype, const Shape &sa, const Shape &sb,
                   const Shape &so, size_t offset, const std::vector<float> &a,
                   const std::vector<float> &b, std::vector<float> *out,
                   bool transposeA = false, bool transposeB = false) {
    base::StatusOr<MatMulPlan> plan = planMatMul(dtype, sa, sb, so, transposeA, transposeB);
    ASSERT_OK(plan);
    const size_t esize = base::dtypeSize(dtype);
    const size_t no = static_cast<size_t>(elementsOf(so));
    DeviceBuffer dA((offset + a.size()) * esize), dB((offset + b.size()) * esize),
        dOut((offset + no) * esize);
    ASSERT_CUDA_OK(dA.status());
    ASSERT_CUDA_OK(dB.status());
    ASSERT_CUDA_OK(dOut.status());
    const std::vector<unsigned char> ea = encode(dtype, a), eb = encode(dtype, b);
    unsigned char *pa = dA.as<unsigned char>() + offset * esize;
    unsigned char *pb = dB.as<unsigned char>() + offset * esize;
    unsigned char *pc = dOut.as<unsigned char>() + offset * esize;
    if (!ea.empty())
      ASSERT_CUDA_OK(cudaMemcpy(pa, ea.data(), ea.size(), cudaMemcpyHostToDevice));
    if (!eb.empty())
      ASSERT_CUDA_OK(cudaMemcpy(pb, eb.data(), eb.size(), cudaMemcpyHostToDevice));
    ASSERT_CUDA_OK(cudaMemset(dOut.as<void>(), 0xFF, dOut.bytes())); // NaN in every dtype
    ASSERT_OK(runner.run(*plan, pa, pb, pc, stream_));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
    std::vector<unsigned char> bytes(no * esize);
    if (!bytes.empty())
      ASSERT_CUDA_OK(cudaMemcpy(bytes.data(), pc, bytes.size(), cudaMemcpyDeviceToHost));
    *out = decode(dtype, bytes);
  }

  /// Checks a @ b on the device against cpu::matmul (tolerances: file comment).
  void check(DType dtype, const Shape &sa, const Shape &sb, const Shape &so, uint32_t seed,
             size_t offset = 0) {
    SCOPED_TRACE(std::string(base::dtypeName(dtype)) + " " + base::formatShape(sa) + " @ " +
                 base::formatShape(sb) + " offset " + std::to_string(offset));
    std::mt19937 rng(seed);
    const std::vector<float> a = randomValues(dtype, elementsOf(sa), rng);
    const std::vector<float> b = randomValues(dtype, elementsOf(sb), rng);
    std::vector<float> got;
    runOnDevice(*runner_, dtype, sa, sb, so, offset, a, b, &got);
    if (HasFatalFailure())
      return;
    HostTensor ref(DType::F32, so), mag(DType::F32, so);
    ASSERT_OK(cpu::matmul(tensorOf(sa, a, false), tensorOf(sb, b, false), ref));
    ASSERT_OK(cpu::matmul(tensorOf(sa, a, true), tensorOf(sb, b, true), mag));
    double rtol, otol;
    switch (dtype) {
    case DType::F32:
      rtol = 1e-5, otol = 0;
      break;
    case DType::BF16:
      rtol = 0x1p-7, otol = 0x1p-8;
      break;
    default:
      rtol = 0x1p-10, otol = 0x1p-11;
    }
    const double atol = dtype == DType::F32 ? 1e-6 : 0x1p-24;
    ASSERT_EQ(got.size(), static_cast<size_t>(ref.numElements()));
    int failures = 0;
    for (size_t i = 0; i < got.size() && failures < 10; ++i) {
      const double r = ref.data<float>()[i], g = got[i];
      const double tol = rtol * mag.data<float>()[i] + otol * std::fabs(r) + atol;
      if (!(std::fabs(g - r) <= tol)) {
        ++failures;
        ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << r << " (tolerance "
                      << tol << ")";
      }
    }
  }

  std::unique_ptr<GemmRunner> runner_;
  cudaStream_t stream_ = nullptr;
};

struct Case {
  Shape a, b, out;
};
const Case kCases[] = {
    {{1, 1}, {1, 1}, {1, 1}},
    {{7, 13}, {13, 5}, {7, 5}},
    {{64, 128}, {128, 96}, {64, 96}},
    {{33, 200}, {200, 17}, {33, 17}},
    {{16, 1000}, {1000, 24}, {16, 24}},         // long K
    {{1, 64}, {64, 1}, {1, 1}},                 // m = n = 1
    {{2, 3, 5, 8}, {8, 6}, {2, 3, 5, 6}},       // batch folds into M
    {{7, 5, 8}, {7, 8, 6}, {7, 5, 6}},          // strided batch
    {{5, 8}, {3, 8, 6}, {3, 5, 6}},             // broadcast a (stride 0)
    {{2, 1, 5, 8}, {3, 8, 6}, {2, 3, 5, 6}},    // two calls of a batch of 3
    {{3, 1, 5, 8}, {1, 2, 8, 6}, {3, 2, 5, 6}}, // batch with a non-contiguous out stride
    {{2, 3, 5, 8}, {2, 1, 8, 6}, {2, 3, 5, 6}}, // partial fold + batch
    {{4, 1, 3, 1, 5, 8}, {2, 1, 3, 8, 6}, {4, 2, 3, 3, 5, 6}}, // several calls
    {{8}, {8, 6}, {6}},                                        // 1-D a
    {{8}, {3, 8, 6}, {3, 6}},                                  // 1-D a, batched b
    {{2, 3, 8}, {8}, {2, 3}},                                  // 1-D b
    {{8}, {8}, {}},                                            // dot product
};

TEST_F(CudaGemmTest, F32MatchesCpu) {
  uint32_t seed = 1;
  for (const Case &c : kCases)
    check(DType::F32, c.a, c.b, c.out, seed++);
}

TEST_F(CudaGemmTest, Bf16MatchesCpu) {
  uint32_t seed = 100;
  for (const Case &c : kCases)
    check(DType::BF16, c.a, c.b, c.out, seed++);
}

TEST_F(CudaGemmTest, F16MatchesCpu) {
  uint32_t seed = 200;
  for (const Case &c : kCases)
    check(DType::F16, c.a, c.b, c.out, seed++);
}

// transpose_a / transpose_b on the device (cuBLASLt TRANSA / TRANSB on the stored operands)
// against cpu::matmul of the logical operands, f32: |got - ref| <= 1e-5 * sum_k |a_ik b_kj| +
// 1e-6 (both accumulate in f32).
TEST_F(CudaGemmTest, TransposedOperandsMatchCpu) {
  const Case cases[] = {{{7, 13}, {13, 5}, {7, 5}},
                        {{64, 128}, {128, 96}, {64, 96}},
                        {{2, 3, 5, 8}, {8, 6}, {2, 3, 5, 6}},
                        {{7, 5, 8}, {7, 8, 6}, {7, 5, 6}},
                        {{2, 1, 5, 8}, {3, 8, 6}, {2, 3, 5, 6}}};
  std::mt19937 rng(7);
  for (const Case &c : cases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(base::formatShape(c.a) + " @ " + base::formatShape(c.b) +
                     (ta ? " transpose_a" : "") + (tb ? " transpose_b" : ""));
        const std::vector<float> a = randomValues(DType::F32, elementsOf(c.a), rng);
        const std::vector<float> b = randomValues(DType::F32, elementsOf(c.b), rng);
        Shape sa = c.a, sb = c.b;
        if (ta)
          std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
        if (tb)
          std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
        std::vector<float> got;
        runOnDevice(*runner_, DType::F32, sa, sb, c.out, 0, ta ? swapLastTwo(c.a, a) : a,
                    tb ? swapLastTwo(c.b, b) : b, &got, ta, tb);
        if (HasFatalFailure())
          return;
        HostTensor ref(DType::F32, c.out), mag(DType::F32, c.out);
        ASSERT_OK(cpu::matmul(tensorOf(c.a, a, false), tensorOf(c.b, b, false), ref));
        ASSERT_OK(cpu::matmul(tensorOf(c.a, a, true), tensorOf(c.b, b, true), mag));
        ASSERT_EQ(got.size(), static_cast<size_t>(ref.numElements()));
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(got[i] - ref.data<float>()[i]), 1e-5 * mag.data<float>()[i] + 1e-6)
              << "element " << i;
      }
}

// Opt-in fp16 accumulation (CUBLAS_COMPUTE_16F) of f16 products: the sums round to fp16 as they
// grow, so the tolerance is K-proportional (2^-11 per addition, bounded loosely by 2^-4 of
// sum_k |a_ik b_kj| for K = 256); f32 and bf16 products keep fp32 accumulation.
TEST_F(CudaGemmTest, Fp16AccumulationIsOptIn) {
  EXPECT_FALSE(runner_->fp16Accumulate());
  runner_->setFp16Accumulate(true);
  std::mt19937 rng(11);
  const Shape sa{16, 256}, sb{256, 24}, so{16, 24};
  const std::vector<float> a = randomValues(DType::F16, elementsOf(sa), rng);
  const std::vector<float> b = randomValues(DType::F16, elementsOf(sb), rng);
  std::vector<float> got;
  runOnDevice(*runner_, DType::F16, sa, sb, so, 0, a, b, &got);
  ASSERT_FALSE(HasFatalFailure());
  HostTensor ref(DType::F32, so), mag(DType::F32, so);
  ASSERT_OK(cpu::matmul(tensorOf(sa, a, false), tensorOf(sb, b, false), ref));
  ASSERT_OK(cpu::matmul(tensorOf(sa, a, true), tensorOf(sb, b, true), mag));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - ref.data<float>()[i]), 0x1p-4 * mag.data<float>()[i] + 0x1p-24)
        << "element " << i;
  // The other dtypes are unaffected: fp32 accumulation, the usual tolerances.
  check(DType::F32, {7, 13}, {13, 5}, {7, 5}, 12);
  check(DType::BF16, {7, 13}, {13, 5}, {7, 5}, 13);
}

// Operands and output one element past a 256-byte boundary: the heuristic is asked for
// algorithms that accept element-aligned pointers.
TEST_F(CudaGemmTest, ElementAlignedPointers) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    check(t, {7, 13}, {13, 5}, {7, 5}, 300, 1);
    check(t, {2, 1, 5, 8}, {3, 8, 6}, {2, 3, 5, 6}, 301, 1);
    check(t, {64, 128}, {128, 96}, {64, 96}, 302, 3);
  }
}

// K = 0 writes zeros over the poisoned output; an empty output needs no pointers at all.
TEST_F(CudaGemmTest, EmptyContractionAndEmptyOutput) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    std::vector<float> got;
    runOnDevice(*runner_, t, {3, 0}, {2, 0, 5}, {2, 3, 5}, 0, {}, {}, &got);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(got.size(), 30u);
    for (float v : got)
      ASSERT_EQ(v, 0.0f);
    base::StatusOr<MatMulPlan> empty = planMatMul(t, {0, 4}, {4, 5}, {0, 5});
    ASSERT_OK(empty);
    EXPECT_TRUE(runner_->run(*empty, nullptr, nullptr, nullptr, stream_).ok());
  }
}

// A repeated shape reuses its cached algorithm and gives the same bytes; a new shape or a
// new alignment adds one entry.
TEST_F(CudaGemmTest, CachedAlgorithmIsReusedAndDeterministic) {
  std::mt19937 rng(7);
  const std::vector<float> a = randomValues(DType::BF16, 3 * 32 * 48, rng);
  const std::vector<float> b = randomValues(DType::BF16, 48 * 40, rng);
  std::vector<float> first, second, third;
  runOnDevice(*runner_, DType::BF16, {3, 32, 48}, {48, 40}, {3, 32, 40}, 0, a, b, &first);
  ASSERT_FALSE(HasFatalFailure());
  const size_t cached = runner_->cachedAlgorithms();
  EXPECT_EQ(cached, 1u);
  runOnDevice(*runner_, DType::BF16, {3, 32, 48}, {48, 40}, {3, 32, 40}, 0, a, b, &second);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(runner_->cachedAlgorithms(), cached);
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);
  runOnDevice(*runner_, DType::BF16, {3, 32, 48}, {48, 40}, {3, 32, 40}, 1, a, b, &third);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(runner_->cachedAlgorithms(), cached + 1);
}

// A runner without a workspace still finds algorithms.
TEST_F(CudaGemmTest, NoWorkspace) {
  base::StatusOr<std::unique_ptr<GemmRunner>> r = GemmRunner::create(0);
  ASSERT_OK(r);
  std::mt19937 rng(9);
  const std::vector<float> a = randomValues(DType::F32, 2 * 17 * 40, rng);
  const std::vector<float> b = randomValues(DType::F32, 2 * 40 * 23, rng);
  std::vector<float> got;
  runOnDevice(**r, DType::F32, {2, 17, 40}, {2, 40, 23}, {2, 17, 23}, 0, a, b, &got);
  ASSERT_FALSE(HasFatalFailure());
  HostTensor ref(DType::F32, {2, 17, 23});
  ASSERT_OK(cpu::matmul(tensorOf({2, 17, 40}, a, false), tensorOf({2, 40, 23}, b, false), ref));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], ref.data<float>()[i], 1e-4) << "element " << i;
}

TEST_F(CudaGemmTest, RunRejectsBadArguments) {
  base::StatusOr<MatMulPlan> plan = planMatMul(DType::F32, {4, 4}, {4, 4}, {4, 4});
  ASSERT_OK(plan);
  DeviceBuffer buf(3 * 16 * sizeof(float));
  ASSERT_CUDA_OK(buf.status());
  float *a = buf.as<float>(), *b = a + 16, *out = a + 32;
  auto expectInvalid = [&](const base::Status &s, const std::string &message) {
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.toString();
    EXPECT_EQ(s.message(), message);
  };
  expectInvalid(runner_->run(*plan, nullptr, b, out, stream_),
                "matmul on the GPU: a is a null pointer");
  expectInvalid(runner_->run(*plan, a, b, nullptr, stream_),
                "matmul on the GPU: out is a null pointer");
  expectInvalid(
      runner_->run(*plan, a, reinterpret_cast<const unsigned char *>(b) + 2, out, stream_),
      "matmul on the GPU: b is not aligned to its element size (4 bytes)");
  MatMulPlan f64 = *plan;
  f64.dtype = DType::F64;
  expectInvalid(runner_->run(f64, a, b, out, stream_),
                "matmul on the GPU takes f32, f16 or bf16, got f64");
  MatMulPlan broken = *plan;
  broken.batchCount = 0;
  EXPECT_EQ(runner_->run(broken, a, b, out, stream_).code(), StatusCode::InvalidArgument);
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
}

} // namespace
} // namespace rp::kernels::cuda
