//===- Scatter.cpp - Scatters, the VJPs of gathers and slices -------------===//

#include "kernels/cpu/Scatter.h"

#include "kernels/ElementBits.h"
#include "kernels/cpu/KernelSupport.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::invalidArgument;
using base::okStatus;
using base::outOfRange;

namespace {


/// One scratch buffer of `size` elements per OpenMP thread, allocated before
/// the parallel region (an allocation failure inside one would terminate).
template <typename C> class PerThreadScratch {
public:
  explicit PerThreadScratch(int64_t size) : size_(size) {
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    buffer_.resize(static_cast<size_t>(threads) * static_cast<size_t>(size));
  }
  /// The calling thread's buffer (inside or outside a parallel region).
  C *get() {
#ifdef _OPENMP
    const int64_t thread = omp_get_thread_num();
#else
    const int64_t thread = 0;
#endif
    return buffer_.data() + thread * size_;
  }

private:
  int64_t size_;
  std::vector<C> buffer_;
};

/// Zeroes every byte of `out` (0 is +0.0, integer 0 and false for every
/// kernel dtype).
void zeroFill(HostTensor &out) {
  if (out.byteSize() > 0)
    std::memset(out.raw(), 0, out.byteSize());
}

template <typename E>
void storeElements(const HostTensor &update, const LoopNest<1> &nest, HostTensor &out) {
  const E *src = static_cast<const E *>(update.raw());
  E *dst = static_cast<E *>(out.raw());
  forEachChunk(nest, [&](int64_t u, const std::array<int64_t, 1> &off, int64_t count,
                         const std::array<int64_t, 1> &stride) {
    const E *p = src + u;
    E *q = dst + off[0];
    if (stride[0] == 1) {
      std::memcpy(q, p, static_cast<size_t>(count) * sizeof(E));
      return;
    }
    for (int64_t j = 0; j < count; ++j)
      q[j * stride[0]] = p[j];
  });
}

/// The first element, in updates (`u0`) and in out (`o0`), of line `line` of updates along
/// `axis` (every other coordinate fixed; lines numbered row-major).
void lineStart(int64_t line, const Shape &shape, int64_t axis, const Shape &uStrides,
               const Shape &oStrides, int64_t &u0, int64_t &o0) {
  int64_t rem = line;
  u0 = o0 = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    if (static_cast<int64_t>(d) == axis)
      continue;
    const int64_t pos = rem % shape[d];
    rem /= shape[d];
    u0 += pos * uStrides[d];
    o0 += pos * oStrides[d];
  }
}

/// The transpose of stridedCopy: writes the contiguous `update` into `out` at
/// element `base` + sum(index[d] * strides[d]) (one stride per dimension of
/// update; the positions must be distinct, so chunks may run in parallel).
void stridedStore(const HostTensor &update, const Shape &strides, int64_t base, HostTensor &out) {
  if (update.numElements() == 0)
    return;
  const LoopNest<1> nest = makeLoopNest<1>(update.shape(), {strides}, {base});
  visitBits(base::dtypeSize(update.dtype()),
                   [&](auto tag) { storeElements<decltype(tag)>(update, nest, out); });
}

} // namespace

