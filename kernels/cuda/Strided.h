//===- Strided.h - Strided iteration spaces for the GPU kernels -*- C++ -*-===//
//
// The shared vocabulary of the CUDA kernel families (kernels/cuda). Included by the .cu files
// (device code) and by host C++ (the dispatcher, the host tests): every function here is
// RP_HOST_DEVICE and has no CUDA dependency.
//
// StridedIter<N>: an iteration space of `numel` points (a row-major shape of `rank` <= 8
// dimensions) and, for each of N tensors, an element stride per dimension and a base element
// offset. Point i (0 <= i < numel, row-major) touches element base[t] + sum_d idx_d *
// strides[t][d] of tensor t. A stride of 0 broadcasts (numpy rules); a permuted stride list
// transposes; a base plus steps slices. makeIter() builds one on the host and coalesces
// dimensions that are contiguous for every tensor, so the common cases (same-shape
// elementwise, a bias broadcast over rows) iterate with rank 1 or 2.
//
// Element storage (StorageOf<DType>): f32 `float`, f16 and bf16 `uint16_t` bit patterns
// (base/Float16.h converts), f64 `double`, i64 `int64_t`, i32 `int32_t`, i1 `uint8_t`
// (0 or 1). Compute types (ComputeOf): f32 and f64 compute in double (the CPU reference
// kernels compute in double and round once: for + - * / and sqrt that is the correctly
// rounded f32 result, so the GPU matches the CPU bit for bit there); f16 and bf16 compute in
// float (their rounding hides the difference; float is 2x faster and never the bottleneck).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_STRIDED_H
#define RP_KERNELS_CUDA_STRIDED_H

#include "base/DType.h"
#include "base/Float16.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rp::kernels::cuda {

#define RP_HD RP_HOST_DEVICE

/// The largest tensor rank the GPU kernels iterate over.
inline constexpr int kMaxRank = 8;

using Shape = std::vector<int64_t>;

/// See the file comment. Trivially copyable: passed to kernels by value.
template <int N> struct StridedIter {
  int rank = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t base[N] = {};
  int64_t strides[N][kMaxRank] = {};

  /// The element offsets of point `linear` (0 <= linear < numel) in each of the N tensors.
  /// The outermost index is what the inner divisions leave (no division: a coalesced,
  /// contiguous iteration of rank 1 costs none), and a division whose operands fit in 32 bits
  /// is done in 32 bits (a GPU divides 64-bit integers in software, several times slower;
  /// the elementwise kernels were bound by it).
  RP_HD void offsets(int64_t linear, int64_t (&out)[N]) const {
    for (int t = 0; t < N; ++t)
      out[t] = base[t];
    for (int d = rank - 1; d > 0; --d) {
      const int64_t size = sizes[d];
      const int64_t next = (linear <= INT32_MAX && size <= INT32_MAX)
                               ? static_cast<int64_t>(static_cast<uint32_t>(linear) /
                                                      static_cast<uint32_t>(size))
                               : linear / size;
      const int64_t idx = linear - next * size;
      linear = next;
      for (int t = 0; t < N; ++t)
        out[t] += idx * strides[t][d];
    }
    if (rank > 0)
      for (int t = 0; t < N; ++t)
        out[t] += linear * strides[t][0];
  }
};

/// Row-major contiguous strides, and the strides reading `from` broadcast to `to`
/// (base/HostTensor.h, shared with the CPU kernels).
using base::broadcastStrides;
using base::contiguousStrides;

/// The numpy broadcast of `shapes`. Errors: InvalidArgument "<op>: shapes [..] and [..] do
/// not broadcast".
base::StatusOr<Shape> broadcastShapes(const char *op, const std::vector<Shape> &shapes);

/// Product of the dimensions (1 for a scalar).
int64_t numElements(const Shape &shape);

