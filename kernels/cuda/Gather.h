//===- Gather.h - Index-driven gathers and scatters on the GPU --*- C++ -*-===//
//
// The GPU kernels of graph.gather (ONNX Gather; embedding lookup), graph.gather_elements
// (ONNX GatherElements; torch.gather) and of their transposes graph.scatter_add and
// graph.scatter_elements_add (the embedding gradient; the cross-entropy gradient of the
// picked logits), with the semantics of the CPU reference kernels (kernels/cpu/Gather.h,
// kernels/cpu/Scatter.h):
//
//   gather              out[i.., j.., k..] = data[i.., indices[j..], k..] along `axis`;
//                       out: data.shape[:axis] + indices.shape + data.shape[axis+1:].
//   gather_elements     out[p] = data[p with p[axis] = indices[p]]; indices of data's rank,
//                       every other dimension at most data's; out: indices' shape.
//   scatter_add         out = 0; out[i.., indices[j..], k..] += updates[i.., j.., k..];
//                       updates: out.shape[:axis] + indices.shape + out.shape[axis+1:].
//   scatter_elements_add out = 0; out[p with p[axis] = indices[p]] += updates[p];
//                       indices of updates' shape, of out's rank, every other dimension at
//                       most out's.
//   scatter             out = data; out[i.., indices[j..], k..] = updates[i.., j.., k..] (the
//                       last j of a repeated target wins); updates as gather's out.
//   scatter_elements    out = data; out[p with p[axis] = indices[p]] = updates[p] (the last p
//                       of a line along `axis` wins); indices and updates as
//                       scatter_elements_add's.
//
// Indices are i64 or i32; an index v in [-s, s) along a dimension of size s addresses v, or
// s + v when v < 0 (ONNX). Gathers and the overwriting scatters (scatter, scatter_elements)
// move bits and take every dtype (f32, f64, f16, bf16, i64, i32, i1). The adding scatters take
// f32, f64, f16 or bf16 and sum in the compute type (f32 and f64 in double, as the CPU;
// f16/bf16 in float), starting from 0, in the row-major order of `updates`, rounding once at
// the store. Every output element is written (the adding scatters write zeros where nothing
// lands, the overwriting ones data), so no prior fill is needed.
//
// Out-of-range indices. The CPU kernels return OutOfRange and write nothing; a kernel cannot
// return a Status, so on the GPU: a gather writes 0 (zero bits: +0.0, 0, false) for every
// output element an out-of-range index selects; a scatter skips the updates such an index
// addresses (they land nowhere); everything else is computed normally. When the launcher is
// given an `indexError` word (device memory, 8 bytes), it first resets it to kNoIndexError
// (cudaMemsetAsync on the stream) and then runs a check over the indices that leaves the
// smallest row-major position of an out-of-range index there (atomicMin, so the result is
// deterministic): the CPU's "first bad index". readIndexError() turns the word into the CPU's
// OutOfRange status (it synchronizes the stream; launchers never do).
//
// Determinism and cost (no floating-point atomics anywhere):
//  - gather, gather_elements: one thread per output element; O(out) work.
//  - scatter_add: the positions j of the `count` indices are grouped by target with j
//    ascending inside a group, then one thread per output element (o, t, k) sums its group's
//    update rows in that order (for rows of at least kScatterAddRowMinInner elements, one
//    block per row (o, t): its group bounds found once, its threads over k). The grouping is a rank sort on the device: the rank of j is
//    the number of j' whose (target, j') precedes (target_j, j); the keys are distinct, so the
//    order is unique. Work: count^2 integer comparisons for the ranks, independent of the row
//    width (an estimate, not measured: 16K indices are 2.7e8 broadcast loads and compares,
//    about a millisecond; it grows quadratically, so index sets far beyond ~64K want a radix
//    sort, e.g. CUB's stable DeviceRadixSort, instead), then O(log count) per output element
//    for the group bounds plus O(updates) reads. A workspace of plan.workspaceBytes
//    (3 * count int64 values) holds the grouping. For the embedding gradient (axis 0,
//    out [V, D], N token rows) that is N^2 comparisons + V*D*log N + N*D reads, fully
//    parallel over the V*D outputs, with each sum in token order, exactly the CPU's.
//  - scatter_elements_add: one thread per output element; it walks the `length` updates of its
//    line along `axis` in order and adds those whose index hits it. Work O(out * length):
//    linear for the cross-entropy gradient (length 1), quadratic for long lines.
//    scatter_elements walks the same line and keeps the last update that hits it.
//  - scatter: the last index position of each target (an integer atomicMax per index into a
//    workspace of `size` int64, reset to -1: the maximum does not depend on the order), then
//    one thread per output element copies that position's update, or data. O(count + out).
// Each output element's sum is the CPU's sequence of additions, so f32 and f64 results are
// bit-identical to the CPU kernels (the device adds in IEEE double without contraction).
//
// Host verification. The per-element bodies (gatherAt, gatherElementsAt, scatterKeyAt,
// scatterRankAt, scatterAddAt, scatterElementsAddAt, scatterLastAt, scatterAt,
// scatterElementsAt, indexCheckAt) are RP_HOST_DEVICE code shared by the __global__ kernels
// (Gather.cu) and the host tests (test/Unit/CudaFusedHostTest.cpp,
// CudaScatterHostTest.cpp), which loop them over every index (with the same workspace carving
// and the launchers' dispatch on element size and index dtype, visitBits and visitIndex).
// Only the launch geometry, the order of the scatter kernels on the stream, the error-word
// reset and the atomics, and readIndexError are exercised by the device tests alone
// (test/Unit/CudaFusedTest.cpp, CudaScatterTest.cpp).
//
// Errors: the plan functions return InvalidArgument naming the op, the operand, the expected
// and the actual dtype, shape or axis (the CPU kernels' messages); the launchers return
// cudaErrorInvalidValue for a null or misaligned pointer that would be used, otherwise
// cudaGetLastError() after enqueueing; they never synchronize. This header contains no device
// code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_GATHER_H
#define RP_KERNELS_CUDA_GATHER_H

