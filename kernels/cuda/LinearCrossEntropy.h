//===- LinearCrossEntropy.h - Fused LM head + cross-entropy on the GPU -*- C++ -*-===//
//
// graph.linear_cross_entropy and graph.linear_cross_entropy_vjp (kernels/cpu/
// LinearCrossEntropy.h is the CPU twin): the cross-entropy of hidden @ weight^T, and for the
// VJP its loss, dhidden and dweight, computed `chunk` rows at a time so that no [N, V]
// logits tensor exists (fused linear cross-entropy: Liger-Kernel; cut-cross-entropy,
// Wijmans et al. 2024).
//
// Shapes: hidden [N, H], weight [V, H], labels [N] (i64 or i32), seed and loss 0-D, dhidden
// [N, H], dweight [V, H]. Dtypes: f32, f16 or bf16 (one dtype; the GEMMs take no f64).
//
// Algorithm (runLinearCrossEntropy, written once against an exec: the GPU launchers or the
// host replay):
//   0. (VJP) lceScale: one block counts the labels that are not ignore_index and stores
//      scale = seed / (count + (count == 0)) for `mean`, seed for `sum`, in the compute type.
//   per chunk of c rows starting at r0, in order:
//   1. logits [c, V] = hidden[r0:r0+c] @ weight^T: one cuBLASLt GEMM (fp32 accumulation,
//      rounded once to the dtype) into the scratch;
//   2. lceRows: per row, the CrossEntropy.h row math (the max ignoring NaNs and the sum of
//      exponentials with the fixed-order tree, loss = m + log(sum) - x_label in the compute
//      type) into rowLosses[r0 + row] (0 for an ignored row, NaN for a label outside
//      [0, V)); for the VJP the row's logits are overwritten by the gradient
//      G = (exp(x - m) / sum - onehot) * scale (0 on an ignored row), rounded to the dtype;
//   3. (VJP) dhidden[r0:r0+c] = G @ weight (a GEMM straight into the result);
//   4. (VJP) dwPartial [V, H] = G^T @ hidden[r0:r0+c] (a GEMM with transpose_a), then
//      lceAccumulate adds it to the f32 accumulator dwAcc (the first chunk stores it);
//   end: lceFinish (one block) sums rowLosses in row order per thread and combines with the
//   fixed-order tree (CrossEntropy.h's finishing kernel), divides by the count for `mean`;
//   (VJP) lceStore rounds dwAcc into dweight.
// With a head bias (optional, [V], the dtype; planLinearCrossEntropyBias): after step 1,
// lceBiasAdd adds bias[v] to every logit in the compute type and rounds once (matmul then
// add, as the CPU kernel); after step 4, lceBiasGrad adds each chunk's G column sums to the
// f32 accumulator dbAcc [V] (one thread per v, rows in order, so for f32 the CPU kernel's
// order and bits), and lceStore rounds dbAcc into dbias at the end.
// Bit-reproducible run to run (fixed chunk order, fixed trees, deterministic GEMM
// algorithms per shape). The chunking changes the rounding of dweight for f16/bf16 (each
// chunk's partial is rounded to the dtype before the f32 accumulation) and nothing else.
//
// Scratch (bytes, each part 256-aligned): scale (one compute value) | rowLosses (N compute
// values) | logits (c V dtype) | VJP: dwPartial (V H dtype) | dwAcc (V H f32) | VJP with a
// bias: dbAcc (V f32).
//
// Errors: planLinearCrossEntropy returns InvalidArgument naming the op for bad dtypes or
// shapes (the CPU kernel's checks) and the GEMM planner's errors. The run returns the
// GEMM runner's or the launches' errors.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_LINEARCROSSENTROPY_H
#define RP_KERNELS_CUDA_LINEARCROSSENTROPY_H

#include "kernels/cuda/CrossEntropy.h"
#include "kernels/cuda/Gemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace rp::kernels::cuda {

