//===- KernelSupport.h - Shared checks and loops of the CPU kernels -*- C++ -*-===//
//
// Internal to kernels/cpu (not a public API): argument checks that build the
// kernels' error messages, dtype dispatch, numpy broadcasting, and one strided
// loop nest that elementwise, broadcast and data-movement kernels share.
//
// Messages name the op, what is wrong, the expected and the actual value:
//   "add: out is f32[2, 4], expected f32[2, 3]"
//   "exp: x has dtype i64, expected f32 or f64"
//
// Parallelism: loops split the *output* among OpenMP threads and compute each
// output element in one thread, in a fixed order, so results never depend on
// the thread count (a project rule: docs/DECISIONS.md). A loop goes parallel
// only from kParallelMinElements elements on.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_KERNELSUPPORT_H
#define RP_KERNELS_CPU_KERNELSUPPORT_H

#include "kernels/KernelChecks.h"
#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace rp::kernels::cpu::detail {

using base::DType;
using base::HostTensor;
using base::Status;
using base::StatusOr;
using Shape = std::vector<int64_t>;

/// Below this many elements a loop runs serially (waking the OpenMP team costs
/// a few microseconds, about what 32K simple elements cost).
constexpr int64_t kParallelMinElements = int64_t(1) << 15;

inline constexpr std::initializer_list<DType> kFloatTypes = {DType::F32, DType::F64};
inline constexpr std::initializer_list<DType> kNumericTypes = {DType::F32, DType::F64, DType::I64,
                                                               DType::I32};
inline constexpr std::initializer_list<DType> kAllTypes = {DType::F32, DType::F64, DType::I64,
                                                           DType::I32, DType::I1};
using kernels::kIndexTypes;

//===--- checks (kernels/KernelChecks.h words them for both backends) ------===//

using kernels::checkAxis;
using kernels::checkBroadcastsTo;
using kernels::dtypeList;

/// InvalidArgument "<op>: <what> has dtype <d>, expected <allowed>" unless
/// t.dtype() is in `allowed` (f16/bf16 get a note: callers upcast them).
inline Status checkDType(const char *op, const char *what, const HostTensor &t,
                         std::initializer_list<DType> allowed) {
  const bool half = t.dtype() == DType::F16 || t.dtype() == DType::BF16;
  return kernels::checkDType(op, what, t.dtype(), allowed,
                             half ? " (CPU kernels take f16/bf16 upcast to f32)" : "");
}

/// InvalidArgument unless b has a's dtype.
inline Status checkSameDType(const char *op, const char *whatA, const HostTensor &a,
                             const char *whatB, const HostTensor &b) {
  return kernels::checkSameDType(op, whatA, a.dtype(), whatB, b.dtype());
}

/// InvalidArgument "<op>: <what> is <dtype><shape>, expected <dtype><shape>"
/// unless t has exactly `dtype` and `shape`.
inline Status checkType(const char *op, const char *what, const HostTensor &t, DType dtype,
                        const Shape &shape) {
  return kernels::checkType(op, what, t.dtype(), t.shape(), dtype, shape);
}

/// The numpy broadcast of `shapes` (trailing dimensions aligned, 1 stretches),
/// or InvalidArgument naming the shapes and the first conflicting dimension.
StatusOr<Shape> broadcastShapes(const char *op, std::initializer_list<const Shape *> shapes);

/// Row-major element strides (base/HostTensor.h; the GPU planners use them too).
using base::contiguousStrides;

/// Strides reading `from` broadcast to `to` (base/HostTensor.h).
using base::broadcastStrides;

/// Product of the dimensions in [begin, end) of `shape`.
int64_t product(const Shape &shape, size_t begin, size_t end);

/// The row-major multi-index of element `linear` of `shape`, as "[1, 0, 3]".
std::string formatIndex(int64_t linear, const Shape &shape);

//===--- dtype dispatch -----------------------------------------------------===//

template <typename T>
struct Tag {
  using type = T;
};