#include "kernels/ElementBits.h"
#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rp::kernels::cuda {

//===--- indices ---------------------------------------------------------===//

/// The value of an index-error word when every index was in range.
inline constexpr unsigned long long kNoIndexError = ~0ull;

/// What a plan's indices address, for the range check and its message.
struct IndexSpec {
  const char *op = "";   ///< "gather", "gather_elements", "scatter_add", ...
  const char *role = ""; ///< the indexed tensor: "data" (gathers) or "out" (scatters)
  base::DType dtype = base::DType::I64; ///< I64 or I32
  int64_t count = 0;                          ///< elements of indices
  int64_t size = 0;                           ///< the length of the indexed dimension
  int64_t axis = 0;                           ///< the indexed dimension
};

/// Calls fn(std::integral_constant<DType, I>{}) for the index dtype (I64 or I32).
template <typename Fn> void visitIndex(base::DType dtype, Fn &&fn) {
  if (dtype == base::DType::I32)
    fn(std::integral_constant<base::DType, base::DType::I32>{});
  else
    fn(std::integral_constant<base::DType, base::DType::I64>{});
}

/// Index element p (I64 or I32) as int64.
template <base::DType I> RP_HD inline int64_t loadIndex(const void *indices, int64_t p) {
  return static_cast<int64_t>(loadAs<I>(indices, p));
}

/// The position index `v` addresses along a dimension of `size`: v for v in [0, size),
/// v + size for v in [-size, 0), and -1 (out of range) otherwise.
RP_HD inline int64_t normaliseIndex(int64_t v, int64_t size) {
  if (v < -size || v >= size)
    return -1;
  return v < 0 ? v + size : v;
}

