//===- CudnnSdpaRunner.cpp - cuDNN SDPA graphs: build, cache, execute -------===//
//
// CudnnSdpaRunner (CudnnAttention.h). With the cuDNN frontend (RP_HAVE_CUDNN_FRONTEND, its
// dynamic-loading mode): libcudnn.so.9 is dlopen'ed once per process; each runner owns a
// handle, a cache of built graphs keyed by CudnnSdpaKey, and a workspace that grows when a new
// graph needs more. Without the frontend every runner creation reports why and `auto` falls
// back to rpc's kernels.
//
// Graphs (UIDs below): forward  Q K V -> O; forward+stats  Q K V -> O' Stats; backward
// Q K V O dO Stats -> dQ dK dV with the deterministic algorithm. The per-key outcome (built,
// with its workspace, or refused, with cuDNN's message) is printed once to stderr, so a run's
// log says which attention ran where.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CudnnAttention.h"

#include <cstdio>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <unordered_map>
#include <vector>

#if RP_HAVE_CUDNN_FRONTEND
#include <cudnn_frontend.h>
#include <dlfcn.h>

// The frontend's dynamic-loading mode reads every cuDNN entry point from this handle.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

namespace rp::kernels::cuda {

using base::StatusOr;

#if RP_HAVE_CUDNN_FRONTEND
namespace {

namespace fe = cudnn_frontend;

enum : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

/// cuDNN's SDPA engines take 16-byte aligned tensors.
bool aligned16(std::initializer_list<const void *> pointers) {
  for (const void *p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return false;
  return true;
}

/// dlopens libcudnn.so.9 once per process; "" on success, else why not.
const std::string &loadCudnn() {
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void *h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char *e = dlerror();
      error = std::string("cannot load libcudnn.so.9 (") + (e ? e : "unknown error") +
              "); add cuDNN 9's lib directory to LD_LIBRARY_PATH";
      return;
    }
    fe::cudnn_dlhandle = h;
  });
  return error;
}

/// A [B, H, S, D] tensor of the graph, contiguous.
std::shared_ptr<fe::graph::Tensor_attributes> bhsd(fe::graph::Graph &g, const char *name,
                                                   int64_t uid, const CudnnSdpaKey &k,
                                                   int64_t heads) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({k.batch, heads, k.seq, k.dim})
                      .set_stride({heads * k.seq * k.dim, k.seq * k.dim, k.dim, 1}));
}

void markOutput(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid,
                const CudnnSdpaKey &k, int64_t heads) {
  t->set_output(true).set_uid(uid).set_dim({k.batch, heads, k.seq, k.dim}).set_stride(
      {heads * k.seq * k.dim, k.seq * k.dim, k.dim, 1});
}

/// Stats [B, Hq, S, 1] fp32.
void statsLayout(fe::graph::Tensor_attributes &t, const CudnnSdpaKey &k) {
  t.set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({k.batch, k.heads, k.seq, 1})
      .set_stride({k.heads * k.seq, k.seq, 1, 1});
}

float keyScale(const CudnnSdpaKey &k) {
  float scale = 0;
  const uint32_t bits = static_cast<uint32_t>(k.scaleBits);
  std::memcpy(&scale, &bits, sizeof scale);
  return scale;
}

