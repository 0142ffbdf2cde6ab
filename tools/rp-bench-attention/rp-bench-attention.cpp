//===- rp-bench-attention.cpp - Times the GPU attention kernels -----------===//
//
// A benchmark, not a test: times graph.attention and graph.attention_vjp on the GPU at one
// shape (the tensor-core kernels of kernels/cuda/FlashAttention*.h where they apply, and with
// --row the row kernels too; with --kernel cudnn cuDNN's fused SDPA through CudnnAttention.h
// instead, its backward including the forward-with-statistics it runs first) and prints the median time of --iters launches and the achieved
// rate. Inputs are random bf16/f16 values in [-2, 2) (never zeros); every launch's CUDA status
// is checked. FLOPs counted: forward 4 B Hq S^2 D (halved when causal: the (query, key) pairs
// computed), backward 2.5 x the forward (FlopRules.h's attention_vjp rule).
//
//   rp-bench-attention --seq 4096 --heads 16 --kv-heads 8 --dim 128 --dtype bf16 [--row]
//   rp-bench-attention --seq 4096 --heads 16 --kv-heads 8 --dim 128 --kernel cudnn
//
// Exit status: 0 after timing, 1 without a usable GPU or on a CUDA error, 2 for bad flags.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/CudnnAttention.h"
#include "kernels/cuda/Fused.h"

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using rp::base::DType;
namespace kc = rp::kernels::cuda;

struct Options {
  int64_t batch = 1, heads = 16, kvHeads = 8, seq = 4096, dim = 128;
  std::string dtype = "bf16";
  std::string kernel = "flash"; ///< flash | cudnn
  bool causal = true, row = false;
  int iters = 20;
};

/// A device buffer of `count` random 16-bit values in [-2, 2) (bf16 or f16 bit patterns).
struct Buffer {
  void *ptr = nullptr;
  ~Buffer() { cudaFree(ptr); }
};

bool fill(Buffer &b, size_t count, DType dtype, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<uint16_t> host(count);
  for (uint16_t &h : host) {
    const float x = dist(rng);
    if (dtype == DType::BF16) {
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      h = static_cast<uint16_t>(bits >> 16);
    } else {
      h = static_cast<uint16_t>(0x3c00 + (static_cast<uint32_t>(rng()) & 0x3ff)); // [1, 2)
    }
  }
  return cudaMalloc(&b.ptr, count * 2) == cudaSuccess &&
         cudaMemcpy(b.ptr, host.data(), count * 2, cudaMemcpyHostToDevice) == cudaSuccess;
}

