//===- Reduce.cu - Reductions (graph.reduce_*) on the GPU -----------------===//
//
// planReduce splits x's dimensions into the kept group (one output each) and the reduced
// group (the row of an output), each coalesced by makeIter, and picks the threads per row;
// reduceKernel folds each row with reducePartial (Reduce.h), combines the partials with
// rowAllReduce (RowReduce.cuh) and lets the row's lane 0 store the result.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Reduce.h"

#include "kernels/cuda/RowReduce.cuh"
#include "base/HostTensor.h"

#include <string>

namespace rp::kernels::cuda {

using base::DType;

namespace {

template <DType D, RowMode M>
__global__ void __launch_bounds__(kMaxThreadsPerRow)
    reduceKernel(const ReducePlan p, const void *__restrict__ x, void *__restrict__ out) {
  using A = ReduceAccum<D>;
  __shared__ A shared[kWarpSize];
  forEachRow<M>(p.rows, [&](int64_t row, int lane, int threads) {
    A acc = reducePartial<D>(p, x, row, lane, threads);
    acc = rowAllReduce<M>(acc, ReduceCombine<D>{p.kind}, reduceIdentity<D>(p.kind), shared);
    if (lane == 0)
      reduceStore<D>(p, out, row, acc);
  });
}

template <DType D>
void enqueue(const ReducePlan &p, const void *x, void *out, cudaStream_t stream) {
  launchRows(
      p.rows, p.threadsPerRow, stream,
      [](auto mode) { return reduceKernel<D, decltype(mode)::value>; }, p, x, out);
}

/// The dtypes of the reduce kernels.
constexpr std::initializer_list<DType> kReduceTypes = {DType::F32, DType::F16, DType::BF16,
                                                       DType::F64, DType::I64, DType::I32};

bool gpuReduceDType(DType d) { return dtypeIn(d, kReduceTypes); }

} // namespace

base::StatusOr<ReducePlan> planReduce(ReduceKind kind, DType dtype, const Shape &x,
                                         const std::vector<int64_t> &axes, bool keepdims,
                                         const Shape &out) {
  const std::string op = reduceKindName(kind);
  RP_RETURN_IF_ERROR(checkDType(op, "x", dtype, kReduceTypes));
  RP_RETURN_IF_ERROR(checkNoNegativeDim(op, "x", x));
  const int64_t rank = static_cast<int64_t>(x.size());
  RP_RETURN_IF_ERROR(checkReduceAxes(op, axes, rank));
  const Shape strides = contiguousStrides(x);
  Shape resultShape, keptShape, keptStrides, reducedShape, reducedStrides;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (next < axes.size() && axes[next] == d) {
      ++next;
      reducedShape.push_back(x[d]);
      reducedStrides.push_back(strides[d]);
      if (keepdims)
        resultShape.push_back(1);
    } else {
      keptShape.push_back(x[d]);
      keptStrides.push_back(strides[d]);
      resultShape.push_back(x[d]);
    }
  }
  RP_RETURN_IF_ERROR(checkShapeIs(op, "out", dtype, out, resultShape));
  ReducePlan plan;
  plan.kind = kind;
  plan.dtype = dtype;
  plan.rows = numElements(keptShape);
  plan.count = numElements(reducedShape);
  if (plan.rows == 0)
    return plan;
  if (plan.count == 0 && kind == ReduceKind::Mean && !base::isFloat(dtype))
    return emptyIntegerMean(op, dtype, x, axes);
  RP_ASSIGN_OR_RETURN(plan.kept, makeIter<1>(op.c_str(), keptShape, {keptStrides}));
  RP_ASSIGN_OR_RETURN(plan.reduced, makeIter<1>(op.c_str(), reducedShape, {reducedStrides}));
  const bool unitStride =
      plan.reduced.rank == 0 || plan.reduced.strides[0][plan.reduced.rank - 1] == 1;
  plan.threadsPerRow = threadsPerRowFor(plan.rows, plan.count, unitStride);
  return plan;
}

cudaError_t launchReduce(const ReducePlan &plan, const void *x, void *out, cudaStream_t stream) {
  if (!gpuReduceDType(plan.dtype) || !validThreadsPerRow(plan.threadsPerRow) || plan.rows < 0 ||
      plan.count < 0)
    return cudaErrorInvalidValue;
  if (plan.rows == 0)
    return cudaSuccess;
  const size_t size = base::dtypeSize(plan.dtype);
  if ((plan.count > 0 && !usablePointer(x, size)) || !usablePointer(out, size))
    return cudaErrorInvalidValue;
  switch (plan.dtype) {
  case DType::F32:
    enqueue<DType::F32>(plan, x, out, stream);
    break;
  case DType::F16:
    enqueue<DType::F16>(plan, x, out, stream);
    break;
  case DType::BF16:
    enqueue<DType::BF16>(plan, x, out, stream);
    break;
  case DType::F64:
    enqueue<DType::F64>(plan, x, out, stream);
    break;
  case DType::I64:
    enqueue<DType::I64>(plan, x, out, stream);
    break;
  default:
    enqueue<DType::I32>(plan, x, out, stream);
    break;
  }
  return cudaGetLastError();
}

} // namespace rp::kernels::cuda
