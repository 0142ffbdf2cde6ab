//===- RowReduce.h - The deterministic row reduction of the row kernels -*- C++ -*-===//
//
// The reduction scheme shared by the row kernel families (Reduce, Softmax, Norm,
// CrossEntropy): a kernel reduces "rows" (the elements one output, one softmax line, one
// normalised row or one loss position depends on) with P = threadsPerRow cooperating
// threads, P in {1, 32, 64, 96, ..., 1024} (1 or a multiple of 32):
//
//   1. Thread `lane` (0 <= lane < P) folds the elements k = lane, lane + P, lane + 2P, ...
//      of the row in increasing k, from the operation's identity (stridedFold). With P = 1
//      this is the sequential, in-order loop of the CPU reference kernels.
//   2. The P partials combine in a fixed tree (RowReduce.cuh): within each warp an xor
//      butterfly with offsets 16, 8, 4, 2, 1 whose lane 0 result is broadcast; for P > 32,
//      the warp results (lane 0 of warp w in slot w of shared memory) padded with the
//      identity to 32 slots, and the same butterfly once more.
//
// Nothing depends on timing or on the launch geometry beyond P, and P is a function of the
// shape alone (threadsPerRowFor), so every result is bit-reproducible run to run. This
// header is plain host C++ (RP_HD functions, no CUDA dependency): combineOnHost() is the
// host model of step 2 (the same operands in the same order), so a host test replays the
// device algorithm; the device code is RowReduce.cuh.
//
// Numerics: the combine operations are SumOp (integers wrap in two's complement, as the CPU
// kernels' int64 sums), MaxOp (NaN-propagating, the CPU's reduce_max and softmax) and FMaxOp
// (NaN-ignoring like std::fmax, the CPU's cross_entropy). Floating-point sums depend on P
// (the order of the additions); max does not, except for the sign of a zero maximum and a
// NaN's payload.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_ROWREDUCE_H
#define RP_KERNELS_CUDA_ROWREDUCE_H

#include "kernels/cuda/Strided.h"

#include <math.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// The most threads that share one row (one block of 1024 threads).
inline constexpr int kMaxThreadsPerRow = 1024;
/// Threads per warp (every NVIDIA GPU the project targets).
inline constexpr int kWarpSize = 32;

//===--- math in the compute types ----------------------------------------===//
// Overloads on the compute type: double (f32, f64) or float (f16, bf16). On the host these
// are the C library's exp/log/sqrt, the same functions the CPU reference kernels call; on
// the device CUDA's (double exp and log within 1 ulp, sqrt correctly rounded).

RP_HD inline double rowExp(double v) { return ::exp(v); }
RP_HD inline float rowExp(float v) { return ::expf(v); }
RP_HD inline double rowLog(double v) { return ::log(v); }
RP_HD inline float rowLog(float v) { return ::logf(v); }
RP_HD inline double rowSqrt(double v) { return ::sqrt(v); }
RP_HD inline float rowSqrt(float v) { return ::sqrtf(v); }

/// v != v for floats; false for integers (no self-comparison warnings).
RP_HD inline bool rowIsNan(double v) { return v != v; }
RP_HD inline bool rowIsNan(float v) { return v != v; }
RP_HD inline bool rowIsNan(int64_t) { return false; }

/// Neither NaN nor an infinity.
RP_HD inline bool rowIsFinite(double v) { return v - v == 0.0; }
RP_HD inline bool rowIsFinite(float v) { return v - v == 0.0f; }

//===--- combine operations -----------------------------------------------===//