/// The graph of `k` with its tensors declared (not built).
std::shared_ptr<fe::graph::Graph> declareGraph(const CudnnSdpaKey &k) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(k.dtype == base::DType::BF16 ? fe::DataType_t::BFLOAT16
                                                      : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = bhsd(*g, "Q", kQ, k, k.heads);
  auto kk = bhsd(*g, "K", kK, k, k.kvHeads);
  auto v = bhsd(*g, "V", kV, k, k.kvHeads);
  if (k.graph != SdpaGraph::Backward) {
    auto opts = fe::graph::SDPA_attributes()
                    .set_name("rp_sdpa")
                    .set_generate_stats(k.graph == SdpaGraph::ForwardStats)
                    .set_attn_scale(keyScale(k));
    if (k.causal)
      opts.set_causal_mask(true); // one sequence length: top-left = bottom-right
    auto [o, stats] = g->sdpa(q, kk, v, opts);
    markOutput(o, kO, k, k.heads);
    if (k.graph == SdpaGraph::ForwardStats) {
      stats->set_output(true);
      statsLayout(*stats, k);
    }
    return g;
  }
  auto o = bhsd(*g, "O", kO, k, k.heads);
  auto dO = bhsd(*g, "dO", kDO, k, k.heads);
  fe::graph::Tensor_attributes statsAttrs;
  statsAttrs.set_name("Stats");
  statsLayout(statsAttrs, k);
  auto stats = g->tensor(statsAttrs);
  auto opts = fe::graph::SDPA_backward_attributes()
                  .set_name("rp_sdpa_backward")
                  .set_attn_scale(keyScale(k))
                  .set_deterministic_algorithm(true);
  if (k.causal)
    opts.set_causal_mask(true);
  auto [dq, dk, dv] = g->sdpa_backward(q, kk, v, o, dO, stats, opts);
  markOutput(dq, kDQ, k, k.heads);
  markOutput(dk, kDK, k, k.kvHeads);
  markOutput(dv, kDV, k, k.kvHeads);
  return g;
}

} // namespace

struct CudnnSdpaRunner::Impl {
  struct Entry {
    std::shared_ptr<fe::graph::Graph> graph; ///< null: refused
    std::string refused;
  };
  cudnnHandle_t handle = nullptr;
  std::unordered_map<CudnnSdpaKey, Entry, CudnnSdpaKeyHash> cache;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// Smaller workspaces replaced while work may still use them; freed with the runner.
  std::vector<void *> retired;

  ~Impl() {
    for (void *p : retired)
      cudaFree(p);
    if (workspace)
      cudaFree(workspace);
    if (handle)
      fe::detail::destroy_handle(handle);
  }

  /// Builds the graph of `k` (its first call) and grows the workspace; the entry says whether
  /// cuDNN took it.
  const Entry &entry(const CudnnSdpaKey &k) {
    auto it = cache.find(k);
    if (it != cache.end())
      return it->second;
    Entry e;
    e.refused = build(k, e.graph);
    if (!e.refused.empty())
      e.graph.reset();
    std::fprintf(stderr, "cudnn-sdpa: %s: %s\n", k.text().c_str(),
                 e.refused.empty() ? ("cuDNN graph built, workspace " +
                                      std::to_string(workspaceBytes) + " B")
                                         .c_str()
                                   : ("declined (" + e.refused + "); rpc's kernels run it").c_str());
    return cache.emplace(k, std::move(e)).first->second;
  }

  /// "" when built, else cuDNN's reason.
  std::string build(const CudnnSdpaKey &k, std::shared_ptr<fe::graph::Graph> &out) {
    try {
      auto g = declareGraph(k);
      auto step = [](fe::error_t s, const char *what) {
        return s.is_good() ? std::string() : std::string(what) + ": " + s.get_message();
      };
      std::string why;
      if ((why = step(g->validate(), "validate")).size() ||
          (why = step(g->build_operation_graph(handle), "build_operation_graph")).size() ||
          (why = step(g->create_execution_plans({fe::HeurMode_t::A}), "heuristics")).size() ||
          (why = step(g->check_support(handle), "check_support")).size() ||
          (why = step(g->build_plans(handle), "build_plans")).size())
        return why;
      int64_t bytes = 0;
      if ((why = step(g->get_workspace_size(bytes), "get_workspace_size")).size())
        return why;
      if (static_cast<size_t>(bytes) > workspaceBytes) {
        void *p = nullptr;
        if (cudaMalloc(&p, static_cast<size_t>(bytes)) != cudaSuccess) {
          cudaGetLastError();
          return "cannot allocate its workspace of " + std::to_string(bytes) + " B";
        }
        if (workspace)
          retired.push_back(workspace);
        workspace = p;
        workspaceBytes = static_cast<size_t>(bytes);
      }
      out = std::move(g);
      return "";
    } catch (const std::exception &e) {
      return std::string("frontend exception: ") + e.what();
    }
  }

