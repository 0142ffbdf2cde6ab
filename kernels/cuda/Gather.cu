//===- Gather.cu - Index-driven gathers and scatters on the GPU -----------===//
//
// Plans (host checks and geometry), launchers and readIndexError of gather, gather_elements,
// scatter_add, scatter_elements_add, scatter and scatter_elements; the per-element bodies
// live in Gather.h (shared with the host tests). See Gather.h for shapes, numerics, the out-of-range contract and costs.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Gather.h"

#include "kernels/cuda/Launch.cuh"

#include <string>

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

namespace {

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d)
    p *= shape[d];
  return p;
}

/// `a` with the dimension at `axis` replaced by the dimensions of `mid`.
Shape spliced(const Shape &a, int64_t axis, const Shape &mid) {
  Shape s(a.begin(), a.begin() + axis);
  s.insert(s.end(), mid.begin(), mid.end());
  s.insert(s.end(), a.begin() + axis + 1, a.end());
  return s;
}

IndexSpec indexSpec(const char *op, const char *role, DType dtype, const Shape &indices,
                    int64_t size, int64_t axis) {
  IndexSpec s;
  s.op = op;
  s.role = role;
  s.dtype = dtype;
  s.count = numElements(indices);
  s.size = size;
  s.axis = axis;
  return s;
}

//===--- kernels ----------------------------------------------------------===//

template <DType I>
__global__ void indexCheckKernel(IndexSpec spec, const void *indices, unsigned long long *error) {
  for (int64_t p = gridThread(); p < spec.count; p += gridStride())
    indexCheckAt<I>(spec, indices, error, p);
}

/// The body of output element o of a gather or a gather_elements, by plan type.
template <typename E, DType I>
__device__ void gatherBodyAt(const GatherPlan &plan, const void *data, const void *indices,
                             void *out, int64_t o) {
  gatherAt<E, I>(plan, data, indices, out, o);
}
template <typename E, DType I>
__device__ void gatherBodyAt(const GatherElementsPlan &plan, const void *data, const void *indices,
                             void *out, int64_t o) {
  gatherElementsAt<E, I>(plan, data, indices, out, o);
}

/// One thread per output element of a gather or gather_elements (Plan).
template <typename E, DType I, typename Plan>
__global__ void gatherKernel(Plan plan, const void *data, const void *indices, void *out) {
  for (int64_t o = gridThread(); o < plan.numel; o += gridStride())
    gatherBodyAt<E, I>(plan, data, indices, out, o);
}

template <DType I>
__global__ void scatterKeyKernel(ScatterAddPlan plan, const void *indices, int64_t *keys) {
  for (int64_t j = gridThread(); j < plan.count; j += gridStride())
    scatterKeyAt<I>(plan, indices, keys, j);
}

__global__ void scatterRankKernel(ScatterAddPlan plan, const int64_t *keys, int64_t *sorted,
                                  int64_t *order) {
  for (int64_t j = gridThread(); j < plan.count; j += gridStride())
    scatterRankAt(plan, keys, sorted, order, j);
}

template <DType D>
__global__ void scatterAddKernel(ScatterAddPlan plan, const void *updates, const int64_t *sorted,
                                 const int64_t *order, void *out) {
  for (int64_t e = gridThread(); e < plan.numel; e += gridStride())
    scatterAddAt<D>(plan, updates, sorted, order, out, e);
}

/// One block per out row (o, t): thread 0 finds the group bounds, every thread sums its
/// elements of the row.
template <DType D>
__global__ void scatterAddRowsKernel(ScatterAddPlan plan, const void *updates,
                                     const int64_t *sorted, const int64_t *order, void *out) {
  __shared__ int64_t group[2];
  const int64_t rows = plan.outer * plan.size;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    if (threadIdx.x == 0)
      scatterAddGroup(plan, sorted, row % plan.size, group[0], group[1]);
    __syncthreads();
    scatterAddRowAt<D>(plan, updates, order, out, row, group[0], group[1], threadIdx.x,
                       blockDim.x);
    __syncthreads(); // the group is rewritten for the next row
  }
}

template <DType D, DType I>
__global__ void scatterElementsAddKernel(ScatterElementsAddPlan plan, const void *updates,
                                         const void *indices, void *out) {
  for (int64_t e = gridThread(); e < plan.numel; e += gridStride())
    scatterElementsAddAt<D, I>(plan, updates, indices, out, e);
}

