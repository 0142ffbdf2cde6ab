//===- CpuMatMulTest.cpp - matmul against a naive float64 product ---------===//
//
// Tolerance: OpenBLAS accumulates f32 products in f32, whose error bound is
// about K * 2^-24 * sum_k |a_ik b_kj| (Higham, "Accuracy and Stability of
// Numerical Algorithms", 3.5). We check |got - ref| <= atol + rtol * sum_k
// |a_ik b_kj| with kF32 (rtol 1e-5, atol 1e-6) for K <= 64 (bound 4e-6) and
// kF64 (rtol 1e-12, atol 1e-12) for f64; integers exactly.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/MatMul.h"
#include "kernels/cpu/Shape.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <limits>

namespace rp::kernels::cpu::test {
namespace {

/// numpy.matmul in float64 with naive loops; also returns sum |a_ik b_kj|.
void refMatMul(const HostTensor &a, const HostTensor &b, const Shape &outShape,
               std::vector<double> &out, std::vector<double> &magnitude) {
  Shape sa = a.shape(), sb = b.shape();
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(batchA.size(), batchB.size());
  Shape batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + batchA.size() >= rank ? batchA[i + batchA.size() - rank] : 1;
    const int64_t db = i + batchB.size() >= rank ? batchB[i + batchB.size() - rank] : 1;
    batch[i] = std::max(da, db);
  }
  out.assign(static_cast<size_t>(numElements(outShape)), 0.0);
  magnitude.assign(out.size(), 0.0);
  for (int64_t t = 0; t < numElements(batch); ++t) {
    const Shape idx = unravel(t, batch);
    const int64_t ta = batchA.empty() ? 0 : broadcastSource(idx, batchA);
    const int64_t tb = batchB.empty() ? 0 : broadcastSource(idx, batchB);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = get(a, ta * m * k + i * k + kk) * get(b, tb * k * n + kk * n + j);
          s += p;
          mag += std::fabs(p);
        }
        out[(t * m + i) * n + j] = s;
        magnitude[(t * m + i) * n + j] = mag;
      }
  }
}

void expectMatMul(DType t, const Shape &sa, const Shape &sb, const Shape &so, std::mt19937 &rng) {
  SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + base::formatShape(sa) + " @ " +
               base::formatShape(sb));
  HostTensor a = randomTensor(t, sa, rng, -3, 3);
  HostTensor b = randomTensor(t, sb, rng, -3, 3);
  HostTensor out = poisoned(t, so);
  ASSERT_OK(matmul(a, b, out));
  std::vector<double> want, mag;
  refMatMul(a, b, so, want, mag);
  ASSERT_EQ(out.numElements(), static_cast<int64_t>(want.size()));
  const Tolerance tol = base::isFloat(t) ? toleranceFor(t) : Tolerance{0, 0};
  int failures = 0;
  for (int64_t i = 0; i < out.numElements() && failures < 10; ++i) {
    const double g = get(out, i);
    if (!(std::fabs(g - want[i]) <= tol.atol + tol.rtol * mag[i])) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << want[i];
    }
  }
}

struct Case {
  Shape a, b, out;
};
const Case kCases[] = {
    {{3, 4}, {4, 5}, {3, 5}},                         // plain 2-D
    {{4}, {4, 5}, {5}},                               // 1-D lhs: [1, K], unit dim removed
    {{3, 4}, {4}, {3}},                               // 1-D rhs: [K, 1], unit dim removed
    {{6}, {6}, {}},                                   // vector dot product: 0-D
    {{2, 3, 4}, {4, 5}, {2, 3, 5}},                   // batch of a folds into M (one GEMM)
    {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},          // batch broadcast both ways
    {{4}, {2, 4, 3}, {2, 3}},                         // 1-D lhs against a batch
    {{2, 3, 4}, {4}, {2, 3}},                         // batch against a 1-D rhs
    {{3, 4}, {2, 4, 5}, {2, 3, 5}},                   // 2-D lhs broadcast over b's batch
    {{2, 8, 16, 64}, {2, 8, 64, 16}, {2, 8, 16, 16}}, // attention-shaped
    {{1, 1}, {1, 1}, {1, 1}},
    {{256, 64}, {64, 300}, {256, 300}}, // large enough for OpenBLAS threads
};

