//===- Gather.cpp - Index-driven gathers on the CPU -----------------------===//

#include "kernels/cpu/Gather.h"

#include "kernels/cpu/KernelSupport.h"

#include <cstring>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;
using base::outOfRange;


Status gather(const HostTensor &data, const HostTensor &indices, int64_t axis, HostTensor &out) {
  const char *op = "gather";
  RP_RETURN_IF_ERROR(checkDType(op, "data", data, kAllTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indices, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, data.rank()));
  Shape shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  RP_RETURN_IF_ERROR(checkType(op, "out", out, data.dtype(), shape));
  const int64_t size = data.dim(axis);
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, size, axis, "data", data, idx));
  const int64_t outer = product(data.shape(), 0, axis);
  const int64_t inner = product(data.shape(), axis + 1, data.shape().size());
  const int64_t count = static_cast<int64_t>(idx.size());
  const size_t blockBytes = static_cast<size_t>(inner) * base::dtypeSize(data.dtype());
  if (blockBytes == 0)
    return okStatus();
  const auto *src = static_cast<const unsigned char *>(data.raw());
  auto *dst = static_cast<unsigned char *>(out.raw());
  const int64_t blocks = outer * count;
#pragma omp parallel for schedule(static) if (out.numElements() >= kParallelMinElements)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t o = b / count, j = b % count;
    std::memcpy(dst + b * blockBytes, src + (o * size + idx[j]) * blockBytes, blockBytes);
  }
  return okStatus();
}

Status gatherElements(const HostTensor &data, const HostTensor &indices, int64_t axis,
                      HostTensor &out) {
  const char *op = "gather_elements";
  RP_RETURN_IF_ERROR(checkDType(op, "data", data, kAllTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indices, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, data.rank()));
  RP_RETURN_IF_ERROR(checkGatherElementsFit(data.dtype(), data.shape(), indices.shape(), axis));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, data.dtype(), indices.shape()));
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, data.dim(axis), axis, "data", data, idx));
  const Shape dataStrides = contiguousStrides(data.shape());
  const Shape &shape = indices.shape();
  const int64_t n = indices.numElements();
  visitAll(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *src = data.data<T>();
    T *dst = out.data<T>();
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, offset = 0;
      for (size_t d = shape.size(); d-- > 0;) {
        const int64_t pos = rem % shape[d];
        rem /= shape[d];
        offset += (static_cast<int64_t>(d) == axis ? idx[i] : pos) * dataStrides[d];
      }
      dst[i] = src[offset];
    }
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
