//===- LinearCrossEntropy.h - Fused LM head + cross-entropy (CPU) -*- C++ -*-===//
//
// graph.linear_cross_entropy and graph.linear_cross_entropy_vjp: the cross-entropy of the
// logits hidden @ weight^T and its gradients, computed `chunkRows` rows at a time so that no
// [N, V] tensor exists (fused linear cross-entropy: Liger-Kernel, Hsu et al. 2024; Apple's
// cut-cross-entropy, Wijmans et al. 2024).
//
// Numerics (T = f32 or f64, the tensors' dtype): the row's max, log-sum-exp, softmax and loss
// in double, as kernels/cpu/CrossEntropy.h; the per-row losses summed sequentially in row
// order in double and rounded once to T. The gradient G = (softmax - onehot) * scale is
// rounded to T per element (scale = seed / (count + (count == 0)) in T for `mean`, seed for
// `sum`; 0 on ignored rows, whose dhidden rows are 0 and which add nothing to dweight).
// f32 (on a CPU with FMA): the logits, dhidden = G weight and dweight = G^T hidden are the
// kernels' own sgemm over each chunk's kept rows (kernels/cpu/Sgemm.h: each element one FMA
// chain in order over H, V or the rows; dweight's chains continue from chunk to chunk).
// f64, and f32 without FMA: each logit is a dot product over H in T with eight partial sums
// (lane j takes the indices = j mod 8, summed lane 0..7 at the end); dhidden[n] = sum over v
// in order of G[n, v] weight[v] and dweight[v] = sum over n in order of G[n, v] hidden[n],
// accumulated in T. Every output element is computed by one thread in a fixed order, so the
// results do not depend on the thread count, and the chunking only bounds memory: the results
// do not depend on chunkRows either (bit for bit).
//
// Bias (optional, [V], hidden's dtype; a biased head such as Phi's): each logit is the dot
// product rounded to T plus bias[v] in T (matmul then add), and the VJP's dbias[v] = sum over
// the kept rows n in order of G[n, v], accumulated in T.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_LINEARCROSSENTROPY_H
#define RP_KERNELS_CPU_LINEARCROSSENTROPY_H

#include "kernels/OpKinds.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>

namespace rp::kernels::cpu {

/// The rows per chunk when an op carries no chunk_rows (0): kernels/OpKinds.h's
/// defaultLossChunkRows (the most rows whose f32 logits fit in 32 MiB, 1 <= rows <= N).
inline int64_t defaultChunkRows(int64_t rows, int64_t vocab) {
  return defaultLossChunkRows(rows, vocab);
}

/// loss = cross_entropy(hidden @ weight^T, labels) reduced by `reduction` over the rows whose
/// label is not ignoreIndex (`mean`: NaN when none is). hidden [N, H] and weight [V, H] of one
/// dtype, f32 or f64; labels [N] i64 or i32; loss 0-D of hidden's dtype. chunkRows: rows per
/// chunk (0: defaultChunkRows). Errors: InvalidArgument for a bad dtype or shape or a negative
/// chunkRows; OutOfRange for a label outside [0, V) that is not ignoreIndex (the first one).
/// `bias`: [V] or null (then InvalidArgument also for a bias of another dtype or shape).
base::Status linearCrossEntropy(const base::HostTensor &hidden,
                                   const base::HostTensor &weight,
                                   const base::HostTensor &labels, int64_t ignoreIndex,
                                   LossReduction reduction, int64_t chunkRows,
                                   base::HostTensor &loss,
                                   const base::HostTensor *bias = nullptr);

/// The loss as linearCrossEntropy and, for the 0-D cotangent `seed` (hidden's dtype),
/// dhidden [N, H] and dweight [V, H] (the file comment's G weight and G^T hidden), in one pass
/// over the chunks; with `bias` [V], also dbias [V] (both or neither). Errors: as
/// linearCrossEntropy, and InvalidArgument for a seed, dhidden, dweight or dbias of another
/// type, or a bias without dbias or the reverse.
base::Status linearCrossEntropyVjp(const base::HostTensor &hidden,
                                      const base::HostTensor &weight,
                                      const base::HostTensor &labels,
                                      const base::HostTensor &seed, int64_t ignoreIndex,
                                      LossReduction reduction, int64_t chunkRows,
                                      base::HostTensor &loss, base::HostTensor &dhidden,
                                      base::HostTensor &dweight,
                                      const base::HostTensor *bias = nullptr,
                                      base::HostTensor *dbias = nullptr);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_LINEARCROSSENTROPY_H
