//===- RoutedExperts.cu - Routed experts in grouped form on the GPU -------===//
//
// The planners (host checks and geometry) and launchers of RoutedExperts.h; the element
// bodies live in the header (shared with the host replay). See RoutedExperts.h for semantics,
// cost and determinism.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/RoutedExperts.h"

#include "kernels/cuda/Launch.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::StatusOr;

namespace {

/// One block: counts, prefix, placement (RoutedExperts.h, moe_sort).
__global__ void moeSortKernel(MoeSortPlan p, const int64_t *idx, int64_t *pos, int64_t *off) {
  for (int64_t e = threadIdx.x; e < p.experts; e += blockDim.x)
    off[e + 1] = moeSortCountAt(p, idx, e);
  __syncthreads();
  if (threadIdx.x == 0)
    moeSortPrefix(p, off);
  __syncthreads();
  for (int64_t e = threadIdx.x; e < p.experts; e += blockDim.x)
    moeSortPlaceAt(p, idx, off, pos, e);
}

template <DType D>
__global__ void moeDispatchKernel(MoeRowsPlan p, const void *x, const int64_t *pos, void *out) {
  const int64_t n = p.tokens * p.k * p.width;
  for (int64_t i = gridThread(); i < n; i += gridStride())
    moeDispatchAt<D>(p, x, pos, out, i);
}

template <DType D>
__global__ void moeCombineKernel(MoeRowsPlan p, const void *rows, const void *w,
                                 const int64_t *pos, void *out) {
  const int64_t n = p.tokens * p.width;
  for (int64_t i = gridThread(); i < n; i += gridStride())
    moeCombineAt<D>(p, rows, w, pos, out, i);
}

template <DType D>
__global__ void groupedMatmulKernel(GroupedPlan p, const void *a, const void *w,
                                    const int64_t *off, void *out) {
  const int64_t n = p.rows * p.n;
  for (int64_t i = gridThread(); i < n; i += gridStride())
    groupedMatmulAt<D>(p, a, w, off, out, i);
}

template <DType D>
__global__ void groupedWgradKernel(GroupedPlan p, const void *a, const void *b,
                                   const int64_t *off, void *out) {
  const int64_t n = p.experts * p.k * p.n;
  for (int64_t i = gridThread(); i < n; i += gridStride())
    groupedWgradAt<D>(p, a, b, off, out, i);
}

/// [E + 1] i64 offsets with E >= 1: returns E.
StatusOr<int64_t> offsetsExperts(const char *op, DType dtype, const Shape &off) {
  if (dtype != DType::I64 || off.size() != 1 || off[0] < 2)
    return invalidArgument(std::string(op) + ": offsets is " + base::dtypeName(dtype) +
                           base::formatShape(off) + ", expected i64[E + 1], E >= 1");
  return off[0] - 1;
}

/// positions i64 [T, k] with T = tokens (when >= 0).
base::Status checkPositions(const char *op, DType dtype, const Shape &pos, int64_t tokens) {
  if (dtype != DType::I64 || pos.size() != 2 || (tokens >= 0 && pos[0] != tokens))
    return invalidArgument(std::string(op) + ": positions is " + base::dtypeName(dtype) +
                           base::formatShape(pos) + ", expected i64[T, k]" +
                           (tokens >= 0 ? " with T = " + std::to_string(tokens) : ""));
  return base::okStatus();
}

} // namespace

StatusOr<MoeSortPlan> planMoeSort(DType indices, const Shape &idx, DType positions,
                                  const Shape &pos, DType offsets, const Shape &off) {
  const char *op = "moe_sort";
  if (idx.size() != 2)
    return invalidArgument(std::string(op) + ": indices is " + base::formatShape(idx) +
                           ", expected rank 2 [T, k]");
  RP_RETURN_IF_ERROR(checkType(op, "indices", indices, idx, DType::I64, idx));
  RP_RETURN_IF_ERROR(checkType(op, "positions", positions, pos, DType::I64, idx));
  RP_ASSIGN_OR_RETURN(int64_t experts, offsetsExperts(op, offsets, off));
  return MoeSortPlan{idx[0] * idx[1], experts};
}