template <DType I>
__global__ void scatterLastKernel(ScatterPlan plan, const void *indices, int64_t *last) {
  for (int64_t j = gridThread(); j < plan.count; j += gridStride())
    scatterLastAt<I>(plan, indices, last, j);
}

template <typename E>
__global__ void scatterKernel(ScatterPlan plan, const void *data, const void *updates,
                              const int64_t *last, void *out) {
  for (int64_t e = gridThread(); e < plan.numel; e += gridStride())
    scatterAt<E>(plan, data, updates, last, out, e);
}

template <typename E, DType I>
__global__ void scatterElementsKernel(ScatterElementsPlan plan, const void *data,
                                      const void *updates, const void *indices, void *out) {
  for (int64_t e = gridThread(); e < plan.numel; e += gridStride())
    scatterElementsAt<E, I>(plan, data, updates, indices, out, e);
}

/// Resets *error and enqueues the range check of spec's indices (nothing when error is null).
cudaError_t launchIndexCheck(const IndexSpec &spec, const void *indices, unsigned long long *error,
                             cudaStream_t stream) {
  if (error == nullptr)
    return cudaSuccess;
  if (reinterpret_cast<uintptr_t>(error) % alignof(unsigned long long) != 0)
    return cudaErrorInvalidValue;
  cudaError_t status = cudaMemsetAsync(error, 0xFF, sizeof(*error), stream); // kNoIndexError
  if (status != cudaSuccess || spec.count == 0)
    return status;
  visitIndex(spec.dtype, [&](auto index) {
    indexCheckKernel<decltype(index)::value>
        <<<gridFor(spec.count), kBlockSize, 0, stream>>>(spec, indices, error);
  });
  return cudaGetLastError();
}

/// The index-error word must be 8-aligned when given; indices must be usable when present.
bool indicesUsable(const IndexSpec &spec, const void *indices, const unsigned long long *error) {
  if (error != nullptr && reinterpret_cast<uintptr_t>(error) % alignof(unsigned long long) != 0)
    return false;
  return spec.count == 0 || usablePointer(indices, base::dtypeSize(spec.dtype));
}

/// The common part of launchGather and launchGatherElements after their pointer checks: the
/// index check, then gatherKernel over the plan.numel outputs.
template <typename Plan>
cudaError_t enqueueGather(const Plan &plan, const void *data, const void *indices, void *out,
                          unsigned long long *indexError, cudaStream_t stream) {
  cudaError_t status = launchIndexCheck(plan.index, indices, indexError, stream);
  if (status != cudaSuccess || plan.numel == 0)
    return status;
  visitBits(base::dtypeSize(plan.dtype), [&](auto bits) {
    visitIndex(plan.index.dtype, [&](auto index) {
      gatherKernel<decltype(bits), decltype(index)::value>
          <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, data, indices, out);
    });
  });
  return cudaGetLastError();
}

} // namespace

//===--- index errors -----------------------------------------------------===//

Status indexOutOfRange(const IndexSpec &spec, int64_t position, int64_t value) {
  return base::outOfRange(
      std::string(spec.op) + ": index " + std::to_string(value) + " at row-major position " +
      std::to_string(position) + " of indices (" + base::dtypeName(spec.dtype) + ", " +
      std::to_string(spec.count) + " elements) is outside [" + std::to_string(-spec.size) + ", " +
      std::to_string(spec.size) + ") (dimension " + std::to_string(spec.axis) + " of " + spec.role +
      ")");
}

Status readIndexError(const IndexSpec &spec, const unsigned long long *error, const void *indices,
                      cudaStream_t stream) {
  auto fail = [&](const char *what, cudaError_t status) {
    return base::internal(std::string(spec.op) + ": " + what + ": " +
                             cudaGetErrorString(status));
  };
  unsigned long long position = kNoIndexError;
  cudaError_t status =
      cudaMemcpyAsync(&position, error, sizeof(position), cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess)
    status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess)
    return fail("reading the index-error word", status);
  if (position == kNoIndexError)
    return base::okStatus();
  if (position >= static_cast<unsigned long long>(spec.count))
    return base::internal(std::string(spec.op) + ": the index-error word holds " +
                             std::to_string(position) + ", past the " + std::to_string(spec.count) +
                             " indices");
  const size_t bytes = base::dtypeSize(spec.dtype);
  int64_t value = 0;
  int32_t value32 = 0;
  void *dst = spec.dtype == DType::I32 ? static_cast<void *>(&value32) : &value;
  status = cudaMemcpyAsync(dst, static_cast<const unsigned char *>(indices) + position * bytes,
                           bytes, cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess)
    status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess)
    return fail("reading the out-of-range index", status);
  if (spec.dtype == DType::I32)
    value = value32;
  return indexOutOfRange(spec, static_cast<int64_t>(position), value);
}

