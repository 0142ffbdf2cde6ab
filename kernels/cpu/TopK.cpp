//===- TopK.cpp - The indices of the k largest elements on the CPU --------===//

#include "kernels/cpu/TopK.h"

#include "kernels/TopKOrder.h"
#include "kernels/cpu/KernelSupport.h"

#include <algorithm>
#include <vector>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;

namespace {

template <typename T>
void topKLoop(const HostTensor &x, int64_t k, int64_t axis, bool largest, HostTensor &out) {
  const int64_t n = x.dim(axis);
  const int64_t outer = product(x.shape(), 0, axis);
  const int64_t inner = product(x.shape(), axis + 1, x.shape().size());
  const T *src = x.data<T>();
  int64_t *dst = out.data<int64_t>();
  const int64_t rows = outer * inner;
#pragma omp parallel for schedule(static) if (x.numElements() >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const T *row = src + o * n * inner + i;
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      pos[j] = j;
    std::partial_sort(pos.begin(), pos.begin() + k, pos.end(), [&](int64_t a, int64_t b) {
      return topKRanksBefore(row[a * inner], a, row[b * inner], b, largest);
    });
    for (int64_t j = 0; j < k; ++j)
      dst[(o * k + j) * inner + i] = pos[j];
  }
}

} // namespace

Status topK(const HostTensor &x, int64_t k, int64_t axis, bool largest, HostTensor &out) {
  const char *op = "top_k";
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kFloatTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, x.rank()));
  if (k < 1 || k > x.dim(axis))
    return base::invalidArgument(std::string(op) + ": k = " + std::to_string(k) +
                                    " is outside [1, " + std::to_string(x.dim(axis)) +
                                    "] for x of shape " + formatShape(x.shape()) + " on axis " +
                                    std::to_string(axis));
  Shape shape = x.shape();
  shape[axis] = k;
  RP_RETURN_IF_ERROR(checkType(op, "out", out, DType::I64, shape));
  visitFloat(x.dtype(), [&](auto tag) {
    topKLoop<typename decltype(tag)::type>(x, k, axis, largest, out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