StatusOr<MoeRowsPlan> planMoeDispatch(DType dtype, const Shape &x, DType positions,
                                      const Shape &pos, DType outDType, const Shape &out) {
  const char *op = "moe_dispatch";
  RP_RETURN_IF_ERROR(checkDType(op, "x", dtype, kGpuFloatTypes));
  if (x.size() != 2)
    return invalidArgument(std::string(op) + ": x is " + base::formatShape(x) +
                           ", expected rank 2 [T, H]");
  RP_RETURN_IF_ERROR(checkPositions(op, positions, pos, x[0]));
  RP_RETURN_IF_ERROR(checkType(op, "out", outDType, out, dtype, {x[0] * pos[1], x[1]}));
  return MoeRowsPlan{dtype, x[0], pos[1], x[1]};
}

StatusOr<MoeRowsPlan> planMoeCombine(DType dtype, const Shape &rows, DType weights,
                                     const Shape &w, DType positions, const Shape &pos,
                                     DType outDType, const Shape &out) {
  const char *op = "moe_combine";
  RP_RETURN_IF_ERROR(checkDType(op, "rows", dtype, kGpuFloatTypes));
  RP_RETURN_IF_ERROR(checkPositions(op, positions, pos, -1));
  if (rows.size() != 2 || rows[0] != pos[0] * pos[1])
    return invalidArgument(std::string(op) + ": rows is " + base::formatShape(rows) +
                           ", expected [T * k, N] with T * k = " + std::to_string(pos[0] * pos[1]));
  RP_RETURN_IF_ERROR(checkType(op, "weights", weights, w, dtype, pos));
  RP_RETURN_IF_ERROR(checkType(op, "out", outDType, out, dtype, {pos[0], rows[1]}));
  return MoeRowsPlan{dtype, pos[0], pos[1], rows[1]};
}

StatusOr<GroupedPlan> planGroupedMatmul(DType dtype, const Shape &rows, DType weights,
                                        const Shape &w, DType offsets, const Shape &off,
                                        bool transposeB, DType outDType, const Shape &out) {
  const char *op = "grouped_matmul";
  RP_RETURN_IF_ERROR(checkDType(op, "rows", dtype, kGpuFloatTypes));
  RP_ASSIGN_OR_RETURN(int64_t experts, offsetsExperts(op, offsets, off));
  if (rows.size() != 2 || w.size() != 3)
    return invalidArgument(std::string(op) + ": expected rows [R, K] and weights of rank 3, got " +
                           base::formatShape(rows) + " and " + base::formatShape(w));
  const int64_t k = rows[1], n = w[transposeB ? 1 : 2];
  const Shape want = transposeB ? Shape{experts, n, k} : Shape{experts, k, n};
  RP_RETURN_IF_ERROR(checkType(op, "weights", weights, w, dtype, want));
  RP_RETURN_IF_ERROR(checkType(op, "out", outDType, out, dtype, {rows[0], n}));
  return GroupedPlan{dtype, rows[0], k, n, experts, transposeB};
}

StatusOr<GroupedPlan> planGroupedMatmulWgrad(DType dtype, const Shape &lhs, DType rhsDType,
                                             const Shape &rhs, DType offsets, const Shape &off,
                                             DType outDType, const Shape &out) {
  const char *op = "grouped_matmul_wgrad";
  RP_RETURN_IF_ERROR(checkDType(op, "lhs", dtype, kGpuFloatTypes));
  RP_ASSIGN_OR_RETURN(int64_t experts, offsetsExperts(op, offsets, off));
  if (lhs.size() != 2 || rhs.size() != 2 || lhs[0] != rhs[0])
    return invalidArgument(std::string(op) + ": expected lhs [R, K] and rhs [R, N], got " +
                           base::formatShape(lhs) + " and " + base::formatShape(rhs));
  RP_RETURN_IF_ERROR(checkSameDType(op, "lhs", dtype, "rhs", rhsDType));
  RP_RETURN_IF_ERROR(checkType(op, "out", outDType, out, dtype, {experts, lhs[1], rhs[1]}));
  return GroupedPlan{dtype, lhs[0], lhs[1], rhs[1], experts, false};
}

