//===- HostReplay.h - The GPU kernels' work, replayed on the host -*- C++ -*-===//
//
// Every GPU kernel family (kernels/cuda/*.h) computes through RP_HD bodies: per element
// (elementwise, layout, gathers, fused ops) or per row partial plus a fixed-order combine
// (reductions, softmax, norms, cross-entropy). The replays (replay::<op>, one per launcher,
// declared next to the launcher in its family's header and defined in HostReplay.cpp) run
// those same bodies on the host, over every point, in the order the kernels' threads would
// combine them (combineOnHost for the row kernels, with the plan's threads per row), on host
// memory. They are the CPU stand-in for a launch: the host tests compare them with the CPU
// reference kernels, and the CUDA decoder's host bodies (runtime/backends/cuda/CudaKernel.h,
// `rp-run --kernels cuda-host`) run whole plans through them without a GPU.
//
// What a replay does not reproduce: the GPU's libm (the host's is used), fused multiply-add
// contraction the device compiler may apply, and cuBLASLt: matmul replays the plan's calls
// (offsets, batch strides, broadcasts) with a plain fp32-accumulated dot product in K order,
// which is not cuBLASLt's summation order.
//
// Pointers are host pointers with the plan's dtypes and sizes. Nothing here fails: the plans
// were checked when they were made.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_HOSTREPLAY_H
#define RP_KERNELS_CUDA_HOSTREPLAY_H

#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/CrossEntropy.h"
#include "kernels/cuda/CumSum.h"
#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/Fused.h"
#include "kernels/cuda/Gather.h"
#include "kernels/cuda/Gemm.h"
#include "kernels/cuda/Generators.h"
#include "kernels/cuda/Layout.h"
#include "kernels/cuda/Norm.h"
#include "kernels/cuda/Quantize.h"
#include "kernels/cuda/Reduce.h"
#include "kernels/cuda/RowReduce.h"
#include "kernels/cuda/Softmax.h"
#include "kernels/cuda/RoutedExperts.h"
#include "kernels/cuda/TopK.h"

#include <cmath>
#include <vector>

namespace rp::kernels::cuda::replay {

//===--- row kernels with an explicit thread count (the host tests vary it) -----===//

/// reduceKernel of Reduce.cu with `threads` threads per row.
template <base::DType D>
void reduceRows(const ReducePlan &p, int threads, const void *x, void *out) {
  std::vector<ReduceAccum<D>> partials(static_cast<size_t>(threads));
  for (int64_t row = 0; row < p.rows; ++row) {
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = reducePartial<D>(p, x, row, lane, threads);
    reduceStore<D>(p, out, row,
                   combineOnHost(partials.data(), threads, reduceIdentity<D>(p.kind),
                                 ReduceCombine<D>{p.kind}));
  }
}

/// softmaxKernel of Softmax.cu with `threads` threads per line.
template <base::DType D>
void softmaxLines(const SoftmaxPlan &p, int threads, const void *x, void *out) {
  using C = SoftmaxCompute<D>;
  std::vector<C> partials(static_cast<size_t>(threads));
  for (int64_t line = 0; line < p.lines; ++line) {
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = softmaxMaxPartial<D>(p, x, line, lane, threads);
    const C m = combineOnHost(partials.data(), threads, static_cast<C>(-INFINITY), MaxOp{});
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = softmaxSumPartial<D>(p, x, line, lane, threads, m);
    const C sum = combineOnHost(partials.data(), threads, C(0), SumOp{});
    for (int lane = 0; lane < threads; ++lane)
      softmaxWrite<D>(p, x, out, line, lane, threads, m, sum);
  }
}

/// normKernel of Norm.cu with `threads` threads per row.
template <base::DType D>
void normRows(const NormPlan &p, int threads, const void *x, const void *scale, const void *bias,
              void *out) {
  using C = NormCompute<D>;
  std::vector<C> partials(static_cast<size_t>(threads));
  for (int64_t row = 0; row < p.rows; ++row) {
    C mean = C(0);
    if (!p.rms) {
      for (int lane = 0; lane < threads; ++lane)
        partials[static_cast<size_t>(lane)] = normSumPartial<D>(p, x, row, lane, threads);
      mean = normMean<D>(p, combineOnHost(partials.data(), threads, C(0), SumOp{}));
    }
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = normSquarePartial<D>(p, x, row, lane, threads, mean);
    const C squares = combineOnHost(partials.data(), threads, C(0), SumOp{});
    for (int lane = 0; lane < threads; ++lane)
      normWrite<D>(p, x, scale, bias, out, row, lane, threads, mean, normStdev<D>(p, squares));
  }
}

/// rmsNormVjpKernel of Norm.cu with `threads` threads per row.
template <base::DType D>
void rmsNormVjpRows(const NormPlan &p, int threads, const void *x, const void *scale,
                    const void *g, void *dx, void *dscaleRows) {
  using C = NormCompute<D>;
  std::vector<C> partials(static_cast<size_t>(threads));
  for (int64_t row = 0; row < p.rows; ++row) {
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = normSquarePartial<D>(p, x, row, lane, threads, C(0));
    const C rstd = C(1) / normStdev<D>(p, combineOnHost(partials.data(), threads, C(0), SumOp{}));
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] =
          normVjpDotPartial<D>(p, x, scale, g, row, lane, threads, rstd);
    const C dot = combineOnHost(partials.data(), threads, C(0), SumOp{});
    for (int lane = 0; lane < threads; ++lane)
      normVjpWrite<D>(p, x, scale, g, dx, dscaleRows, row, lane, threads, rstd, dot);
  }
}

