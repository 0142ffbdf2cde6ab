//===- BackendFactory.cpp - The backend of a training run (rp-run) --------===//
//
// The only file of the trainer that depends on RP_HAVE_CUDA.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/BackendFactory.h"

#include "runtime/backends/cpu/CpuBackend.h"
#if RP_HAVE_CUDA
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/CudaHostKernels.h"
#endif

#include <map>
#include <string>
#include <vector>

namespace rp::runtime {

namespace pb = rp::plan;

Status BackendFactory::checkBuilt(const TrainOptions &options) {
#if !RP_HAVE_CUDA
  if (options.backend == "cuda")
    return unimplemented("this rp-run was built without the CUDA backend (no nvcc at build "
                         "time, or -DRP_ENABLE_CUDA=OFF); use --backend cpu");
#else
  (void)options;
#endif
  return okStatus();
}

/// --attention-kernel: a known name; other than auto only with --backend cuda; cudnn only in a
/// build with the cuDNN frontend.
static Status checkAttentionKernel(const TrainOptions &options) {
  const std::string &a = options.attentionKernel;
  if (a != "auto" && a != "cudnn" && a != "flash")
    return invalidArgument("unknown --attention-kernel '" + a +
                           "' (expected auto, cudnn or flash)");
  if (a != "auto" && options.backend != "cuda")
    return invalidArgument("--attention-kernel " + a +
                           " picks the CUDA backend's attention kernels: it needs --backend cuda");
#if RP_HAVE_CUDA
  if (a == "cudnn" && !kernels::cuda::cudnnSdpaBuilt())
    return unimplemented("--attention-kernel cudnn: this rp-run was built without the cuDNN "
                         "frontend (scripts/install-deps.sh fetches its headers); use auto or "
                         "flash");
#endif
  return okStatus();
}

StatusOr<BackendFactory> BackendFactory::probe(const TrainOptions &options) {
  if (options.kernels != "reference" && options.kernels != "cuda-host")
    return invalidArgument("unknown --kernels '" + options.kernels +
                           "' (expected reference or cuda-host)");
  if (options.kernels == "cuda-host" && options.backend != "cpu")
    return invalidArgument("--kernels cuda-host runs on the CPU backend (--backend cpu)");
  if (options.gemmAccumulate != "fp32" && options.gemmAccumulate != "fp16")
    return invalidArgument("unknown --gemm-accumulate '" + options.gemmAccumulate +
                           "' (expected fp32 or fp16)");
  if (options.gemmAccumulate == "fp16" && options.backend != "cuda")
    return invalidArgument("--gemm-accumulate fp16 selects cuBLASLt's fp16 accumulation: it "
                           "needs --backend cuda (the CPU kernels accumulate in fp32)");
  BackendFactory factory;
  factory.kernels_ = options.kernels;
  factory.progress_ = options.progress;
  factory.fp16Accumulate_ = options.gemmAccumulate == "fp16";
  if (options.cudaGraphs && options.backend != "cuda")
    return invalidArgument("--cuda-graphs replays CUDA graphs: it needs --backend cuda");
  if (options.cudaGraphs && !options.profileKernelsPath.empty())
    return invalidArgument("--cuda-graphs and --profile-kernels cannot be combined: the "
                           "kernels of a graph are not timed one by one");
  factory.cudaGraphs_ = options.cudaGraphs;
  RP_RETURN_IF_ERROR(checkAttentionKernel(options));
  factory.attentionKernel_ = options.attentionKernel;
#if !RP_HAVE_CUDA
  if (options.kernels == "cuda-host")
    return unimplemented("--kernels cuda-host needs the CUDA backend's kernels, which this "
                         "rp-run was built without (no nvcc at build time)");
#else
  // A missing GPU is reported before anything is loaded.
  if (options.backend == "cuda") {
    RP_ASSIGN_OR_RETURN(CudaDevices found, queryCudaDevices());
    factory.cuda_ = true;
    factory.gpus_ = found.count;
    factory.firstGpu_ = found.names[0];
  }
#endif
  return factory;
}

#if RP_HAVE_CUDA
/// The parsed --attention-kernel (probe checked the name).
static kernels::cuda::AttentionKernel toAttentionKernel(const std::string &name) {
  StatusOr<kernels::cuda::AttentionKernel> k = kernels::cuda::parseAttentionKernel(name);
  return k.ok() ? k.value() : kernels::cuda::AttentionKernel::Auto;
}
#endif

StatusOr<std::unique_ptr<Backend>> BackendFactory::create(int devices, std::FILE *out) const {
#if RP_HAVE_CUDA
  if (cuda_) {
    RP_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> gpu,
                        CudaBackend::create(devices, {fp16Accumulate_, cudaGraphs_,
                                                      toAttentionKernel(attentionKernel_)}));
    if (progress_)
      std::fprintf(out, "cuda: %d workers on %d GPU(s), worker w on GPU w mod %d; GPU 0: %s\n",
                   devices, gpus_, gpus_, firstGpu_.c_str());
    return std::unique_ptr<Backend>(std::move(gpu));
  }
  if (kernels_ == "cuda-host")
    return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(devices, makeCudaHostKernels()));
#else
  (void)out;
#endif
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(devices));
}

StatusOr<std::string> checkPlanForBackend(const pb::Plan &plan, const std::string &backend) {
  if (backend == "cpu")
    RP_RETURN_IF_ERROR(checkCpuPlanDType(plan));
  int64_t instructions = 0;
  std::map<std::string, int64_t> variants; // "<kernel id>: <variant>" -> instructions
  for (const pb::Function &f : plan.functions()) {
    if (backend == "cpu") {
      RP_RETURN_IF_ERROR(decodeFunction(f));
    } else if (backend == "cuda") {
#if RP_HAVE_CUDA
      RP_ASSIGN_OR_RETURN(std::vector<CudaInstr> decoded, decodeCudaFunction(f));
      for (const CudaInstr &i : decoded)
        if (!i.kernel.variant().empty())
          ++variants[i.kernel.id() + ": " + i.kernel.variant()];
#else
      return unimplemented("this rp-run was built without the CUDA backend (no nvcc at build "
                           "time, or -DRP_ENABLE_CUDA=OFF)");
#endif
    } else {
      return invalidArgument("--check decodes plans for the cpu and cuda backends, not '" +
                             backend + "'");
    }
    instructions += f.body_size();
  }
  std::string summary = backend + ": " + std::to_string(instructions) + " instructions in " +
                        std::to_string(plan.functions_size()) + " functions decode for the " +
                        (backend == "cuda" ? "GPU" : "CPU") + " kernels";
  for (const auto &[what, count] : variants)
    summary += "\n  " + std::to_string(count) + " x " + what;
  return summary;
}

} // namespace rp::runtime