cudaError_t launchMoeSort(const MoeSortPlan &p, const void *indices, void *positions,
                          void *offsets, cudaStream_t stream) {
  if (!usablePointers(sizeof(int64_t), offsets) ||
      (p.pairs > 0 && !usablePointers(sizeof(int64_t), indices, positions)))
    return cudaErrorInvalidValue;
  const unsigned threads = static_cast<unsigned>(std::min<int64_t>(p.experts, 1024));
  moeSortKernel<<<1, threads, 0, stream>>>(p, static_cast<const int64_t *>(indices),
                                          static_cast<int64_t *>(positions),
                                          static_cast<int64_t *>(offsets));
  return cudaGetLastError();
}

cudaError_t launchMoeDispatch(const MoeRowsPlan &p, const void *x, const void *positions,
                              void *out, cudaStream_t stream) {
  const int64_t n = p.tokens * p.k * p.width;
  if (n == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(p.dtype);
  if (!usablePointers(bytes, x, out) || !usablePointer(positions, sizeof(int64_t)))
    return cudaErrorInvalidValue;
  visitFloatDType(p.dtype, [&](auto d) {
    moeDispatchKernel<decltype(d)::value><<<gridFor(n), kBlockSize, 0, stream>>>(
        p, x, static_cast<const int64_t *>(positions), out);
  });
  return cudaGetLastError();
}

cudaError_t launchMoeCombine(const MoeRowsPlan &p, const void *rows, const void *weights,
                             const void *positions, void *out, cudaStream_t stream) {
  const int64_t n = p.tokens * p.width;
  if (n == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(p.dtype);
  if (!usablePointers(bytes, rows, weights, out) || !usablePointer(positions, sizeof(int64_t)))
    return cudaErrorInvalidValue;
  visitFloatDType(p.dtype, [&](auto d) {
    moeCombineKernel<decltype(d)::value><<<gridFor(n), kBlockSize, 0, stream>>>(
        p, rows, weights, static_cast<const int64_t *>(positions), out);
  });
  return cudaGetLastError();
}

cudaError_t launchGroupedMatmul(const GroupedPlan &p, const void *rows, const void *weights,
                                const void *offsets, void *out, cudaStream_t stream) {
  const int64_t n = p.rows * p.n;
  if (n == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(p.dtype);
  if (!usablePointers(bytes, rows, weights, out) || !usablePointer(offsets, sizeof(int64_t)))
    return cudaErrorInvalidValue;
  visitFloatDType(p.dtype, [&](auto d) {
    groupedMatmulKernel<decltype(d)::value><<<gridFor(n), kBlockSize, 0, stream>>>(
        p, rows, weights, static_cast<const int64_t *>(offsets), out);
  });
  return cudaGetLastError();
}

cudaError_t launchGroupedMatmulWgrad(const GroupedPlan &p, const void *lhs, const void *rhs,
                                     const void *offsets, void *out, cudaStream_t stream) {
  const int64_t n = p.experts * p.k * p.n;
  if (n == 0)
    return cudaSuccess;
  const size_t bytes = base::dtypeSize(p.dtype);
  if (!usablePointers(bytes, lhs, rhs, out) || !usablePointer(offsets, sizeof(int64_t)))
    return cudaErrorInvalidValue;
  visitFloatDType(p.dtype, [&](auto d) {
    groupedWgradKernel<decltype(d)::value><<<gridFor(n), kBlockSize, 0, stream>>>(
        p, lhs, rhs, static_cast<const int64_t *>(offsets), out);
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
