//===- Gemm.h - Matrix product (graph.matmul) on the GPU --------*- C++ -*-===//
//
// numpy.matmul / ONNX MatMul on device memory through cuBLASLt, with the
// semantics of the CPU reference kernels/cpu/MatMul.h: operands of rank >= 1;
// the last two dimensions are multiplied ([..., M, K] x [..., K, N] ->
// [..., M, N]); the leading batch dimensions broadcast by numpy rules; a 1-D
// `a` is read as [1, K] and a 1-D `b` as [K, 1], and that unit dimension is
// removed from the result. Every tensor is dense, contiguous and row-major.
//
// Dtypes: f32, f16 or bf16; a, b and out share one dtype. Numerics: fp32
// accumulation (CUBLAS_COMPUTE_32F, scale type f32, alpha 1, beta 0), except
// f16 products of a runner with setFp16Accumulate(true): CUBLAS_COMPUTE_16F,
// scale type f16 (the RoundPipe paper's setting on RTX 4090s, whose fp16
// tensor cores run twice as fast accumulating in fp16; sums of many products
// lose precision and can overflow at 65504);
// for f32 inputs TF32 is never allowed (CUBLAS_COMPUTE_32F, not _FAST_TF32),
// so results match the CPU to about 1e-5 relative to sum_k |a_ik b_kj|; f16
// and bf16 products are rounded once, to the output dtype. K = 0 gives zeros
// (a cudaMemsetAsync, no cuBLASLt call).
//
// Algorithm. planMatMul (plan time, host only) turns the shapes into GEMM
// calls; GemmRunner::run (run time) enqueues them.
//  1. Row-major through the column-major swap: a row-major [M, N] C is the
//     column-major [N, M] C^T = B^T A^T, and the row-major buffers of b and a
//     already are the column-major B^T [N, K] (ld N) and A^T [K, M] (ld K).
//     Each call is one cuBLASLt matmul with no transposes: cuBLASLt's A is
//     our b, its B is our a, its C = D is our out ([N, M], ld N).
//  2. The broadcast batch dimensions get element strides per operand (0
//     where an operand is broadcast); dimensions of extent 1 are dropped and
//     neighbours whose strides nest in both operands are merged (the batch of
//     [2, 3, M, K] x [2, 3, K, N] is one dimension of 6).
//  3. When the innermost merged dimension does not move b and moves a by
//     exactly M * K, it folds into M (a's rows are contiguous, and so are
//     out's): [B, M, K] x [K, N] is one [B*M, K] x [K, N] GEMM, like the CPU
//     kernel's fold.
//  5. transposeA / transposeB (graph.matmul's flags): a holds [..., K, M]
//     (b [..., N, K]) and is read transposed: the cuBLASLt operand of a
//     flagged tensor is its row-major buffer as the column-major matrix it is
//     (A^T's [M, K] ld M; B^T's [K, N] ld K) with CUBLASLT_MATMUL_DESC_TRANSB
//     (TRANSA for b) set, so no copy is made. A flagged a never folds its
//     batch into M (its rows are not contiguous).
//  4. Of the remaining dimensions the largest becomes one strided batch
//     (CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT / STRIDED_BATCH_OFFSET, stride 0
//     for a broadcast operand); each index of the others is one call with
//     its own element offsets (numpy broadcasts that no single stride
//     describes, e.g. [2, 1, M, K] x [3, K, N]: 2 calls of a batch of 3).
// The algorithm of a call comes from cublasLtMatmulAlgoGetHeuristic (the
// first result) and is cached per (dtype, m, n, k, batch count, strides,
// pointer alignments); the descriptors are cached with it, so a repeated
// shape enqueues its calls without any set-up.
//
// Errors are base::Status values (never exit/abort): InvalidArgument for
// bad shapes or dtypes (planMatMul) and bad pointers (run); Internal with the
// cuBLASLt status name when a cuBLASLt call fails or the heuristic finds no
// algorithm; Unavailable / ResourceExhausted when GemmRunner::create finds no
// device or no memory. This header contains no device code and compiles
// with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_GEMM_H
#define RP_KERNELS_CUDA_GEMM_H

#include "base/DType.h"
#include "base/Status.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace rp::kernels::cuda {

/// The GEMM calls that compute out = a @ b (numpy.matmul) for row-major
/// contiguous tensors, decided once from the shapes (plan time) and run many
/// times. Sizes and offsets are in elements of `dtype`.
///
/// Each entry of `calls` is one strided-batched GEMM of `batchCount` products:
/// product j multiplies the row-major [m, k] matrix at a + call.aOffset +
/// j * aBatchStride by the row-major [k, n] matrix at b + call.bOffset +
/// j * bBatchStride into the row-major [m, n] matrix at out + call.outOffset +
/// j * outBatchStride. A stride of 0 repeats a broadcast operand. `m` counts
/// the rows of one product, including any batch dimensions folded into M.
/// When k == 0 and out has elements, `calls` is empty and run() writes
/// `outElements` zeros; when out is empty `calls` is empty too.
struct MatMulPlan {
  /// Element offsets of one GEMM call.
  struct Call {
    int64_t aOffset = 0, bOffset = 0, outOffset = 0;
    friend bool operator==(const Call &x, const Call &y) {
      return x.aOffset == y.aOffset && x.bOffset == y.bOffset && x.outOffset == y.outOffset;
    }
  };