/// The range check of index p: when it is out of range, lowers *error to p (atomicMin on the
/// device).
template <base::DType I>
RP_HD inline void indexCheckAt(const IndexSpec &spec, const void *indices,
                               unsigned long long *error, int64_t p) {
  if (normaliseIndex(loadIndex<I>(indices, p), spec.size) >= 0)
    return;
  const auto position = static_cast<unsigned long long>(p);
#if defined(__CUDA_ARCH__)
  atomicMin(error, position);
#else
  if (position < *error)
    *error = position;
#endif
}

/// OutOfRange "<op>: index <value> at row-major position <position> of indices (<dtype>,
/// <count> elements) is outside [-s, s) (dimension <axis> of <role>)": the CPU kernels'
/// error for the first bad index.
base::Status indexOutOfRange(const IndexSpec &spec, int64_t position, int64_t value);

/// Waits for `stream`, reads the index-error word a launcher filled (device memory) and, when
/// it names a position, that index's value from `indices` (device memory), and returns
/// indexOutOfRange for it; Ok when every index was in range. Errors: Internal naming the CUDA
/// error when a copy or the synchronization fails.
base::Status readIndexError(const IndexSpec &spec, const unsigned long long *error,
                               const void *indices, cudaStream_t stream);

//===--- gather ----------------------------------------------------------===//

/// The geometry of one gather: data is [outer, size, inner] around `axis`, indices has `count`
/// elements, out is [outer, count, inner] (`numel` elements) of `dtype`.
struct GatherPlan {
  base::DType dtype = base::DType::F32;
  IndexSpec index;
  int64_t outer = 0, size = 0, inner = 0, count = 0, numel = 0;
};

/// Checks gather's operands as cpu::gather does: data and out of `dtype` (any dtype); indices
/// i64 or i32; 0 <= axis < data's rank; out of shape data[:axis] + indices + data[axis+1:].
/// Errors: InvalidArgument, e.g. "gather: indices has dtype f32, expected i64 or i32",
/// "gather: axis 2 is out of range, expected [0, 2)", "gather: out is f32[3], expected
/// f32[2, 3]".
base::StatusOr<GatherPlan> planGather(base::DType dtype, const Shape &data,
                                         base::DType indexDType, const Shape &indices,
                                         int64_t axis, const Shape &out);

/// Enqueues the gather on `stream` (device pointers, contiguous, aligned to their element
/// sizes); `indexError` (8 bytes of device memory, 8-aligned) may be null (see the file
/// comment). Returns cudaErrorInvalidValue for a null or misaligned pointer that would be
/// used (nothing launched), otherwise cudaGetLastError(). Never synchronizes.
cudaError_t launchGather(const GatherPlan &plan, const void *data, const void *indices, void *out,
                         unsigned long long *indexError, cudaStream_t stream);

/// Output element o of gather. E is the unsigned integer of the dtype's size (uint8_t,
/// uint16_t, uint32_t or uint64_t: bits are copied), I the index dtype.
template <typename E, base::DType I>
RP_HD inline void gatherAt(const GatherPlan &plan, const void *data, const void *indices, void *out,
                           int64_t o) {
  const int64_t k = o % plan.inner, rest = o / plan.inner;
  const int64_t j = rest % plan.count, outer = rest / plan.count;
  const int64_t t = normaliseIndex(loadIndex<I>(indices, j), plan.size);
  static_cast<E *>(out)[o] =
      t < 0 ? E(0) : static_cast<const E *>(data)[(outer * plan.size + t) * plan.inner + k];
}

//===--- gather_elements -------------------------------------------------===//

/// The geometry of one gather_elements: out and indices have `numel` elements; `data` maps
/// position i of indices to the data offset of its non-axis coordinates (the axis stride
/// zeroed); the axis coordinate adds index * axisStride.
struct GatherElementsPlan {
  base::DType dtype = base::DType::F32;
  IndexSpec index;
  int64_t numel = 0;
  int64_t axisStride = 0;
  StridedIter<1> data;
};