//===--- gather -----------------------------------------------------------===//

StatusOr<GatherPlan> planGather(DType dtype, const Shape &data, DType indexDType,
                                const Shape &indices, int64_t axis, const Shape &out) {
  const char *op = "gather";
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indexDType, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(data.size())));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, spliced(data, axis, indices)));
  GatherPlan plan;
  plan.dtype = dtype;
  plan.size = data[static_cast<size_t>(axis)];
  plan.index = indexSpec(op, "data", indexDType, indices, plan.size, axis);
  plan.outer = product(data, 0, static_cast<size_t>(axis));
  plan.inner = product(data, static_cast<size_t>(axis) + 1, data.size());
  plan.count = plan.index.count;
  plan.numel = numElements(out);
  return plan;
}

cudaError_t launchGather(const GatherPlan &plan, const void *data, const void *indices, void *out,
                         unsigned long long *indexError, cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 && !usablePointer(out, bytes)) ||
      (plan.outer * plan.size * plan.inner > 0 && !usablePointer(data, bytes)))
    return cudaErrorInvalidValue;
  return enqueueGather(plan, data, indices, out, indexError, stream);
}

//===--- gather_elements --------------------------------------------------===//

StatusOr<GatherElementsPlan> planGatherElements(DType dtype, const Shape &data, DType indexDType,
                                                const Shape &indices, int64_t axis,
                                                const Shape &out) {
  const char *op = "gather_elements";
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indexDType, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(data.size())));
  RP_RETURN_IF_ERROR(checkGatherElementsFit(dtype, data, indices, axis));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, indices));
  GatherElementsPlan plan;
  plan.dtype = dtype;
  plan.index = indexSpec(op, "data", indexDType, indices, data[static_cast<size_t>(axis)], axis);
  plan.numel = numElements(indices);
  Shape strides = contiguousStrides(data);
  plan.axisStride = strides[static_cast<size_t>(axis)];
  strides[static_cast<size_t>(axis)] = 0; // the index supplies the axis coordinate
  RP_ASSIGN_OR_RETURN(plan.data, makeIter<1>(op, indices, {strides}));
  return plan;
}

cudaError_t launchGatherElements(const GatherElementsPlan &plan, const void *data,
                                 const void *indices, void *out, unsigned long long *indexError,
                                 cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  // data is read only through in-range indices, which exist only when it has elements.
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 &&
       (!usablePointer(out, bytes) || (plan.index.size > 0 && !usablePointer(data, bytes)))))
    return cudaErrorInvalidValue;
  return enqueueGather(plan, data, indices, out, indexError, stream);
}

//===--- scatter_add ------------------------------------------------------===//

namespace {

/// The geometry of scatter_add or scatter (`op`) into `out` (`role`: "out", "data"), after
/// the dtype checks; the shape checks as the CPU kernels make them.
StatusOr<ScatterAddPlan> scatterGeometry(const char *op, const char *role, DType dtype,
                                         const Shape &updates, DType indexDType,
                                         const Shape &indices, int64_t axis, const Shape &out) {
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indexDType, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(out.size())));
  RP_RETURN_IF_ERROR(checkScatterUpdates(op, role, dtype, updates, dtype, out, indices, axis));
  ScatterAddPlan plan;
  plan.dtype = dtype;
  plan.size = out[static_cast<size_t>(axis)];
  plan.index = indexSpec(op, role, indexDType, indices, plan.size, axis);
  plan.outer = product(out, 0, static_cast<size_t>(axis));
  plan.inner = product(out, static_cast<size_t>(axis) + 1, out.size());
  plan.count = plan.index.count;
  plan.numel = numElements(out);
  return plan;
}

} // namespace

StatusOr<ScatterAddPlan> planScatterAdd(DType dtype, const Shape &updates, DType indexDType,
                                        const Shape &indices, int64_t axis, const Shape &out) {
  const char *op = "scatter_add";
  RP_RETURN_IF_ERROR(checkDType(op, "updates", dtype, kGpuFloatTypes));
  RP_ASSIGN_OR_RETURN(ScatterAddPlan plan,
                      scatterGeometry(op, "out", dtype, updates, indexDType, indices, axis, out));
  plan.workspaceBytes = 3 * static_cast<size_t>(plan.count) * sizeof(int64_t);
  return plan;
}

