//===- CudnnAttention.cpp - cuDNN SDPA: selection, decline rules, cache keys ---===//
//
// The parts of CudnnAttention.h that need neither cuDNN nor a GPU (unit-tested everywhere);
// the runner is in CudnnSdpaRunner.cpp.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CudnnAttention.h"

#include <cstdio>
#include <cstring>
#include <functional>

namespace rp::kernels::cuda {

using base::DType;

base::StatusOr<AttentionKernel> parseAttentionKernel(std::string_view text) {
  if (text == "auto")
    return AttentionKernel::Auto;
  if (text == "cudnn")
    return AttentionKernel::Cudnn;
  if (text == "flash")
    return AttentionKernel::Flash;
  return base::invalidArgument("unknown --attention-kernel '" + std::string(text) +
                                  "' (expected auto, cudnn or flash)");
}

const char *attentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
  case AttentionKernel::Auto:
    return "auto";
  case AttentionKernel::Cudnn:
    return "cudnn";
  case AttentionKernel::Flash:
    return "flash";
  }
  return "?";
}

bool cudnnSdpaBuilt() {
#if RP_HAVE_CUDNN_FRONTEND
  return true;
#else
  return false;
#endif
}

std::string cudnnSdpaDecline(const AttentionPlan &plan, const SdpaExtras &extras) {
  if (plan.dtype != DType::F16 && plan.dtype != DType::BF16)
    return std::string("dtype ") + base::dtypeName(plan.dtype) + " (cuDNN SDPA takes f16 and bf16)";
  if (plan.dim % 8 != 0 || plan.dim > kCudnnSdpaMaxDim)
    return "head dimension " + std::to_string(plan.dim) + " (cuDNN SDPA here: a multiple of 8 up to " +
           std::to_string(kCudnnSdpaMaxDim) + ")";
  if (plan.kvHeads <= 0 || plan.heads % plan.kvHeads != 0 || plan.seq <= 0 || plan.batch <= 0)
    return "empty or inconsistent geometry";
  if (plan.valueDim != plan.dim)
    return "a value head size (" + std::to_string(plan.valueDim) + ") other than the query's (" +
           std::to_string(plan.dim) + ") (not handed to cuDNN)";
  if (extras.sinks)
    return "attention sinks (not handed to cuDNN yet)";
  if (extras.window > 0)
    return "a sliding window (not handed to cuDNN yet)";
  if (extras.softcap != 0.0)
    return "a logit soft-cap (cuDNN SDPA has none)";
  return "";
}

static uint64_t floatBits(double scale) {
  const float f = static_cast<float>(scale);
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

bool CudnnSdpaKey::operator==(const CudnnSdpaKey &o) const {
  return dtype == o.dtype && batch == o.batch && heads == o.heads && kvHeads == o.kvHeads &&
         seq == o.seq && dim == o.dim && scaleBits == o.scaleBits && causal == o.causal &&
         graph == o.graph;
}

std::string CudnnSdpaKey::text() const {
  static const char *const kGraphs[] = {"forward", "forward+stats", "backward"};
  float scale = 0;
  const uint32_t bits = static_cast<uint32_t>(scaleBits);
  std::memcpy(&scale, &bits, sizeof scale);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %s B=%lld Hq=%lld Hkv=%lld S=%lld D=%lld scale=%g%s",
                kGraphs[static_cast<int>(graph)], base::dtypeName(dtype),
                static_cast<long long>(batch), static_cast<long long>(heads),
                static_cast<long long>(kvHeads), static_cast<long long>(seq),
                static_cast<long long>(dim), static_cast<double>(scale), causal ? " causal" : "");
  return buf;
}

size_t CudnnSdpaKeyHash::operator()(const CudnnSdpaKey &k) const {
  size_t h = std::hash<int>()(static_cast<int>(k.dtype));
  for (uint64_t v : {static_cast<uint64_t>(k.batch), static_cast<uint64_t>(k.heads),
                     static_cast<uint64_t>(k.kvHeads), static_cast<uint64_t>(k.seq),
                     static_cast<uint64_t>(k.dim), k.scaleBits,
                     static_cast<uint64_t>(k.causal), static_cast<uint64_t>(k.graph)})
    h = h * 1000003u ^ std::hash<uint64_t>()(v);
  return h;
}

CudnnSdpaKey cudnnSdpaKey(const AttentionPlan &plan, SdpaGraph graph) {
  CudnnSdpaKey k;
  k.dtype = plan.dtype;
  k.batch = plan.batch;
  k.heads = plan.heads;
  k.kvHeads = plan.kvHeads;
  k.seq = plan.seq;
  k.dim = plan.dim;
  k.scaleBits = floatBits(plan.scale);
  k.causal = plan.causal;
  k.graph = graph;
  return k;
}

size_t cudnnSdpaBackwardScratchBytes(const AttentionPlan &plan) {
  const size_t rows = static_cast<size_t>(plan.batch * plan.heads * plan.seq);
  const size_t outBytes = (rows * static_cast<size_t>(plan.dim) * 2 + 255) / 256 * 256;
  return outBytes + rows * sizeof(float);
}

} // namespace rp::kernels::cuda
