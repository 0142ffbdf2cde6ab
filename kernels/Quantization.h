//===- Quantization.h - Formats and byte layouts of quantized weights -*- C++ -*-===//
//
// A frozen weight a GEMM reads may be held quantized (rpc-compile --base-weights): in the host
// arena, in the uploads and in the device's weight slot it is one byte string, and a
// `dequantize` instruction turns it into the compute-dtype operand of the GEMM. This header
// says which formats exist, how many bytes a weight of a shape takes in each and where each
// part lies in the string; the compiler (graph.param, graph.dequantize, the plan), the runtime
// (loading, the plan validator, the report) and the kernels (kernels/cpu/Quantize.h,
// kernels/cuda/Quantize.h) all read it from here.
//
// Formats and layouts (n elements, row-major, of a weight of rank >= 2; every part starts at a
// multiple of 16 bytes; fp32 little-endian):
//
//   nf4               QLoRA's storage (Dettmers et al. 2023, §3 "4-bit NormalFloat" and
//                     "Double Quantization"), exactly as bitsandbytes 0.50's quantize_4bit
//                     with blocksize 64, quant_type "nf4", compress_statistics=True:
//                       codes    n / 2 bytes, two 4-bit NF4 indices per byte (element 2i in
//                                the high nibble, 2i + 1 in the low), blocks of 64 elements
//                       qabsmax  n / 64 bytes: each block's absmax minus `offset`, quantized
//                                blockwise (blocks of 256) to bitsandbytes' signed 8-bit
//                                dynamic map
//                       absmax2  ceil(n / 16384) fp32: each 256-block's absmax of the above
//                       offset   1 fp32: the mean of the blocks' absmax
//   nf4-fp32-absmax   as nf4 with compress_statistics=False: codes, then n / 64 fp32 absmax
//   int8              per-output-channel absmax (bitsandbytes' int8_vectorwise_quant): n int8
//                     codes, then one fp32 absmax per output channel
//   fp8               e4m3 (OCP FP8, finite max 448) with one fp32 scale (absmax / 448) per
//                     output channel: n codes, then the scales
//
// An output channel is every index but the input axis (`axis`: rank - 1 for a weight read as
// x W^T, [.., out, in]; rank - 2 for x W, [.., in, out]), so a weight has n / shape[axis]
// channels. nf4 needs the last dimension to be a multiple of 64, so that no block spans two
// rows (the checks refuse other shapes rather than quantize across rows).
//
// Plain C++17, no dependency but base/ (both worlds link it with the kernel registry).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_QUANTIZATION_H
#define RP_KERNELS_QUANTIZATION_H

#include "base/Float16.h" // RP_HOST_DEVICE
#include "base/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rp::kernels {

enum class QuantFormat { NF4, NF4Fp32Absmax, Int8, Fp8 };

/// Elements per NF4 block (bitsandbytes' blocksize 64, QLoRA's default).
inline constexpr int64_t kNf4Block = 64;
/// Absmax values per block of the double quantization (QLoRA's and bitsandbytes' 256).
inline constexpr int64_t kNf4AbsmaxBlock = 256;

/// The 16 NF4 values (bitsandbytes' NF4 table, QLoRA §3), ascending.
extern const float kNf4Values[16];
/// bitsandbytes' create_dynamic_map(signed=True) as f32, ascending (the codes of nf4's
/// double-quantized absmax).
extern const float kDynamicMap[256];

/// "nf4", "nf4-fp32-absmax", "int8", "fp8" (rpc-compile's --base-weights spelling).
const char *quantFormatName(QuantFormat format);
/// Parses quantFormatName's spellings (and "nf4_fp32_absmax", the graph dialect's keyword);
/// nullopt for anything else.
std::optional<QuantFormat> parseQuantFormat(std::string_view name);
/// True for int8 and fp8, whose scales are per output channel (they need `axis`).
inline bool quantFormatHasAxis(QuantFormat format) {
  return format == QuantFormat::Int8 || format == QuantFormat::Fp8;
}

/// Where the parts of one quantized weight lie, in bytes from the start of its storage.
struct QuantLayout {
  QuantFormat format = QuantFormat::NF4;
  int64_t elements = 0;
  int64_t codes = 0;       ///< offset 0: n / 2 (nf4) or n (int8, fp8) bytes
  int64_t absmax = 0;      ///< nf4: the 8-bit qabsmax (nf4) or fp32 absmax; int8/fp8: scales
  int64_t absmaxCount = 0; ///< blocks (nf4) or output channels (int8, fp8)
  int64_t absmax2 = 0;     ///< nf4 (double quantization): fp32 per 256 blocks
  int64_t absmax2Count = 0;
  int64_t offset = 0;      ///< nf4: the fp32 mean
  int64_t bytes = 0;       ///< the whole storage
};

/// The layout of a weight of `shape` in `format`; `axis` is the input axis (int8, fp8; ignored
/// by nf4). Errors: InvalidArgument when the weight cannot be quantized so, naming `what` (the
/// param): rank below 2, an empty dimension, a last dimension that is not a multiple of 64
/// (nf4: "... its last dimension 100 is not a multiple of the nf4 block size 64"), `axis` not
/// one of the last two dimensions (int8, fp8).
base::StatusOr<QuantLayout> quantLayout(QuantFormat format, const std::vector<int64_t> &shape,
                                        int64_t axis, const std::string &what);

/// The output channel of element `e` of a weight of `shape` with input axis `axis`
/// (`rows` = shape[rank - 2], `cols` = shape[rank - 1]).
/// Host and device (the CUDA dequantize body calls it).
RP_HOST_DEVICE inline int64_t quantChannel(int64_t e, int64_t rows, int64_t cols,
                                           bool inIsLast) {
  return inIsLast ? e / cols : (e / (rows * cols)) * cols + e % cols;
}

} // namespace rp::kernels

#endif // RP_KERNELS_QUANTIZATION_H