// Every case in f32, f64, i64 and i32 against the float64 reference.
TEST(CpuMatMul, MatchesReference) {
  std::mt19937 rng(11);
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32})
    for (const Case &c : kCases)
      expectMatMul(t, c.a, c.b, c.out, rng);
}

/// `x` with its last two dimensions swapped (the stored layout of a flagged operand).
HostTensor swapLastTwo(const HostTensor &x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.rank(); ++i)
    perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  Shape shape = x.shape();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  HostTensor out(x.dtype(), shape);
  EXPECT_TRUE(transpose(x, perm, out).ok());
  return out;
}

/// op(a) @ op(b) with the flags, the operands stored transposed where flagged, against the
/// float64 product of the logical operands (same tolerance as MatchesReference).
void expectTransposedMatMul(DType t, const Case &c, bool ta, bool tb, std::mt19937 &rng) {
  SCOPED_TRACE(std::string(base::dtypeName(t)) + " " + base::formatShape(c.a) + " @ " +
               base::formatShape(c.b) + (ta ? " transpose_a" : "") +
               (tb ? " transpose_b" : ""));
  HostTensor a = randomTensor(t, c.a, rng, -3, 3);
  HostTensor b = randomTensor(t, c.b, rng, -3, 3);
  HostTensor out = poisoned(t, c.out);
  const HostTensor storedA = ta ? swapLastTwo(a) : a.clone();
  const HostTensor storedB = tb ? swapLastTwo(b) : b.clone();
  ASSERT_OK(matmul(storedA, storedB, ta, tb, out));
  std::vector<double> want, mag;
  refMatMul(a, b, c.out, want, mag);
  const Tolerance tol = base::isFloat(t) ? toleranceFor(t) : Tolerance{0, 0};
  int failures = 0;
  for (int64_t i = 0; i < out.numElements() && failures < 10; ++i) {
    const double g = get(out, i);
    if (!(std::fabs(g - want[i]) <= tol.atol + tol.rtol * mag[i])) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << want[i];
    }
  }
}

// Every flag combination on the cases whose operands have rank >= 2, plus shapes that span
// several output tiles (64 x 1024) and a batched a that cannot fold into M when flagged.
TEST(CpuMatMul, TransposedOperandsMatchReference) {
  std::vector<Case> cases;
  for (const Case &c : kCases)
    if (c.a.size() >= 2 && c.b.size() >= 2)
      cases.push_back(c);
  cases.push_back({{130, 24}, {24, 1100}, {130, 1100}});
  cases.push_back({{3, 70, 16}, {16, 9}, {3, 70, 9}});
  std::mt19937 rng(12);
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32})
    for (const Case &c : cases)
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          expectTransposedMatMul(t, c, ta, tb, rng);
}

// A flagged operand must have rank >= 2; the contraction is checked on the transposed shape.
TEST(CpuMatMul, TransposedErrors) {
  HostTensor v(DType::F32, {4});
  HostTensor m(DType::F32, {4, 3});
  HostTensor out(DType::F32, {3});
  EXPECT_ERROR(matmul(v, m, /*transposeA=*/true, false, out), StatusCode::InvalidArgument,
               "matmul: expected a transposed operand of rank >= 2, got a f32[4] (transposed)");
  HostTensor a(DType::F32, {2, 4});
  HostTensor out2(DType::F32, {2, 4});
  EXPECT_ERROR(matmul(a, m, false, /*transposeB=*/true, out2), StatusCode::InvalidArgument,
               "matmul: contraction dimensions differ");
}

