//===- Reduce.h - Reductions (graph.reduce_*) on the GPU --------*- C++ -*-===//
//
// ONNX ReduceSum / ReduceMean / ReduceMax over a list of axes, with or without keepdims:
// the GPU twin of kernels/cpu/Reduce.h, computing what it computes.
//
// Shapes: x of any rank (after merging contiguous dimensions at most 8 kept and 8 reduced
// dimensions); axes non-empty, strictly increasing, each in [0, rank) (graph's normalised
// form); out is x's shape with each reduced dimension set to 1 (keepdims) or removed.
// Tensors are contiguous, row-major, in device memory.
//
// Dtypes: x and out share one dtype: f32, f16, bf16, f64, i64 or i32 (the CPU kernel's
// numeric types plus the 16-bit floats).
//
// Numerics (as the CPU): Sum accumulates in the compute type (double for f32 and f64, float
// for f16 and bf16) and rounds once when stored; integers accumulate in int64 wrapping and
// wrap to i32 when stored. Mean = Sum / count (integers: truncation toward zero). Max: a NaN
// propagates. Over an empty set: Sum 0, float Mean NaN (0/0), Max -inf (floats) or the
// dtype's minimum (integers); an empty integer Mean is an error.
//
// Algorithm: one row per output element, the reduced elements in row-major order of the
// reduced axes; P = threadsPerRow threads share a row (threadsPerRowFor in RowReduce.h): one
// thread per output when the row is short (<= 16), or strided (reduced over outer axes) and
// <= 64 long or with >= 4096 outputs (the CPU's sequential order, and neighbouring threads
// read neighbouring addresses); else a warp (<= 1024) or a block of 256, 512 or 1024 threads
// with the fixed-order tree of RowReduce.h. Results are bit-reproducible run to run; float sums
// with P > 1 differ from the CPU's sequential sum by rounding only.
//
// Errors: planReduce returns InvalidArgument with the CPU kernel's messages
// ("reduce_sum: out is f32[2, 4], expected f32[2, 3]"); the dtype message lists the GPU's
// dtypes. launchReduce returns cudaErrorInvalidValue for a bad plan or pointer (nothing is
// launched), else the launch's cudaGetLastError().
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_REDUCE_H
#define RP_KERNELS_CUDA_REDUCE_H

#include "kernels/OpKinds.h"
#include "kernels/cuda/RowReduce.h"
#include "kernels/cuda/Strided.h"
#include "base/DType.h"
#include "base/Status.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace rp::kernels::cuda {

/// Sum, Mean or Max; semantics in the file comment (those of cpu::ReduceKind).
using ReduceKind = ::rp::kernels::ReduceKind; ///< kernels/OpKinds.h, shared with the CPU

/// Everything launchReduce needs, computed by planReduce on the host. Trivially copyable:
/// the kernels take it by value.
struct ReducePlan {
  ReduceKind kind = ReduceKind::Sum;
  base::DType dtype = base::DType::F32;
  /// Output elements (rows); 0: nothing to launch.
  int64_t rows = 0;
  /// Reduced elements per output.
  int64_t count = 0;
  /// Over the kept dimensions: output `row` (row-major) -> element offset in x of the row's
  /// first element.
  StridedIter<1> kept;
  /// Over the reduced dimensions: reduced element j (row-major over the axes) -> element
  /// offset from the row's first element.
  StridedIter<1> reduced;
  /// Threads per row (RowReduce.h): 1, or a multiple of 32 up to 1024.
  int threadsPerRow = 1;
};

/// Checks the arguments as cpu::reduce does (InvalidArgument naming the op, the expected
/// and the actual value: dtype, axes, out shape, an empty integer mean) and decides the
/// geometry. `dtype` is the dtype of x and out; `out` is out's shape.
base::StatusOr<ReducePlan> planReduce(ReduceKind kind, base::DType dtype, const Shape &x,
                                         const std::vector<int64_t> &axes, bool keepdims,
                                         const Shape &out);