/// One launch of the small kernels: the CrossEntropy.h row math over `rows` (rows of one
/// chunk, labels and rowLosses already offset to it; or all N rows for lceScale and
/// lceFinish), and the element count of lceAccumulate / lceStore.
struct LceStep {
  CrossEntropyPlan rows;
  bool grads = false; ///< lceRows: overwrite the logits by G (needs scale)
  bool first = false; ///< lceAccumulate: store instead of add
  int64_t elements = 0;
};

/// Everything runLinearCrossEntropy needs, decided from the shapes.
struct LinearCrossEntropyPlan {
  base::DType dtype = base::DType::F32;
  base::DType labelDType = base::DType::I64;
  LossReduction reduction = LossReduction::Mean;
  int64_t ignoreIndex = -100;
  int64_t rows = 0, width = 0, vocab = 0, chunk = 1;
  bool grads = false; ///< the VJP
  /// GEMMs of a full chunk and of the last, shorter one (equal when chunk divides N).
  MatMulPlan logits, lastLogits, dhidden, lastDhidden, dweight, lastDweight;
  /// Byte offsets into the scratch (file comment) and its size.
  size_t scaleOffset = 0, rowLossesOffset = 0, logitsOffset = 0, partialOffset = 0,
         accOffset = 0, scratchBytes = 0;
  /// The row math over all N rows (lceScale, lceFinish).
  CrossEntropyPlan all;
  /// A head bias [V] (planLinearCrossEntropyBias); dbAcc's scratch offset for the VJP.
  bool bias = false;
  size_t biasAccOffset = 0;
};

/// Checks as the CPU kernel does and plans the GEMMs and the scratch. chunkRows: rows per
/// chunk (0: kernels/OpKinds.h's defaultLossChunkRows, as the CPU).
/// hidden/weight/labels/seed/loss shapes as in the file comment (`grads`: the VJP, seed and
/// the two gradients present).
base::StatusOr<LinearCrossEntropyPlan>
planLinearCrossEntropy(base::DType dtype, const Shape &hidden, const Shape &weight,
                       base::DType labelDType, const Shape &labels, int64_t ignoreIndex,
                       LossReduction reduction, int64_t chunkRows, bool grads);

/// Checks a head bias as the CPU kernel does (the plan's dtype, shape [V]; for the VJP also
/// dbias, of the same type) and adds it to `p` (p.bias, the dbAcc scratch). Errors:
/// InvalidArgument "linear_cross_entropy: bias is f32[5], expected f32[8]" (or "dbias").
base::Status planLinearCrossEntropyBias(LinearCrossEntropyPlan &p, base::DType biasDType,
                                           const Shape &bias, base::DType dbiasDType = {},
                                           const Shape &dbias = {});

// The launchers of the small kernels (file comment; pointers are device pointers, the
// compute values of scale, rowLosses in the plan dtype's compute type). Each returns
// cudaErrorInvalidValue for a bad step or pointer, else cudaGetLastError().
cudaError_t launchLceScale(const LceStep &s, const void *labels, const void *seed, void *scale,
                           cudaStream_t stream);
cudaError_t launchLceRows(const LceStep &s, void *logits, const void *labels, void *rowLosses,
                          const void *scale, cudaStream_t stream);
cudaError_t launchLceFinish(const LceStep &s, const void *labels, const void *rowLosses,
                            void *loss, cudaStream_t stream);
cudaError_t launchLceAccumulate(const LceStep &s, const void *partial, void *acc,
                                cudaStream_t stream);
cudaError_t launchLceStore(const LceStep &s, const void *acc, void *out, cudaStream_t stream);
cudaError_t launchLceBiasAdd(const LceStep &s, void *logits, const void *bias,
                             cudaStream_t stream);
cudaError_t launchLceBiasGrad(const LceStep &s, const void *grads, void *acc,
                              cudaStream_t stream);

//===--- the per-element math (host and device) ---------------------------===//

