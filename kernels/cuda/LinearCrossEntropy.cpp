//===- LinearCrossEntropy.cpp - Fused LM head: planning and host replay ---===//
//
// planLinearCrossEntropy (host only) and the host replays of LinearCrossEntropy.cu's
// kernels (kernels/cuda/HostReplay.h: the same RP_HD bodies, rows in order, the partials
// combined with combineOnHost as the device's trees do).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/LinearCrossEntropy.h"

#include "kernels/KernelChecks.h"

#include <algorithm>
#include <string>
#include <vector>

namespace rp::kernels::cuda {

using base::DType;

namespace {

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

/// The three GEMMs of a chunk of c rows.
base::Status planGemms(LinearCrossEntropyPlan &p, int64_t c, MatMulPlan &logits,
                          MatMulPlan &dhidden, MatMulPlan &dweight) {
  const int64_t H = p.width, V = p.vocab;
  RP_ASSIGN_OR_RETURN(logits, planMatMul(p.dtype, {c, H}, {V, H}, {c, V}, false, true));
  if (!p.grads)
    return base::okStatus();
  RP_ASSIGN_OR_RETURN(dhidden, planMatMul(p.dtype, {c, V}, {V, H}, {c, H}));
  RP_ASSIGN_OR_RETURN(dweight, planMatMul(p.dtype, {c, V}, {c, H}, {V, H}, true, false));
  return base::okStatus();
}

/// fn(integral_constant<DType, d>) for the GEMM dtypes.
template <typename Fn> void visitGemmDType(DType d, Fn &&fn) {
  if (d == DType::F32)
    fn(std::integral_constant<DType, DType::F32>{});
  else if (d == DType::F16)
    fn(std::integral_constant<DType, DType::F16>{});
  else
    fn(std::integral_constant<DType, DType::BF16>{});
}

} // namespace

base::StatusOr<LinearCrossEntropyPlan>
planLinearCrossEntropy(DType dtype, const Shape &hidden, const Shape &weight, DType labelDType,
                       const Shape &labels, int64_t ignoreIndex, LossReduction reduction,
                       int64_t chunkRows, bool grads) {
  const std::string op = grads ? "linear_cross_entropy_vjp" : "linear_cross_entropy";
  RP_RETURN_IF_ERROR(checkDType(op, "hidden", dtype, {DType::F32, DType::F16, DType::BF16}));
  RP_RETURN_IF_ERROR(checkDType(op, "labels", labelDType, kIndexTypes));
  if (hidden.size() != 2 || weight.size() != 2 || weight[1] != hidden[1] || hidden[0] < 0 ||
      hidden[1] < 0 || weight[0] < 0)
    return base::invalidArgument(op + ": expected hidden [N, H] and weight [V, H], got " +
                                    formatShape(hidden) + " and " + formatShape(weight));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "labels", labelDType, labels, {hidden[0]}));
  if (chunkRows < 0)
    return base::invalidArgument(op + ": chunk_rows must be >= 0, got " +
                                    std::to_string(chunkRows));
  LinearCrossEntropyPlan p;
  p.dtype = dtype;
  p.labelDType = labelDType;
  p.reduction = reduction;
  p.ignoreIndex = ignoreIndex;
  p.rows = hidden[0];
  p.width = hidden[1];
  p.vocab = weight[0];
  p.grads = grads;
  p.chunk = chunkRows > 0 ? std::min(chunkRows, std::max<int64_t>(p.rows, 1))
                          : defaultLossChunkRows(p.rows, p.vocab);
  if (p.rows > 0) {
    RP_RETURN_IF_ERROR(planGemms(p, p.chunk, p.logits, p.dhidden, p.dweight));
    const int64_t tail = p.rows % p.chunk == 0 ? p.chunk : p.rows % p.chunk;
    RP_RETURN_IF_ERROR(planGemms(p, tail, p.lastLogits, p.lastDhidden, p.lastDweight));
  }
  p.all.dtype = dtype;
  p.all.labelDType = labelDType;
  p.all.reduction = reduction;
  p.all.ignoreIndex = ignoreIndex;
  p.all.rows = p.rows;
  p.all.classes = p.vocab;
  p.all.inner = 1;
  p.all.threadsPerRow = 1;
  const size_t elem = base::dtypeSize(dtype);
  const size_t compute = dtype == DType::F32 ? sizeof(double) : sizeof(float);
  const size_t weightElems = static_cast<size_t>(p.vocab * p.width);
  p.scaleOffset = 0;
  p.rowLossesOffset = 256;
  p.logitsOffset = p.rowLossesOffset + align256(static_cast<size_t>(p.rows) * compute);
  p.partialOffset = p.logitsOffset + align256(static_cast<size_t>(p.chunk * p.vocab) * elem);
  p.accOffset = p.partialOffset + (grads ? align256(weightElems * elem) : 0);
  p.scratchBytes = p.accOffset + (grads ? align256(weightElems * sizeof(float)) : 0);
  return p;
}