/// a + b; int64 wraps (computed in uint64), as the CPU kernels' integer sums.
struct SumOp {
  RP_HD double operator()(double a, double b) const { return a + b; }
  RP_HD float operator()(float a, float b) const { return a + b; }
  RP_HD int64_t operator()(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
};

/// The larger of a and b; a NaN wins (the first one, a before b).
struct MaxOp {
  template <typename C> RP_HD C operator()(C a, C b) const {
    if (rowIsNan(a))
      return a;
    if (rowIsNan(b))
      return b;
    return b > a ? b : a;
  }
};

/// The larger of a and b ignoring NaNs (std::fmax): NaN only when both are NaN.
struct FMaxOp {
  template <typename C> RP_HD C operator()(C a, C b) const {
    if (rowIsNan(b))
      return a;
    if (rowIsNan(a))
      return b;
    return b > a ? b : a;
  }
};

/// Step 1 of the file comment: op-fold of load(k) for k = lane, lane + threads, ... < n,
/// from `identity`, in increasing k.
template <typename A, typename Load, typename Op>
RP_HD inline A stridedFold(int64_t n, int lane, int threads, A identity, const Load &load, Op op) {
  A acc = identity;
  for (int64_t k = lane; k < n; k += threads)
    acc = op(acc, load(k));
  return acc;
}

/// Element offset of element 0 of `line` of a tensor [outer, dim, inner] reduced over dim
/// (lines = outer * inner; a line's elements are `inner` apart). Softmax and cross-entropy.
RP_HD inline int64_t lineBase(int64_t line, int64_t dim, int64_t inner) {
  return (line / inner) * dim * inner + line % inner;
}

/// Element k of one line (from lineBase) as the compute type: a stridedFold load.
template <base::DType D> struct LineLoad {
  const void *x;
  int64_t base, inner;
  RP_HD typename DTypeTraits<D>::Compute operator()(int64_t k) const {
    return loadAs<D>(x, base + k * inner);
  }
};

/// exp(x_k - m) of one line: the stridedFold load of a softmax denominator.
template <base::DType D> struct LineExpLoad {
  LineLoad<D> load;
  typename DTypeTraits<D>::Compute m;
  RP_HD typename DTypeTraits<D>::Compute operator()(int64_t k) const { return rowExp(load(k) - m); }
};

//===--- host side ----------------------------------------------------------===//

/// True for the thread counts the row kernels launch with: 1, or a multiple of 32 up to
/// kMaxThreadsPerRow.
inline bool validThreadsPerRow(int threads) {
  return threads == 1 ||
         (threads >= kWarpSize && threads <= kMaxThreadsPerRow && threads % kWarpSize == 0);
}

/// The threads that share a row of `n` elements among `rows` rows (a function of the shape
/// only, so results are reproducible). `unitStride`: the row's consecutive elements are
/// adjacent in memory. Rows of <= 16 elements, and strided rows when there are enough of
/// them to fill the GPU, get one thread each (neighbouring threads then read neighbouring
/// addresses when the rows interleave); otherwise a warp up to 1024 elements, then blocks of
/// 256 (<= 8192), 512 (<= 65536) and 1024 threads (a 151936-class vocabulary row).
inline int threadsPerRowFor(int64_t rows, int64_t n, bool unitStride) {
  if (n <= 16 || (!unitStride && (rows >= 4096 || n <= 64)))
    return 1;
  if (n <= 1024)
    return kWarpSize;
  if (n <= 8192)
    return 256;
  if (n <= 65536)
    return 512;
  return kMaxThreadsPerRow;
}

/// The host model of step 2 of the file comment: what every thread of a row holds after the
/// device combines `partials[0..threads)` (threads valid per validThreadsPerRow) with `op`.
/// Bit-identical to the device given bit-identical partials.
template <typename A, typename Op>
A combineOnHost(const A *partials, int threads, A identity, Op op) {
  if (threads == 1)
    return partials[0];
  auto butterfly = [&](A(&v)[kWarpSize]) { // lane 0's value after the xor butterfly
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
      for (int lane = 0; lane < offset; ++lane)
        v[lane] = op(v[lane], v[lane + offset]);
    return v[0];
  };
  const int warps = threads / kWarpSize;
  A slots[kWarpSize];
  for (int w = 0; w < kWarpSize; ++w)
    slots[w] = identity;
  for (int w = 0; w < warps; ++w) {
    A v[kWarpSize];
    for (int lane = 0; lane < kWarpSize; ++lane)
      v[lane] = partials[w * kWarpSize + lane];
    slots[w] = butterfly(v);
  }
  return warps == 1 ? slots[0] : butterfly(slots);
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_ROWREDUCE_H
