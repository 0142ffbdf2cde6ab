//===- MatMul.cpp - Matrix product (graph.matmul) on the CPU --------------===//

#include "kernels/cpu/MatMul.h"

#include "kernels/cpu/KernelSupport.h"
#include "kernels/cpu/Sgemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

namespace rp::kernels::cpu {

using namespace detail;
using base::formatShape;
using base::invalidArgument;
using base::okStatus;

namespace {

/// The operands' shapes after 1-D promotion, and the batch iteration.
struct MatMulPlan {
  int64_t m = 0, k = 0, n = 0;
  Shape batch;            // broadcast batch dimensions
  Shape aBatchStrides;    // per batch dim, in elements of a (0 where broadcast)
  Shape bBatchStrides;    // likewise for b
  bool bHasBatch = false; // b has batch dimensions of its own
  bool transA = false;    // a holds [..., K, M] (graph.matmul's transpose_a)
  bool transB = false;    // b holds [..., N, K] (transpose_b)
  int64_t batchCount() const { return product(batch, 0, batch.size()); }
};

StatusOr<MatMulPlan> plan(const HostTensor &a, const HostTensor &b, bool transA, bool transB,
                          Shape &resultShape) {
  const char *op = "matmul";
  if (a.rank() == 0 || b.rank() == 0)
    return invalidArgument(std::string(op) + ": expected operands of rank >= 1, got a " +
                           a.typeString() + " and b " + b.typeString());
  if ((transA && a.rank() < 2) || (transB && b.rank() < 2))
    return invalidArgument(std::string(op) +
                           ": expected a transposed operand of rank >= 2, got a " +
                           a.typeString() + (transA ? " (transposed)" : "") + " and b " +
                           b.typeString() + (transB ? " (transposed)" : ""));
  Shape sa = a.shape(), sb = b.shape();
  if (transA)
    std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (transB)
    std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  const bool aVector = sa.size() == 1, bVector = sb.size() == 1;
  if (aVector)
    sa.insert(sa.begin(), 1);
  if (bVector)
    sb.push_back(1);
  MatMulPlan p;
  p.m = sa[sa.size() - 2];
  p.k = sa.back();
  p.n = sb.back();
  if (sb[sb.size() - 2] != p.k)
    return contractionMismatch(a.shape(), p.k, b.shape(), sb[sb.size() - 2]);
  const Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  RP_ASSIGN_OR_RETURN(p.batch, broadcastShapes(op, {&batchA, &batchB}));
  p.aBatchStrides = broadcastStrides(batchA, p.batch);
  p.bBatchStrides = broadcastStrides(batchB, p.batch);
  for (int64_t &s : p.aBatchStrides)
    s *= p.m * p.k;
  for (int64_t &s : p.bBatchStrides)
    s *= p.k * p.n;
  p.bHasBatch = !batchB.empty();
  p.transA = transA;
  p.transB = transB;
  resultShape = p.batch;
  if (!aVector)
    resultShape.push_back(p.m);
  if (!bVector)
    resultShape.push_back(p.n);
  return p;
}

/// Element offsets of batch `t` in a and b.
void batchOffsets(const MatMulPlan &p, int64_t t, int64_t &offA, int64_t &offB) {
  offA = offB = 0;
  for (size_t d = p.batch.size(); d-- > 0;) {
    const int64_t idx = t % p.batch[d];
    t /= p.batch[d];
    offA += idx * p.aBatchStrides[d];
    offB += idx * p.bBatchStrides[d];
  }
}

/// Output tiles of a GEMM: fixed sizes, so that each output element is
/// computed by the same single-threaded OpenBLAS call whatever the number of
/// threads (with OpenBLAS's own threading the rounding changes with the thread
/// count).
constexpr int64_t kTileRows = 64;
constexpr int64_t kTileCols = 1024;
/// Below this many multiply-adds a product runs on one thread.
constexpr int64_t kParallelMinFlops = int64_t(1) << 18;

/// One GEMM tile: operand layouts, as OpenBLAS takes them.
struct TileLayout {
  CBLAS_TRANSPOSE ta, tb;
  int lda, ldb, ldc;
};

void gemm(const TileLayout &l, const float *a, const float *b, float *c, int m, int n, int k) {
  cblas_sgemm(CblasRowMajor, l.ta, l.tb, m, n, k, 1.0f, a, l.lda, b, l.ldb, 0.0f, c, l.ldc);
}
void gemm(const TileLayout &l, const double *a, const double *b, double *c, int m, int n, int k) {
  cblas_dgemm(CblasRowMajor, l.ta, l.tb, m, n, k, 1.0, a, l.lda, b, l.ldb, 0.0, c, l.ldc);
}

/// The GEMMs of a product: M after folding a's batch into it where possible.
struct GemmShape {
  int64_t m, n, k, batches;
  bool fold; // the batch of (contiguous, untransposed) a folded into M (b has no batch)
};

GemmShape gemmShape(const MatMulPlan &p) {
  const bool fold = !p.bHasBatch && !p.transA;
  return {fold ? p.m * p.batchCount() : p.m, p.n, p.k, fold ? 1 : p.batchCount(), fold};
}

/// f32 on the kernels' own sgemm (Sgemm.h): each output element is one FMA chain whatever the
/// tiling, so the GEMMs are split into one row band per thread (bands of a multiple of 24 rows).
Status sgemmMatMul(const MatMulPlan &p, const HostTensor &a, const HostTensor &b,
                   HostTensor &out) {
  const float *pa = a.data<float>();
  const float *pb = b.data<float>();
  float *pc = out.data<float>();
  const GemmShape g = gemmShape(p);
  const int threads =
      g.batches * g.m * g.n * g.k >= kParallelMinFlops ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t bandsPerBatch =
      std::min<int64_t>((threads + g.batches - 1) / g.batches, (g.m + 23) / 24);
  const int64_t band = ((g.m + bandsPerBatch - 1) / bandsPerBatch + 23) / 24 * 24;
  const int64_t bands = (g.m + band - 1) / band;
  const int64_t tasks = g.batches * bands;
#pragma omp parallel for schedule(dynamic) if (threads > 1 && tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t batch = t / bands, row = t % bands * band;
    int64_t offA = 0, offB = 0;
    if (!g.fold)
      batchOffsets(p, batch, offA, offB);
    sgemm(p.transA, p.transB, std::min(band, g.m - row), g.n, g.k, 1.0f,
          pa + offA + (p.transA ? row : row * g.k), p.transA ? g.m : g.k, pb + offB,
          p.transB ? g.k : g.n, 0.0f, pc + batch * g.m * g.n + row * g.n, g.n);
  }
  return okStatus();
}

template <typename T>
Status floatMatMul(const MatMulPlan &p, const HostTensor &a, const HostTensor &b, HostTensor &out) {
  if constexpr (std::is_same_v<T, float>)
    if (sgemmAvailable())
      return sgemmMatMul(p, a, b, out);
  const T *pa = a.data<T>();
  const T *pb = b.data<T>();
  T *pc = out.data<T>();
  const GemmShape g = gemmShape(p);
  const bool fold = g.fold;
  const int64_t m = g.m, n = g.n, k = g.k, batches = g.batches;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return invalidArgument("matmul: GEMM dimensions M = " + std::to_string(m) +
                           ", N = " + std::to_string(n) + ", K = " + std::to_string(k) +
                           " exceed OpenBLAS's 32-bit int");
  // OpenBLAS runs single-threaded inside our tiles (process-wide setting; its
  // default is one thread per core, or OPENBLAS_NUM_THREADS).
  if (openblas_get_num_threads() != 1)
    openblas_set_num_threads(1);
  const int64_t rowTiles = (m + kTileRows - 1) / kTileRows;
  const int64_t colTiles = (n + kTileCols - 1) / kTileCols;
  const int64_t tasks = batches * rowTiles * colTiles;
  const TileLayout layout{p.transA ? CblasTrans : CblasNoTrans,
                          p.transB ? CblasTrans : CblasNoTrans, static_cast<int>(p.transA ? m : k),
                          static_cast<int>(p.transB ? k : n), static_cast<int>(n)};
#pragma omp parallel for schedule(dynamic) if (tasks > 1 &&                                        \
                                               batches * m * n * k >= kParallelMinFlops)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t batch = t / (rowTiles * colTiles);
    const int64_t row = (t / colTiles) % rowTiles * kTileRows;
    const int64_t col = t % colTiles * kTileCols;
    int64_t offA = 0, offB = 0;
    if (!fold)
      batchOffsets(p, batch, offA, offB);
    const int64_t rows = std::min(kTileRows, m - row), cols = std::min(kTileCols, n - col);
    // A tile's rows start at row `row` of [M, K] a, or at column `row` of [K, M] a; its
    // columns at column `col` of [K, N] b, or at row `col` of [N, K] b.
    gemm(layout, pa + offA + (p.transA ? row : row * k), pb + offB + (p.transB ? col * k : col),
         pc + batch * m * n + row * n + col, static_cast<int>(rows), static_cast<int>(cols),
         static_cast<int>(k));
  }
  return okStatus();
}

