//===- CrossEntropy.cpp - Softmax cross-entropy loss on the CPU -----------===//

#include "kernels/cpu/CrossEntropy.h"

#include "kernels/cpu/KernelSupport.h"

#include <cmath>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;
using base::outOfRange;

namespace {

/// The labels widened to int64; OutOfRange for the first bad one.
template <typename L>
Status loadLabels(const HostTensor &labels, int64_t classes, int64_t ignoreIndex,
                  std::vector<int64_t> &result) {
  const L *p = labels.data<L>();
  result.resize(static_cast<size_t>(labels.numElements()));
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    const int64_t l = p[i];
    if (l != ignoreIndex && (l < 0 || l >= classes))
      return outOfRange("cross_entropy: label " + std::to_string(l) + " at position " +
                        formatIndex(i, labels.shape()) + " of labels " + labels.typeString() +
                        " is outside [0, " + std::to_string(classes) +
                        ") and is not ignore_index (" + std::to_string(ignoreIndex) + ")");
    result[i] = l;
  }
  return okStatus();
}

template <typename T>
void lossLoop(const HostTensor &logits, const std::vector<int64_t> &labels, int64_t ignoreIndex,
              LossReduction reduction, HostTensor &out) {
  const int64_t classes = logits.dim(1);
  const int64_t inner = product(logits.shape(), 2, logits.shape().size());
  const int64_t positions = static_cast<int64_t>(labels.size());
  const T *in = logits.data<T>();
  std::vector<double> losses(labels.size(), 0.0);
#pragma omp parallel for schedule(static) if (positions * classes >= kParallelMinElements)
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t label = labels[p];
    if (label == ignoreIndex)
      continue;
    const T *xs = in + (p / inner) * classes * inner + p % inner; // class c at xs[c * inner]
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      m = std::fmax(m, static_cast<double>(xs[c * inner]));
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(xs[c * inner]) - m);
    losses[p] = m + std::log(sum) - static_cast<double>(xs[label * inner]);
  }
  double total = 0.0;
  int64_t counted = 0;
  for (int64_t p = 0; p < positions; ++p) {
    if (labels[p] == ignoreIndex)
      continue;
    total += losses[p];
    ++counted;
  }
  const double loss =
      reduction == LossReduction::Sum ? total : total / static_cast<double>(counted); // 0/0: NaN
  out.data<T>()[0] = static_cast<T>(loss);
}

} // namespace

Status crossEntropy(const HostTensor &logits, const HostTensor &labels, int64_t ignoreIndex,
                    LossReduction reduction, HostTensor &out) {
  const char *op = "cross_entropy";
  RP_RETURN_IF_ERROR(checkDType(op, "logits", logits, kFloatTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "labels", labels, kIndexTypes));
  RP_RETURN_IF_ERROR(checkLossShapes(logits.dtype(), logits.shape(), labels.shape()));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, logits.dtype(), {}));
  std::vector<int64_t> wide;
  if (labels.dtype() == DType::I64)
    RP_RETURN_IF_ERROR(loadLabels<int64_t>(labels, logits.dim(1), ignoreIndex, wide));
  else
    RP_RETURN_IF_ERROR(loadLabels<int32_t>(labels, logits.dim(1), ignoreIndex, wide));
  visitFloat(logits.dtype(), [&](auto tag) {
    lossLoop<typename decltype(tag)::type>(logits, wide, ignoreIndex, reduction, out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