Status scatterAdd(const HostTensor &updates, const HostTensor &indices, int64_t axis,
                  HostTensor &out) {
  const char *op = "scatter_add";
  RP_RETURN_IF_ERROR(checkDType(op, "updates", updates, kFloatTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indices, kIndexTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "updates", updates, "out", out));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, out.rank()));
  RP_RETURN_IF_ERROR(checkScatterUpdates(op, "out", updates.dtype(), updates.shape(),
                                         out.dtype(), out.shape(), indices.shape(), axis));
  const int64_t size = out.dim(axis);
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, size, axis, "out", out, idx));

  // Group the index positions j by their target t, keeping j ascending within
  // a group (a stable counting sort): group t is order[first[t] .. first[t+1]).
  const int64_t count = static_cast<int64_t>(idx.size());
  std::vector<int64_t> first(static_cast<size_t>(size) + 1, 0), order(idx.size());
  for (int64_t t : idx)
    ++first[t + 1];
  for (int64_t t = 0; t < size; ++t)
    first[t + 1] += first[t];
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t j = 0; j < count; ++j)
      order[next[idx[j]]++] = j;
  }

  const int64_t outer = product(out.shape(), 0, axis);
  const int64_t inner = product(out.shape(), axis + 1, out.shape().size());
  if (out.numElements() == 0)
    return okStatus();
  // One task per output row out[o, t, :] (inner elements): it sums the rows
  // updates[o, j, :] of group t in ascending j, i.e. in row-major order of
  // updates; rows no index hits stay zero.
  const int64_t tasks = outer * size;
  const bool parallel = out.numElements() + updates.numElements() >= kParallelMinElements;
  visitFloat(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T *src = updates.data<T>();
    T *dst = out.data<T>();
    PerThreadScratch<C> scratch(std::is_same_v<C, T> ? 0 : inner);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t o = task / size, t = task % size;
      T *row = dst + task * inner;
      const int64_t begin = first[t], end = first[t + 1];
      if (begin == end) {
        std::fill(row, row + inner, T(0));
        continue;
      }
      C *acc;
      if constexpr (std::is_same_v<C, T>)
        acc = row;
      else
        acc = scratch.get();
      std::fill(acc, acc + inner, C(0));
      for (int64_t g = begin; g < end; ++g) {
        const T *u = src + (o * count + order[g]) * inner;
        for (int64_t k = 0; k < inner; ++k)
          acc[k] += static_cast<C>(u[k]);
      }
      if constexpr (!std::is_same_v<C, T>)
        for (int64_t k = 0; k < inner; ++k)
          row[k] = static_cast<T>(acc[k]);
    }
  });
  return okStatus();
}

Status scatterElementsAdd(const HostTensor &updates, const HostTensor &indices, int64_t axis,
                          HostTensor &out) {
  const char *op = "scatter_elements_add";
  RP_RETURN_IF_ERROR(checkDType(op, "updates", updates, kFloatTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indices, kIndexTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "updates", updates, "out", out));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, out.rank()));
  RP_RETURN_IF_ERROR(checkScatterElementsFit(op, "out", updates.shape(), indices.shape(),
                                             out.dtype(), out.shape(), axis));
  const int64_t size = out.dim(axis);
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, size, axis, "out", out, idx));

  zeroFill(out);
  // One task per line of updates along `axis` (every other coordinate fixed):
  // it adds into one line of out, which no other task touches, walking the
  // line's positions in ascending order (the row-major order of updates).
  const Shape &shape = updates.shape();
  const int64_t length = shape[axis];
  if (updates.numElements() == 0)
    return okStatus();
  const int64_t lines = updates.numElements() / length;
  const Shape uStrides = contiguousStrides(shape), oStrides = contiguousStrides(out.shape());
  const int64_t uStep = uStrides[axis], oStep = oStrides[axis];
  const bool parallel = updates.numElements() >= kParallelMinElements;
  visitFloat(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T *src = updates.data<T>();
    T *dst = out.data<T>();
    PerThreadScratch<C> scratch(std::is_same_v<C, T> ? 0 : size);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t line = 0; line < lines; ++line) {
      int64_t u0, o0; // the line's first element in updates and in out
      lineStart(line, shape, axis, uStrides, oStrides, u0, o0);
      T *o = dst + o0;
      if constexpr (std::is_same_v<C, T>) {
        for (int64_t j = 0; j < length; ++j) {
          const int64_t p = u0 + j * uStep;
          o[idx[p] * oStep] += src[p];
        }
      } else {
        // Sum in double: clear the targets, add, then store each target
        // (a target hit twice is stored twice with the same value).
        C *acc = scratch.get();
        for (int64_t j = 0; j < length; ++j)
          acc[idx[u0 + j * uStep]] = C(0);
        for (int64_t j = 0; j < length; ++j) {
          const int64_t p = u0 + j * uStep;
          acc[idx[p]] += static_cast<C>(src[p]);
        }
        for (int64_t j = 0; j < length; ++j) {
          const int64_t t = idx[u0 + j * uStep];
          o[t * oStep] = static_cast<T>(acc[t]);
        }
      }
    }
  });
  return okStatus();
}

namespace {

/// The checks of an overwriting scatter (scatter, scatter_elements) beyond the updates' shape:
/// dtypes, axis, out of data's type.
Status checkOverwrite(const char *op, const HostTensor &data, const HostTensor &indices,
                      const HostTensor &updates, int64_t axis, const HostTensor &out) {
  RP_RETURN_IF_ERROR(checkDType(op, "data", data, kAllTypes));
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indices, kIndexTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "data", data, "updates", updates));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, data.rank()));
  return checkType(op, "out", out, data.dtype(), data.shape());
}