template <typename T>
void intMatMul(const MatMulPlan &p, const HostTensor &a, const HostTensor &b, HostTensor &out) {
  const T *pa = a.data<T>();
  const T *pb = b.data<T>();
  T *pc = out.data<T>();
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t rows = p.batchCount() * m;
#pragma omp parallel for schedule(static) if (rows * n * k >= kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offA = 0, offB = 0;
    batchOffsets(p, r / m, offA, offB);
    // a(i, kk) and b(kk, j) through the element strides of the stored layouts.
    const int64_t aRow = p.transA ? 1 : k, aCol = p.transA ? m : 1;
    const int64_t bRow = p.transB ? 1 : n, bCol = p.transB ? k : 1;
    const T *arow = pa + offA + (r % m) * aRow;
    const T *bmat = pb + offB;
    T *crow = pc + r * n;
    std::vector<uint64_t> acc(static_cast<size_t>(n), 0); // wraps like int64
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(arow[kk * aCol]));
      const T *brow = bmat + kk * bRow;
      for (int64_t j = 0; j < n; ++j)
        acc[j] += x * static_cast<uint64_t>(static_cast<int64_t>(brow[j * bCol]));
    }
    for (int64_t j = 0; j < n; ++j)
      crow[j] = static_cast<T>(static_cast<int64_t>(acc[j]));
  }
}

} // namespace

