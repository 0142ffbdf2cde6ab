//===- KernelSupport.cpp - Shared checks and loops of the CPU kernels -----===//

#include "kernels/cpu/KernelSupport.h"

#include "kernels/cpu/Kernels.h"
#include "kernels/cpu/Sgemm.h"

#include <algorithm>
#include <cstring>

#include <cblas.h>
#include <omp.h>

namespace rp::kernels::cpu {

int kernelThreads() { return omp_get_max_threads(); }

void setKernelThreads(int threads) { omp_set_num_threads(threads < 1 ? 1 : threads); }

} // namespace rp::kernels::cpu

namespace rp::kernels::cpu::detail {

using base::formatShape;
using base::invalidArgument;
using base::okStatus;

StatusOr<Shape> broadcastShapes(const char *op, std::initializer_list<const Shape *> shapes) {
  size_t rank = 0;
  for (const Shape *s : shapes)
    rank = std::max(rank, s->size());
  Shape result(rank, 1);
  for (const Shape *s : shapes) {
    const size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &r = result[offset + i];
      const int64_t d = (*s)[i];
      if (d == r || d == 1)
        continue;
      if (r != 1) {
        std::string all;
        for (const Shape *t : shapes)
          all += (all.empty() ? "" : " and ") + formatShape(*t);
        return invalidArgument(
            std::string(op) + ": shapes " + all + " are not broadcast-compatible: dimension " +
            std::to_string(rank - (offset + i)) + " from the end is " + std::to_string(r) +
            " in one and " + std::to_string(d) + " in another");
      }
      r = d;
    }
  }
  return result;
}

namespace {
CBLAS_TRANSPOSE blasOp(bool t) { return t ? CblasTrans : CblasNoTrans; }
void singleThreadedBlas() {
  if (openblas_get_num_threads() != 1)
    openblas_set_num_threads(1);
}
} // namespace

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (sgemmAvailable())
    return sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  singleThreadedBlas();
  cblas_sgemm(CblasRowMajor, blasOp(transA), blasOp(transB), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc) {
  singleThreadedBlas();
  cblas_dgemm(CblasRowMajor, blasOp(transA), blasOp(transB), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

std::string formatIndex(int64_t linear, const Shape &shape) {
  Shape index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = shape[i] > 0 ? linear % shape[i] : 0;
    linear = shape[i] > 0 ? linear / shape[i] : 0;
  }
  return formatShape(index);
}

namespace {
template <typename E>
void copyElements(const HostTensor &src, const LoopNest<1> &nest, HostTensor &out) {
  const E *in = static_cast<const E *>(src.raw());
  E *dst = static_cast<E *>(out.raw());
  forEachChunk(nest, [&](int64_t o, const std::array<int64_t, 1> &off, int64_t count,
                         const std::array<int64_t, 1> &stride) {
    const E *p = in + off[0];
    E *q = dst + o;
    if (stride[0] == 1) {
      std::memcpy(q, p, static_cast<size_t>(count) * sizeof(E));
      return;
    }
    for (int64_t j = 0; j < count; ++j)
      q[j] = p[j * stride[0]];
  });
}
} // namespace

void stridedCopy(const HostTensor &src, const Shape &strides, int64_t base, HostTensor &out) {
  if (out.numElements() == 0)
    return;
  const LoopNest<1> nest = makeLoopNest<1>(out.shape(), {strides}, {base});
  switch (base::dtypeSize(src.dtype())) {
  case 1:
    return copyElements<uint8_t>(src, nest, out);
  case 2:
    return copyElements<uint16_t>(src, nest, out);
  case 4:
    return copyElements<uint32_t>(src, nest, out);
  default:
    return copyElements<uint64_t>(src, nest, out);
  }
}

namespace {

template <typename I>
Status normaliseAs(const char *op, const HostTensor &indices, int64_t size, int64_t axis,
                   const char *role, const HostTensor &tensor, std::vector<int64_t> &result) {
  const I *p = indices.data<I>();
  result.resize(static_cast<size_t>(indices.numElements()));
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    const int64_t v = p[i];
    if (v < -size || v >= size)
      return base::outOfRange(
          std::string(op) + ": index " + std::to_string(v) + " at position " +
          formatIndex(i, indices.shape()) + " of indices " + indices.typeString() +
          " is outside [" + std::to_string(-size) + ", " + std::to_string(size) +
          ") (dimension " + std::to_string(axis) + " of " + role + " " + tensor.typeString() +
          ")");
    result[i] = v < 0 ? v + size : v;
  }
  return base::okStatus();
}

} // namespace

Status normaliseIndices(const char *op, const HostTensor &indices, int64_t size, int64_t axis,
                        const char *role, const HostTensor &tensor, std::vector<int64_t> &result) {
  if (indices.dtype() == DType::I64)
    return normaliseAs<int64_t>(op, indices, size, axis, role, tensor, result);
  return normaliseAs<int32_t>(op, indices, size, axis, role, tensor, result);
}

StatusOr<SliceGeometry> sliceGeometry(const char *op, const Shape &in,
                                      const std::vector<int64_t> &axes,
                                      const std::vector<int64_t> &starts,
                                      const std::vector<int64_t> &ends,
                                      const std::vector<int64_t> &steps) {
  using base::invalidArgument;
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size())
    return invalidArgument(
        std::string(op) + ": expected starts, ends and steps with one entry per axis (" +
        std::to_string(axes.size()) + "), got " + std::to_string(starts.size()) + ", " +
        std::to_string(ends.size()) + " and " + std::to_string(steps.size()));
  const Shape inStrides = contiguousStrides(in);
  SliceGeometry g{in, inStrides, 0};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    RP_RETURN_IF_ERROR(checkAxis(op, "axis", a, static_cast<int64_t>(in.size())));
    if (i > 0 && a <= axes[i - 1])
      return invalidArgument(std::string(op) + ": expected strictly increasing axes, got " +
                             base::formatShape(axes));
    const int64_t dim = in[a], start = starts[i], end = ends[i], step = steps[i];
    const std::string where = " on axis " + std::to_string(a) + " (step " + std::to_string(step) +
                              "), got start " + std::to_string(start) + " and end " +
                              std::to_string(end);
    if (step == 0)
      return invalidArgument(std::string(op) + ": expected a non-zero step on axis " +
                             std::to_string(a));
    if (step > 0 && (start < 0 || start > end || end > dim))
      return invalidArgument(std::string(op) +
                             ": expected 0 <= start <= end <= " + std::to_string(dim) + where);
    if (step < 0 && (end < -1 || end > start || start >= dim))
      return invalidArgument(std::string(op) + ": expected -1 <= end <= start < " +
                             std::to_string(dim) + where);
    g.shape[a] = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
    g.strides[a] = inStrides[a] * step;
    g.base += start * inStrides[a];
  }
  return g;
}

} // namespace rp::kernels::cpu::detail