/// Copies data into out (unless they are one buffer).
void copyData(const HostTensor &data, HostTensor &out) {
  if (out.byteSize() > 0 && out.raw() != data.raw())
    std::memcpy(out.raw(), data.raw(), out.byteSize());
}

} // namespace

Status scatter(const HostTensor &data, const HostTensor &indices, const HostTensor &updates,
               int64_t axis, HostTensor &out) {
  const char *op = "scatter";
  RP_RETURN_IF_ERROR(checkOverwrite(op, data, indices, updates, axis, out));
  RP_RETURN_IF_ERROR(checkScatterUpdates(op, "data", updates.dtype(), updates.shape(),
                                         data.dtype(), data.shape(), indices.shape(), axis));
  const int64_t size = data.dim(axis);
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, size, axis, "data", data, idx));
  copyData(data, out);
  const int64_t outer = product(data.shape(), 0, axis);
  const int64_t inner = product(data.shape(), axis + 1, data.shape().size());
  const int64_t count = static_cast<int64_t>(idx.size());
  if (updates.numElements() == 0)
    return okStatus();
  // One task per outer index o: it writes the rows updates[o, j, :] into out[o, idx[j], :]
  // with j ascending, so a repeated target keeps its last row.
  const bool parallel = outer > 1 && updates.numElements() >= kParallelMinElements;
  visitBits(base::dtypeSize(data.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E *src = static_cast<const E *>(updates.raw());
    E *dst = static_cast<E *>(out.raw());
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j)
        std::memcpy(dst + (o * size + idx[j]) * inner, src + (o * count + j) * inner,
                    static_cast<size_t>(inner) * sizeof(E));
  });
  return okStatus();
}

Status scatterElements(const HostTensor &data, const HostTensor &indices,
                       const HostTensor &updates, int64_t axis, HostTensor &out) {
  const char *op = "scatter_elements";
  RP_RETURN_IF_ERROR(checkOverwrite(op, data, indices, updates, axis, out));
  RP_RETURN_IF_ERROR(checkScatterElementsFit(op, "data", updates.shape(), indices.shape(),
                                             data.dtype(), data.shape(), axis));
  std::vector<int64_t> idx;
  RP_RETURN_IF_ERROR(normaliseIndices(op, indices, data.dim(axis), axis, "data", data, idx));
  copyData(data, out);
  if (updates.numElements() == 0)
    return okStatus();
  // One task per line of updates along `axis`: it writes into one line of out, which no
  // other task touches, in ascending position order (the later update wins).
  const Shape &shape = updates.shape();
  const int64_t length = shape[axis];
  const int64_t lines = updates.numElements() / length;
  const Shape uStrides = contiguousStrides(shape), oStrides = contiguousStrides(data.shape());
  const int64_t uStep = uStrides[axis], oStep = oStrides[axis];
  const bool parallel = updates.numElements() >= kParallelMinElements;
  visitBits(base::dtypeSize(data.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E *src = static_cast<const E *>(updates.raw());
    E *dst = static_cast<E *>(out.raw());
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t line = 0; line < lines; ++line) {
      int64_t u0, o0;
      lineStart(line, shape, axis, uStrides, oStrides, u0, o0);
      for (int64_t j = 0; j < length; ++j) {
        const int64_t p = u0 + j * uStep;
        dst[o0 + idx[p] * oStep] = src[p];
      }
    }
  });
  return okStatus();
}

Status sliceScatter(const HostTensor &update, const std::vector<int64_t> &axes,
                    const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
                    const std::vector<int64_t> &steps, HostTensor &out) {
  const char *op = "slice_scatter";
  RP_RETURN_IF_ERROR(checkDType(op, "update", update, kAllTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "update", update, "out", out));
  // The bounds rules and result shape of cpu::slice, with x = out.
  base::StatusOr<SliceGeometry> g = sliceGeometry(op, out.shape(), axes, starts, ends, steps);
  if (!g.ok())
    return g.status();
  if (update.shape() != g->shape)
    return invalidArgument(std::string(op) + ": update is " + update.typeString() + ", expected " +
                           base::dtypeName(out.dtype()) + formatShape(g->shape) +
                           " (the slice of out " + out.typeString() + ")");
  zeroFill(out);
  stridedStore(update, g->strides, g->base, out);
  return okStatus();
}

} // namespace rp::kernels::cpu
