//===- Elementwise.cu - Elementwise graph ops on the GPU: kernels ---------===//
//
// One grid-stride kernel per (family, dtype); the op is a runtime switch inside the body
// (uniform across the grid, so it costs a predictable branch per element, and it keeps the
// number of instantiations -- and the build time -- small). The bodies are in
// ElementwiseOps.h.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Elementwise.h"
#include "kernels/cuda/ElementwiseOps.h"
#include "kernels/cuda/Launch.cuh"

namespace rp::kernels::cuda {
namespace {

using base::DType;
template <DType D> using DTag = std::integral_constant<DType, D>;

template <DType D> __global__ void unaryKernel(UnaryPlan p, const void *x, void *out) {
  for (int64_t i = gridThread(); i < p.iter.numel; i += gridStride())
    ops::unaryAt<D>(p, x, out, i);
}

template <DType D>
__global__ void binaryKernel(BinaryPlan p, const void *a, const void *b, void *out) {
  for (int64_t i = gridThread(); i < p.iter.numel; i += gridStride())
    ops::binaryAt<D>(p, a, b, out, i);
}

template <DType D>
__global__ void whereKernel(WherePlan p, const void *c, const void *t, const void *f, void *out) {
  for (int64_t i = gridThread(); i < p.iter.numel; i += gridStride())
    ops::whereAt<D>(p, c, t, f, out, i);
}

template <DType From, DType To> __global__ void castKernel(int64_t n, const void *x, void *out) {
  for (int64_t i = gridThread(); i < n; i += gridStride())
    ops::castAt<From, To>(x, out, i);
}

template <DType D>
__global__ void accumulateKernel(const void *g, float *acc, int64_t n, bool first) {
  for (int64_t i = gridThread(); i < n; i += gridStride())
    ops::accumulateAt<D>(g, acc, first, i);
}

__global__ void flagNonFiniteKernel(const float *x, int64_t n, uint32_t *flag) {
  bool bad = false;
  for (int64_t i = gridThread(); i < n; i += gridStride())
    bad |= ops::nonFiniteAt(x, i);
  if (bad)
    atomicOr(flag, 1u);
}

/// n >= 0, and every pointer usable (non-null, aligned to `bytes`) when there is work.
template <typename... P> bool validPointers(int64_t n, size_t bytes, P... ptrs) {
  return n == 0 || (n > 0 && usablePointers(bytes, ptrs...));
}

} // namespace

cudaError_t launchUnary(const UnaryPlan &p, const void *x, void *out, cudaStream_t stream) {
  if (!validPointers(p.iter.numel, 1, x, out))
    return cudaErrorInvalidValue;
  if (p.iter.numel == 0)
    return cudaSuccess;
  visitDType(p.dtype, [&](auto d) {
    unaryKernel<decltype(d)::value><<<gridFor(p.iter.numel), kBlockSize, 0, stream>>>(p, x, out);
  });
  return cudaGetLastError();
}

cudaError_t launchBinary(const BinaryPlan &p, const void *a, const void *b, void *out,
                         cudaStream_t stream) {
  if (!validPointers(p.iter.numel, 1, a, b, out))
    return cudaErrorInvalidValue;
  if (p.iter.numel == 0)
    return cudaSuccess;
  visitDType(p.dtype, [&](auto d) {
    binaryKernel<decltype(d)::value>
        <<<gridFor(p.iter.numel), kBlockSize, 0, stream>>>(p, a, b, out);
  });
  return cudaGetLastError();
}

cudaError_t launchWhere(const WherePlan &p, const void *cond, const void *onTrue,
                        const void *onFalse, void *out, cudaStream_t stream) {
  if (!validPointers(p.iter.numel, 1, cond, onTrue, onFalse, out))
    return cudaErrorInvalidValue;
  if (p.iter.numel == 0)
    return cudaSuccess;
  visitDType(p.dtype, [&](auto d) {
    whereKernel<decltype(d)::value>
        <<<gridFor(p.iter.numel), kBlockSize, 0, stream>>>(p, cond, onTrue, onFalse, out);
  });
  return cudaGetLastError();
}

cudaError_t launchCast(const CastPlan &p, const void *x, void *out, cudaStream_t stream) {
  if (!validPointers(p.n, 1, x, out))
    return cudaErrorInvalidValue;
  if (p.n == 0)
    return cudaSuccess;
  visitDType(p.from, [&](auto from) {
    visitDType(p.to, [&](auto to) {
      castKernel<decltype(from)::value, decltype(to)::value>
          <<<gridFor(p.n), kBlockSize, 0, stream>>>(p.n, x, out);
    });
  });
  return cudaGetLastError();
}

cudaError_t launchAccumulate(DType dtype, const void *src, float *acc, int64_t n, bool first,
                             cudaStream_t stream) {
  if (!validPointers(n, 1, src, acc) ||
      (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  visitFloatDType(dtype, [&](auto d) {
    accumulateKernel<decltype(d)::value><<<gridFor(n), kBlockSize, 0, stream>>>(src, acc, n, first);
  });
  return cudaGetLastError();
}

cudaError_t launchFlagNonFinite(const float *x, int64_t n, uint32_t *flag, cudaStream_t stream) {
  if (!validPointers(n, sizeof(float), x, flag))
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  flagNonFiniteKernel<<<gridFor(n), kBlockSize, 0, stream>>>(x, n, flag);
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