/// Calls fn(Tag<C++ type>{}) for the storage type of `t` (f32 float, f64
/// double, i64 int64_t, i32 int32_t, i1 uint8_t); f16/bf16 are not kernel
/// types, so callers check the dtype first (they get Tag<uint16_t>).
template <typename Fn>
decltype(auto) visitAll(DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(Tag<float>{});
  case DType::F64:
    return fn(Tag<double>{});
  case DType::I64:
    return fn(Tag<int64_t>{});
  case DType::I32:
    return fn(Tag<int32_t>{});
  case DType::I1:
  case DType::U8:
    return fn(Tag<uint8_t>{});
  case DType::F16:
  case DType::BF16:
    break;
  }
  return fn(Tag<uint16_t>{});
}

/// As visitAll for F32 and F64 only (anything else runs the double version;
/// callers check the dtype first).
template <typename Fn>
decltype(auto) visitFloat(DType t, Fn &&fn) {
  if (t == DType::F32)
    return fn(Tag<float>{});
  return fn(Tag<double>{});
}

/// As visitAll for F32, F64, I64 and I32 (anything else runs the int32
/// version; callers check the dtype first).
template <typename Fn>
decltype(auto) visitNumeric(DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(Tag<float>{});
  case DType::F64:
    return fn(Tag<double>{});
  case DType::I64:
    return fn(Tag<int64_t>{});
  default:
    break;
  }
  return fn(Tag<int32_t>{});
}

/// The type a kernel computes an element of T in: double for f32 and f64 (one
/// rounding at the store), T otherwise.
template <typename T>
using Compute = std::conditional_t<std::is_floating_point_v<T>, double, T>;

//===--- vectorisable f32 math and small GEMMs --------------------------------===//

/// e^x in f32 arithmetic, branch-free so that loops over it vectorise (glibc's expf is a
/// call per element). Cephes' expf: x = n ln2 + r (n = round(x log2 e), ln2 in two parts),
/// e^r by a degree-7 polynomial on |r| <= ln2 / 2, times 2^n in two halves. Relative error
/// within 2 ulp of e^x over [-87, 88.7] (test/Unit/CpuFusedTest.cpp, "ExpF32"); e^x > FLT_MAX
/// is +inf, x < -104 gives 0 (subnormal results are within a few subnormal ulp), NaN stays
/// NaN. Same bits on every x86-64 and at any thread count: f32 operations only, no
/// contraction into FMA (kernels/cpu builds with -ffp-contract=off).
inline float expF32(float x) {
  const float kLog2e = 1.44269504088896341f, kMagic = 12582912.0f; // 1.5 * 2^23
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  // n from a NaN would be a NaN converted to int (undefined): take n = 0 then, r keeps the NaN.
  const float xn = x == x ? x : 0.0f;
  const float n = (xn * kLog2e + kMagic) - kMagic; // round to nearest
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n), n1 = ni / 2, n2 = ni - n1;
  const int32_t b1 = (n1 + 127) * (1 << 23), b2 = (n2 + 127) * (1 << 23);
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  return p * s1 * s2;
}

/// The logistic function 1 / (1 + e^-x) in f32 with expF32, without overflow for large |x|
/// (e^-|x| <= 1), branch-free.
inline float sigmoidF32(float x) {
  const float e = expF32(-std::fabs(x));
  const float inv = 1.0f / (1.0f + e);
  return x >= 0.0f ? inv : e * inv;
}

/// e^x: expF32 for f32, std::exp for f64 (the f64 kernels keep libm's accuracy).
inline float expOf(float x) { return expF32(x); }
inline double expOf(double x) { return std::exp(x); }

/// C = alpha op(A) op(B) + beta C, row-major, on the calling thread (the kernels parallelise
/// over calls): op(A) is [m, k], op(B) [k, n]; transA / transB read A as [k, m] / B as [n, k];
/// lda, ldb, ldc are the stored row lengths. f32: the kernels' own sgemm (kernels/cpu/Sgemm.h:
/// one FMA chain per element, in k order), or OpenBLAS on a CPU without FMA; f64: OpenBLAS
/// (its own threads switched off, as in matmul).
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
          const double *a, int64_t lda, const double *b, int64_t ldb, double beta, double *c,
          int64_t ldc);

