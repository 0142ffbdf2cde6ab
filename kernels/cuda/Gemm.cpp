//===- Gemm.cpp - Matrix product (graph.matmul) on the GPU ----------------===//
//
// planMatMul: numpy broadcasting of the batch dimensions into element strides,
// then dropping extent-1 dimensions, merging nested ones, folding into M, and
// choosing the strided batch (see Gemm.h). GemmRunner: cuBLASLt descriptors
// and the heuristic's first algorithm, cached per call shape; each call is
// one cublasLtMatmul in the column-major swap (C^T = B^T A^T).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Gemm.h"

#include "kernels/KernelChecks.h"
#include "base/HostTensor.h"

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>
#include <utility>

namespace rp::kernels::cuda {

using base::DType;
using base::formatShape;
using base::internal;
using base::invalidArgument;
using base::okStatus;
using base::Status;
using base::StatusOr;
using Shape = std::vector<int64_t>;

namespace {

bool isGemmDType(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

cudaDataType_t cudaTypeOf(DType t) {
  switch (t) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

std::string cublasName(cublasStatus_t status) {
  const char *name = cublasLtGetStatusName(status);
  return name ? name : ("cublasStatus_t " + std::to_string(static_cast<int>(status)));
}

std::string cudaName(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

/// One broadcast batch dimension: its extent and the element stride of each
/// operand along it (0 where the operand is broadcast).
struct BatchDim {
  int64_t size, a, b, out;
};

/// "f32 [3, 4] @ [4, 5]" for messages about a call.
std::string describe(const MatMulPlan &p) {
  return std::string(base::dtypeName(p.dtype)) + " m=" + std::to_string(p.m) +
         " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " batch=" + std::to_string(p.batchCount) + (p.transA ? " transA" : "") +
         (p.transB ? " transB" : "");
}

/// Largest power of two (at most 256) dividing `bytes`; 256 for 0.
int64_t alignmentOf(uint64_t bytes) {
  if (bytes == 0)
    return 256;
  return static_cast<int64_t>(std::min<uint64_t>(256, bytes & (~bytes + 1)));
}

} // namespace

StatusOr<MatMulPlan> planMatMul(DType dtype, const Shape &aShape, const Shape &bShape,
                                const Shape &outShape, bool transposeA, bool transposeB) {
  if (!isGemmDType(dtype))
    return invalidArgument(std::string("matmul on the GPU takes f32, f16 or bf16, got ") +
                           base::dtypeName(dtype));
  if (aShape.empty() || bShape.empty())
    return invalidArgument("matmul: expected operands of rank >= 1, got a " + formatShape(aShape) +
                           " and b " + formatShape(bShape));
  const std::pair<const char *, const Shape *> operands[] = {
      {"a", &aShape}, {"b", &bShape}, {"out", &outShape}};
  for (const auto &[what, shape] : operands) {
    StatusOr<int64_t> n = base::checkedNumElements(*shape);
    if (!n.ok())
      return invalidArgument(std::string("matmul: ") + what + ": " + n.status().message());
  }

  if ((transposeA && aShape.size() < 2) || (transposeB && bShape.size() < 2))
    return invalidArgument("matmul: expected a transposed operand of rank >= 2, got a " +
                           formatShape(aShape) + (transposeA ? " (transposed)" : "") + " and b " +
                           formatShape(bShape) + (transposeB ? " (transposed)" : ""));
  // 1-D promotion: a [K] -> [1, K], b [K] -> [K, 1]; flagged operands read transposed.
  Shape sa = aShape, sb = bShape;
  if (transposeA)
    std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (transposeB)
    std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  const bool aVector = sa.size() == 1, bVector = sb.size() == 1;
  if (aVector)
    sa.insert(sa.begin(), 1);
  if (bVector)
    sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    return contractionMismatch(aShape, k, bShape, sb[sb.size() - 2]);

  // numpy broadcast of the batch dimensions (aligned on the right).
  const Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(batchA.size(), batchB.size());
  Shape batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + batchA.size() >= rank ? batchA[i + batchA.size() - rank] : 1;
    const int64_t db = i + batchB.size() >= rank ? batchB[i + batchB.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return invalidArgument("matmul: batch dimensions do not broadcast: a " + formatShape(aShape) +
                             " has batch " + formatShape(batchA) + ", b " + formatShape(bShape) +
                             " has batch " + formatShape(batchB) + " (" + std::to_string(da) +
                             " vs " + std::to_string(db) + ")");
    batch[i] = da == 1 ? db : da;
  }
  Shape result = batch;
  if (!aVector)
    result.push_back(m);
  if (!bVector)
    result.push_back(n);
  if (result != outShape)
    return invalidArgument("matmul: out has shape " + formatShape(outShape) + ", expected " +
                           formatShape(result) + " (a " + formatShape(aShape) + " @ b " +
                           formatShape(bShape) + ")");

  MatMulPlan p;
  p.dtype = dtype;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transA = transposeA;
  p.transB = transposeB;
  p.outElements = base::checkedNumElements(outShape).value(); // checked above
  if (p.outElements == 0 || k == 0)
    return p; // nothing to multiply: no calls (run() zero-fills when k == 0)

  // Element strides of each batch dimension of extent > 1 (every extent is
  // >= 1 here since out has elements). Row-major strides, walked backwards.
  std::vector<BatchDim> dims;
  int64_t strideA = m * k, strideB = k * n, strideOut = m * n;
  for (size_t i = rank; i-- > 0;) {
    const bool inA = i + batchA.size() >= rank, inB = i + batchB.size() >= rank;
    const int64_t da = inA ? batchA[i + batchA.size() - rank] : 1;
    const int64_t db = inB ? batchB[i + batchB.size() - rank] : 1;
    if (batch[i] != 1)
      dims.push_back({batch[i], da == 1 ? 0 : strideA, db == 1 ? 0 : strideB, strideOut});
    strideA *= da;
    strideB *= db;
    strideOut *= batch[i];
  }
  std::reverse(dims.begin(), dims.end());

  // Merge neighbours whose strides nest in every operand (0 nests in 0).
  std::vector<BatchDim> merged;
  for (const BatchDim &d : dims) {
    if (!merged.empty()) {
      BatchDim &outer = merged.back();
      if (outer.a == d.a * d.size && outer.b == d.b * d.size && outer.out == d.out * d.size) {
        outer = {outer.size * d.size, d.a, d.b, d.out};
        continue;
      }
    }
    merged.push_back(d);
  }

  // Fold the innermost dimension into M when b stays and a's rows run on.
  if (!transposeA && !merged.empty() && merged.back().b == 0 && merged.back().a == m * k &&
      merged.back().out == m * n) {
    p.m = m * merged.back().size;
    merged.pop_back();
  }

  // The largest remaining dimension is the strided batch; the others are calls.
  size_t batched = merged.size();
  for (size_t i = 0; i < merged.size(); ++i)
    if (batched == merged.size() || merged[i].size > merged[batched].size)
      batched = i;
  if (batched < merged.size()) {
    const BatchDim &d = merged[batched];
    if (d.size > INT32_MAX)
      return invalidArgument("matmul: a strided batch of " + std::to_string(d.size) +
                             " products exceeds cuBLASLt's int32 batch count (a " +
                             formatShape(aShape) + " @ b " + formatShape(bShape) + ")");
    p.batchCount = d.size;
    p.aBatchStride = d.a;
    p.bBatchStride = d.b;
    p.outBatchStride = d.out;
    merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(batched));
  }
  int64_t numCalls = 1;
  for (const BatchDim &d : merged)
    numCalls *= d.size;
  p.calls.reserve(static_cast<size_t>(numCalls));
  for (int64_t t = 0; t < numCalls; ++t) {
    MatMulPlan::Call c;
    int64_t rest = t;
    for (size_t i = merged.size(); i-- > 0;) {
      const int64_t idx = rest % merged[i].size;
      rest /= merged[i].size;
      c.aOffset += idx * merged[i].a;
      c.bOffset += idx * merged[i].b;
      c.outOffset += idx * merged[i].out;
    }
    p.calls.push_back(c);
  }
  return p;
}

//===--- GemmRunner ---------------------------------------------------------===//

/// The descriptors and algorithm of one call shape (destroyed with the entry).
struct GemmRunner::CachedCall {
  cublasLtMatmulDesc_t desc = nullptr;
  /// cuBLASLt's A (our b), B (our a), C = D (our out).
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr, layoutC = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t algoWorkspace = 0;
  bool half = false; ///< CUBLAS_COMPUTE_16F: alpha and beta are f16.

  CachedCall() = default;
  CachedCall(const CachedCall &) = delete;
  CachedCall &operator=(const CachedCall &) = delete;
  ~CachedCall() {
    // Destroy functions only fail for invalid handles; nothing to report here.
    if (layoutC)
      (void)cublasLtMatrixLayoutDestroy(layoutC);
    if (layoutB)
      (void)cublasLtMatrixLayoutDestroy(layoutB);
    if (layoutA)
      (void)cublasLtMatrixLayoutDestroy(layoutA);
    if (desc)
      (void)cublasLtMatmulDescDestroy(desc);
  }
};

GemmRunner::GemmRunner(int device, cublasLtHandle_t handle, void *workspace, size_t workspaceBytes)
    : device_(device), handle_(handle), workspace_(workspace), workspaceBytes_(workspaceBytes) {}

GemmRunner::~GemmRunner() {
  cache_.clear();
  // cudaFree waits for the device work that may still read the workspace.
  if (workspace_)
    (void)cudaFree(workspace_);
  (void)cublasLtDestroy(handle_);
}

StatusOr<std::unique_ptr<GemmRunner>> GemmRunner::create(size_t workspaceBytes) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError(); // clear the error we reported
    return base::unavailable("GemmRunner: no CUDA device (" +
                                (err != cudaSuccess ? cudaName(err) : std::string("0 devices")) +
                                ")");
  }
  int device = 0;
  err = cudaGetDevice(&device);
  if (err != cudaSuccess)
    return base::unavailable("GemmRunner: cudaGetDevice failed: " + cudaName(err));
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t st = cublasLtCreate(&handle);
  if (st != CUBLAS_STATUS_SUCCESS)
    return base::unavailable("GemmRunner: cublasLtCreate failed on device " +
                                std::to_string(device) + ": " + cublasName(st));
  void *workspace = nullptr;
  if (workspaceBytes > 0) {
    err = cudaMalloc(&workspace, workspaceBytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      (void)cublasLtDestroy(handle);
      return base::resourceExhausted("GemmRunner: cannot allocate a workspace of " +
                                        std::to_string(workspaceBytes) + " bytes on device " +
                                        std::to_string(device) + ": " + cudaName(err));
    }
  }
  return std::unique_ptr<GemmRunner>(new GemmRunner(device, handle, workspace, workspaceBytes));
}

size_t GemmRunner::cachedAlgorithms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

StatusOr<const GemmRunner::CachedCall *> GemmRunner::lookup(const MatMulPlan &plan,
                                                            const Key &key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end())
    return static_cast<const CachedCall *>(it->second.get());

