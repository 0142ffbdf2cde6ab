//===- CpuTopKTest.cpp - top_k -----------------------------------------===//
//
// top_k is exact: every index is compared with a reference that sorts each row's (value,
// position) pairs with std::stable_sort (the best first, ties by the lower position), for f32
// and f64, every axis, k = 1, a middle k and the whole axis, largest and smallest, on values
// with many ties (integers in a small range). NaN ranks above every number. The result does
// not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/TopK.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace rp::kernels::cpu::test {
namespace {

/// The positions of row `row` (outer o, inner i around `axis`) of x, best first.
std::vector<int64_t> referenceRow(const HostTensor &x, int64_t axis, int64_t o, int64_t i,
                                  bool largest) {
  const Shape &s = x.shape();
  const int64_t n = s[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d)
    inner *= s[d];
  std::vector<int64_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  auto value = [&](int64_t p) { return get(x, (o * n + p) * inner + i); };
  // stable_sort keeps equal values in position order: the ONNX tie rule.
  std::stable_sort(pos.begin(), pos.end(), [&](int64_t a, int64_t b) {
    const double va = value(a), vb = value(b);
    if (std::isnan(va) || std::isnan(vb))
      return largest ? std::isnan(va) && !std::isnan(vb) : std::isnan(vb) && !std::isnan(va);
    return largest ? va > vb : va < vb;
  });
  return pos;
}

void expectMatchesReference(const HostTensor &x, int64_t k, int64_t axis, bool largest) {
  Shape outShape = x.shape();
  outShape[axis] = k;
  HostTensor out = poisoned(DType::I64, outShape);
  ASSERT_OK(topK(x, k, axis, largest, out));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape()[d];
  for (size_t d = axis + 1; d < x.shape().size(); ++d)
    inner *= x.shape()[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const std::vector<int64_t> want = referenceRow(x, axis, o, i, largest);
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(out.data<int64_t>()[(o * k + j) * inner + i], want[j])
            << "row (" << o << ", " << i << ") pick " << j;
    }
}

TEST(CpuTopK, MatchesReference) {
  std::mt19937 rng(5);
  const Shape shape{4, 7, 3};
  for (DType t : {DType::F32, DType::F64})
    for (int64_t axis = 0; axis < 3; ++axis)
      for (bool largest : {true, false}) {
        const int64_t n = shape[axis];
        for (int64_t k : {int64_t{1}, (n + 1) / 2, n}) {
          SCOPED_TRACE(std::string(base::dtypeName(t)) + " axis " + std::to_string(axis) +
                       " k " + std::to_string(k) + (largest ? " largest" : " smallest"));
          // Integers in [-3, 3]: most rows have ties.
          HostTensor x(t, shape);
          std::uniform_int_distribution<int> v(-3, 3);
          for (int64_t e = 0; e < x.numElements(); ++e)
            set(x, e, v(rng));
          expectMatchesReference(x, k, axis, largest);
          // Distinct values: the order is the values' alone.
          expectMatchesReference(randomTensor(t, shape, rng), k, axis, largest);
        }
      }
}

// Hand-computed: a router's top-2 of 4 experts, ties by the lower position, NaN first.
TEST(CpuTopK, HandComputed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor x = tensor(DType::F32, {3, 4}, {0.1, 0.7, -0.2, 0.7, 1, 2, 3, 4, -1, nan, 5, -7});
  HostTensor out(DType::I64, {3, 2});
  ASSERT_OK(topK(x, 2, 1, true, out));
  expectEqual(out, {1, 3, 3, 2, 1, 2});
  ASSERT_OK(topK(x, 2, 1, false, out));
  expectEqual(out, {2, 0, 0, 1, 3, 0});
}

TEST(CpuTopK, Errors) {
  HostTensor x(DType::F32, {3, 4});
  HostTensor out(DType::I64, {3, 2});
  EXPECT_ERROR(topK(x, 5, 1, true, out), StatusCode::InvalidArgument,
               "top_k: k = 5 is outside [1, 4] for x of shape [3, 4] on axis 1");
  EXPECT_ERROR(topK(x, 0, 1, true, out), StatusCode::InvalidArgument,
               "top_k: k = 0 is outside [1, 4]");
  EXPECT_ERROR(topK(x, 2, 2, true, out), StatusCode::InvalidArgument,
               "top_k: axis 2 is out of range, expected [0, 2)");
  HostTensor wrong(DType::I32, {3, 2});
  EXPECT_ERROR(topK(x, 2, 1, true, wrong), StatusCode::InvalidArgument,
               "top_k: out is i32[3, 2], expected i64[3, 2]");
  HostTensor ints(DType::I64, {3, 4});
  EXPECT_STATUS(topK(ints, 2, 1, true, out), StatusCode::InvalidArgument);
}

// Rows are ranked independently: 1 and 4 threads give the same bytes (a tensor above the
// kernel's parallel threshold).
TEST(CpuTopK, ThreadCountIndependent) {
  std::mt19937 rng(9);
  HostTensor x = randomTensor(DType::F32, {4096, 16}, rng);
  HostTensor one(DType::I64, {4096, 4}), four(DType::I64, {4096, 4});
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_OK(topK(x, 4, 1, true, one));
  omp_set_num_threads(4);
  ASSERT_OK(topK(x, 4, 1, true, four));
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(one.raw(), four.raw(), one.byteSize()), 0);
}

} // namespace
} // namespace rp::kernels::cpu::test
