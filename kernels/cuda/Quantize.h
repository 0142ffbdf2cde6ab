//===- Quantize.h - graph.dequantize on the GPU -----------------*- C++ -*-===//
//
// A quantized frozen weight (kernels/Quantization.h: nf4, nf4-fp32-absmax, int8, fp8) into the
// compute-dtype operand of its GEMM, in device memory, with the semantics of the CPU reference
// (kernels/cpu/Quantize.h): each value computed in f32 exactly as there (every product and sum
// rounded on its own: __fmul_rn / __fadd_rn on the device, no fused multiply-add) and rounded
// once to f32, f16 or bf16, so the GPU's values equal the CPU's bit for bit (and, for nf4 into
// f32, bitsandbytes' dequantize_4bit).
//
//   nf4              w[i] = NF4[code(i)] * (dyn[qabsmax[b]] * absmax2[b / 256] + offset),
//                    b = i / 64 (nf4-fp32-absmax: the block's fp32 absmax)
//   int8             w[i] = (q[i] * absmax[c]) * (1 / 127), c the output channel of i
//   fp8              w[i] = e4m3(q[i]) * scale[c]
//
// Algorithm: one grid-stride thread per output element (dequantizeAt, an RP_HD body shared by
// the kernel in Quantize.cu and the host replay, kernels/cuda/HostReplay.cpp). The NF4 table
// and bitsandbytes' dynamic map travel in the plan (1 KiB of kernel arguments), so the body
// reads the same tables on the host and the device. No reduction: the result does not depend
// on the grid.
//
// Errors: planDequantize returns InvalidArgument with the CPU kernel's messages
// (kernels/KernelChecks.h checkDequantize); the launcher returns cudaErrorInvalidValue for a
// null or misaligned pointer, otherwise cudaGetLastError() after enqueueing; it never
// synchronizes. This header contains no device code and compiles with a host C++ compiler.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CUDA_QUANTIZE_H
#define RP_KERNELS_CUDA_QUANTIZE_H

#include "kernels/Quantization.h"
#include "kernels/cuda/Strided.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace rp::kernels::cuda {

/// One dequantization: `layout` of the storage, the output's dtype and matrix geometry.
struct DequantizePlan {
  QuantLayout layout;
  base::DType dtype = base::DType::F32; ///< of the output: f32, f16 or bf16
  int64_t rows = 0, cols = 0;           ///< the last two dimensions of the output
  bool inIsLast = true;                 ///< the input axis is the last one (int8, fp8)
  float nf4[16] = {};
  float dynamic[256] = {};
};

/// Checks a dequantization as cpu::dequantize does: q u8 [layout bytes] of a weight of shape
/// `out` in `format` with input axis `axis`, out f32, f16 or bf16. Errors: InvalidArgument,
/// e.g. "dequantize: q is u8[100], expected u8[8456] (nf4 of [128, 128])".
base::StatusOr<DequantizePlan> planDequantize(base::DType qDType, const Shape &q,
                                              QuantFormat format, int64_t axis,
                                              base::DType outDType, const Shape &out);

/// Enqueues the dequantization on `stream` (device pointers; out aligned to its element size).
/// Returns cudaErrorInvalidValue for a null or misaligned pointer, otherwise
/// cudaGetLastError(). Never synchronizes.
cudaError_t launchDequantize(const DequantizePlan &plan, const void *q, void *out,
                             cudaStream_t stream);

RP_HD inline float quantMul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
RP_HD inline float quantAdd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
RP_HD inline float quantLoadF32(const uint8_t *p) {
  const uint32_t u = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                     static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  return base::bitsToFloat(u);
}
/// The e4m3 value of `bits` (NaN for 0x7f, 0xff): exact.
RP_HD inline float fp8E4m3Value(uint8_t bits) {
  const uint32_t e = (bits >> 3) & 15, m = bits & 7;
  float v;
  if (e == 15 && m == 7)
    v = base::bitsToFloat(0x7fc00000u);
  else if (e == 0)
    v = static_cast<float>(m) * 0.001953125f; // m * 2^-9, exact
  else
    v = static_cast<float>(8 + m) * base::bitsToFloat((e - 10 + 127) << 23);
  return (bits & 0x80) ? -v : v;
}

/// Element i of a dequantization into an output of dtype D.
template <base::DType D>
RP_HD inline void dequantizeAt(const DequantizePlan &p, const uint8_t *q, void *out, int64_t i) {
  const QuantLayout &l = p.layout;
  float v;
  if (l.format == QuantFormat::NF4 || l.format == QuantFormat::NF4Fp32Absmax) {
    const int64_t b = i / kNf4Block;
    float absmax;
    if (l.format == QuantFormat::NF4Fp32Absmax)
      absmax = quantLoadF32(q + l.absmax + 4 * b);
    else
      absmax = quantAdd(quantMul(p.dynamic[q[l.absmax + b]],
                                 quantLoadF32(q + l.absmax2 + 4 * (b / kNf4AbsmaxBlock))),
                        quantLoadF32(q + l.offset));
    const uint8_t byte = q[i / 2];
    v = quantMul(p.nf4[(i & 1) ? (byte & 15) : (byte >> 4)], absmax);
  } else {
    const float scale = quantLoadF32(q + l.absmax + 4 * quantChannel(i, p.rows, p.cols, p.inIsLast));
    if (l.format == QuantFormat::Fp8)
      v = quantMul(fp8E4m3Value(q[i]), scale);
    else
      v = quantMul(quantMul(static_cast<float>(static_cast<int8_t>(q[i])), scale), 1.0f / 127.0f);
  }
  if constexpr (D == base::DType::BF16)
    static_cast<uint16_t *>(out)[i] = base::floatToBf16(v);
  else if constexpr (D == base::DType::F16)
    static_cast<uint16_t *>(out)[i] = base::floatToHalf(v);
  else
    static_cast<float *>(out)[i] = v;
}

//===--- host replay (kernels/cuda/HostReplay.cpp) --------------------------===//

namespace replay {
void dequantize(const DequantizePlan &plan, const void *q, void *out);
} // namespace replay

} // namespace rp::kernels::cuda

#endif // RP_KERNELS_CUDA_QUANTIZE_H