  auto fail = [&](const char *what, cublasStatus_t st) {
    return internal(std::string("matmul on the GPU: ") + what + " failed: " + cublasName(st) +
                    " (" + describe(plan) + ")");
  };
#define RP_CUBLASLT_CHECK(expr)                                                                    \
  do {                                                                                             \
    const cublasStatus_t rp_st_ = (expr);                                                          \
    if (rp_st_ != CUBLAS_STATUS_SUCCESS)                                                           \
      return fail(#expr, rp_st_);                                                                  \
  } while (0)

  auto entry = std::make_unique<CachedCall>();
  const cudaDataType_t type = cudaTypeOf(plan.dtype);
  // fp32 accumulation and scale for every dtype (CUBLAS_COMPUTE_32F never uses TF32), unless
  // the runner accumulates f16 products in fp16 (opt-in).
  entry->half = fp16Accumulate_ && plan.dtype == base::DType::F16;
  RP_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&entry->desc,
                                             entry->half ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F,
                                             entry->half ? CUDA_R_16F : CUDA_R_32F));
  const uint64_t m = static_cast<uint64_t>(plan.m), n = static_cast<uint64_t>(plan.n),
                 k = static_cast<uint64_t>(plan.k);
  // Column-major swap: A = b^T [n, k] (ld n), B = a^T [k, m] (ld k), C = out^T [n, m] (ld n).
  // A flagged b is stored [n, k] row-major: the column-major [k, n] (ld k), taken transposed;
  // a flagged a likewise the column-major [m, k] (ld m).
  if (plan.transB)
    RP_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&entry->layoutA, type, k, n, plan.k));
  else
    RP_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&entry->layoutA, type, n, k, plan.n));
  if (plan.transA)
    RP_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&entry->layoutB, type, m, k, plan.m));
  else
    RP_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&entry->layoutB, type, k, m, plan.k));
  const cublasOperation_t opA = plan.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = plan.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  RP_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(entry->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA,
                                                   sizeof(opA)));
  RP_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(entry->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB,
                                                   sizeof(opB)));
  RP_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&entry->layoutC, type, n, m, plan.n));
  if (plan.batchCount > 1) {
    const int32_t count = static_cast<int32_t>(plan.batchCount);
    const std::pair<cublasLtMatrixLayout_t, int64_t> layouts[] = {
        {entry->layoutA, plan.bBatchStride},
        {entry->layoutB, plan.aBatchStride},
        {entry->layoutC, plan.outBatchStride}};
    for (const auto &[layout, stride] : layouts) {
      RP_CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof(count)));
      RP_CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      prefGuard(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t maxWorkspace = workspaceBytes_;
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace, sizeof(maxWorkspace)));
  // key[8..10]: alignments of a, b, out (bytes); cuBLASLt's A is b, B is a.
  const uint32_t alignA = static_cast<uint32_t>(key[9]), alignB = static_cast<uint32_t>(key[8]),
                 alignC = static_cast<uint32_t>(key[10]);
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA, sizeof(alignA)));
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB, sizeof(alignB)));
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC, sizeof(alignC)));
  RP_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC, sizeof(alignC)));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  RP_CUBLASLT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, entry->desc, entry->layoutA,
                                                   entry->layoutB, entry->layoutC, entry->layoutC,
                                                   pref, 1, &result, &found));
