//===- Cast.cuh - Float format conversion kernels on the GPU ----*- C++ -*-===//
//
// Element-wise casts between binary32 and the 16-bit float formats on device
// memory. 16-bit values are passed as uint16_t bit patterns (layout-identical
// to __nv_bfloat16 / __half). Results are bit-identical to the CPU conversions
// in base/Float16.h (the kernels call those same functions): round to
// nearest even, NaN -> quiet NaN keeping sign and top payload bits, overflow ->
// infinity, binary16 subnormals exact.
//
// Launchers (karpathy/llm.c style): explicit element count `n` and stream;
// they check their arguments, enqueue one kernel on `stream` and return
// cudaGetLastError(). `src` and `dst` are device pointers aligned to their
// element size that must not overlap; when both are 16-byte aligned the kernel
// moves 16-byte vectors. Errors: cudaErrorInvalidValue for n < 0, a null
// pointer with n > 0, or a pointer not aligned to its element size (nothing
// is launched); otherwise any launch error. n == 0 launches nothing and
// returns cudaSuccess. This header includes no device code and can be used
// from host C++.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_CAST_CUH
#define RP_KERNELS_CUDA_CAST_CUH

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// dst[i] = bf16(src[i]) for i in [0, n): src n floats, dst n bf16 bit patterns.
cudaError_t castF32ToBf16(const float *src, uint16_t *dst, int64_t n, cudaStream_t stream);

/// dst[i] = float(src[i]) (exact): src n bf16 bit patterns, dst n floats.
cudaError_t castBf16ToF32(const uint16_t *src, float *dst, int64_t n, cudaStream_t stream);

/// dst[i] = f16(src[i]) for i in [0, n): src n floats, dst n binary16 bit patterns.
cudaError_t castF32ToF16(const float *src, uint16_t *dst, int64_t n, cudaStream_t stream);

/// dst[i] = float(src[i]) (exact): src n binary16 bit patterns, dst n floats.
cudaError_t castF16ToF32(const uint16_t *src, float *dst, int64_t n, cudaStream_t stream);

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_CAST_CUH