cudaError_t launchScatterAdd(const ScatterAddPlan &plan, const void *updates, const void *indices,
                             void *out, void *workspace, unsigned long long *indexError,
                             cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  const bool haveUpdates = plan.outer * plan.count * plan.inner > 0;
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 && !usablePointer(out, bytes)) ||
      (haveUpdates && !usablePointer(updates, bytes)) ||
      (plan.count > 0 && plan.numel > 0 && !usablePointer(workspace, alignof(int64_t))))
    return cudaErrorInvalidValue;
  cudaError_t status = launchIndexCheck(plan.index, indices, indexError, stream);
  if (status != cudaSuccess || plan.numel == 0)
    return status;
  const ScatterAddWorkspace ws = scatterAddWorkspace(plan, workspace);
  if (plan.count > 0) {
    visitIndex(plan.index.dtype, [&](auto index) {
      scatterKeyKernel<decltype(index)::value>
          <<<gridFor(plan.count), kBlockSize, 0, stream>>>(plan, indices, ws.keys);
    });
    if ((status = cudaGetLastError()) != cudaSuccess)
      return status;
    scatterRankKernel<<<gridFor(plan.count), kBlockSize, 0, stream>>>(plan, ws.keys, ws.sorted,
                                                                      ws.order);
    if ((status = cudaGetLastError()) != cudaSuccess)
      return status;
  }
  const int64_t rows = plan.outer * plan.size;
  visitFloatDType(plan.dtype, [&](auto tag) {
    if (plan.inner >= kScatterAddRowMinInner)
      scatterAddRowsKernel<decltype(tag)::value>
          <<<static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks)), kBlockSize, 0,
             stream>>>(plan, updates, ws.sorted, ws.order, out);
    else
      scatterAddKernel<decltype(tag)::value>
          <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, updates, ws.sorted, ws.order,
                                                           out);
  });
  return cudaGetLastError();
}

//===--- scatter_elements_add ---------------------------------------------===//

namespace {

/// The geometry of scatter_elements(_add) (`op`) into `out` (`role`: "out", "data"), after the
/// dtype checks; the shape checks as the CPU kernels make them.
StatusOr<ScatterElementsAddPlan> scatterElementsGeometry(const char *op, const char *role,
                                                         DType dtype, const Shape &updates,
                                                         DType indexDType, const Shape &indices,
                                                         int64_t axis, const Shape &out) {
  RP_RETURN_IF_ERROR(checkDType(op, "indices", indexDType, kIndexTypes));
  RP_RETURN_IF_ERROR(checkAxis(op, "axis", axis, static_cast<int64_t>(out.size())));
  RP_RETURN_IF_ERROR(checkScatterElementsFit(op, role, updates, indices, dtype, out, axis));
  ScatterElementsAddPlan plan;
  plan.dtype = dtype;
  plan.index = indexSpec(op, role, indexDType, indices, out[static_cast<size_t>(axis)], axis);
  plan.numel = numElements(out);
  const Shape strides = contiguousStrides(updates);
  plan.length = updates[static_cast<size_t>(axis)];
  plan.lineStep = strides[static_cast<size_t>(axis)];
  int rank = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool isAxis = static_cast<int64_t>(d) == axis;
    if (!isAxis && out[d] == 1 && updates[d] == 1)
      continue; // coordinate always 0 in both
    if (rank == kMaxRank)
      return invalidArgument(std::string(op) + ": " + role + " " + base::dtypeName(dtype) +
                             formatShape(out) + " has more than " + std::to_string(kMaxRank) +
                             " dimensions that are not 1 in both " + role +
                             " and updates (the GPU kernel's limit)");
    if (isAxis)
      plan.axis = rank;
    plan.outShape[rank] = out[d];
    plan.updShape[rank] = updates[d];
    plan.updStrides[rank] = strides[d];
    ++rank;
  }
  plan.rank = rank;
  return plan;
}

} // namespace

StatusOr<ScatterElementsAddPlan> planScatterElementsAdd(DType dtype, const Shape &updates,
                                                        DType indexDType, const Shape &indices,
                                                        int64_t axis, const Shape &out) {
  const char *op = "scatter_elements_add";
  RP_RETURN_IF_ERROR(checkDType(op, "updates", dtype, kGpuFloatTypes));
  return scatterElementsGeometry(op, "out", dtype, updates, indexDType, indices, axis, out);
}

