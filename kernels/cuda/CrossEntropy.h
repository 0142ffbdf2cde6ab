//===- CrossEntropy.h - Softmax cross-entropy loss on the GPU ---*- C++ -*-===//
//
// graph.cross_entropy (ONNX SoftmaxCrossEntropyLoss without weights, torch cross_entropy
// with ignore_index): the GPU twin of kernels/cpu/CrossEntropy.h, computing what it
// computes, except for out-of-range labels (below).
//
// Shapes: logits [N, C, d1..dk] (rank >= 2), labels [N, d1..dk], out 0-D. A "row" is one
// position p of labels (rows = N * d1 * ... * dk, row-major); its C logits start at element
// (p / inner) * C * inner + p % inner of logits and step by inner = d1 * ... * dk (inner is
// 1 for the usual [tokens, vocabulary] logits). Contiguous row-major tensors in device
// memory.
//
// Dtypes: logits and out share one dtype: f32, f16, bf16 or f64 (the CPU takes f32 and
// f64); labels i64 or i32.
//
// Numerics (as the CPU): per row not ignored, with m = max over the logits ignoring NaNs
// (std::fmax),  loss = (m + log(sum_c exp(x_c - m))) - x_label  in the compute type (double
// for f32 and f64, float for f16 and bf16). out = the sum of the losses of the rows whose
// label is not ignore_index (Sum: 0 when all are ignored), or that sum divided by their
// number (Mean: NaN when all are ignored, as PyTorch), rounded once when stored.
//
// Out-of-range labels: where the CPU kernel returns OutOfRange, a kernel cannot return a
// status. A label outside [0, C) that is not ignore_index gives that row the loss NaN and
// the row counts as not ignored, so out is NaN: a NaN loss from launchCrossEntropy means a
// NaN or infinite logit or a bad label; a caller that must tell them apart checks the labels
// (on the host, or with the CPU kernel) when it sees NaN. The per-row losses in `rowScratch`
// show which rows.
//
// Algorithm: two kernels. (1) Per row, P = threadsPerRow threads (RowReduce.h; a block of
// 1024 threads for a 151936-class vocabulary, a warp for 16 < C <= 1024, one thread for
// C <= 16 and for strided rows (inner > 1) with C <= 64 or when there are >= 4096 of them) compute
// the maximum and the sum of exponentials in two passes with the fixed-order tree, and the row's
// first thread writes the loss (0 for an ignored row) to rowScratch[row]. (2) One block of
// kFinishThreads threads: thread t adds the losses of the rows [t * chunk, (t + 1) * chunk) (chunk
// = ceil(rows / kFinishThreads)) in row order and counts the rows not ignored; the fixed-order tree
// combines the partials and thread 0 writes out. Bit-reproducible run to run; the float sums differ
// from the CPU's sequential ones by rounding only.
//
// Errors: planCrossEntropy returns InvalidArgument with the CPU kernel's messages
// ("cross_entropy: expected labels of shape [4] for logits f32[4, 10], got [4, 1]"); the
// logits dtype message lists the GPU's dtypes. launchCrossEntropy returns
// cudaErrorInvalidValue for a bad plan or pointer (nothing is launched), else
// cudaGetLastError().
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_CROSSENTROPY_H
#define RP_KERNELS_CUDA_CROSSENTROPY_H

#include "kernels/OpKinds.h"
#include "kernels/cuda/RowReduce.h"
#include "kernels/cuda/Strided.h"
#include "base/DType.h"
#include "base/Status.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace rp::kernels::cuda {

/// How the per-row losses combine (kernels/OpKinds.h, shared with the CPU; see the file comment).
using LossReduction = ::rp::kernels::LossReduction;

/// Threads of the finishing kernel (one block).
inline constexpr int kFinishThreads = 256;

/// Everything launchCrossEntropy needs (trivially copyable; see the file comment).
struct CrossEntropyPlan {
  base::DType dtype = base::DType::F32;
  base::DType labelDType = base::DType::I64;
  LossReduction reduction = LossReduction::Mean;
  int64_t ignoreIndex = -100;
  /// Positions (labels' element count); may be 0 (out is still written).
  int64_t rows = 0;
  /// Classes C (logits.shape[1]).
  int64_t classes = 0;
  /// Element stride between a row's classes (product of logits.shape[2:]).
  int64_t inner = 1;
  /// Threads per row of kernel (1) (RowReduce.h).
  int threadsPerRow = 1;
  /// Bytes of the rowScratch launchCrossEntropy needs: rows values of the compute type
  /// (double for f32 and f64, float for f16 and bf16).
  size_t scratchBytes = 0;
};

/// Checks the arguments as cpu::crossEntropy does (InvalidArgument naming "cross_entropy":
/// dtypes, logits rank, labels shape, out shape) and decides the geometry. `dtype` is the
/// dtype of logits and out; `out` is out's shape (must be []). Labels are not read: a bad
/// label is reported through NaN (file comment).
base::StatusOr<CrossEntropyPlan> planCrossEntropy(base::DType dtype, const Shape &logits,
                                                     base::DType labelDType, const Shape &labels,
                                                     int64_t ignoreIndex, LossReduction reduction,
                                                     const Shape &out);

