//===- Reduce.cpp - Reductions (graph.reduce_*) on the CPU ----------------===//

#include "kernels/cpu/Reduce.h"

#include "kernels/cpu/KernelSupport.h"

#include <limits>
#include <type_traits>

namespace rp::kernels::cpu {

using namespace detail;
using runtime::formatShape;
using runtime::okStatus;

namespace {

/// Dimensions and element strides of one group (kept or reduced) of x's dims,
/// with adjacent dims that are contiguous in x merged.
struct DimGroup {
  Shape dims, strides;
  void add(int64_t dim, int64_t stride) {
    if (!dims.empty() && strides.back() == stride * dim) {
      dims.back() *= dim;
      strides.back() = stride;
      return;
    }
    dims.push_back(dim);
    strides.push_back(stride);
  }
};

/// Calls visit(offset) for every element of `g` from `base`, in row-major order.
template <typename Visit>
void walk(const DimGroup &g, int64_t base, Visit &&visit) {
  const size_t rank = g.dims.size();
  if (rank == 0) {
    visit(base);
    return;
  }
  const int64_t inner = g.dims.back(), innerStride = g.strides.back();
  const int64_t outer = product(g.dims, 0, rank - 1);
  Shape idx(rank, 0);
  int64_t off = base;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j)
      visit(off + j * innerStride);
    for (size_t d = rank - 1; d-- > 0;) { // odometer over the outer dims
      off += g.strides[d];
      if (++idx[d] < g.dims[d])
        break;
      off -= idx[d] * g.strides[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
void reduceLoop(ReduceKind kind, const HostTensor &x, const DimGroup &kept, const DimGroup &reduced,
                int64_t count, HostTensor &out) {
  const T *in = x.data<T>();
  T *po = out.data<T>();
  const int64_t outCount = out.numElements();
  const size_t keptRank = kept.dims.size();
#pragma omp parallel for schedule(static) if (outCount * count >= kParallelMinElements)
  for (int64_t o = 0; o < outCount; ++o) {
    int64_t base = 0, rem = o;
    for (size_t d = keptRank; d-- > 0;) {
      base += (rem % kept.dims[d]) * kept.strides[d];
      rem /= kept.dims[d];
    }
    if (kind == ReduceKind::Max) {
      T acc = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                   : std::numeric_limits<T>::lowest();
      walk(reduced, base, [&](int64_t i) {
        const T v = in[i];
        if constexpr (std::is_floating_point_v<T>) {
          if (v > acc || v != v) // a NaN sticks: nothing compares greater than it
            acc = v;
        } else if (v > acc) {
          acc = v;
        }
      });
      po[o] = acc;
    } else if constexpr (std::is_floating_point_v<T>) {
      double acc = 0.0;
      walk(reduced, base, [&](int64_t i) { acc += static_cast<double>(in[i]); });
      po[o] = static_cast<T>(kind == ReduceKind::Mean ? acc / static_cast<double>(count) : acc);
    } else {
      uint64_t acc = 0; // int64 arithmetic that wraps
      walk(reduced, base, [&](int64_t i) { acc += static_cast<uint64_t>(int64_t(in[i])); });
      int64_t sum = static_cast<int64_t>(acc);
      po[o] = static_cast<T>(kind == ReduceKind::Mean ? sum / count : sum); // count > 0
    }
  }
}

} // namespace

Status reduce(ReduceKind kind, const HostTensor &x, const std::vector<int64_t> &axes, bool keepdims,
              HostTensor &out) {
  const char *op = reduceKindName(kind);
  RP_RETURN_IF_ERROR(checkDType(op, "x", x, kNumericTypes));
  RP_RETURN_IF_ERROR(checkReduceAxes(op, axes, x.rank()));
  const Shape strides = contiguousStrides(x.shape());
  Shape resultShape;
  DimGroup kept, reduced;
  size_t next = 0;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const bool isReduced = next < axes.size() && axes[next] == d;
    if (isReduced) {
      ++next;
      reduced.add(x.dim(d), strides[d]);
      if (keepdims)
        resultShape.push_back(1);
    } else {
      kept.add(x.dim(d), strides[d]);
      resultShape.push_back(x.dim(d));
    }
  }
  RP_RETURN_IF_ERROR(checkType(op, "out", out, x.dtype(), resultShape));
  const int64_t count = product(reduced.dims, 0, reduced.dims.size());
  if (out.numElements() == 0)
    return okStatus();
  if (count == 0 && kind == ReduceKind::Mean && !runtime::isFloat(x.dtype()))
    return emptyIntegerMean(op, x.dtype(), x.shape(), axes);
  visitNumeric(x.dtype(), [&](auto tag) {
    reduceLoop<typename decltype(tag)::type>(kind, x, kept, reduced, count, out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
