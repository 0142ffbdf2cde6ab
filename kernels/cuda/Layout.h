//===- Layout.h - Data movement on the GPU (shape ops) ----------*- C++ -*-===//
//
// transpose, expand, slice, concat, split, slice_scatter and copy move elements without
// arithmetic: each is one or more strided copies (a StridedIter<2> over the copied region,
// tensor 0 the source, tensor 1 the destination, strides and bases in elements). Semantics:
// kernels/cpu/Shape.h and kernels/cpu/Scatter.h (sliceScatter). The planners below compute
// the copies from shapes; slice bounds are normalised by the caller (the CPU kernels'
// sliceGeometry, kernels/cpu/KernelSupport.h) and passed as strides and a base offset.
//
// The kernel copies elements of 1, 2, 4 or 8 bytes; any dtype. It never synchronizes.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_LAYOUT_H
#define RP_KERNELS_CUDA_LAYOUT_H

#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

namespace rp::kernels::cuda {

/// One strided copy (see the file comment).
struct CopyPlan {
  int elementBytes = 4;
  StridedIter<2> iter;
};

/// dst[dstBase + idx . dstStrides] = src[srcBase + idx . srcStrides] for every index idx of
/// `shape`. Errors: InvalidArgument for an element size other than 1, 2, 4, 8 or a rank the
/// kernels cannot iterate.
base::StatusOr<CopyPlan> planStridedCopy(const char *op, int elementBytes, const Shape &shape,
                                            const Shape &srcStrides, int64_t srcBase,
                                            const Shape &dstStrides, int64_t dstBase);

/// transpose: out[i_0..] = x[i_perm^-1...], out.shape[d] = x.shape[perm[d]]. Errors:
/// InvalidArgument for a bad permutation or result shape.
base::StatusOr<CopyPlan> planTranspose(int elementBytes, const Shape &x,
                                          const std::vector<int64_t> &perm, const Shape &out);
/// expand: numpy broadcast of x to out's shape. Errors: x does not broadcast to out.
base::StatusOr<CopyPlan> planExpand(int elementBytes, const Shape &x, const Shape &out);
/// concat: one copy per input, placing input j at its offset along `axis` of out. Errors:
/// a bad axis, inputs whose other dimensions differ from out's, sizes not summing to out's.
base::StatusOr<std::vector<CopyPlan>>
planConcat(int elementBytes, const std::vector<Shape> &inputs, int64_t axis, const Shape &out);
/// split: one copy per output, output j taking its consecutive piece along `axis` of x.
base::StatusOr<std::vector<CopyPlan>> planSplit(int elementBytes, const Shape &x, int64_t axis,
                                                   const std::vector<Shape> &outs);

/// Point i of a copy of T-sized elements (the kernel's body; host tests run it too).
template <typename T>
RP_HD inline void copyAt(const StridedIter<2> &it, const T *src, T *dst, int64_t i) {
  int64_t off[2];
  it.offsets(i, off);
  dst[off[1]] = src[off[0]];
}

/// Enqueues the copy on `stream`. Errors: cudaErrorInvalidValue for null pointers with a
/// non-empty region; otherwise the launch error.
cudaError_t launchCopy(const CopyPlan &plan, const void *src, void *dst, cudaStream_t stream);

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void copy(const CopyPlan &plan, const void *src, void *dst);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_LAYOUT_H