/// Query rows per block of the attention kernels (forward and VJP): a block's scores are one
/// [rows, keys] GEMM.
constexpr int64_t kAttentionQueryBlock = 64;

/// The first key a block of query rows from i0 on sees: i0 - window + 1 (at least 0) with a
/// sliding `window` (>= 1, causal), 0 without one (window 0).
inline int64_t attentionFirstKey(int64_t i0, bool causal, int64_t window) {
  return causal && window > 0 && i0 - window + 1 > 0 ? i0 - window + 1 : 0;
}

/// Softmax in place of `rows` rows of attention scores, row r (query i0 + r) stored at
/// p + r * keys: over its first `causal ? i0 + r + 1 : keys` entries (the rest become 0), as
/// e_j = e^(s_j - max) (expOf), then e_j / sum_j e_j with the sum in double in key order. The
/// forward and the VJP both call it, so the VJP's probabilities are the forward's bits.
/// With `sink` (attention sinks, GPT-OSS): one more logit *sink joins the max and, after the
/// keys, the sum, and has no value; `sinkProb` (when not null) receives each row's
/// e^(sink - max) / sum in sinkProb[r].
/// With a sliding `window` (>= 1, causal): column c holds key k0 + c, and row r keeps the
/// keys j with i - window < j <= i (i = i0 + r); the columns outside become 0. `window` 0 is
/// none (and k0 then 0).
template <typename T>
void softmaxRows(T *p, int64_t rows, int64_t keys, int64_t i0, bool causal,
                 const T *sink = nullptr, T *sinkProb = nullptr, int64_t k0 = 0,
                 int64_t window = 0) {
  for (int64_t r = 0; r < rows; ++r) {
    T *pr = p + r * keys;
    const int64_t i = i0 + r;
    const int64_t n = causal && i + 1 - k0 < keys ? i + 1 - k0 : keys;
    const int64_t lo = window > 0 && i - window + 1 > k0 ? i - window + 1 - k0 : 0;
    T m = sink ? *sink : T(-INFINITY);
    for (int64_t j = lo; j < n; ++j)
      m = pr[j] > m ? pr[j] : m;
    for (int64_t j = lo; j < n; ++j)
      pr[j] = expOf(pr[j] - m);
    double sum = 0.0;
    for (int64_t j = lo; j < n; ++j)
      sum += static_cast<double>(pr[j]);
    const T sinkExp = sink ? expOf(*sink - m) : T(0);
    sum += static_cast<double>(sinkExp);
    const T total = static_cast<T>(sum);
    for (int64_t j = 0; j < lo; ++j)
      pr[j] = T(0);
    for (int64_t j = lo; j < n; ++j)
      pr[j] = pr[j] / total;
    for (int64_t j = n; j < keys; ++j)
      pr[j] = T(0);
    if (sinkProb)
      sinkProb[r] = sinkExp / total;
  }
}

//===--- strided loop nest --------------------------------------------------===//

/// A loop nest over a contiguous output of some shape, reading N operands at
/// arbitrary element strides (0 for broadcast, negative for reversed slices).
/// Adjacent dimensions that every operand walks contiguously are merged, so a
/// same-shape elementwise op is one flat loop.
template <size_t N>
struct LoopNest {
  Shape dims;                    ///< coalesced dims; at least one
  std::array<Shape, N> strides;  ///< per operand, one per dim
  std::array<int64_t, N> base{}; ///< per operand, element offset of index 0
};