/// Enqueues the reduction on `stream`. x: the plan's x, out: its out (device pointers
/// aligned to the element size; unused, and may be null, when plan.rows == 0). Never
/// synchronizes, needs no scratch memory. Returns cudaErrorInvalidValue (launching nothing)
/// for a plan not made by planReduce or a null / misaligned pointer, else
/// cudaGetLastError().
cudaError_t launchReduce(const ReducePlan &plan, const void *x, void *out, cudaStream_t stream);

//===--- the per-row math (host and device) -------------------------------===//
// The kernel is built from these; a host test replays it with combineOnHost().

/// The accumulator of dtype D: its compute type (double, float or int64).
template <base::DType D> using ReduceAccum = typename DTypeTraits<D>::Compute;

/// The start of every fold: 0 for Sum and Mean; for Max -inf or the integer minimum.
template <base::DType D> RP_HD inline ReduceAccum<D> reduceIdentity(ReduceKind kind) {
  using A = ReduceAccum<D>;
  if (kind != ReduceKind::Max)
    return A(0);
  if constexpr (D == base::DType::I64)
    return INT64_MIN;
  else if constexpr (D == base::DType::I32)
    return INT32_MIN;
  else
    return static_cast<A>(-INFINITY);
}

/// The combine operation of `kind` (SumOp or the NaN-propagating MaxOp).
template <base::DType D> struct ReduceCombine {
  ReduceKind kind;
  RP_HD ReduceAccum<D> operator()(ReduceAccum<D> a, ReduceAccum<D> b) const {
    return kind == ReduceKind::Max ? MaxOp{}(a, b) : SumOp{}(a, b);
  }
};

/// Element offset in x of the first element of output `row`.
RP_HD inline int64_t reduceRowOffset(const ReducePlan &p, int64_t row) {
  int64_t off[1];
  p.kept.offsets(row, off);
  return off[0];
}

/// Element offset of reduced element j from the row's first element.
RP_HD inline int64_t reduceElementOffset(const ReducePlan &p, int64_t j) {
  if (p.reduced.rank == 1)
    return j * p.reduced.strides[0][0];
  int64_t off[1];
  p.reduced.offsets(j, off);
  return off[0];
}

/// Reads reduced element j of one row as the accumulator type.
template <base::DType D> struct ReduceLoad {
  const ReducePlan &p;
  const void *x;
  int64_t base;
  RP_HD ReduceAccum<D> operator()(int64_t j) const {
    return static_cast<ReduceAccum<D>>(loadAs<D>(x, base + reduceElementOffset(p, j)));
  }
};

/// Thread `lane` of `threads`' partial of output `row` (RowReduce.h, step 1).
template <base::DType D>
RP_HD inline ReduceAccum<D> reducePartial(const ReducePlan &p, const void *x, int64_t row, int lane,
                                          int threads) {
  return stridedFold(p.count, lane, threads, reduceIdentity<D>(p.kind),
                     ReduceLoad<D>{p, x, reduceRowOffset(p, row)}, ReduceCombine<D>{p.kind});
}

/// Writes output `row` from the row's combined accumulator (Mean divides by the count).
template <base::DType D>
RP_HD inline void reduceStore(const ReducePlan &p, void *out, int64_t row, ReduceAccum<D> acc) {
  using A = ReduceAccum<D>;
  if (p.kind == ReduceKind::Mean)
    acc = acc / static_cast<A>(p.count); // count > 0 for integers (planReduce)
  storeAs<D>(out, row, acc);
}

/// What one thread computes for output `row` when threadsPerRow is 1: the CPU's loop.
template <base::DType D>
RP_HD inline void reduceRowSerial(const ReducePlan &p, const void *x, void *out, int64_t row) {
  reduceStore<D>(p, out, row, reducePartial<D>(p, x, row, 0, 1));
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void reduce(const ReducePlan &plan, const void *x, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_REDUCE_H
