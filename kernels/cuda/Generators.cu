//===- Generators.cu - graph.range and graph.trilu on the GPU -------------===//
//
// Plans (the CPU kernels' checks) and launchers of range and trilu; the per-element bodies
// live in Generators.h (shared with the host tests).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Generators.h"

#include "kernels/RangeRules.h"
#include "kernels/cuda/Launch.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::Status;
using base::StatusOr;

namespace {

bool isIndexDType(DType d) { return d == DType::I64 || d == DType::I32; }

/// The dtypes graph.range makes on the GPU: any but i1.
constexpr std::initializer_list<DType> kRangeTypes = {DType::F32,  DType::F64, DType::F16,
                                                      DType::BF16, DType::I64, DType::I32};

/// The CPU's checkRangeOut: an integer dtype (integerOnly) or any but i1, and rank 1.
Status checkRangeOut(DType dtype, const Shape &out, bool integerOnly) {
  RP_RETURN_IF_ERROR(checkDType("range", "out", dtype, integerOnly ? kIndexTypes : kRangeTypes));
  return checkRangeOutRank(dtype, out);
}

template <DType D> __global__ void rangeKernel(RangePlan plan, void *out) {
  for (int64_t i = gridThread(); i < plan.n; i += gridStride())
    rangeAt<D>(plan, out, i);
}

template <typename E> __global__ void triluKernel(TriluPlan plan, const void *x, void *out) {
  for (int64_t e = gridThread(); e < plan.numel; e += gridStride())
    triluAt<E>(plan, x, out, e);
}

} // namespace

//===--- range ------------------------------------------------------------===//

StatusOr<RangePlan> planRange(DType dtype, double start, double limit, double delta,
                              const Shape &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(dtype, out, /*integerOnly=*/false));
  RP_RETURN_IF_ERROR(checkRangeArgs(start, limit, delta));
  if (isIndexDType(dtype)) {
    RP_RETURN_IF_ERROR(checkIntegralRangeArgs(start, limit, delta,
                                              base::dtypeName(dtype) + formatShape(out)));
    return planRangeInt(dtype, static_cast<int64_t>(start), static_cast<int64_t>(limit),
                        static_cast<int64_t>(delta), out);
  }
  const double length = rangeFloatLength(start, limit, delta);
  if (length != static_cast<double>(out[0]))
    return rangeLengthMismatch(rangeFloatLengthText(length), rangeArgs(start, limit, delta), dtype,
                               out);
  RangePlan plan;
  plan.dtype = dtype;
  plan.n = out[0];
  plan.start = start;
  plan.delta = delta;
  return plan;
}

StatusOr<RangePlan> planRangeInt(DType dtype, int64_t start, int64_t limit, int64_t delta,
                                 const Shape &out) {
  RP_RETURN_IF_ERROR(checkRangeOut(dtype, out, /*integerOnly=*/true));
  RP_RETURN_IF_ERROR(checkRangeDelta(delta));
  const __int128 length = rangeIntLength(start, limit, delta);
  if (length != out[0])
    return rangeLengthMismatch(std::to_string(static_cast<int64_t>(length)),
                               rangeArgs(start, limit, delta), dtype, out);
  const int64_t n = out[0];
  RP_RETURN_IF_ERROR(checkRangeFits(start, delta, n, dtype));
  RangePlan plan;
  plan.dtype = dtype;
  plan.n = n;
  plan.istart = start;
  plan.idelta = delta;
  plan.start = static_cast<double>(start);
  plan.delta = static_cast<double>(delta);
  return plan;
}

cudaError_t launchRange(const RangePlan &plan, void *out, cudaStream_t stream) {
  if (plan.n == 0)
    return cudaSuccess;
  if (plan.dtype == DType::I1 || !usablePointer(out, base::dtypeSize(plan.dtype)))
    return cudaErrorInvalidValue;
  visitDType(plan.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    if constexpr (D != DType::I1)
      rangeKernel<D><<<gridFor(plan.n), kBlockSize, 0, stream>>>(plan, out);
  });
  return cudaGetLastError();
}

//===--- trilu ------------------------------------------------------------===//

StatusOr<TriluPlan> planTrilu(DType dtype, const Shape &x, int64_t k, bool upper,
                              const Shape &out) {
  RP_RETURN_IF_ERROR(checkRankAtLeast("trilu", "x", dtype, x, 2));
  RP_RETURN_IF_ERROR(checkShapeIs("trilu", "out", dtype, out, x));
  TriluPlan plan;
  plan.dtype = dtype;
  plan.numel = numElements(x);
  plan.rows = x[x.size() - 2];
  plan.cols = x[x.size() - 1];
  plan.k = k;
  plan.upper = upper;
  return plan;
}

cudaError_t launchTrilu(const TriluPlan &plan, const void *x, void *out, cudaStream_t stream) {
  if (plan.numel == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(plan.dtype);
  if (!usablePointer(x, bytes) || !usablePointer(out, bytes))
    return cudaErrorInvalidValue;
  const unsigned blocks = gridFor(plan.numel);
  switch (bytes) {
  case 1:
    triluKernel<uint8_t><<<blocks, kBlockSize, 0, stream>>>(plan, x, out);
    break;
  case 2:
    triluKernel<uint16_t><<<blocks, kBlockSize, 0, stream>>>(plan, x, out);
    break;
  case 4:
    triluKernel<uint32_t><<<blocks, kBlockSize, 0, stream>>>(plan, x, out);
    break;
  default:
    triluKernel<uint64_t><<<blocks, kBlockSize, 0, stream>>>(plan, x, out);
    break;
  }
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