/// Enqueues the two kernels on `stream`. Device pointers: logits and labels (aligned to
/// their element sizes; may be null when plan.rows == 0), out (one element), rowScratch
/// (plan.scratchBytes bytes aligned to the compute type's size, provided by the caller; may be null
/// when plan.rows == 0; on return from the stream it holds the per-row losses, 0 for ignored rows).
/// Never synchronizes. Returns cudaErrorInvalidValue (launching nothing) for a plan not made by
/// planCrossEntropy or a bad pointer, else cudaGetLastError().
cudaError_t launchCrossEntropy(const CrossEntropyPlan &plan, const void *logits, const void *labels,
                               void *out, void *rowScratch, cudaStream_t stream);

//===--- the per-row math (host and device) -------------------------------===//

template <base::DType D> using LossCompute = typename DTypeTraits<D>::Compute;

/// The label of `row`, widened to int64.
RP_HD inline int64_t lossLabel(const CrossEntropyPlan &p, const void *labels, int64_t row) {
  if (p.labelDType == base::DType::I64)
    return static_cast<const int64_t *>(labels)[row];
  return static_cast<const int32_t *>(labels)[row];
}

/// Thread `lane` of `threads`' partial maximum of `row`'s logits (FMaxOp from -inf).
template <base::DType D>
RP_HD inline LossCompute<D> lossMaxPartial(const CrossEntropyPlan &p, const void *logits,
                                           int64_t row, int lane, int threads) {
  return stridedFold(p.classes, lane, threads, static_cast<LossCompute<D>>(-INFINITY),
                     LineLoad<D>{logits, lineBase(row, p.classes, p.inner), p.inner}, FMaxOp{});
}

/// Thread `lane` of `threads`' partial sum of exp(x - m) over `row`'s logits.
template <base::DType D>
RP_HD inline LossCompute<D> lossSumPartial(const CrossEntropyPlan &p, const void *logits,
                                           int64_t row, int lane, int threads, LossCompute<D> m) {
  const LineLoad<D> load{logits, lineBase(row, p.classes, p.inner), p.inner};
  return stridedFold(p.classes, lane, threads, LossCompute<D>(0), LineExpLoad<D>{load, m}, SumOp{});
}

/// True when `label` is neither ignore_index nor in [0, C): the row's loss is NaN.
RP_HD inline bool lossLabelOutOfRange(const CrossEntropyPlan &p, int64_t label) {
  return label != p.ignoreIndex && (label < 0 || label >= p.classes);
}

/// The loss of a row whose label is in [0, C), from its maximum and sum of exponentials.
template <base::DType D>
RP_HD inline LossCompute<D> lossFromStats(const CrossEntropyPlan &p, const void *logits,
                                          int64_t row, int64_t label, LossCompute<D> m,
                                          LossCompute<D> sum) {
  return m + rowLog(sum) - loadAs<D>(logits, lineBase(row, p.classes, p.inner) + label * p.inner);
}

/// What kernel (1) stores for `row` when threadsPerRow is 1: 0 for an ignored row, NaN for
/// an out-of-range label, else the CPU's loop.
template <base::DType D>
RP_HD inline LossCompute<D> lossRowSerial(const CrossEntropyPlan &p, const void *logits,
                                          const void *labels, int64_t row) {
  using C = LossCompute<D>;
  const int64_t label = lossLabel(p, labels, row);
  if (label == p.ignoreIndex)
    return C(0);
  if (lossLabelOutOfRange(p, label))
    return static_cast<C>(NAN);
  const C m = lossMaxPartial<D>(p, logits, row, 0, 1);
  return lossFromStats<D>(p, logits, row, label, m, lossSumPartial<D>(p, logits, row, 0, 1, m));
}

/// Rows [first, last) of finishing thread `lane` of `threads` (contiguous chunks).
RP_HD inline void lossFinishChunk(const CrossEntropyPlan &p, int lane, int threads, int64_t &first,
                                  int64_t &last) {
  const int64_t chunk = (p.rows + threads - 1) / threads;
  first = lane * chunk < p.rows ? lane * chunk : p.rows;
  last = first + chunk < p.rows ? first + chunk : p.rows;
}

/// Finishing thread `lane` of `threads`' partial sum of the per-row losses (`scratch`: the
/// compute type), in row order over its chunk.
template <base::DType D>
RP_HD inline LossCompute<D> lossFinishSumPartial(const CrossEntropyPlan &p, const void *scratch,
                                                 int lane, int threads) {
  int64_t first, last;
  lossFinishChunk(p, lane, threads, first, last);
  LossCompute<D> acc(0);
  for (int64_t r = first; r < last; ++r)
    acc = acc + static_cast<const LossCompute<D> *>(scratch)[r];
  return acc;
}

/// Finishing thread `lane` of `threads`' count of the rows not ignored in its chunk.
RP_HD inline int64_t lossFinishCountPartial(const CrossEntropyPlan &p, const void *labels, int lane,
                                            int threads) {
  int64_t first, last, counted = 0;
  lossFinishChunk(p, lane, threads, first, last);
  for (int64_t r = first; r < last; ++r)
    counted += lossLabel(p, labels, r) != p.ignoreIndex ? 1 : 0;
  return counted;
}

/// Writes out from the total loss and the number of rows not ignored.
template <base::DType D>
RP_HD inline void lossFinishStore(const CrossEntropyPlan &p, void *out, LossCompute<D> total,
                                  int64_t counted) {
  using C = LossCompute<D>;
  storeAs<D>(out, 0,
             p.reduction == LossReduction::Sum ? total : total / static_cast<C>(counted)); // 0/0
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
/// `rowScratch`: plan.scratchBytes bytes.
void crossEntropy(const CrossEntropyPlan &plan, const void *logits, const void *labels, void *out,
                  void *rowScratch);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_CROSSENTROPY_H
