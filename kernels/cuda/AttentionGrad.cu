//===- AttentionGrad.cu - The fused attention backward on the GPU ---------===//
//
// Plan (host checks and geometry) and launcher of attention_vjp; the per-row bodies live in
// AttentionGrad.h (shared with the host replay). See AttentionGrad.h for shapes, numerics and
// the algorithm.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/AttentionGrad.h"

#include "kernels/cuda/FlashAttentionBackward.h"
#include "kernels/cuda/Launch.cuh"

#include <algorithm>
#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::StatusOr;

namespace {

/// Most blocks of one pass; larger row counts loop (grid-stride over rows).
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

template <DType D>
__global__ void __launch_bounds__(kAttentionTile)
    queryPassKernel(AttentionVjpPlan plan, const void *q, const void *k, const void *v,
                    const void *out, const void *dout, void *dq, void *scratch,
                    const void *sinks) {
  using C = typename DTypeTraits<D>::Compute;
  extern __shared__ __align__(16) unsigned char attentionVjpShared[];
  C *shared = reinterpret_cast<C *>(attentionVjpShared);
  C *lse = static_cast<C *>(scratch), *delta = lse + plan.forward.rows;
  const ThreadBlock block;
  for (int64_t row = blockIdx.x; row < plan.forward.rows; row += gridDim.x)
    attentionVjpQueryRow<D>(plan, q, k, v, out, dout, dq, lse, delta, row, block, shared, sinks);
}

template <DType D>
__global__ void __launch_bounds__(kAttentionTile)
    keyPassKernel(AttentionVjpPlan plan, const void *q, const void *k, const void *v,
                  const void *dout, void *dk, void *dv, const void *scratch) {
  using C = typename DTypeTraits<D>::Compute;
  extern __shared__ __align__(16) unsigned char attentionVjpShared[];
  C *shared = reinterpret_cast<C *>(attentionVjpShared);
  const C *lse = static_cast<const C *>(scratch), *delta = lse + plan.forward.rows;
  const ThreadBlock block;
  for (int64_t krow = blockIdx.x; krow < plan.keyRows; krow += gridDim.x)
    attentionVjpKeyRow<D>(plan, q, k, v, dout, dk, dv, lse, delta, krow, block, shared);
}

/// Pass 3: one block of kAttentionSinkLanes threads per query head (dsinks).
template <DType D>
__global__ void __launch_bounds__(kAttentionSinkLanes)
    sinkPassKernel(AttentionPlan forward, const void *sinks, void *dsinks, const void *scratch) {
  using C = typename DTypeTraits<D>::Compute;
  __shared__ C lanes[kAttentionSinkLanes];
  const C *lse = static_cast<const C *>(scratch), *delta = lse + forward.rows;
  const ThreadBlock block;
  for (int64_t h = blockIdx.x; h < forward.heads; h += gridDim.x)
    attentionVjpSinkHead<D>(forward, sinks, dsinks, lse, delta, h, block, lanes);
}

unsigned blocksFor(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

} // namespace

StatusOr<AttentionVjpPlan> planAttentionVjp(DType dtype, const Shape &q, const Shape &k,
                                            const Shape &v, const Shape &out, const Shape &dout,
                                            double scale, bool causal, const Shape &dq,
                                            const Shape &dk, const Shape &dv, int64_t window,
                                            double softcap) {
  const char *op = "attention_vjp";
  RP_ASSIGN_OR_RETURN(const AttentionPlan forward,
                      planAttentionFor(op, dtype, q, k, v, scale, causal, out,
                                       kMaxAttentionVjpHeadDim, window, softcap));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dout", dtype, dout, attentionOutShape(q, v)));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dq", dtype, dq, q));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dk", dtype, dk, k));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dv", dtype, dv, v));
  AttentionVjpPlan plan;
  plan.forward = forward;
  plan.keyRows = k[0] * k[1] * k[2];
  plan.tile = kAttentionTile;
  const size_t computeBytes = dtype == DType::F16 || dtype == DType::BF16 ? 4 : 8;
  plan.sharedBytes =
      static_cast<size_t>(2 * forward.dim + 2 * forward.valueDim + 2 * plan.tile) * computeBytes;
  plan.scratchBytes = std::max(static_cast<size_t>(2 * forward.rows) * computeBytes,
                               flashAttentionBackwardScratchBytes(forward));
  plan.tensorCores = forward.tensorCores;
  return plan;
}

cudaError_t launchAttentionVjp(const AttentionVjpPlan &plan, const void *q, const void *k,
                               const void *v, const void *out, const void *dout, void *dq,
                               void *dk, void *dv, void *scratch, cudaStream_t stream,
                               const void *sinks, void *dsinks) {
  const bool withSinks = sinks != nullptr;
  if (plan.forward.sinks != withSinks || withSinks != (dsinks != nullptr))
    return cudaErrorInvalidValue; // sinks and dsinks come with plan.forward.sinks
  if (withSinks && !usablePointers(base::dtypeSize(plan.forward.dtype), sinks,
                                   static_cast<const void *>(dsinks)))
    return cudaErrorInvalidValue;
  if (withSinks && plan.forward.heads > 0 && (plan.forward.rows == 0 || plan.forward.dim == 0))
    return cudaMemsetAsync(dsinks, 0, // nothing attends: no sink gradient
                           static_cast<size_t>(plan.forward.heads) *
                               base::dtypeSize(plan.forward.dtype),
                           stream);
  if (plan.forward.rows == 0 || plan.forward.dim == 0)
    return cudaSuccess; // dq, dk, dv are empty
  if (plan.tile != kAttentionTile || plan.forward.dim > kMaxAttentionVjpHeadDim ||
      plan.forward.valueDim > kMaxAttentionVjpHeadDim)
    return cudaErrorInvalidValue; // not a plan from planAttentionVjp
  if (!usablePointers(base::dtypeSize(plan.forward.dtype), q, k, v, out, dout,
                      static_cast<const void *>(dq), static_cast<const void *>(dk),
                      static_cast<const void *>(dv)) ||
      !usablePointers(8, static_cast<const void *>(scratch)))
    return cudaErrorInvalidValue;
  bool flashDone = false;
  if (plan.tensorCores) {
    const cudaError_t e = launchFlashAttentionBackward(plan.forward, q, k, v, out, dout, dq, dk,
                                                       dv, scratch, stream, sinks);
    if (e != cudaErrorNotSupported && e != cudaSuccess)
      return e;
    flashDone = e == cudaSuccess;
  }
  if (!visitFloatDType(plan.forward.dtype, [&](auto tag) {
        constexpr DType D = decltype(tag)::value;
        if (!flashDone) {
          queryPassKernel<D><<<blocksFor(plan.forward.rows), kAttentionTile, plan.sharedBytes,
                               stream>>>(plan, q, k, v, out, dout, dq, scratch, sinks);
          keyPassKernel<D><<<blocksFor(plan.keyRows), kAttentionTile, plan.sharedBytes,
                             stream>>>(plan, q, k, v, dout, dk, dv, scratch);
        }
        if (withSinks) // either path left lse and D in the scratch, in the compute type
          sinkPassKernel<D><<<blocksFor(plan.forward.heads), kAttentionSinkLanes, 0, stream>>>(
              plan.forward, sinks, dsinks, scratch);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