cudaError_t launchScatterElementsAdd(const ScatterElementsAddPlan &plan, const void *updates,
                                     const void *indices, void *out, unsigned long long *indexError,
                                     cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 && !usablePointer(out, bytes)) ||
      (plan.index.count > 0 && !usablePointer(updates, bytes)))
    return cudaErrorInvalidValue;
  cudaError_t status = launchIndexCheck(plan.index, indices, indexError, stream);
  if (status != cudaSuccess || plan.numel == 0)
    return status;
  visitFloatDType(plan.dtype, [&](auto tag) {
    visitIndex(plan.index.dtype, [&](auto index) {
      scatterElementsAddKernel<decltype(tag)::value, decltype(index)::value>
          <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, updates, indices, out);
    });
  });
  return cudaGetLastError();
}

//===--- scatter ----------------------------------------------------------===//

StatusOr<ScatterPlan> planScatter(DType dtype, const Shape &data, DType indexDType,
                                  const Shape &indices, const Shape &updates, int64_t axis,
                                  const Shape &out) {
  const char *op = "scatter";
  RP_ASSIGN_OR_RETURN(ScatterPlan plan, scatterGeometry(op, "data", dtype, updates, indexDType,
                                                        indices, axis, data));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, data));
  plan.workspaceBytes = static_cast<size_t>(plan.size) * sizeof(int64_t);
  return plan;
}

cudaError_t launchScatter(const ScatterPlan &plan, const void *data, const void *indices,
                          const void *updates, void *out, void *workspace,
                          unsigned long long *indexError, cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  const bool haveUpdates = plan.outer * plan.count * plan.inner > 0;
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 && (!usablePointer(out, bytes) || !usablePointer(data, bytes) ||
                          !usablePointer(workspace, alignof(int64_t)))) ||
      (haveUpdates && !usablePointer(updates, bytes)))
    return cudaErrorInvalidValue;
  cudaError_t status = launchIndexCheck(plan.index, indices, indexError, stream);
  if (status != cudaSuccess || plan.numel == 0)
    return status;
  int64_t *last = static_cast<int64_t *>(workspace);
  // Every byte 0xff: each last position starts at -1 (nothing lands there).
  if ((status = cudaMemsetAsync(last, 0xff, plan.workspaceBytes, stream)) != cudaSuccess)
    return status;
  if (plan.count > 0) {
    visitIndex(plan.index.dtype, [&](auto index) {
      scatterLastKernel<decltype(index)::value>
          <<<gridFor(plan.count), kBlockSize, 0, stream>>>(plan, indices, last);
    });
    if ((status = cudaGetLastError()) != cudaSuccess)
      return status;
  }
  visitBits(bytes, [&](auto bits) {
    scatterKernel<decltype(bits)>
        <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, data, updates, last, out);
  });
  return cudaGetLastError();
}

//===--- scatter_elements -------------------------------------------------===//

StatusOr<ScatterElementsPlan> planScatterElements(DType dtype, const Shape &data,
                                                  DType indexDType, const Shape &indices,
                                                  const Shape &updates, int64_t axis,
                                                  const Shape &out) {
  const char *op = "scatter_elements";
  RP_ASSIGN_OR_RETURN(ScatterElementsPlan plan,
                      scatterElementsGeometry(op, "data", dtype, updates, indexDType, indices,
                                              axis, data));
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, data));
  return plan;
}

cudaError_t launchScatterElements(const ScatterElementsPlan &plan, const void *data,
                                  const void *indices, const void *updates, void *out,
                                  unsigned long long *indexError, cudaStream_t stream) {
  const size_t bytes = base::dtypeSize(plan.dtype);
  if (!indicesUsable(plan.index, indices, indexError) ||
      (plan.numel > 0 && (!usablePointer(out, bytes) || !usablePointer(data, bytes))) ||
      (plan.index.count > 0 && !usablePointer(updates, bytes)))
    return cudaErrorInvalidValue;
  cudaError_t status = launchIndexCheck(plan.index, indices, indexError, stream);
  if (status != cudaSuccess || plan.numel == 0)
    return status;
  visitBits(bytes, [&](auto bits) {
    visitIndex(plan.index.dtype, [&](auto index) {
      scatterElementsKernel<decltype(bits), decltype(index)::value>
          <<<gridFor(plan.numel), kBlockSize, 0, stream>>>(plan, data, updates, indices, out);
    });
  });
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
