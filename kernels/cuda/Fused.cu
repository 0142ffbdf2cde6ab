//===- Fused.cu - Fused transformer-block ops on the GPU ------------------===//
//
// Plans (host checks and geometry) and launchers of swiglu, rope and attention; the
// per-element and per-row bodies live in Fused.h (shared with the host tests). See Fused.h
// for shapes, numerics and algorithms.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Fused.h"
#include "kernels/cuda/FlashAttention.h"

#include "kernels/cuda/Launch.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

namespace {

//===--- kernels ----------------------------------------------------------===//

template <DType D>
__global__ void swigluKernel(SwigluPlan plan, const void *gate, const void *up, void *out) {
  for (int64_t i = gridThread(); i < plan.numel; i += gridStride())
    swigluAt<D>(plan, gate, up, out, i);
}

template <DType D>
__global__ void swigluVjpKernel(SwigluPlan plan, const void *gate, const void *up, const void *g,
                                void *dgate, void *dup) {
  for (int64_t i = gridThread(); i < plan.numel; i += gridStride())
    swigluVjpAt<D>(plan, gate, up, g, dgate, dup, i);
}

template <DType D>
__global__ void ropeKernel(RopePlan plan, const void *x, const void *cos, const void *sin,
                           void *out) {
  for (int64_t i = gridThread(); i < plan.numel; i += gridStride())
    ropeAt<D>(plan, x, cos, sin, out, i);
}

/// Most blocks of one attention launch; larger row counts loop (grid-stride over rows).
constexpr int64_t kAttentionMaxBlocks = int64_t(1) << 20;

template <DType D>
__global__ void __launch_bounds__(kAttentionTile)
    attentionKernel(AttentionPlan plan, const void *q, const void *k, const void *v, void *out,
                    const void *sinks) {
  using C = typename DTypeTraits<D>::Compute;
  extern __shared__ __align__(16) unsigned char attentionScratch[];
  C *scratch = reinterpret_cast<C *>(attentionScratch);
  const ThreadBlock block;
  for (int64_t row = blockIdx.x; row < plan.rows; row += gridDim.x)
    attentionRow<D>(plan, q, k, v, out, row, block, scratch, sinks);
}

} // namespace

//===--- swiglu -----------------------------------------------------------===//

StatusOr<SwigluPlan> planSwiglu(DType dtype, const Shape &gate, const Shape &up, const Shape &out) {
  RP_RETURN_IF_ERROR(checkDType("swiglu", "gate", dtype, kGpuFloatTypes));
  RP_RETURN_IF_ERROR(checkShapeIs("swiglu", "up", dtype, up, gate));
  RP_RETURN_IF_ERROR(checkShapeIs("swiglu", "out", dtype, out, gate));
  SwigluPlan plan;
  plan.dtype = dtype;
  plan.numel = numElements(gate);
  return plan;
}

cudaError_t launchSwiglu(const SwigluPlan &plan, const void *gate, const void *up, void *out,
                         cudaStream_t stream) {
  if (plan.numel == 0)
    return cudaSuccess;
  if (!usablePointers(base::dtypeSize(plan.dtype), gate, up, static_cast<const void *>(out)))
    return cudaErrorInvalidValue;
  if (!visitFloatDType(plan.dtype, [&](auto tag) {
        swigluKernel<decltype(tag)::value>
            <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, gate, up, out);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

StatusOr<SwigluPlan> planSwigluVjp(DType dtype, const Shape &gate, const Shape &up,
                                   const Shape &g, const Shape &dgate, const Shape &dup) {
  const char *op = "swiglu_vjp";
  RP_RETURN_IF_ERROR(checkDType(op, "gate", dtype, kGpuFloatTypes));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "up", dtype, up, gate));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "g", dtype, g, gate));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dgate", dtype, dgate, gate));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "dup", dtype, dup, gate));
  SwigluPlan plan;
  plan.dtype = dtype;
  plan.numel = numElements(gate);
  return plan;
}

