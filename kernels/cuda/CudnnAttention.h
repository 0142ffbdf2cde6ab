//===- CudnnAttention.h - graph.attention through cuDNN's fused SDPA -*- C++ -*-===//
//
// cuDNN's fused scaled-dot-product attention (the "flash" SDPA graphs of cuDNN 9, built with
// the header-only cuDNN frontend) for graph.attention and graph.attention_vjp, used where cuDNN
// takes the case; rpc's own kernels (FlashAttention.h, FlashAttentionBackward.h, the row
// kernels) run everything it declines.
//
// Selection (rp-run --attention-kernel): `flash` never calls cuDNN; `auto` (the default) asks
// cuDNN for every instruction whose case passes cudnnSdpaDecline and falls back to rpc's
// kernels when cuDNN is not loadable or refuses the graph; `cudnn` makes either an error.
//
// Layouts: q, out, dout [B, Hq, S, D] and k, v [B, Hkv, S, D] contiguous (Hkv dividing Hq:
// cuDNN's GQA), scale as given, causal = key j <= query i. The op has one sequence length for
// queries and keys, so cuDNN's top-left and bottom-right diagonal alignments coincide.
// IO in f16/bf16, softmax statistics and accumulation in fp32.
//
// The backward: graph.attention_vjp gets q, k, v, out and dout, not the forward's
// log-sum-exp (the op saves none; rpc's backward recomputes it too). cuDNN's backward needs
// its statistics, so the VJP first runs cuDNN's forward with statistics into the kernel's
// scratch (an O' it discards and the fp32 log-sum-exp [B, Hq, S]), then cuDNN's backward from
// those statistics and the op's own `out` (D_i = dout_i . out_i, as cpu::attentionVjp). Each
// direction therefore decides alone; a cuDNN forward with a flash backward (or the reverse)
// is consistent.
//
// Determinism: the backward graph sets the frontend's deterministic algorithm (no atomic dQ);
// where cuDNN cannot build it, the case is declined and the deterministic flash backward runs.
// The forward kernels are deterministic. Results differ from the flash kernels' (other sums)
// within the dtype's rounding.
//
// Plans: one cuDNN graph per CudnnSdpaKey (shape, dtype, scale, causal, direction), built when
// the backend loads the plan (CudnnSdpaRunner::prepare; a key first met at a call is built
// then) and cached; the runner's workspace grows with each new graph (one cudaMalloc per new
// key, none on a cached call).
//
// Built without the frontend's headers (RP_HAVE_CUDNN_FRONTEND unset), the same interface
// compiles: cudnnSdpaBuilt() is false and CudnnSdpaRunner::create reports why.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_CUDNNATTENTION_H
#define RP_KERNELS_CUDA_CUDNNATTENTION_H

#include "kernels/cuda/Fused.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rp::kernels::cuda {

/// rp-run --attention-kernel.
enum class AttentionKernel { Auto, Cudnn, Flash };

/// "auto" | "cudnn" | "flash". Errors: InvalidArgument "unknown --attention-kernel 'x'
/// (expected auto, cudnn or flash)".
base::StatusOr<AttentionKernel> parseAttentionKernel(std::string_view text);
const char *attentionKernelName(AttentionKernel kernel);

/// Whether this build has the cuDNN frontend (RP_HAVE_CUDNN_FRONTEND).
bool cudnnSdpaBuilt();

/// Attention features another branch adds to the op; cuDNN SDPA declines both for now.
struct SdpaExtras {
  bool sinks = false;     ///< per-head attention sinks (GPT-OSS)
  int64_t window = 0;     ///< sliding window (keys i - window < j <= i); 0: none
  double softcap = 0.0;   ///< logit soft-cap (Gemma-2); 0: none
};

/// The largest head dimension handed to cuDNN (its Hopper SDPA forward and backward).
inline constexpr int64_t kCudnnSdpaMaxDim = 128;

/// Why cuDNN SDPA is not asked to run `plan` (from planAttention), or "" when it may be
/// (cuDNN may still refuse the graph at build time). Declines: dtype other than f16/bf16,
/// head dimension not a multiple of 8 or above kCudnnSdpaMaxDim, a value head size other than
/// the query's, sinks, a window, a logit soft-cap (cuDNN's SDPA graphs have none).
std::string cudnnSdpaDecline(const AttentionPlan &plan, const SdpaExtras &extras = {});