Status matmul(const HostTensor &a, const HostTensor &b, HostTensor &out) {
  return matmul(a, b, /*transposeA=*/false, /*transposeB=*/false, out);
}

Status matmul(const HostTensor &a, const HostTensor &b, bool transposeA, bool transposeB,
              HostTensor &out) {
  const char *op = "matmul";
  RP_RETURN_IF_ERROR(checkDType(op, "a", a, kNumericTypes));
  RP_RETURN_IF_ERROR(checkSameDType(op, "a", a, "b", b));
  Shape resultShape;
  RP_ASSIGN_OR_RETURN(MatMulPlan p, plan(a, b, transposeA, transposeB, resultShape));
  RP_RETURN_IF_ERROR(checkType(op, "out", out, a.dtype(), resultShape));
  if (out.numElements() == 0)
    return okStatus();
  if (p.k == 0) { // an empty sum (OpenBLAS's K = 0 behaviour is not documented)
    std::memset(out.raw(), 0, out.byteSize());
    return okStatus();
  }
  switch (a.dtype()) {
  case DType::F32:
    return floatMatMul<float>(p, a, b, out);
  case DType::F64:
    return floatMatMul<double>(p, a, b, out);
  case DType::I64:
    intMatMul<int64_t>(p, a, b, out);
    break;
  default:
    intMatMul<int32_t>(p, a, b, out);
    break;
  }
  return okStatus();
}

} // namespace rp::kernels::cpu
