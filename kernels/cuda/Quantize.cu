//===- Quantize.cu - graph.dequantize on the GPU --------------------------===//
//
// The plan (the CPU kernel's checks) and the launcher; the per-element body lives in
// Quantize.h (shared with the host replay).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Quantize.h"

#include "kernels/KernelChecks.h"
#include "kernels/cuda/Launch.cuh"

#include <cstring>

namespace rp::kernels::cuda {

using base::DType;
using base::StatusOr;

namespace {

template <DType D>
__global__ void dequantizeKernel(DequantizePlan plan, const uint8_t *q, void *out) {
  for (int64_t i = gridThread(); i < plan.layout.elements; i += gridStride())
    dequantizeAt<D>(plan, q, out, i);
}

} // namespace

StatusOr<DequantizePlan> planDequantize(DType qDType, const Shape &q, QuantFormat format,
                                        int64_t axis, DType outDType, const Shape &out) {
  RP_ASSIGN_OR_RETURN(QuantLayout layout, checkDequantize(qDType, q, outDType, out, format, axis));
  DequantizePlan plan;
  plan.layout = layout;
  plan.dtype = outDType;
  plan.rows = out[out.size() - 2];
  plan.cols = out.back();
  plan.inIsLast = axis == static_cast<int64_t>(out.size()) - 1;
  std::memcpy(plan.nf4, kNf4Values, sizeof(plan.nf4));
  std::memcpy(plan.dynamic, kDynamicMap, sizeof(plan.dynamic));
  return plan;
}

cudaError_t launchDequantize(const DequantizePlan &plan, const void *q, void *out,
                             cudaStream_t stream) {
  if (plan.layout.elements == 0)
    return cudaSuccess;
  if (!q || !usablePointer(out, base::dtypeSize(plan.dtype)))
    return cudaErrorInvalidValue;
  const auto *bytes = static_cast<const uint8_t *>(q);
  const int grid = gridFor(plan.layout.elements);
  switch (plan.dtype) {
  case DType::BF16:
    dequantizeKernel<DType::BF16><<<grid, kBlockSize, 0, stream>>>(plan, bytes, out);
    break;
  case DType::F16:
    dequantizeKernel<DType::F16><<<grid, kBlockSize, 0, stream>>>(plan, bytes, out);
    break;
  default:
    dequantizeKernel<DType::F32><<<grid, kBlockSize, 0, stream>>>(plan, bytes, out);
    break;
  }
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