/// The median of `iters` timed launches (after one warm-up), milliseconds; < 0 on an error.
double medianMs(int iters, const std::function<cudaError_t()> &launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> times;
  bool ok = launch() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  for (int i = 0; ok && i < iters; ++i) {
    cudaEventRecord(a);
    ok = launch() == cudaSuccess;
    cudaEventRecord(b);
    ok = ok && cudaEventSynchronize(b) == cudaSuccess;
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    times.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (!ok)
    return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Times cuDNN's SDPA (CudnnSdpaRunner, --kernel cudnn); 1 when cuDNN is unusable or declines.
int runCudnn(const Options &o, const kc::AttentionPlan &plan, double flops, const Buffer &bq,
             const Buffer &bk, const Buffer &bv, const Buffer &bo, const Buffer &bdo,
             const Buffer &gq, const Buffer &gk, const Buffer &gv, const Buffer &scratch) {
  auto runner = kc::CudnnSdpaRunner::create(kc::AttentionKernel::Cudnn, nullptr);
  if (!runner.ok()) {
    std::fprintf(stderr, "rp-bench-attention: %s\n", runner.status().toString().c_str());
    return 1;
  }
  const std::string declined = kc::cudnnSdpaDecline(plan);
  std::string error;
  auto status = [&](const rp::base::StatusOr<bool> &r) {
    if (!r.ok() && error.empty())
      error = r.status().toString();
    return r.ok() ? cudaSuccess : cudaErrorUnknown;
  };
  kc::CudnnSdpaRunner &r = **runner;
  const double ms = medianMs(o.iters, [&] {
    return status(r.forward(plan, declined, bq.ptr, bk.ptr, bv.ptr, bo.ptr, nullptr));
  });
  const double msB = medianMs(o.iters, [&] {
    return status(r.backward(plan, declined, bq.ptr, bk.ptr, bv.ptr, bo.ptr, bdo.ptr, gq.ptr,
                             gk.ptr, gv.ptr, scratch.ptr, nullptr));
  });
  if (ms < 0 || msB < 0) {
    std::fprintf(stderr, "rp-bench-attention: %s\n",
                 error.empty() ? cudaGetErrorName(cudaGetLastError()) : error.c_str());
    return 1;
  }
  std::printf("  forward  (cuDNN SDPA): %9.3f ms  %7.1f TFLOP/s\n", ms, flops / ms / 1e9);
  std::printf("  backward (cuDNN SDPA, with its stats forward): %9.3f ms  %7.1f TFLOP/s\n", msB,
              2.5 * flops / msB / 1e9);
  return 0;
}

int run(const Options &o) {
  const DType dtype = o.dtype == "bf16" ? DType::BF16 : DType::F16;
  const std::vector<int64_t> q{o.batch, o.heads, o.seq, o.dim}, k{o.batch, o.kvHeads, o.seq, o.dim};
  auto fwd = kc::planAttention(dtype, q, k, k, 1.0 / std::sqrt(double(o.dim)), o.causal, q);
  auto bwd = fwd.ok() ? kc::planAttentionVjp(dtype, q, k, k, q, q, fwd->scale, o.causal, q, k, k)
                      : fwd.status();
  if (!bwd.ok()) {
    std::fprintf(stderr, "rp-bench-attention: %s\n", bwd.status().toString().c_str());
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "rp-bench-attention: no CUDA device\n");
    return 1;
  }
  const size_t nq = size_t(o.batch * o.heads * o.seq * o.dim), nk = size_t(o.batch * o.kvHeads * o.seq * o.dim);
  std::mt19937 rng(1);
  Buffer bq, bk, bv, bo, bdo, gq, gk, gv, scratch;
  if (!fill(bq, nq, dtype, rng) || !fill(bk, nk, dtype, rng) || !fill(bv, nk, dtype, rng) ||
      !fill(bo, nq, dtype, rng) || !fill(bdo, nq, dtype, rng) || !fill(gq, nq, dtype, rng) ||
      !fill(gk, nk, dtype, rng) || !fill(gv, nk, dtype, rng) ||
      cudaMalloc(&scratch.ptr, std::max<size_t>({bwd->scratchBytes, 1,
                                                  kc::cudnnSdpaBackwardScratchBytes(*fwd)})) !=
          cudaSuccess) {
    std::fprintf(stderr, "rp-bench-attention: cannot allocate or fill the inputs\n");
    return 1;
  }
  const double pairs = o.causal ? double(o.seq) * (o.seq + 1) / 2 : double(o.seq) * o.seq;
  const double flops = 4.0 * o.batch * o.heads * pairs * o.dim;
  std::printf("attention %s B=%lld Hq=%lld Hkv=%lld S=%lld D=%lld %s, median of %d\n",
              o.dtype.c_str(), (long long)o.batch, (long long)o.heads, (long long)o.kvHeads,
              (long long)o.seq, (long long)o.dim, o.causal ? "causal" : "full", o.iters);
  if (o.kernel == "cudnn")
    return runCudnn(o, *fwd, flops, bq, bk, bv, bo, bdo, gq, gk, gv, scratch);
  for (bool tensorCores : {true, false}) {
    if (!tensorCores && !o.row)
      break;
    kc::AttentionPlan f = *fwd;
    kc::AttentionVjpPlan g = *bwd;
    f.tensorCores = g.tensorCores = g.forward.tensorCores = tensorCores && fwd->tensorCores;
    const double ms = medianMs(o.iters, [&] { return kc::launchAttention(f, bq.ptr, bk.ptr, bv.ptr, bo.ptr, nullptr); });
    const double msB = medianMs(o.iters, [&] {
      return kc::launchAttentionVjp(g, bq.ptr, bk.ptr, bv.ptr, bo.ptr, bdo.ptr, gq.ptr, gk.ptr, gv.ptr, scratch.ptr, nullptr);
    });
    if (ms < 0 || msB < 0) {
      std::fprintf(stderr, "rp-bench-attention: CUDA error: %s\n", cudaGetErrorName(cudaGetLastError()));
      return 1;
    }
    const char *kind = f.tensorCores ? "tensor cores" : "row kernels";
    std::printf("  forward  (%s): %9.3f ms  %7.1f TFLOP/s\n", kind, ms, flops / ms / 1e9);
    std::printf("  backward (%s): %9.3f ms  %7.1f TFLOP/s\n", kind, msB, 2.5 * flops / msB / 1e9);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"Times the GPU attention kernels (graph.attention, graph.attention_vjp) at one shape"};
  app.add_option("--batch", o.batch, "Batch B")->check(CLI::PositiveNumber);
  app.add_option("--heads", o.heads, "Query heads Hq")->check(CLI::PositiveNumber);
  app.add_option("--kv-heads", o.kvHeads, "Key/value heads Hkv (dividing Hq)")->check(CLI::PositiveNumber);
  app.add_option("--seq", o.seq, "Sequence length S")->check(CLI::PositiveNumber);
  app.add_option("--dim", o.dim, "Head dimension D")->check(CLI::PositiveNumber);
  app.add_option("--dtype", o.dtype, "bf16 or f16")->check(CLI::IsMember({"bf16", "f16"}));
  app.add_flag("!--no-causal", o.causal, "Full (non-causal) attention");
  app.add_flag("--row", o.row, "Also time the row kernels (slow at long sequences)");
  app.add_option("--kernel", o.kernel,
                 "flash (rpc's kernels, default) or cudnn (cuDNN's fused SDPA; not with --row)")
      ->check(CLI::IsMember({"flash", "cudnn"}));
  app.add_option("--iters", o.iters, "Timed launches (the median is printed)")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.kernel == "cudnn" && o.row) {
    std::fprintf(stderr, "rp-bench-attention: --row times rpc's row kernels; not with --kernel cudnn\n");
    return 2;
  }
  return run(o);
}