cudaError_t launchSwigluVjp(const SwigluPlan &plan, const void *gate, const void *up,
                            const void *g, void *dgate, void *dup, cudaStream_t stream) {
  if (plan.numel == 0)
    return cudaSuccess;
  if (!usablePointers(base::dtypeSize(plan.dtype), gate, up, g, static_cast<const void *>(dgate),
                      static_cast<const void *>(dup)))
    return cudaErrorInvalidValue;
  if (!visitFloatDType(plan.dtype, [&](auto tag) {
        swigluVjpKernel<decltype(tag)::value>
            <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, gate, up, g, dgate, dup);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

//===--- rope -------------------------------------------------------------===//

namespace {

StatusOr<RopePlan> planRopeFor(const char *op, const char *xName, const char *outName,
                               DType dtype, const Shape &x, const Shape &cos, const Shape &sin,
                               const Shape &out, bool interleaved) {
  RP_RETURN_IF_ERROR(checkDType(op, xName, dtype, kGpuFloatTypes));
  RP_RETURN_IF_ERROR(checkRopeInput(x, op, xName));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "sin", dtype, sin, cos));
  RP_RETURN_IF_ERROR(checkRopeTable(x, cos, op));
  RP_RETURN_IF_ERROR(checkBroadcastsTo(op, "cos", cos, x));
  RP_RETURN_IF_ERROR(checkShapeIs(op, outName, dtype, out, x));
  RopePlan plan;
  plan.dtype = dtype;
  plan.numel = numElements(x);
  plan.dim = x.back();
  plan.half = plan.dim / 2;
  plan.interleaved = interleaved;
  // Rows: x's leading dimensions; cos/sin rows at their broadcast strides.
  const Shape lead(x.begin(), x.end() - 1);
  Shape strides = broadcastStrides(cos, x);
  strides.pop_back();
  RP_ASSIGN_OR_RETURN(plan.rows, makeIter<1>(op, lead, {strides}));
  return plan;
}

} // namespace

StatusOr<RopePlan> planRope(DType dtype, const Shape &x, const Shape &cos, const Shape &sin,
                            const Shape &out, bool interleaved) {
  return planRopeFor("rope", "x", "out", dtype, x, cos, sin, out, interleaved);
}

StatusOr<RopePlan> planRopeVjp(DType dtype, const Shape &g, const Shape &cos, const Shape &sin,
                               const Shape &dx, bool interleaved) {
  RP_ASSIGN_OR_RETURN(RopePlan plan,
                      planRopeFor("rope_vjp", "g", "dx", dtype, g, cos, sin, dx, interleaved));
  plan.transposed = true;
  return plan;
}

cudaError_t launchRope(const RopePlan &plan, const void *x, const void *cos, const void *sin,
                       void *out, cudaStream_t stream) {
  if (plan.numel == 0)
    return cudaSuccess;
  if (!usablePointers(base::dtypeSize(plan.dtype), x, cos, sin, static_cast<const void *>(out)))
    return cudaErrorInvalidValue;
  if (!visitFloatDType(plan.dtype, [&](auto tag) {
        ropeKernel<decltype(tag)::value>
            <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, x, cos, sin, out);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

//===--- attention --------------------------------------------------------===//

StatusOr<AttentionPlan> planAttentionFor(const char *op, DType dtype, const Shape &q,
                                         const Shape &k, const Shape &v, double scale,
                                         bool causal, const Shape &out, int64_t maxHeadDim,
                                         int64_t window, double softcap) {
  RP_RETURN_IF_ERROR(checkDType(op, "q", dtype, kGpuFloatTypes));
  RP_RETURN_IF_ERROR(checkAttentionQuery(q, op));
  RP_RETURN_IF_ERROR(checkAttentionKey(q, k, op));
  RP_RETURN_IF_ERROR(checkAttentionValue(k, v, op));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, attentionOutShape(q, v)));
  for (int64_t d : {q[3], v[3]})
    if (d > maxHeadDim)
      return invalidArgument(std::string(op) + ": head dimension " + std::to_string(d) +
                             " exceeds the GPU kernel's limit of " + std::to_string(maxHeadDim));
  RP_RETURN_IF_ERROR(checkAttentionWindow(op, causal, window));
  RP_RETURN_IF_ERROR(checkAttentionSoftcap(op, softcap));
  AttentionPlan plan;
  plan.dtype = dtype;
  plan.batch = q[0];
  plan.heads = q[1];
  plan.kvHeads = k[1];
  plan.groups = q[1] / k[1];
  plan.seq = q[2];
  plan.dim = q[3];
  plan.valueDim = v[3];
  plan.rows = q[0] * q[1] * q[2];
  plan.scale = scale;
  plan.causal = causal;
  plan.window = window;
  plan.softcap = softcap;
  plan.tile = kAttentionTile;
  const size_t computeBytes = dtype == DType::F16 || dtype == DType::BF16 ? 4 : 8;
  plan.scratchBytes =
      static_cast<size_t>(plan.dim + plan.valueDim + 2 * plan.tile) * computeBytes;
  plan.tensorCores = flashAttentionFits(plan);
  return plan;
}

StatusOr<AttentionPlan> planAttention(DType dtype, const Shape &q, const Shape &k, const Shape &v,
                                      double scale, bool causal, const Shape &out,
                                      int64_t window, double softcap) {
  return planAttentionFor("attention", dtype, q, k, v, scale, causal, out,
                          kMaxAttentionHeadDim, window, softcap);
}

Status planAttentionSinks(const char *op, AttentionPlan &plan, DType dtype, const Shape &sinks) {
  RP_RETURN_IF_ERROR(checkType(op, "sinks", dtype, sinks, plan.dtype, {plan.heads}));
  plan.sinks = true;
  return base::okStatus();
}

cudaError_t launchAttention(const AttentionPlan &plan, const void *q, const void *k, const void *v,
                            void *out, cudaStream_t stream, const void *sinks) {
  if (plan.sinks != (sinks != nullptr))
    return cudaErrorInvalidValue; // sinks without plan.sinks or the reverse
  if (plan.rows == 0 || plan.valueDim == 0)
    return cudaSuccess; // out is empty
  if (plan.tile != kAttentionTile || plan.dim > kMaxAttentionHeadDim ||
      plan.valueDim > kMaxAttentionHeadDim)
    return cudaErrorInvalidValue; // not a plan from planAttention
  if (!usablePointers(base::dtypeSize(plan.dtype), q, k, v, static_cast<const void *>(out)) ||
      (sinks && !usablePointers(base::dtypeSize(plan.dtype), sinks)))
    return cudaErrorInvalidValue;
  if (plan.tensorCores) {
    const cudaError_t e = launchFlashAttention(plan, q, k, v, out, stream, sinks);
    if (e != cudaErrorNotSupported)
      return e;
  }
  const auto blocks =
      static_cast<unsigned>(plan.rows < kAttentionMaxBlocks ? plan.rows : kAttentionMaxBlocks);
  if (!visitFloatDType(plan.dtype, [&](auto tag) {
        attentionKernel<decltype(tag)::value>
            <<<blocks, kAttentionTile, plan.scratchBytes, stream>>>(plan, q, k, v, out, sinks);
      }))
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