/// The iteration space over `shape` with the given per-tensor strides (each of
/// `shape.size()` entries) and base offsets, dimensions of size 1 dropped and contiguous runs
/// coalesced. Errors: InvalidArgument when more than kMaxRank dimensions remain after
/// coalescing ("<op>: rank R exceeds the GPU kernels' limit of 8").
template <int N>
base::StatusOr<StridedIter<N>> makeIter(const char *op, const Shape &shape,
                                           const std::array<Shape, N> &strides,
                                           const std::array<int64_t, N> &base = {});

/// "[2, 3]" (base/HostTensor.h).
using base::formatShape;

//===--- element storage -------------------------------------------------===//

/// Storage and compute type of each DType (see the file comment).
template <base::DType D> struct DTypeTraits;
template <> struct DTypeTraits<base::DType::F32> {
  using Storage = float;
  using Compute = double;
};
template <> struct DTypeTraits<base::DType::F64> {
  using Storage = double;
  using Compute = double;
};
template <> struct DTypeTraits<base::DType::F16> {
  using Storage = uint16_t;
  using Compute = float;
};
template <> struct DTypeTraits<base::DType::BF16> {
  using Storage = uint16_t;
  using Compute = float;
};
template <> struct DTypeTraits<base::DType::I64> {
  using Storage = int64_t;
  using Compute = int64_t;
};
template <> struct DTypeTraits<base::DType::I32> {
  using Storage = int32_t;
  using Compute = int64_t;
};
template <> struct DTypeTraits<base::DType::I1> {
  using Storage = uint8_t;
  using Compute = bool;
};

/// Reads element `i` of a `D` tensor as its compute type.
template <base::DType D>
RP_HD inline typename DTypeTraits<D>::Compute loadAs(const void *p, int64_t i) {
  using S = typename DTypeTraits<D>::Storage;
  using C = typename DTypeTraits<D>::Compute;
  const S s = static_cast<const S *>(p)[i];
  if constexpr (D == base::DType::BF16)
    return base::bf16ToFloat(s);
  else if constexpr (D == base::DType::F16)
    return base::halfToFloat(s);
  else if constexpr (D == base::DType::I1)
    return s != 0;
  else
    return static_cast<C>(s);
}

/// Writes `v` (a compute value) as element `i` of a `D` tensor, rounding once to nearest
/// even (f32 from double: the correctly rounded value; integers wrap as the CPU kernels do).
template <base::DType D, typename V> RP_HD inline void storeAs(void *p, int64_t i, V v) {
  using S = typename DTypeTraits<D>::Storage;
  S *out = static_cast<S *>(p);
  if constexpr (D == base::DType::BF16)
    out[i] = base::floatToBf16(static_cast<float>(v));
  else if constexpr (D == base::DType::F16)
    out[i] = base::floatToHalf(static_cast<float>(v));
  else if constexpr (D == base::DType::I1)
    out[i] = static_cast<uint8_t>(v ? 1 : 0);
  else if constexpr (D == base::DType::I32)
    out[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
  else
    out[i] = static_cast<S>(v);
}

/// Calls fn(std::integral_constant<DType, d>{}) for the runtime dtype `d` among the float
/// types (f32, f16, bf16, f64); returns false (calling nothing) for the others.
template <typename Fn> bool visitFloatDType(base::DType d, Fn &&fn) {
  using base::DType;
  switch (d) {
  case DType::F32:
    fn(std::integral_constant<DType, DType::F32>{});
    return true;
  case DType::F16:
    fn(std::integral_constant<DType, DType::F16>{});
    return true;
  case DType::BF16:
    fn(std::integral_constant<DType, DType::BF16>{});
    return true;
  case DType::F64:
    fn(std::integral_constant<DType, DType::F64>{});
    return true;
  default:
    return false;
  }
}

/// As visitFloatDType over every dtype.
template <typename Fn> void visitDType(base::DType d, Fn &&fn) {
  using base::DType;
  if (visitFloatDType(d, fn))
    return;
  switch (d) {
  case DType::I64:
    fn(std::integral_constant<DType, DType::I64>{});
    return;
  case DType::I32:
    fn(std::integral_constant<DType, DType::I32>{});
    return;
  default:
    fn(std::integral_constant<DType, DType::I1>{});
    return;
  }
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_STRIDED_H
