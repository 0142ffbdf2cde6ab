//===- Quantize.h - Quantized frozen weights on the CPU ---------*- C++ -*-===//
//
// The host side of rpc-compile --base-weights (kernels/Quantization.h has the formats and the
// byte layouts): `quantizeWeight` turns an f32 weight into its quantized storage as rp-run loads
// it, `dequantize` is graph.dequantize's reference kernel (the storage back to the compute
// dtype, what the GEMM reads).
//
// nf4 follows bitsandbytes 0.50 operation by operation, so that its dequantized values equal
// bitsandbytes' dequantize_4bit(quantize_4bit(w, blocksize=64, quant_type="nf4",
// compress_statistics=True)) bit for bit (test/Unit/kernels/cpu/CpuQuantizeTest.cpp checks a
// committed fixture made by bitsandbytes):
//   - absmax_b = max |w| over block b (64 elements); s = w * (1 / max(absmax_b, 1e-38)) clamped
//     to [-1, 1], all in f32 (bitsandbytes' quantize_4bit, default backend);
//   - the code is the number of midpoints (NF4[i] + NF4[i + 1]) / 2 below s (torch.bucketize:
//     a value on a midpoint takes the lower code);
//   - double quantization (QLoRA §3): offset = mean(absmax) as torch computes it on the CPU
//     (ATen's float cascade sum, 8 lanes, 4-way interleaved, four levels; then / count in f32),
//     then each 256-block of absmax - offset is multiplied by 1 / its absmax2 and coded with
//     the signed 8-bit dynamic map through bitsandbytes' 65536-point lookup table
//     (quantize_blockwise on the CPU);
//   - dequantization: absmax_b = dyn[q_b] * absmax2 + offset (two f32 roundings), w = NF4[c] *
//     absmax_b (bitsandbytes' dequantize_blockwise and dequantize_4bit), then one rounding to
//     the output dtype.
// torch's own mean depends on the vector width and thread count of the machine it runs on; the
// fixture was made on one thread of an AVX-512 CPU, whose float sums use 8 lanes.
// int8: q = rint(w * (127 / absmax_c)) (half to even), w' = q * absmax_c * (1 / 127)
// (bitsandbytes' int8_vectorwise_quant / int8_vectorwise_dequant). fp8: scale_c = absmax_c /
// 448, q = e4m3(w / scale_c) rounded to nearest even, saturating at +-448, w' = float(q) *
// scale_c. A channel (or block) of zeros has absmax 0 and dequantizes to zeros.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_QUANTIZE_H
#define RP_KERNELS_CPU_QUANTIZE_H

#include "base/HostTensor.h"
#include "base/Status.h"
#include "kernels/Quantization.h"

#include <cstdint>
#include <vector>

namespace rp::kernels::cpu {

/// The e4m3 value of every byte (NaN for 0x7f and 0xff).
float fp8E4m3ToFloat(uint8_t bits);
/// `x` to e4m3, rounded to nearest even, saturating at +-448 (x finite).
uint8_t floatToFp8E4m3(float x);

/// torch.sum of `n` f32 values as ATen computes it on the CPU in one thread with 8-lane
/// vectors (the offset of nf4's double quantization is this sum / n in f32).
float torchCpuSum(const float *x, int64_t n);

/// Quantizes the weight `w` (layout.elements f32, row-major, of `shape`) into `out`
/// (layout.bytes, from quantLayout(format, shape, axis)). Errors: InvalidArgument naming
/// `what` when an element is not finite.
base::Status quantizeWeight(const float *w, const std::vector<int64_t> &shape,
                            const QuantLayout &layout, int64_t axis, uint8_t *out,
                            const std::string &what);

/// graph.dequantize: `q` (u8 [layout bytes] of a weight of out's shape) into `out` (f32, f16
/// or bf16: values computed in f32, rounded once). Errors: InvalidArgument when q is not u8 of
/// one dimension, its length is not the layout's bytes or out's dtype is not a float.
base::Status dequantize(const base::HostTensor &q, QuantFormat format, int64_t axis,
                        base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_QUANTIZE_H