  base::Status execute(const Entry &e, const CudnnSdpaKey &k,
                          std::unordered_map<int64_t, void *> &pack, cudaStream_t stream) {
    try {
      if (fe::detail::set_stream(handle, stream) != CUDNN_STATUS_SUCCESS)
        return base::internal("cudnn-sdpa: cudnnSetStream failed for " + k.text());
      fe::error_t s = e.graph->execute(handle, pack, workspace);
      if (!s.is_good())
        return base::internal("cudnn-sdpa: executing " + k.text() + ": " + s.get_message());
    } catch (const std::exception &ex) {
      return base::internal("cudnn-sdpa: executing " + k.text() + ": " + ex.what());
    }
    return base::okStatus();
  }
};

StatusOr<std::unique_ptr<CudnnSdpaRunner>> CudnnSdpaRunner::create(AttentionKernel kernel,
                                                                   std::string *why) {
  std::string error = loadCudnn();
  std::unique_ptr<CudnnSdpaRunner> r(new CudnnSdpaRunner(kernel));
  if (error.empty()) {
    r->impl_ = std::make_unique<Impl>();
    try {
      if (fe::detail::create_handle(&r->impl_->handle) != CUDNN_STATUS_SUCCESS)
        error = "cudnnCreate failed (no usable GPU for cuDNN?)";
    } catch (const std::exception &e) {
      error = std::string("cudnnCreate: ") + e.what();
    }
  }
  if (error.empty())
    return r;
  if (kernel == AttentionKernel::Cudnn)
    return base::unavailable("--attention-kernel cudnn: " + error);
  if (why)
    *why = error;
  return std::unique_ptr<CudnnSdpaRunner>();
}

CudnnSdpaRunner::~CudnnSdpaRunner() = default;

size_t CudnnSdpaRunner::cachedGraphs() const { return impl_ ? impl_->cache.size() : 0; }
size_t CudnnSdpaRunner::workspaceBytes() const { return impl_ ? impl_->workspaceBytes : 0; }

StatusOr<bool> CudnnSdpaRunner::prepare(const AttentionPlan &plan, const std::string &declined,
                                        bool backward) {
  const CudnnSdpaKey first =
      cudnnSdpaKey(plan, backward ? SdpaGraph::ForwardStats : SdpaGraph::Forward);
  if (!declined.empty())
    return refuse(first.text(), declined);
  const Impl::Entry &e = impl_->entry(first);
  if (!e.graph)
    return refuse(first.text(), e.refused);
  if (!backward)
    return true;
  const CudnnSdpaKey second = cudnnSdpaKey(plan, SdpaGraph::Backward);
  const Impl::Entry &b = impl_->entry(second);
  if (!b.graph)
    return refuse(second.text(), b.refused);
  return true;
}

StatusOr<bool> CudnnSdpaRunner::forward(const AttentionPlan &plan, const std::string &declined,
                                        const void *q, const void *k, const void *v, void *out,
                                        cudaStream_t stream) {
  const CudnnSdpaKey key = cudnnSdpaKey(plan, SdpaGraph::Forward);
  if (!declined.empty())
    return refuse(key.text(), declined);
  if (!aligned16({q, k, v, out}))
    return refuse(key.text(), "a tensor is not 16-byte aligned");
  const Impl::Entry &e = impl_->entry(key);
  if (!e.graph)
    return refuse(key.text(), e.refused);
  std::unordered_map<int64_t, void *> pack = {
      {kQ, const_cast<void *>(q)}, {kK, const_cast<void *>(k)}, {kV, const_cast<void *>(v)},
      {kO, out}};
  RP_RETURN_IF_ERROR(impl_->execute(e, key, pack, stream));
  return true;
}