base::Status planLinearCrossEntropyBias(LinearCrossEntropyPlan &p, DType biasDType,
                                           const Shape &bias, DType dbiasDType,
                                           const Shape &dbias) {
  const std::string op = p.grads ? "linear_cross_entropy_vjp" : "linear_cross_entropy";
  RP_RETURN_IF_ERROR(checkType(op, "bias", biasDType, bias, p.dtype, {p.vocab}));
  if (p.grads) {
    RP_RETURN_IF_ERROR(checkType(op, "dbias", dbiasDType, dbias, p.dtype, {p.vocab}));
    p.biasAccOffset = p.scratchBytes;
    p.scratchBytes += align256(static_cast<size_t>(p.vocab) * sizeof(float));
  }
  p.bias = true;
  return base::okStatus();
}

namespace replay {

void lceBiasAdd(const LceStep &s, void *logits, const void *bias) {
  visitGemmDType(s.rows.dtype, [&](auto d) {
    for (int64_t i = 0; i < s.elements; ++i)
      lceBiasAddAt<decltype(d)::value>(s, logits, bias, i);
  });
}

void lceBiasGrad(const LceStep &s, const void *grads, void *acc) {
  visitGemmDType(s.rows.dtype, [&](auto d) {
    for (int64_t v = 0; v < s.elements; ++v)
      lceBiasGradAt<decltype(d)::value>(s, grads, static_cast<float *>(acc), v);
  });
}

void lceScale(const LceStep &s, const void *labels, const void *seed, void *scale) {
  std::vector<int64_t> counts(kFinishThreads);
  for (int lane = 0; lane < kFinishThreads; ++lane)
    counts[static_cast<size_t>(lane)] = lossFinishCountPartial(s.rows, labels, lane, kFinishThreads);
  const int64_t counted = combineOnHost(counts.data(), kFinishThreads, int64_t(0), SumOp{});
  visitGemmDType(s.rows.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    *static_cast<LossCompute<D> *>(scale) = lceScaleFrom<D>(s.rows, seed, counted);
  });
}

void lceRows(const LceStep &s, void *logits, const void *labels, void *rowLosses,
             const void *scale) {
  const CrossEntropyPlan &p = s.rows;
  const int threads = p.threadsPerRow;
  visitGemmDType(p.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    using C = LossCompute<D>;
    C *losses = static_cast<C *>(rowLosses);
    const C g = s.grads ? *static_cast<const C *>(scale) : C(0);
    std::vector<C> partials(static_cast<size_t>(threads));
    for (int64_t row = 0; row < p.rows; ++row) {
      const int64_t label = lossLabel(p, labels, row);
      C m = C(0), sum = C(1);
      if (label == p.ignoreIndex || lossLabelOutOfRange(p, label)) {
        losses[row] = label == p.ignoreIndex ? C(0) : static_cast<C>(NAN);
      } else {
        for (int lane = 0; lane < threads; ++lane)
          partials[static_cast<size_t>(lane)] = lossMaxPartial<D>(p, logits, row, lane, threads);
        m = combineOnHost(partials.data(), threads, static_cast<C>(-INFINITY), FMaxOp{});
        const C xl = loadAs<D>(logits, row * p.classes + label);
        for (int lane = 0; lane < threads; ++lane)
          partials[static_cast<size_t>(lane)] =
              lossSumPartial<D>(p, logits, row, lane, threads, m);
        sum = combineOnHost(partials.data(), threads, C(0), SumOp{});
        losses[row] = m + rowLog(sum) - xl;
      }
      if (s.grads)
        for (int64_t k = 0; k < p.classes; ++k)
          lceGradAt<D>(p, logits, row, k, label, m, sum, g);
    }
  });
}

void lceFinish(const LceStep &s, const void *labels, const void *rowLosses, void *loss) {
  visitGemmDType(s.rows.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    using C = LossCompute<D>;
    std::vector<C> partials(kFinishThreads);
    std::vector<int64_t> counts(kFinishThreads);
    for (int lane = 0; lane < kFinishThreads; ++lane) {
      partials[static_cast<size_t>(lane)] =
          lossFinishSumPartial<D>(s.rows, rowLosses, lane, kFinishThreads);
      counts[static_cast<size_t>(lane)] =
          lossFinishCountPartial(s.rows, labels, lane, kFinishThreads);
    }
    lossFinishStore<D>(s.rows, loss, combineOnHost(partials.data(), kFinishThreads, C(0), SumOp{}),
                       combineOnHost(counts.data(), kFinishThreads, int64_t(0), SumOp{}));
  });
}

void lceAccumulate(const LceStep &s, const void *partial, void *acc) {
  visitGemmDType(s.rows.dtype, [&](auto d) {
    for (int64_t i = 0; i < s.elements; ++i)
      lceAccumulateAt<decltype(d)::value>(s, partial, static_cast<float *>(acc), i);
  });
}

void lceStore(const LceStep &s, const void *acc, void *out) {
  visitGemmDType(s.rows.dtype, [&](auto d) {
    for (int64_t i = 0; i < s.elements; ++i)
      storeAs<decltype(d)::value>(out, i, s.first ? 0.0f : static_cast<const float *>(acc)[i]);
  });
}

} // namespace replay
} // namespace rp::kernels::cuda