#undef RP_CUBLASLT_CHECK
  if (found < 1)
    return fail("cublasLtMatmulAlgoGetHeuristic (no algorithm)", CUBLAS_STATUS_NOT_SUPPORTED);
  if (result.state != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtMatmulAlgoGetHeuristic", result.state);
  entry->algo = result.algo;
  entry->algoWorkspace = result.workspaceSize;
  const CachedCall *ptr = entry.get();
  cache_.emplace(key, std::move(entry));
  return ptr;
}

Status GemmRunner::run(const MatMulPlan &plan, const void *a, const void *b, void *out,
                       cudaStream_t stream) {
  if (!isGemmDType(plan.dtype))
    return invalidArgument(std::string("matmul on the GPU takes f32, f16 or bf16, got ") +
                           base::dtypeName(plan.dtype));
  if (plan.m < 0 || plan.n < 0 || plan.k < 0 || plan.outElements < 0 || plan.batchCount < 1 ||
      plan.batchCount > INT32_MAX || plan.aBatchStride < 0 || plan.bBatchStride < 0 ||
      plan.outBatchStride < 0)
    return invalidArgument("matmul on the GPU: inconsistent plan (" + describe(plan) +
                           ", out elements " + std::to_string(plan.outElements) + ")");
  const bool zeroFill = plan.k == 0 && plan.outElements > 0;
  if (!zeroFill && plan.calls.empty())
    return okStatus();

  int current = -1;
  if (const cudaError_t err = cudaGetDevice(&current); err != cudaSuccess)
    return internal("matmul on the GPU: cudaGetDevice failed: " + cudaName(err));
  if (current != device_)
    return invalidArgument("matmul on the GPU: the GemmRunner of device " +
                           std::to_string(device_) + " was used on device " +
                           std::to_string(current));

  const int64_t esize = static_cast<int64_t>(base::dtypeSize(plan.dtype));
  auto checkPointer = [&](const char *what, const void *p) {
    if (p == nullptr)
      return invalidArgument(std::string("matmul on the GPU: ") + what + " is a null pointer");
    if (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(esize) != 0)
      return invalidArgument(std::string("matmul on the GPU: ") + what +
                             " is not aligned to its element size (" + std::to_string(esize) +
                             " bytes)");
    return okStatus();
  };
  RP_RETURN_IF_ERROR(checkPointer("out", out));
  if (zeroFill) {
    const cudaError_t err = cudaMemsetAsync(
        out, 0, static_cast<size_t>(plan.outElements) * static_cast<size_t>(esize), stream);
    if (err != cudaSuccess)
      return internal("matmul on the GPU: cudaMemsetAsync of the K = 0 output failed: " +
                      cudaName(err));
    return okStatus();
  }
  RP_RETURN_IF_ERROR(checkPointer("a", a));
  RP_RETURN_IF_ERROR(checkPointer("b", b));

  // The weakest alignment of any matrix a call touches, per operand.
  const auto base = [](const void *p) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
  };
  int64_t align[3] = {256, 256, 256};
  const int64_t strides[3] = {plan.aBatchStride, plan.bBatchStride, plan.outBatchStride};
  for (int i = 0; i < 3; ++i)
    if (plan.batchCount > 1)
      align[i] = std::min(align[i], alignmentOf(static_cast<uint64_t>(strides[i] * esize)));
  for (const MatMulPlan::Call &c : plan.calls) {
    align[0] = std::min(align[0], alignmentOf(base(a) + static_cast<uint64_t>(c.aOffset * esize)));
    align[1] = std::min(align[1], alignmentOf(base(b) + static_cast<uint64_t>(c.bOffset * esize)));
    align[2] =
        std::min(align[2], alignmentOf(base(out) + static_cast<uint64_t>(c.outOffset * esize)));
  }
  const Key key = {static_cast<int64_t>(plan.dtype),
                   plan.m,
                   plan.n,
                   plan.k,
                   plan.batchCount,
                   plan.aBatchStride,
                   plan.bBatchStride,
                   plan.outBatchStride,
                   align[0],
                   align[1],
                   align[2],
                   plan.transA ? 1 : 0,
                   plan.transB ? 1 : 0};
  RP_ASSIGN_OR_RETURN(const CachedCall *call, lookup(plan, key));

  const float alpha = 1.0f, beta = 0.0f;
  const uint16_t alphaHalf = 0x3C00, betaHalf = 0; // 1.0 and 0.0 in IEEE binary16
  const void *alphaPtr = call->half ? static_cast<const void *>(&alphaHalf) : &alpha;
  const void *betaPtr = call->half ? static_cast<const void *>(&betaHalf) : &beta;
  const auto *pa = static_cast<const unsigned char *>(a);
  const auto *pb = static_cast<const unsigned char *>(b);
  auto *pc = static_cast<unsigned char *>(out);
  for (const MatMulPlan::Call &c : plan.calls) {
    void *d = pc + c.outOffset * esize;
    const cublasStatus_t st =
        cublasLtMatmul(handle_, call->desc, alphaPtr, pb + c.bOffset * esize, call->layoutA,
                       pa + c.aOffset * esize, call->layoutB, betaPtr, d, call->layoutC, d,
                       call->layoutC, &call->algo, workspace_, workspaceBytes_, stream);
    if (st != CUBLAS_STATUS_SUCCESS)
      return internal("matmul on the GPU: cublasLtMatmul failed: " + cublasName(st) + " (" +
                      describe(plan) + ")");
  }
  return okStatus();
}

} // namespace rp::kernels::cuda