StatusOr<bool> CudnnSdpaRunner::backward(const AttentionPlan &plan, const std::string &declined,
                                         const void *q, const void *k, const void *v,
                                         const void *out, const void *dout, void *dq, void *dk,
                                         void *dv, void *scratch, cudaStream_t stream) {
  const CudnnSdpaKey fwdKey = cudnnSdpaKey(plan, SdpaGraph::ForwardStats);
  const CudnnSdpaKey bwdKey = cudnnSdpaKey(plan, SdpaGraph::Backward);
  if (!declined.empty())
    return refuse(bwdKey.text(), declined);
  if (!scratch)
    return base::internal("cudnn-sdpa: " + bwdKey.text() + " has no scratch");
  if (!aligned16({q, k, v, out, dout, dq, dk, dv, scratch}))
    return refuse(bwdKey.text(), "a tensor is not 16-byte aligned");
  const Impl::Entry &fwd = impl_->entry(fwdKey);
  if (!fwd.graph)
    return refuse(fwdKey.text(), fwd.refused);
  const Impl::Entry &bwd = impl_->entry(bwdKey);
  if (!bwd.graph)
    return refuse(bwdKey.text(), bwd.refused);
  // Scratch: the recomputed O' (discarded), then the log-sum-exp the backward reads.
  const size_t statsOffset = cudnnSdpaBackwardScratchBytes(plan) -
                             static_cast<size_t>(plan.batch * plan.heads * plan.seq) * 4;
  void *stats = static_cast<char *>(scratch) + statsOffset;
  std::unordered_map<int64_t, void *> fwdPack = {
      {kQ, const_cast<void *>(q)}, {kK, const_cast<void *>(k)}, {kV, const_cast<void *>(v)},
      {kO, scratch}, {kStats, stats}};
  RP_RETURN_IF_ERROR(impl_->execute(fwd, fwdKey, fwdPack, stream));
  std::unordered_map<int64_t, void *> bwdPack = {
      {kQ, const_cast<void *>(q)},   {kK, const_cast<void *>(k)},
      {kV, const_cast<void *>(v)},   {kO, const_cast<void *>(out)},
      {kDO, const_cast<void *>(dout)}, {kStats, stats},
      {kDQ, dq},                     {kDK, dk},
      {kDV, dv}};
  RP_RETURN_IF_ERROR(impl_->execute(bwd, bwdKey, bwdPack, stream));
  return true;
}

#else // !RP_HAVE_CUDNN_FRONTEND

struct CudnnSdpaRunner::Impl {};

StatusOr<std::unique_ptr<CudnnSdpaRunner>> CudnnSdpaRunner::create(AttentionKernel kernel,
                                                                   std::string *why) {
  const std::string error = "this build has no cuDNN frontend (scripts/install-deps.sh fetches "
                            "its headers; CMake then enables cuDNN attention)";
  if (kernel == AttentionKernel::Cudnn)
    return base::unavailable("--attention-kernel cudnn: " + error);
  if (why)
    *why = error;
  return std::unique_ptr<CudnnSdpaRunner>();
}

CudnnSdpaRunner::~CudnnSdpaRunner() = default;
size_t CudnnSdpaRunner::cachedGraphs() const { return 0; }
size_t CudnnSdpaRunner::workspaceBytes() const { return 0; }

StatusOr<bool> CudnnSdpaRunner::prepare(const AttentionPlan &plan, const std::string &, bool) {
  return refuse(cudnnSdpaKey(plan, SdpaGraph::Forward).text(), "built without cuDNN");
}

StatusOr<bool> CudnnSdpaRunner::forward(const AttentionPlan &plan, const std::string &,
                                        const void *, const void *, const void *, void *,
                                        cudaStream_t) {
  return refuse(cudnnSdpaKey(plan, SdpaGraph::Forward).text(), "built without cuDNN");
}

StatusOr<bool> CudnnSdpaRunner::backward(const AttentionPlan &plan, const std::string &,
                                         const void *, const void *, const void *, const void *,
                                         const void *, void *, void *, void *, void *,
                                         cudaStream_t) {
  return refuse(cudnnSdpaKey(plan, SdpaGraph::Backward).text(), "built without cuDNN");
}

#endif // RP_HAVE_CUDNN_FRONTEND

CudnnSdpaRunner::CudnnSdpaRunner(AttentionKernel kernel) : kernel_(kernel) {}

StatusOr<bool> CudnnSdpaRunner::refuse(const std::string &what, const std::string &why) const {
  if (kernel_ == AttentionKernel::Cudnn)
    return base::unimplemented("attention: cuDNN SDPA declines " + what + ": " + why +
                                  " (--attention-kernel cudnn; auto falls back to rpc's kernels)");
  return false;
}

} // namespace rp::kernels::cuda
