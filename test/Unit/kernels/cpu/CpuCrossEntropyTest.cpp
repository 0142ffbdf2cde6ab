//===- CpuCrossEntropyTest.cpp - softmax cross-entropy loss ---------------===//
//
// Against a naive float64 reference; tolerances kF32 (rtol 1e-5, atol 1e-6)
// for f32 and kF64 (rtol 1e-12, atol 1e-12) for f64.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CrossEntropy.h"
#include "test/Unit/kernels/KernelTestUtil.h"

namespace rp::kernels::cpu::test {
namespace {

constexpr int64_t kIgnore = -100;

double refLoss(const HostTensor &logits, const HostTensor &labels, int64_t ignore, bool mean) {
  const Shape &ls = logits.shape();
  const int64_t classes = ls[1];
  double total = 0;
  int64_t count = 0;
  for (int64_t p = 0; p < labels.numElements(); ++p) {
    const int64_t label = static_cast<int64_t>(get(labels, p));
    if (label == ignore)
      continue;
    const Shape pos = unravel(p, labels.shape()); // [n, d...]
    auto logit = [&](int64_t c) {
      Shape idx{pos[0], c};
      idx.insert(idx.end(), pos.begin() + 1, pos.end());
      return get(logits, ravel(idx, ls));
    };
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      m = std::max(m, logit(c));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(logit(c) - m);
    total += m + std::log(sum) - logit(label);
    ++count;
  }
  return mean ? total / count : total;
}

/// Random labels in [0, classes), about a quarter of them ignore_index.
HostTensor randomLabels(DType t, const Shape &shape, int64_t classes, std::mt19937 &rng) {
  HostTensor labels(t, shape);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  for (int64_t i = 0; i < labels.numElements(); ++i)
    set(labels, i, static_cast<double>(rng() % 4 == 0 && i > 0 ? kIgnore : cls(rng)));
  return labels;
}

// [N, C] and [N, C, d1, d2] logits, i64 and i32 labels, mean and sum.
TEST(CpuCrossEntropy, MatchesReference) {
  std::mt19937 rng(51);
  for (DType t : kFloatDTypes)
    for (DType lt : {DType::I64, DType::I32})
      for (const Shape &shape : {Shape{16, 10}, Shape{2, 7, 3, 4}, Shape{64, 1000}})
        for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
          SCOPED_TRACE(std::string(base::dtypeName(t)) + " labels " + base::dtypeName(lt) +
                       " " + base::formatShape(shape) +
                       (r == LossReduction::Mean ? " mean" : " sum"));
          HostTensor logits = randomTensor(t, shape, rng, -8, 8);
          Shape labelShape{shape[0]};
          labelShape.insert(labelShape.end(), shape.begin() + 2, shape.end());
          HostTensor labels = randomLabels(lt, labelShape, shape[1], rng);
          HostTensor out = poisoned(t, {});
          ASSERT_OK(crossEntropy(logits, labels, kIgnore, r, out));
          expectClose(out, {refLoss(logits, labels, kIgnore, r == LossReduction::Mean)},
                      toleranceFor(t));
        }
}

// Hand-computed: uniform logits give log(C); a non-default ignore_index inside
// [0, C) is skipped.
TEST(CpuCrossEntropy, HandComputed) {
  HostTensor logits = tensor(DType::F64, {2, 4}, {0, 0, 0, 0, 0, 0, 10, 0});
  HostTensor labels = tensor(DType::I64, {2}, {3, 2});
  HostTensor out = poisoned(DType::F64, {});
  ASSERT_OK(crossEntropy(logits, labels, kIgnore, LossReduction::Sum, out));
  const double second = std::log(3 + std::exp(10.0)) - 10;
  expectClose(out, {std::log(4.0) + second}, kF64);
  ASSERT_OK(crossEntropy(logits, labels, 2, LossReduction::Mean, out));
  expectClose(out, {std::log(4.0)}, kF64);
}

// Every label ignored: mean is NaN (0/0, as PyTorch), sum is 0.
TEST(CpuCrossEntropy, AllIgnored) {
  HostTensor logits = tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor labels = tensor(DType::I32, {2}, {kIgnore, kIgnore});
  HostTensor out = poisoned(DType::F32, {});
  ASSERT_OK(crossEntropy(logits, labels, kIgnore, LossReduction::Mean, out));
  EXPECT_TRUE(std::isnan(out.data<float>()[0]));
  ASSERT_OK(crossEntropy(logits, labels, kIgnore, LossReduction::Sum, out));
  EXPECT_EQ(out.data<float>()[0], 0.0f);
}

// A label outside [0, C) that is not ignore_index is OutOfRange, naming it.
TEST(CpuCrossEntropy, LabelOutOfRange) {
  HostTensor logits(DType::F32, {2, 3, 2});
  HostTensor labels = tensor(DType::I64, {2, 2}, {0, kIgnore, 1, 3});
  HostTensor out(DType::F32, {});
  EXPECT_ERROR(crossEntropy(logits, labels, kIgnore, LossReduction::Mean, out),
               StatusCode::OutOfRange,
               "cross_entropy: label 3 at position [1, 1] of labels i64[2, 2] is outside [0, 3) "
               "and is not ignore_index (-100)");
  HostTensor negative = tensor(DType::I64, {2, 2}, {-1, 0, 0, 0});
  EXPECT_STATUS(crossEntropy(logits, negative, kIgnore, LossReduction::Sum, out),
                StatusCode::OutOfRange);
}

TEST(CpuCrossEntropy, Errors) {
  HostTensor logits(DType::F32, {4, 5});
  HostTensor labels(DType::I64, {4});
  HostTensor out(DType::F32, {});
  HostTensor badLabels(DType::I64, {5});
  EXPECT_ERROR(crossEntropy(logits, badLabels, kIgnore, LossReduction::Mean, out),
               StatusCode::InvalidArgument,
               "cross_entropy: expected labels of shape [4] for logits f32[4, 5], got [5]");
  HostTensor floatLabels(DType::F32, {4});
  EXPECT_ERROR(crossEntropy(logits, floatLabels, kIgnore, LossReduction::Mean, out),
               StatusCode::InvalidArgument,
               "cross_entropy: labels has dtype f32, expected i64 or i32");
  HostTensor vecOut(DType::F32, {1});
  EXPECT_ERROR(crossEntropy(logits, labels, kIgnore, LossReduction::Mean, vecOut),
               StatusCode::InvalidArgument, "cross_entropy: out is f32[1], expected f32[]");
  HostTensor rank1(DType::F32, {4});
  EXPECT_ERROR(crossEntropy(rank1, labels, kIgnore, LossReduction::Mean, out),
               StatusCode::InvalidArgument, "cross_entropy: expected logits of rank >= 2");
}

} // namespace
} // namespace rp::kernels::cpu::test