/// The three graphs of the runner.
enum class SdpaGraph { Forward, ForwardStats, Backward };

/// The plan cache's key: everything the built cuDNN graph depends on.
struct CudnnSdpaKey {
  base::DType dtype = base::DType::F16;
  int64_t batch = 0, heads = 0, kvHeads = 0, seq = 0, dim = 0;
  uint64_t scaleBits = 0; ///< the scale's float bits (cuDNN takes a float)
  bool causal = false;
  SdpaGraph graph = SdpaGraph::Forward;
  bool operator==(const CudnnSdpaKey &o) const;
  /// "backward bf16 B=1 Hq=16 Hkv=8 S=4096 D=128 scale=0.0883883 causal".
  std::string text() const;
};
struct CudnnSdpaKeyHash {
  size_t operator()(const CudnnSdpaKey &k) const;
};
CudnnSdpaKey cudnnSdpaKey(const AttentionPlan &plan, SdpaGraph graph);

/// Scratch the VJP needs on the cuDNN path (bytes): the recomputed O' (B Hq S D elements of
/// the dtype, rounded up to 256 bytes) then the fp32 log-sum-exp (B Hq S floats).
size_t cudnnSdpaBackwardScratchBytes(const AttentionPlan &plan);

/// One worker's cuDNN handle, plan cache and workspace. Not thread-safe: one per worker,
/// used from its feeder thread; all calls on the device it was created on.
class CudnnSdpaRunner {
public:
  /// A runner on the current device for `kernel` (Auto or Cudnn): loads libcudnn.so.9
  /// (dlopen, LD_LIBRARY_PATH) and creates a handle. Returns null with `why` set when cuDNN
  /// cannot be used and kernel is Auto. Errors (kernel Cudnn): Unavailable naming the cause
  /// (built without the frontend, libcudnn.so.9 not found, handle creation failed).
  static base::StatusOr<std::unique_ptr<CudnnSdpaRunner>> create(AttentionKernel kernel,
                                                                    std::string *why);
  ~CudnnSdpaRunner();
  CudnnSdpaRunner(const CudnnSdpaRunner &) = delete;
  CudnnSdpaRunner &operator=(const CudnnSdpaRunner &) = delete;

  /// out = attention(q, k, v) on `stream` through cuDNN. `declined` is cudnnSdpaDecline's
  /// answer for the plan. Returns true when cuDNN ran it, false when the caller must run its
  /// own kernel (Auto, and `declined` is set, a pointer is not 16-byte aligned, or cuDNN
  /// refuses the graph). Errors: Internal
  /// for a failed execution; Unimplemented for a decline under Cudnn ("attention: cuDNN SDPA
  /// declines forward f32 ...: dtype f32 (--attention-kernel cudnn)").
  base::StatusOr<bool> forward(const AttentionPlan &plan, const std::string &declined,
                                  const void *q, const void *k, const void *v, void *out,
                                  cudaStream_t stream);

  /// dq, dk, dv = VJP of attention at dout through cuDNN (file comment); `scratch` holds
  /// cudnnSdpaBackwardScratchBytes(plan) bytes, 256-byte aligned. Returns and errors as
  /// forward.
  base::StatusOr<bool> backward(const AttentionPlan &plan, const std::string &declined,
                                   const void *q, const void *k, const void *v, const void *out,
                                   const void *dout, void *dq, void *dk, void *dv, void *scratch,
                                   cudaStream_t stream);

  /// Builds (and caches) the graphs forward or backward would run for `plan`, growing the
  /// workspace, without running anything: the backend calls it at plan load so that no graph
  /// is built and no workspace allocated in the training loop (nor inside a CUDA-graph
  /// capture). Returns whether cuDNN takes the case; errors as forward (a refusal under Cudnn
  /// is reported at load).
  base::StatusOr<bool> prepare(const AttentionPlan &plan, const std::string &declined,
                                  bool backward);

  AttentionKernel kernel() const { return kernel_; }
  /// Built (or refused) graphs in the cache.
  size_t cachedGraphs() const;
  /// The current workspace (bytes).
  size_t workspaceBytes() const;

private:
  struct Impl;
  explicit CudnnSdpaRunner(AttentionKernel kernel);
  /// Declines (false) or errors under Cudnn, for `why`.
  base::StatusOr<bool> refuse(const std::string &what, const std::string &why) const;

  AttentionKernel kernel_;
  std::unique_ptr<Impl> impl_;
};

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_CUDNNATTENTION_H