  base::DType dtype = base::DType::F32;
  /// Rows (with folded batch), columns and contraction length of each product.
  int64_t m = 0, n = 0, k = 0;
  /// Products per call (1..INT32_MAX, cuBLASLt's int32 batch count).
  int64_t batchCount = 1;
  /// Element strides between the products of one call (0: broadcast operand).
  int64_t aBatchStride = 0, bBatchStride = 0, outBatchStride = 0;
  /// The calls, in row-major order of the batch dimensions they cover.
  std::vector<Call> calls;
  /// Elements of out (the product of the out shape).
  int64_t outElements = 0;
  /// a holds each [m, k] product row-major transposed ([k, m]); b likewise ([n, k]).
  bool transA = false, transB = false;
};

/// Plans out = a @ b for tensors of `dtype` with the given shapes (numpy.matmul
/// semantics, see the file comment). Host only: touches no device.
/// Errors (InvalidArgument, the message names the expected and actual shapes):
/// a dtype other than f32, f16 or bf16 ("matmul on the GPU takes f32, f16 or
/// bf16, got i32"); an operand of rank 0 or with a negative dimension or more
/// than INT64_MAX elements; a contraction mismatch (a's K vs b's K); batch
/// dimensions that do not broadcast; `outShape` not the matmul shape; a strided
/// batch longer than INT32_MAX products.
/// With `transposeA` (`transposeB`) a (b) is read with its last two dimensions swapped
/// (graph.matmul's flags; a flagged operand of rank < 2 is InvalidArgument).
base::StatusOr<MatMulPlan> planMatMul(base::DType dtype, const std::vector<int64_t> &aShape,
                                         const std::vector<int64_t> &bShape,
                                         const std::vector<int64_t> &outShape,
                                         bool transposeA = false, bool transposeB = false);

/// Runs MatMulPlans on one device: a cuBLASLt handle, one workspace, and a
/// cache of heuristic algorithms (with their descriptors) per call shape.
/// Create one per device. run() may be called from several host threads (the
/// cache is locked), but every call uses the same workspace: calls enqueued on
/// different streams must not overlap on the device (order the streams, or
/// use one runner per stream).
class GemmRunner {
public:
  /// A runner on the current device (cudaGetDevice) with a workspace of
  /// `workspaceBytes` bytes (0: algorithms that need no workspace only; the
  /// default 32 MiB is what cuBLASLt recommends for Hopper).
  /// Errors: Unavailable when no CUDA device is present or cuBLASLt cannot be
  /// initialised; ResourceExhausted when the workspace cannot be allocated.
  static base::StatusOr<std::unique_ptr<GemmRunner>> create(size_t workspaceBytes = 32 << 20);

  ~GemmRunner();
  GemmRunner(const GemmRunner &) = delete;
  GemmRunner &operator=(const GemmRunner &) = delete;

  /// Enqueues the plan's calls on `stream` (asynchronous: nothing is
  /// synchronised). a, b and out are device pointers of plan.dtype elements
  /// laid out as planned (a and b hold the operands' elements, out
  /// plan.outElements), aligned to the element size; out must not overlap a
  /// or b. K == 0 writes zeros to out. Must run on the runner's device.
  /// Errors: InvalidArgument for a null or misaligned pointer where elements
  /// are read or written, a plan with an unsupported dtype or inconsistent
  /// sizes, or another current device; Internal naming the cuBLASLt status
  /// (e.g. "CUBLAS_STATUS_NOT_SUPPORTED") when a call fails or the heuristic
  /// finds no algorithm, or the CUDA error when the zero fill fails. Calls
  /// enqueued before a failing one stay enqueued.
  base::Status run(const MatMulPlan &plan, const void *a, const void *b, void *out,
                      cudaStream_t stream);

  /// Opt-in fp16 accumulation for f16 products (file comment); call before the
  /// first run() of a shape (cached calls keep the mode they were made with).
  void setFp16Accumulate(bool on) { fp16Accumulate_ = on; }
  bool fp16Accumulate() const { return fp16Accumulate_; }

  /// The device this runner was created on.
  int device() const { return device_; }
  /// Workspace size in bytes.
  size_t workspaceBytes() const { return workspaceBytes_; }
  /// Number of cached algorithms (distinct call shapes seen by run()).
  size_t cachedAlgorithms() const;

private:
  struct CachedCall;
  /// dtype, m, n, k, batch count, the three strides, the three alignments, the two flags.
  using Key = std::array<int64_t, 13>;

  GemmRunner(int device, cublasLtHandle_t handle, void *workspace, size_t workspaceBytes);
  /// The cached descriptors and algorithm for `key`, creating them on a miss.
  base::StatusOr<const CachedCall *> lookup(const MatMulPlan &plan, const Key &key);

  int device_;
  bool fp16Accumulate_ = false;
  cublasLtHandle_t handle_;
  void *workspace_;
  size_t workspaceBytes_;
  mutable std::mutex mutex_;
  std::map<Key, std::unique_ptr<CachedCall>> cache_;
};

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

/// The launchers' work on the host: the same bodies over every point, on host memory, in the
/// order the device combines them (kernels/cuda/HostReplay.h).
namespace replay {
/// The plan's GEMM calls, each product a dot product accumulated in fp32 in K order.
void matmul(const MatMulPlan &plan, const void *a, const void *b, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_GEMM_H
