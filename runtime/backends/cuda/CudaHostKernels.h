//===- CudaHostKernels.h - The CUDA backend's kernels, run on the host -*- C++ -*-===//
//
// A HostKernelSet for the CPU backend (runtime/backends/cpu/CpuBackend.h) that decodes a plan
// exactly as the CUDA backend does (CudaKernel: the GPU kernels' planners, launch geometry,
// scratch) and runs each instruction's host replay (kernels/cuda/HostReplay.h: the GPU
// kernels' bodies over every point, in the device's combine order). `rp-run --kernels
// cuda-host` trains with it: the GPU code path end to end -- decoding, planning, operand
// wiring, the kernels' arithmetic -- checked on a machine without a GPU, in fp32, bf16 and
// fp16 (the CPU reference kernels run fp32 only). It is slow (plain loops, one thread per
// queue) and it is not the GPU: launches, streams, cuBLASLt and the device libm are not
// exercised (docs/CUDA.md).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_BACKENDS_CUDA_CUDAHOSTKERNELS_H
#define RP_RUNTIME_BACKENDS_CUDA_CUDAHOSTKERNELS_H

#include "runtime/backends/cpu/CpuBackend.h"

#include <memory>

namespace rp::runtime {

/// The CUDA backend's decoded kernels, replayed on the host.
std::unique_ptr<HostKernelSet> makeCudaHostKernels();

} // namespace rp::runtime

#endif // RP_RUNTIME_BACKENDS_CUDA_CUDAHOSTKERNELS_H