// Hand-computed 1-D promotions and a batch broadcast.
TEST(CpuMatMul, HandComputed) {
  HostTensor v = tensor(DType::F32, {2}, {1, 2});
  HostTensor m = tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor out = poisoned(DType::F32, {3});
  ASSERT_OK(matmul(v, m, out));
  expectEqual(out, {9, 12, 15});
  HostTensor m2 = tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor out2 = poisoned(DType::F32, {3});
  ASSERT_OK(matmul(m2, v, out2));
  expectEqual(out2, {5, 11, 17});
  HostTensor dot = poisoned(DType::F32, {});
  ASSERT_OK(matmul(v, v, dot));
  expectEqual(dot, {5});
  // [2, 1, 2] @ [1, 2, 1]: batch 2 of lhs against batch 1 of rhs.
  HostTensor a = tensor(DType::I64, {2, 1, 2}, {1, 2, 3, 4});
  HostTensor b = tensor(DType::I64, {1, 2, 1}, {10, 100});
  HostTensor out3 = poisoned(DType::I64, {2, 1, 1});
  ASSERT_OK(matmul(a, b, out3));
  expectEqual(out3, {210, 430});
}

// K = 0 is an empty sum: zeros, whatever was in out.
TEST(CpuMatMul, EmptyContraction) {
  for (DType t : {DType::F32, DType::I32}) {
    HostTensor a(t, {3, 0});
    HostTensor b(t, {0, 2});
    HostTensor out = poisoned(t, {3, 2});
    ASSERT_OK(matmul(a, b, out));
    expectEqual(out, std::vector<double>(6, 0.0));
  }
  HostTensor a(DType::F32, {0, 4});
  HostTensor b(DType::F32, {4, 2});
  HostTensor out(DType::F32, {0, 2});
  ASSERT_OK(matmul(a, b, out));
}

// Integer products accumulate in int64 and wrap when stored as i32.
TEST(CpuMatMul, IntegerWraps) {
  HostTensor a = tensor(DType::I32, {1, 2}, {65536, 65536});
  HostTensor b = tensor(DType::I32, {2, 1}, {32768, 32768});
  HostTensor out = poisoned(DType::I32, {1, 1});
  ASSERT_OK(matmul(a, b, out));
  EXPECT_EQ(out.data<int32_t>()[0], 0); // 2^32 wraps to 0
}

// Errors name the op and the shapes or dtypes involved.
TEST(CpuMatMul, Errors) {
  HostTensor a(DType::F32, {2, 3});
  HostTensor b(DType::F32, {4, 5});
  HostTensor out(DType::F32, {2, 5});
  EXPECT_ERROR(matmul(a, b, out), StatusCode::InvalidArgument,
               "matmul: contraction dimensions differ: a [2, 3] has K = 3, b [4, 5] has K = 4");
  HostTensor c(DType::F32, {3, 5});
  HostTensor wrong(DType::F32, {5, 2});
  EXPECT_ERROR(matmul(a, c, wrong), StatusCode::InvalidArgument,
               "matmul: out is f32[5, 2], expected f32[2, 5]");
  HostTensor ba(DType::F32, {2, 2, 3});
  HostTensor bb(DType::F32, {3, 3, 5});
  HostTensor bo(DType::F32, {3, 2, 5});
  EXPECT_ERROR(matmul(ba, bb, bo), StatusCode::InvalidArgument,
               "matmul: shapes [2] and [3] are not broadcast-compatible");
  HostTensor d(DType::F64, {3, 5});
  EXPECT_ERROR(matmul(a, d, out), StatusCode::InvalidArgument,
               "matmul: b has dtype f64, expected f32 (the dtype of a)");
  HostTensor s(DType::F32, {});
  EXPECT_ERROR(matmul(s, a, out), StatusCode::InvalidArgument,
               "matmul: expected operands of rank >= 1");
  HostTensor i1(DType::I1, {2, 2});
  EXPECT_ERROR(matmul(i1, i1, i1), StatusCode::InvalidArgument,
               "matmul: a has dtype i1, expected f32, f64, i64 or i32");
}

} // namespace
} // namespace rp::kernels::cpu::test
