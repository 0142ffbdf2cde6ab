//===- Reduce.cpp - Reductions (graph.reduce_*) on the CPU ----------------===//

#include "kernels/cpu/Reduce.h"

#include "kernels/cpu/KernelSupport.h"

#include <limits>
#include <type_traits>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::okStatus;

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

/// Calls visit(offset) for every element of `g` from `base`, in row-major order. `idx` is
/// scratch of g.dims.size() entries (the caller's, so that a loop over outputs allocates once).
template <typename Visit>
void walk(const DimGroup &g, int64_t base, Shape &idx, Visit &&visit) {
  const size_t rank = g.dims.size();
  if (rank == 0) {
    visit(base);
    return;
  }
  const int64_t inner = g.dims.back(), innerStride = g.strides.back();
  const int64_t outer = product(g.dims, 0, rank - 1);
  idx.assign(rank, 0);
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

/// The element offset in x of output `o` (row-major over the kept dims).
int64_t keptOffset(const DimGroup &kept, int64_t o) {
  int64_t base = 0;
  for (size_t d = kept.dims.size(); d-- > 0;) {
    base += (o % kept.dims[d]) * kept.strides[d];
    o /= kept.dims[d];
  }
  return base;
}

/// Float sum or mean whose innermost kept dimension is contiguous in x (a reduction over
/// leading dimensions, e.g. a bias gradient [B, S, N] -> [N]): a block of adjacent outputs
/// accumulates together, each visiting the reduced elements in the same row-major order, in
/// double, as the general loop does -- the same bits, in a loop that vectorises.
template <typename T>
void reduceLeadingSum(ReduceKind kind, const T *in, const DimGroup &kept, const DimGroup &reduced,
                      int64_t count, int64_t outCount, T *po) {
  constexpr int64_t kBlock = 256;
  const int64_t inner = kept.dims.back();
  const int64_t rows = outCount / inner, blocks = (inner + kBlock - 1) / kBlock;
  DimGroup outer = kept; // the kept dims but the innermost, for the row offsets
  outer.dims.pop_back();
  outer.strides.pop_back();
#pragma omp parallel if (outCount * count >= kParallelMinElements)
  {
    Shape idx;
    double acc[kBlock];
#pragma omp for schedule(static)
    for (int64_t t = 0; t < rows * blocks; ++t) {
      const int64_t row = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t n = inner - j0 < kBlock ? inner - j0 : kBlock;
      for (int64_t j = 0; j < n; ++j)
        acc[j] = 0.0;
      walk(reduced, keptOffset(outer, row) + j0, idx, [&](int64_t i) {
        const T *p = in + i;
        for (int64_t j = 0; j < n; ++j)
          acc[j] += static_cast<double>(p[j]);
      });
      T *o = po + row * inner + j0;
      for (int64_t j = 0; j < n; ++j)
        o[j] = static_cast<T>(kind == ReduceKind::Mean ? acc[j] / static_cast<double>(count)
                                                       : acc[j]);
    }
  }
}

template <typename T>
void reduceLoop(ReduceKind kind, const HostTensor &x, const DimGroup &kept, const DimGroup &reduced,
                int64_t count, HostTensor &out) {
  const T *in = x.data<T>();
  T *po = out.data<T>();
  const int64_t outCount = out.numElements();
  if constexpr (std::is_floating_point_v<T>) {
    if (kind != ReduceKind::Max && !kept.dims.empty() && kept.strides.back() == 1 &&
        !reduced.dims.empty() && kept.dims.back() > 1)
      return reduceLeadingSum(kind, in, kept, reduced, count, outCount, po);
  }
#pragma omp parallel if (outCount * count >= kParallelMinElements)
  {
    Shape idx;
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outCount; ++o) {
      const int64_t base = keptOffset(kept, o);
      if (kind == ReduceKind::Max) {
        T acc = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::lowest();
        walk(reduced, base, idx, [&](int64_t i) {
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
        walk(reduced, base, idx, [&](int64_t i) { acc += static_cast<double>(in[i]); });
        po[o] = static_cast<T>(kind == ReduceKind::Mean ? acc / static_cast<double>(count) : acc);
      } else {
        uint64_t acc = 0; // int64 arithmetic that wraps
        walk(reduced, base, idx,
             [&](int64_t i) { acc += static_cast<uint64_t>(int64_t(in[i])); });
        int64_t sum = static_cast<int64_t>(acc);
        po[o] = static_cast<T>(kind == ReduceKind::Mean ? sum / count : sum); // count > 0
      }
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
  if (count == 0 && kind == ReduceKind::Mean && !base::isFloat(x.dtype()))
    return emptyIntegerMean(op, x.dtype(), x.shape(), axes);
  visitNumeric(x.dtype(), [&](auto tag) {
    reduceLoop<typename decltype(tag)::type>(kind, x, kept, reduced, count, out);
  });
  return okStatus();
}

} // namespace rp::kernels::cpu