/// lossRowKernel then lossFinishKernel of CrossEntropy.cu with `threads` threads per row;
/// `scratch` receives the per-row losses (plan.rows compute values).
template <base::DType D>
void crossEntropyRows(const CrossEntropyPlan &p, int threads, const void *logits,
                      const void *labels, void *out, LossCompute<D> *scratch) {
  using C = LossCompute<D>;
  std::vector<C> partials(static_cast<size_t>(threads > kFinishThreads ? threads : kFinishThreads));
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t label = lossLabel(p, labels, row);
    if (label == p.ignoreIndex || lossLabelOutOfRange(p, label)) {
      scratch[row] = label == p.ignoreIndex ? C(0) : static_cast<C>(NAN);
      continue;
    }
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = lossMaxPartial<D>(p, logits, row, lane, threads);
    const C m = combineOnHost(partials.data(), threads, static_cast<C>(-INFINITY), FMaxOp{});
    for (int lane = 0; lane < threads; ++lane)
      partials[static_cast<size_t>(lane)] = lossSumPartial<D>(p, logits, row, lane, threads, m);
    const C sum = combineOnHost(partials.data(), threads, C(0), SumOp{});
    scratch[row] = lossFromStats<D>(p, logits, row, label, m, sum);
  }
  std::vector<int64_t> counts(kFinishThreads);
  for (int lane = 0; lane < kFinishThreads; ++lane) {
    partials[static_cast<size_t>(lane)] = lossFinishSumPartial<D>(p, scratch, lane, kFinishThreads);
    counts[static_cast<size_t>(lane)] = lossFinishCountPartial(p, labels, lane, kFinishThreads);
  }
  lossFinishStore<D>(p, out, combineOnHost(partials.data(), kFinishThreads, C(0), SumOp{}),
                     combineOnHost(counts.data(), kFinishThreads, int64_t(0), SumOp{}));
}

/// fn(integral_constant<DType, d>) for the reduce dtypes (float types, i64, i32).
template <typename Fn> void visitReduceDType(base::DType d, Fn &&fn) {
  if (visitFloatDType(d, fn))
    return;
  if (d == base::DType::I64)
    fn(std::integral_constant<base::DType, base::DType::I64>{});
  else
    fn(std::integral_constant<base::DType, base::DType::I32>{});
}

// The replay of each launcher (replay::unary .. replay::attentionVjp) is declared next to its
// launcher in the family's header, included above.

} // namespace rp::kernels::cuda::replay

#endif // RP_KERNELS_CUDA_HOSTREPLAY_H