/// Builds the nest for an output of `shape` with operand strides (each has
/// one entry per dimension of `shape`).
template <size_t N>
LoopNest<N> makeLoopNest(const Shape &shape, const std::array<Shape, N> &strides,
                         const std::array<int64_t, N> &base = {}) {
  LoopNest<N> nest;
  nest.base = base;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!nest.dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        merge = merge && nest.strides[k].back() == strides[k][d] * shape[d];
      if (merge) {
        nest.dims.back() *= shape[d];
        for (size_t k = 0; k < N; ++k)
          nest.strides[k].back() = strides[k][d];
        continue;
      }
    }
    nest.dims.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k)
      nest.strides[k].push_back(strides[k][d]);
  }
  if (nest.dims.empty()) {
    nest.dims.push_back(1);
    for (size_t k = 0; k < N; ++k)
      nest.strides[k].push_back(0);
  }
  return nest;
}

/// Runs fn(outOffset, offsets, count, innerStrides) over the nest in chunks
/// of the innermost dimension: output elements [outOffset, outOffset + count)
/// read operand k at offsets[k] + j * innerStrides[k], j < count. Chunks are
/// disjoint in the output and may run on different threads.
template <size_t N, typename Fn>
void forEachChunk(const LoopNest<N> &nest, Fn &&fn) {
  constexpr int64_t kChunk = 8192;
  const int64_t inner = nest.dims.back();
  const int64_t rows = product(nest.dims, 0, nest.dims.size() - 1);
  if (inner == 0 || rows == 0)
    return;
  const int64_t chunk = inner < kChunk ? inner : kChunk;
  const int64_t chunksPerRow = (inner + chunk - 1) / chunk;
  const int64_t tasks = rows * chunksPerRow;
  std::array<int64_t, N> innerStrides;
  for (size_t k = 0; k < N; ++k)
    innerStrides[k] = nest.strides[k].back();
  const int outerDims = static_cast<int>(nest.dims.size()) - 1;
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelMinElements)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t row = t / chunksPerRow;
    const int64_t begin = (t % chunksPerRow) * chunk;
    std::array<int64_t, N> off = nest.base;
    int64_t rem = row;
    for (int d = outerDims - 1; d >= 0; --d) {
      const int64_t idx = rem % nest.dims[d];
      rem /= nest.dims[d];
      for (size_t k = 0; k < N; ++k)
        off[k] += idx * nest.strides[k][d];
    }
    for (size_t k = 0; k < N; ++k)
      off[k] += begin * innerStrides[k];
    const int64_t count = inner - begin < chunk ? inner - begin : chunk;
    fn(row * inner + begin, off, count, innerStrides);
  }
}

/// Copies the elements of `src` (any dtype; bytes of its element size) read at
/// `strides` from `base` into the contiguous `out` of shape out.shape(): the
/// one loop behind transpose, expand, slice and split.
void stridedCopy(const HostTensor &src, const Shape &strides, int64_t base, HostTensor &out);

/// Converts gather/scatter `indices` (I64 or I32) to int64 in [0, size): an index in
/// [-size, size) counts from the end (ONNX). Errors: OutOfRange naming the first bad index,
/// its position, and dimension `axis` of the tensor `role` (`tensor`) that it indexes.
Status normaliseIndices(const char *op, const HostTensor &indices, int64_t size, int64_t axis,
                        const char *role, const HostTensor &tensor, std::vector<int64_t> &result);

/// Where a strided slice of a contiguous tensor lies: its shape, and the element strides and
/// base offset of its elements in the sliced tensor.
struct SliceGeometry {
  Shape shape, strides;
  int64_t base = 0;
};

/// The geometry of `graph.slice`'s normalised bounds (axes strictly increasing; step > 0:
/// 0 <= start <= end <= dim; step < 0: -1 <= end <= start < dim) on a tensor of `shape`.
/// Errors: InvalidArgument naming the axis and bounds.
StatusOr<SliceGeometry> sliceGeometry(const char *op, const Shape &shape,
                                      const std::vector<int64_t> &axes,
                                      const std::vector<int64_t> &starts,
                                      const std::vector<int64_t> &ends,
                                      const std::vector<int64_t> &steps);

} // namespace rp::kernels::cpu::detail

#endif // RP_KERNELS_CPU_KERNELSUPPORT_H