/// The gradient of element k of a chunk row of logits (overwritten in place): (exp(x - m) /
/// sum - [k == label]) * scale; 0 for an ignored row (label == ignoreIndex), NaN for a label
/// out of range.
template <base::DType D>
RP_HD inline void lceGradAt(const CrossEntropyPlan &p, void *logits, int64_t row, int64_t k,
                            int64_t label, LossCompute<D> m, LossCompute<D> sum,
                            LossCompute<D> scale) {
  using C = LossCompute<D>;
  const int64_t i = row * p.classes + k;
  if (label == p.ignoreIndex) {
    storeAs<D>(logits, i, C(0));
    return;
  }
  if (lossLabelOutOfRange(p, label)) {
    storeAs<D>(logits, i, static_cast<C>(NAN));
    return;
  }
  const C prob = rowExp(loadAs<D>(logits, i) - m) / sum;
  storeAs<D>(logits, i, (prob - (k == label ? C(1) : C(0))) * scale);
}

/// scale from the count of labels not ignored (file comment, step 0).
template <base::DType D>
RP_HD inline LossCompute<D> lceScaleFrom(const CrossEntropyPlan &p, const void *seed,
                                         int64_t counted) {
  using C = LossCompute<D>;
  const C s = loadAs<D>(seed, 0);
  return p.reduction == LossReduction::Sum ? s : s / static_cast<C>(counted + (counted == 0));
}

/// acc[i] = (first ? 0 : acc[i]) + partial[i] in f32.
template <base::DType D>
RP_HD inline void lceAccumulateAt(const LceStep &s, const void *partial, float *acc, int64_t i) {
  const float v = static_cast<float>(loadAs<D>(partial, i));
  acc[i] = s.first ? v : acc[i] + v;
}

/// Logit i of a chunk (s.elements = c V, s.rows.classes = V) plus bias[i mod V], in the
/// compute type, rounded once.
template <base::DType D>
RP_HD inline void lceBiasAddAt(const LceStep &s, void *logits, const void *bias, int64_t i) {
  using C = LossCompute<D>;
  storeAs<D>(logits, i,
             static_cast<C>(loadAs<D>(logits, i)) +
                 static_cast<C>(loadAs<D>(bias, i % s.rows.classes)));
}

/// acc[v] = (first ? 0 : acc[v]) + sum over the chunk's rows r in order of G[r, v], in f32
/// (s.rows.rows = c rows of s.rows.classes = V).
template <base::DType D>
RP_HD inline void lceBiasGradAt(const LceStep &s, const void *grads, float *acc, int64_t v) {
  float a = s.first ? 0.0f : acc[v];
  for (int64_t r = 0; r < s.rows.rows; ++r)
    a += static_cast<float>(loadAs<D>(grads, r * s.rows.classes + v));
  acc[v] = a;
}

namespace replay {
void lceBiasAdd(const LceStep &s, void *logits, const void *bias);
void lceBiasGrad(const LceStep &s, const void *grads, void *acc);
void lceScale(const LceStep &s, const void *labels, const void *seed, void *scale);
void lceRows(const LceStep &s, void *logits, const void *labels, void *rowLosses,
             const void *scale);
void lceFinish(const LceStep &s, const void *labels, const void *rowLosses, void *loss);
void lceAccumulate(const LceStep &s, const void *partial, void *acc);
void lceStore(const LceStep &s, const void *acc, void *out);
} // namespace replay