/// Checks gather_elements' operands as cpu::gatherElements does: data and out of `dtype`;
/// indices i64 or i32 of data's rank with every dimension but `axis` at most data's; out of
/// indices' shape. Errors: InvalidArgument, e.g. "gather_elements: indices of shape [3, 4]
/// do not fit data f32[2, 4]: expected rank 2 and every dimension but 1 at most the data's".
base::StatusOr<GatherElementsPlan> planGatherElements(base::DType dtype, const Shape &data,
                                                         base::DType indexDType,
                                                         const Shape &indices, int64_t axis,
                                                         const Shape &out);

/// Enqueues the gather_elements on `stream`. Returns as launchGather.
cudaError_t launchGatherElements(const GatherElementsPlan &plan, const void *data,
                                 const void *indices, void *out, unsigned long long *indexError,
                                 cudaStream_t stream);

/// Output element i of gather_elements (E, I as gatherAt).
template <typename E, base::DType I>
RP_HD inline void gatherElementsAt(const GatherElementsPlan &plan, const void *data,
                                   const void *indices, void *out, int64_t i) {
  int64_t off[1];
  plan.data.offsets(i, off);
  const int64_t t = normaliseIndex(loadIndex<I>(indices, i), plan.index.size);
  static_cast<E *>(out)[i] =
      t < 0 ? E(0) : static_cast<const E *>(data)[off[0] + t * plan.axisStride];
}

//===--- scatter_add -----------------------------------------------------===//

/// The geometry of one scatter_add: out is [outer, size, inner] (`numel` elements) around
/// `axis`, updates [outer, count, inner]. The workspace (workspaceBytes, 8-aligned) holds
/// three int64 arrays of `count`: the normalised targets (keys, -1 when out of range), the
/// targets sorted by (target, position), and the positions in that order.
struct ScatterAddPlan {
  base::DType dtype = base::DType::F32;
  IndexSpec index;
  int64_t outer = 0, size = 0, inner = 0, count = 0, numel = 0;
  size_t workspaceBytes = 0;
};

/// Checks scatter_add's operands as cpu::scatterAdd does: updates and out of `dtype` (f32,
/// f64, f16 or bf16); indices i64 or i32; 0 <= axis < out's rank; updates of shape
/// out[:axis] + indices + out[axis+1:]. Errors: InvalidArgument, e.g. "scatter_add: updates
/// is f32[4, 3], expected f32[2, 3] (gather of out f32[5, 3] along axis 0 by indices of shape
/// [2])".
base::StatusOr<ScatterAddPlan> planScatterAdd(base::DType dtype, const Shape &updates,
                                                 base::DType indexDType, const Shape &indices,
                                                 int64_t axis, const Shape &out);

/// Enqueues the scatter_add on `stream`: the grouping (two kernels over the indices, into
/// `workspace`, which may be null when plan.workspaceBytes is 0) and the sums (one kernel
/// over out). Returns as launchGather.
cudaError_t launchScatterAdd(const ScatterAddPlan &plan, const void *updates, const void *indices,
                             void *out, void *workspace, unsigned long long *indexError,
                             cudaStream_t stream);

/// The three int64 arrays of the scatter_add workspace.
struct ScatterAddWorkspace {
  int64_t *keys;   ///< [count] normalised target of each index position (-1: out of range)
  int64_t *sorted; ///< [count] the keys in (target, position) order
  int64_t *order;  ///< [count] the index positions in that order
};

/// Carves `workspace` (plan.workspaceBytes bytes) into its arrays.
inline ScatterAddWorkspace scatterAddWorkspace(const ScatterAddPlan &plan, void *workspace) {
  int64_t *base = static_cast<int64_t *>(workspace);
  return {base, base + plan.count, base + 2 * plan.count};
}

/// Grouping step 1, for index position j: keys[j] = its target, or -1 when out of range.
template <base::DType I>
RP_HD inline void scatterKeyAt(const ScatterAddPlan &plan, const void *indices, int64_t *keys,
                               int64_t j) {
  keys[j] = normaliseIndex(loadIndex<I>(indices, j), plan.size);
}

/// Grouping step 2, for index position j: its rank r among the (key, position) pairs (a
/// total order), then sorted[r] = keys[j] and order[r] = j. Reads every key: count steps.
RP_HD inline void scatterRankAt(const ScatterAddPlan &plan, const int64_t *keys, int64_t *sorted,
                                int64_t *order, int64_t j) {
  const int64_t key = keys[j];
  int64_t rank = 0;
  for (int64_t p = 0; p < plan.count; ++p) {
    const int64_t other = keys[p];
    rank += (other < key || (other == key && p < j)) ? 1 : 0;
  }
  sorted[rank] = key;
  order[rank] = j;
}

/// The first position g in the ascending `sorted` [0, n) with sorted[g] >= key.
RP_HD inline int64_t lowerBound(const int64_t *sorted, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// Output element e = (o, t, k) of scatter_add: the sum, in the compute type from 0, of
/// updates[o, j, k] over the positions j of target t in ascending order.
template <base::DType D>
RP_HD inline void scatterAddAt(const ScatterAddPlan &plan, const void *updates,
                               const int64_t *sorted, const int64_t *order, void *out, int64_t e) {
  using C = typename DTypeTraits<D>::Compute;
  const int64_t k = e % plan.inner, rest = e / plan.inner;
  const int64_t t = rest % plan.size, o = rest / plan.size;
  const int64_t begin = lowerBound(sorted, plan.count, t);
  const int64_t end = lowerBound(sorted, plan.count, t + 1);
  C acc = C(0);
  for (int64_t g = begin; g < end; ++g)
    acc += static_cast<C>(loadAs<D>(updates, (o * plan.count + order[g]) * plan.inner + k));
  storeAs<D>(out, e, acc);
}

/// Rows of out (outer * size of them) at least this wide run one block per row
/// (scatterAddRowAt): the group bounds of a row are found once, not once per element; the
/// embedding gradient's rows are the hidden size wide. Narrower rows run scatterAddAt.
inline constexpr int64_t kScatterAddRowMinInner = 128;

/// The group of target t in `sorted`: the positions [begin, end).
RP_HD inline void scatterAddGroup(const ScatterAddPlan &plan, const int64_t *sorted, int64_t t,
                                  int64_t &begin, int64_t &end) {
  begin = lowerBound(sorted, plan.count, t);
  end = lowerBound(sorted, plan.count, t + 1);
}

/// Elements k = lane, lane + threads, ... of out row `row` = o * size + t, whose target's group
/// is [begin, end) (scatterAddGroup): scatterAddAt's sums, in the same order, so the same bits.
template <base::DType D>
RP_HD inline void scatterAddRowAt(const ScatterAddPlan &plan, const void *updates,
                                  const int64_t *order, void *out, int64_t row, int64_t begin,
                                  int64_t end, int64_t lane, int64_t threads) {
  using C = typename DTypeTraits<D>::Compute;
  const int64_t o = row / plan.size;
  for (int64_t k = lane; k < plan.inner; k += threads) {
    C acc = C(0);
    for (int64_t g = begin; g < end; ++g)
      acc += static_cast<C>(loadAs<D>(updates, (o * plan.count + order[g]) * plan.inner + k));
    storeAs<D>(out, row * plan.inner + k, acc);
  }
}

//===--- scatter_elements_add --------------------------------------------===//

/// The geometry of one scatter_elements_add over `rank` dimensions (those of out, unit
/// dimensions of both out and updates dropped): out element e has coordinates in outShape;
/// its line of updates (every coordinate but `axis` equal) starts at the updates offset
/// sum(coord[d] * updStrides[d], d != axis) and has `length` elements `lineStep` apart;
/// out elements with a coordinate d >= updShape[d] receive nothing.
struct ScatterElementsAddPlan {
  base::DType dtype = base::DType::F32;
  IndexSpec index;
  int rank = 0;
  int axis = 0; ///< in the dropped-unit-dimension numbering
  int64_t numel = 0, length = 0, lineStep = 0;
  int64_t outShape[kMaxRank] = {};
  int64_t updShape[kMaxRank] = {};
  int64_t updStrides[kMaxRank] = {};
};

/// Checks scatter_elements_add's operands as cpu::scatterElementsAdd does: updates and out of
/// `dtype` (f32, f64, f16 or bf16); indices i64 or i32 of updates' shape; 0 <= axis < out's
/// rank; updates of out's rank with every dimension but `axis` at most out's; and at most
/// kMaxRank dimensions that are not 1 in both (a limit of this kernel). Errors:
/// InvalidArgument, e.g. "scatter_elements_add: indices have shape [2], expected the shape of
/// updates [3]".
base::StatusOr<ScatterElementsAddPlan>
planScatterElementsAdd(base::DType dtype, const Shape &updates, base::DType indexDType,
                       const Shape &indices, int64_t axis, const Shape &out);

/// Enqueues the scatter_elements_add on `stream` (one kernel over out). Returns as
/// launchGather.
cudaError_t launchScatterElementsAdd(const ScatterElementsAddPlan &plan, const void *updates,
                                     const void *indices, void *out, unsigned long long *indexError,
                                     cudaStream_t stream);

/// Output element e's line of updates: its first offset (`line`) and e's coordinate along the
/// axis (`target`); false when e lies outside the updates' extent (no update reaches it).
RP_HD inline bool scatterElementsLine(const ScatterElementsAddPlan &plan, int64_t e,
                                      int64_t &line, int64_t &target) {
  int64_t rem = e;
  line = target = 0;
  bool inside = true;
  for (int d = plan.rank - 1; d >= 0; --d) {
    const int64_t pos = rem % plan.outShape[d];
    rem /= plan.outShape[d];
    if (d == plan.axis) {
      target = pos;
      continue;
    }
    inside = inside && pos < plan.updShape[d];
    line += pos * plan.updStrides[d];
  }
  return inside;
}

/// Output element e of scatter_elements_add: the sum, in the compute type from 0, of the
/// updates of its line whose index addresses it, in line order.
template <base::DType D, base::DType I>
RP_HD inline void scatterElementsAddAt(const ScatterElementsAddPlan &plan, const void *updates,
                                       const void *indices, void *out, int64_t e) {
  using C = typename DTypeTraits<D>::Compute;
  int64_t line, target;
  const bool inside = scatterElementsLine(plan, e, line, target);
  C acc = C(0);
  if (inside)
    for (int64_t j = 0; j < plan.length; ++j) {
      const int64_t p = line + j * plan.lineStep;
      if (normaliseIndex(loadIndex<I>(indices, p), plan.index.size) == target)
        acc += static_cast<C>(loadAs<D>(updates, p));
    }
  storeAs<D>(out, e, acc);
}

//===--- scatter ---------------------------------------------------------===//

/// scatter has scatter_add's geometry (data and out in the role of out); its workspace
/// (workspaceBytes, 8-aligned) holds `size` int64: the last index position that targets each
/// position (-1: none).
using ScatterPlan = ScatterAddPlan;

/// Checks scatter's operands as cpu::scatter does: data, updates and out of `dtype` (any);
/// indices i64 or i32; 0 <= axis < data's rank; updates of shape data[:axis] + indices +
/// data[axis+1:]; out of data's shape. Errors: InvalidArgument, e.g. "scatter: updates is
/// f32[4, 3], expected f32[2, 3] (gather of data f32[5, 3] along axis 0 by indices of shape
/// [2])".
base::StatusOr<ScatterPlan> planScatter(base::DType dtype, const Shape &data,
                                        base::DType indexDType, const Shape &indices,
                                        const Shape &updates, int64_t axis, const Shape &out);

/// Enqueues the scatter on `stream`: the last positions (a reset and one kernel over the
/// indices, into `workspace`, which may be null when there is nothing to scatter) and the
/// copies (one kernel over out; out may be data's buffer). Returns as launchGather.
cudaError_t launchScatter(const ScatterPlan &plan, const void *data, const void *indices,
                          const void *updates, void *out, void *workspace,
                          unsigned long long *indexError, cudaStream_t stream);

/// Step 1, for index position j: last[target] = max(last[target], j) (atomicMax on the
/// device); an out-of-range index targets nothing.
template <base::DType I>
RP_HD inline void scatterLastAt(const ScatterPlan &plan, const void *indices, int64_t *last,
                                int64_t j) {
  const int64_t t = normaliseIndex(loadIndex<I>(indices, j), plan.size);
  if (t < 0)
    return;
#if defined(__CUDA_ARCH__)
  atomicMax(reinterpret_cast<long long *>(last + t), static_cast<long long>(j));
#else
  if (j > last[t])
    last[t] = j;
#endif
}

/// Step 2, output element e = (o, t, k): the update of t's last position, or data's element.
/// E is the unsigned integer of the dtype's size (bits are copied).
template <typename E>
RP_HD inline void scatterAt(const ScatterPlan &plan, const void *data, const void *updates,
                            const int64_t *last, void *out, int64_t e) {
  const int64_t k = e % plan.inner, rest = e / plan.inner;
  const int64_t t = rest % plan.size, o = rest / plan.size;
  const int64_t j = last[t];
  static_cast<E *>(out)[e] = j < 0 ? static_cast<const E *>(data)[e]
                                   : static_cast<const E *>(updates)[(o * plan.count + j) *
                                                                         plan.inner + k];
}

//===--- scatter_elements ------------------------------------------------===//

/// scatter_elements has scatter_elements_add's geometry (data in the role of out).
using ScatterElementsPlan = ScatterElementsAddPlan;

/// Checks scatter_elements' operands as cpu::scatterElements does: data, updates and out of
/// `dtype` (any); indices i64 or i32 of updates' shape; 0 <= axis < data's rank; updates of
/// data's rank with every dimension but `axis` at most data's; out of data's shape; at most
/// kMaxRank dimensions that are not 1 in both data and updates. Errors: InvalidArgument, e.g.
/// "scatter_elements: updates of shape [3, 1] do not fit data f32[2, 3]: expected rank 2 and
/// every dimension but 1 at most data's".
base::StatusOr<ScatterElementsPlan> planScatterElements(base::DType dtype, const Shape &data,
                                                        base::DType indexDType,
                                                        const Shape &indices,
                                                        const Shape &updates, int64_t axis,
                                                        const Shape &out);

/// Enqueues the scatter_elements on `stream` (one kernel over out; out may be data's buffer).
/// Returns as launchGather.
cudaError_t launchScatterElements(const ScatterElementsPlan &plan, const void *data,
                                  const void *indices, const void *updates, void *out,
                                  unsigned long long *indexError, cudaStream_t stream);

/// Output element e of scatter_elements: the last update of its line whose index addresses
/// it, or data's element (E, I as gatherAt).
template <typename E, base::DType I>
RP_HD inline void scatterElementsAt(const ScatterElementsPlan &plan, const void *data,
                                    const void *updates, const void *indices, void *out,
                                    int64_t e) {
  int64_t line, target;
  E v = static_cast<const E *>(data)[e];
  if (scatterElementsLine(plan, e, line, target))
    for (int64_t j = 0; j < plan.length; ++j) {
      const int64_t p = line + j * plan.lineStep;
      if (normaliseIndex(loadIndex<I>(indices, p), plan.index.size) == target)
        v = static_cast<const E *>(updates)[p];
    }
  static_cast<E *>(out)[e] = v;
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
void gather(const GatherPlan &plan, const void *data, const void *indices, void *out);
void gatherElements(const GatherElementsPlan &plan, const void *data, const void *indices,
                    void *out);
/// `workspace`: plan.workspaceBytes bytes.
void scatterAdd(const ScatterAddPlan &plan, const void *updates, const void *indices, void *out,
                void *workspace);
void scatterElementsAdd(const ScatterElementsAddPlan &plan, const void *updates,
                        const void *indices, void *out);
/// `workspace`: plan.workspaceBytes bytes.
void scatter(const ScatterPlan &plan, const void *data, const void *indices, const void *updates,
             void *out, void *workspace);
void scatterElements(const ScatterElementsPlan &plan, const void *data, const void *indices,
                     const void *updates, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_GATHER_H