/// Runs the plan through `e` (the CUDA kernel table's DeviceExec or HostExec: run(plan,
/// launch, replay, ptrs...), gemm(plan, a, b, out), scratch()). `seed`, `dhidden`,
/// `dweight` are null for the forward op; `bias` [V] is given exactly when p.bias, `dbias`
/// [V] when p.bias and p.grads.
template <typename Exec>
base::Status runLinearCrossEntropy(const Exec &e, const LinearCrossEntropyPlan &p,
                                      const void *hidden, const void *weight, const void *labels,
                                      const void *seed, void *loss, void *dhidden,
                                      void *dweight, const void *bias = nullptr,
                                      void *dbias = nullptr) {
  if (p.bias != (bias != nullptr) || (p.bias && p.grads) != (dbias != nullptr))
    return base::invalidArgument("linear_cross_entropy: bias/dbias do not match the plan");
  char *scratch = static_cast<char *>(e.scratch());
  void *scale = scratch + p.scaleOffset, *rowLosses = scratch + p.rowLossesOffset;
  void *logits = scratch + p.logitsOffset;
  const size_t elem = base::dtypeSize(p.dtype), label = base::dtypeSize(p.labelDType);
  const size_t compute = p.dtype == base::DType::F32 ? sizeof(double) : sizeof(float);
  LceStep all{p.all, p.grads, false, 0};
  if (p.grads)
    RP_RETURN_IF_ERROR(e.run(all, launchLceScale, replay::lceScale, labels, seed, scale));
  for (int64_t r0 = 0; r0 < p.rows; r0 += p.chunk) {
    const bool last = r0 + p.chunk >= p.rows;
    const char *h = static_cast<const char *>(hidden) + r0 * p.width * elem;
    RP_RETURN_IF_ERROR(e.gemm(last ? p.lastLogits : p.logits, h, weight, logits));
    const int64_t c = (last ? p.rows : r0 + p.chunk) - r0;
    if (p.bias) {
      LceStep add{p.all, false, false, c * p.vocab};
      RP_RETURN_IF_ERROR(e.run(add, launchLceBiasAdd, replay::lceBiasAdd, logits, bias));
    }
    LceStep rows{p.all, p.grads, false, 0};
    rows.rows.rows = c;
    rows.rows.threadsPerRow = threadsPerRowFor(rows.rows.rows, p.vocab, true);
    RP_RETURN_IF_ERROR(e.run(rows, launchLceRows, replay::lceRows, logits,
                             static_cast<const char *>(labels) + r0 * label,
                             static_cast<char *>(rowLosses) + r0 * compute, scale));
    if (!p.grads)
      continue;
    RP_RETURN_IF_ERROR(e.gemm(last ? p.lastDhidden : p.dhidden, logits, weight,
                              static_cast<char *>(dhidden) + r0 * p.width * elem));
    void *partial = scratch + p.partialOffset;
    RP_RETURN_IF_ERROR(e.gemm(last ? p.lastDweight : p.dweight, logits, h, partial));
    LceStep acc{p.all, false, r0 == 0, p.vocab * p.width};
    RP_RETURN_IF_ERROR(e.run(acc, launchLceAccumulate, replay::lceAccumulate,
                             static_cast<const void *>(partial), scratch + p.accOffset));
    if (p.bias) {
      LceStep db{p.all, false, r0 == 0, p.vocab};
      db.rows.rows = c;
      RP_RETURN_IF_ERROR(e.run(db, launchLceBiasGrad, replay::lceBiasGrad,
                               static_cast<const void *>(logits), scratch + p.biasAccOffset));
    }
  }
  RP_RETURN_IF_ERROR(e.run(all, launchLceFinish, replay::lceFinish, labels,
                           static_cast<const void *>(rowLosses), loss));
  if (p.grads) {
    LceStep store{p.all, false, p.rows == 0, p.vocab * p.width};
    RP_RETURN_IF_ERROR(e.run(store, launchLceStore, replay::lceStore,
                             static_cast<const void *>(scratch + p.accOffset), dweight));
    if (p.bias) {
      LceStep storeBias{p.all, false, p.rows == 0, p.vocab};
      RP_RETURN_IF_ERROR(e.run(storeBias, launchLceStore, replay::lceStore,
                               static_cast<const void *>(scratch + p.biasAccOffset), dbias));
    }
  }
  return base::okStatus();
}

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_LINEARCROSSENTROPY_H
