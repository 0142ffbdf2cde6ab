//===- Quantize.cpp - Quantized frozen weights on the CPU -----------------===//

#include "kernels/cpu/Quantize.h"

#include "base/Float16.h"
#include "kernels/KernelChecks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace rp::kernels::cpu {

using base::DType;
using base::HostTensor;
using base::Status;

namespace {

int64_t ceilLog2(int64_t x) {
  if (x <= 2)
    return 1;
  int64_t bits = 0;
  for (uint64_t v = static_cast<uint64_t>(x - 1); v; v >>= 1)
    ++bits;
  return bits;
}

/// ATen's row_sum / multi_row_sum (SumKernel.cpp) over `count` vectors of W lanes at `x`
/// (vector i at x + i * W): four interleaved accumulators, each a four-level cascade; returns
/// the W lanes of the sum.
template <int W> std::array<float, W> rowSum(const float *x, int64_t count) {
  constexpr int kIlp = 4, kLevels = 4;
  using Vec = std::array<float, W>;
  auto add = [](Vec &a, const float *b) {
    for (int l = 0; l < W; ++l)
      a[l] = a[l] + b[l];
  };
  const int64_t sizeIlp = count / kIlp;
  const int64_t levelPower = std::max<int64_t>(4, ceilLog2(sizeIlp) / kLevels);
  const int64_t levelStep = int64_t(1) << levelPower, levelMask = levelStep - 1;
  Vec acc[kLevels][kIlp] = {};
  int64_t i = 0;
  while (i + levelStep <= sizeIlp) {
    for (int64_t j = 0; j < levelStep; ++j, ++i)
      for (int k = 0; k < kIlp; ++k)
        add(acc[0][k], x + (i * kIlp + k) * W);
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < kIlp; ++k) {
        add(acc[j][k], acc[j - 1][k].data());
        acc[j - 1][k] = Vec{};
      }
      if ((i & (levelMask << (j * levelPower))) != 0)
        break;
    }
  }
  for (; i < sizeIlp; ++i)
    for (int k = 0; k < kIlp; ++k)
      add(acc[0][k], x + (i * kIlp + k) * W);
  for (int j = 1; j < kLevels; ++j)
    for (int k = 0; k < kIlp; ++k)
      add(acc[0][k], acc[j][k].data());
  Vec sum = acc[0][0];
  for (int64_t r = sizeIlp * kIlp; r < count; ++r)
    add(sum, x + r * W);
  for (int k = 1; k < kIlp; ++k)
    add(sum, acc[0][k].data());
  return sum;
}

/// bitsandbytes' 8-bit quantization of a value already divided by its block's absmax
/// (quantize_blockwise on the CPU, 0.50): [-1, 1] is cut into 65536 points, point i at
/// -1 + 2i / 65535, and each point takes the first dynamic-map entry whose midpoint with the
/// next is not below it; a value goes to point trunc(((v + 1) * 0.5) * 65535 + 0.5) (f32,
/// no fused multiply-add). Not always the nearest entry: what bitsandbytes computes.
uint8_t dynamicCode(float v) {
  static const std::vector<uint8_t> lut = [] {
    constexpr int kPoints = 65536;
    float mid[255];
    for (int i = 0; i < 255; ++i)
      mid[i] = 0.5f * (kDynamicMap[i] + kDynamicMap[i + 1]);
    std::vector<uint8_t> t(kPoints);
    int code = 0;
    for (int i = 0; i < kPoints; ++i) {
      const float point = -1.0f + (2.0f * static_cast<float>(i)) / static_cast<float>(kPoints - 1);
      while (code < 255 && mid[code] < point)
        ++code;
      t[static_cast<size_t>(i)] = static_cast<uint8_t>(code);
    }
    return t;
  }();
  v = std::clamp(v, -1.0f, 1.0f);
  const float scaled = ((v + 1.0f) * 0.5f) * 65535.0f;
  return lut[static_cast<uint16_t>(scaled + 0.5f)];
}

uint8_t nf4Code(float scaled) {
  uint8_t code = 0;
  for (int i = 0; i < 15; ++i) {
    const float mid = (kNf4Values[i] + kNf4Values[i + 1]) / 2.0f;
    code += static_cast<uint8_t>(mid < scaled);
  }
  return code;
}

void storeF32(float *p, float v) { std::memcpy(p, &v, 4); }
float loadF32(const uint8_t *p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

void quantizeNf4(const float *w, const QuantLayout &l, uint8_t *out) {
  const int64_t blocks = l.absmaxCount;
  std::vector<float> absmax(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const float *x = w + b * kNf4Block;
    float m = 0.0f;
    for (int64_t i = 0; i < kNf4Block; ++i)
      m = std::max(m, std::fabs(x[i]));
    absmax[static_cast<size_t>(b)] = m;
    const float recip = 1.0f / std::max(m, 1e-38f);
    for (int64_t i = 0; i < kNf4Block; i += 2) {
      const float s0 = std::clamp(x[i] * recip, -1.0f, 1.0f);
      const float s1 = std::clamp(x[i + 1] * recip, -1.0f, 1.0f);
      out[(b * kNf4Block + i) / 2] = static_cast<uint8_t>(nf4Code(s0) << 4 | nf4Code(s1));
    }
  }
  if (l.format == QuantFormat::NF4Fp32Absmax) {
    std::memcpy(out + l.absmax, absmax.data(), absmax.size() * 4);
    return;
  }
  // Double quantization (QLoRA §3; bitsandbytes' quantize_4bit with compress_statistics).
  const float offset = torchCpuSum(absmax.data(), blocks) / static_cast<float>(blocks);
  for (float &a : absmax)
    a = a - offset;
  for (int64_t g = 0; g < l.absmax2Count; ++g) {
    const int64_t begin = g * kNf4AbsmaxBlock,
                  end = std::min(blocks, begin + kNf4AbsmaxBlock);
    float m = 0.0f;
    for (int64_t i = begin; i < end; ++i)
      m = std::max(m, std::fabs(absmax[static_cast<size_t>(i)]));
    storeF32(reinterpret_cast<float *>(out + l.absmax2) + g, m);
    if (m == 0.0f)
      continue; // codes 0 (the storage starts zeroed), as bitsandbytes writes them
    const float inv = 1.0f / m;
    for (int64_t i = begin; i < end; ++i)
      out[l.absmax + i] = dynamicCode(absmax[static_cast<size_t>(i)] * inv);
  }
  storeF32(reinterpret_cast<float *>(out + l.offset), offset);
}

/// A block's absmax as the dequantization sees it.
float nf4Absmax(const uint8_t *q, const QuantLayout &l, int64_t block) {
  if (l.format == QuantFormat::NF4Fp32Absmax)
    return loadF32(q + l.absmax + 4 * block);
  const float scaled =
      kDynamicMap[q[l.absmax + block]] * loadF32(q + l.absmax2 + 4 * (block / kNf4AbsmaxBlock));
  return scaled + loadF32(q + l.offset);
}

template <typename Store>
void dequantizeInto(const uint8_t *q, const QuantLayout &l, int64_t rows, int64_t cols,
                    bool inIsLast, Store store) {
  if (l.format == QuantFormat::NF4 || l.format == QuantFormat::NF4Fp32Absmax) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < l.absmaxCount; ++b) {
      const float absmax = nf4Absmax(q, l, b);
      for (int64_t i = b * kNf4Block; i < (b + 1) * kNf4Block; ++i) {
        const uint8_t byte = q[i / 2];
        store(i, kNf4Values[(i & 1) ? (byte & 15) : (byte >> 4)] * absmax);
      }
    }
    return;
  }
  const bool fp8 = l.format == QuantFormat::Fp8;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < l.elements; ++i) {
    const float scale = loadF32(q + l.absmax + 4 * quantChannel(i, rows, cols, inIsLast));
    store(i, fp8 ? fp8E4m3ToFloat(q[i]) * scale
                 : static_cast<float>(static_cast<int8_t>(q[i])) * scale *
                       (1.0f / 127.0f));
  }
}

} // namespace

float torchCpuSum(const float *x, int64_t n) {
  constexpr int kLanes = 8;
  if (n < kLanes)
    return rowSum<1>(x, n)[0];
  const int64_t vectors = n / kLanes;
  const std::array<float, kLanes> lanes = rowSum<kLanes>(x, vectors);
  float sum = 0.0f;
  for (int64_t k = vectors * kLanes; k < n; ++k)
    sum = sum + x[k];
  for (int l = 0; l < kLanes; ++l)
    sum = sum + lanes[l];
  return sum;
}

float fp8E4m3ToFloat(uint8_t bits) {
  const int sign = bits >> 7, exponent = (bits >> 3) & 15, mantissa = bits & 7;
  if (exponent == 15 && mantissa == 7)
    return std::nanf("");
  const float magnitude = exponent == 0
                              ? std::ldexp(static_cast<float>(mantissa), -9)
                              : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return sign ? -magnitude : magnitude;
}

uint8_t floatToFp8E4m3(float x) {
  // The nearest of the 127 non-negative finite codes (ties to the even code), by search: the
  // codes ascend with their bits.
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::min(std::fabs(x), 448.0f);
  uint8_t lo = 0, hi = 126; // 126: 448
  while (hi - lo > 1) {
    const uint8_t mid = static_cast<uint8_t>((lo + hi) / 2);
    (fp8E4m3ToFloat(mid) <= a ? lo : hi) = mid;
  }
  const float dLo = a - fp8E4m3ToFloat(lo), dHi = fp8E4m3ToFloat(hi) - a;
  const uint8_t code = dLo < dHi ? lo : dHi < dLo ? hi : ((lo & 1) ? hi : lo);
  return static_cast<uint8_t>(sign | code);
}

Status quantizeWeight(const float *w, const std::vector<int64_t> &shape,
                      const QuantLayout &layout, int64_t axis, uint8_t *out,
                      const std::string &what) {
  for (int64_t i = 0; i < layout.elements; ++i)
    if (!std::isfinite(w[i]))
      return base::invalidArgument(what + ": element " + std::to_string(i) + " is " +
                                   std::to_string(w[i]) + "; only finite weights can be " +
                                   quantFormatName(layout.format) + "-quantized");
  std::memset(out, 0, static_cast<size_t>(layout.bytes));
  if (layout.format == QuantFormat::NF4 || layout.format == QuantFormat::NF4Fp32Absmax) {
    quantizeNf4(w, layout, out);
    return base::okStatus();
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t rows = shape[static_cast<size_t>(rank - 2)], cols = shape.back();
  const bool inIsLast = axis == rank - 1;
  std::vector<float> absmax(static_cast<size_t>(layout.absmaxCount), 0.0f);
  for (int64_t i = 0; i < layout.elements; ++i) {
    float &m = absmax[static_cast<size_t>(quantChannel(i, rows, cols, inIsLast))];
    m = std::max(m, std::fabs(w[i]));
  }
  const bool fp8 = layout.format == QuantFormat::Fp8;
  for (int64_t i = 0; i < layout.elements; ++i) {
    const float m = absmax[static_cast<size_t>(quantChannel(i, rows, cols, inIsLast))];
    if (m == 0.0f)
      out[i] = 0;
    else if (fp8)
      out[i] = floatToFp8E4m3(w[i] / (m / 448.0f));
    else
      out[i] = static_cast<uint8_t>(static_cast<int8_t>(
          std::clamp(std::nearbyint(w[i] * (127.0f / m)), -127.0f, 127.0f)));
  }
  auto *scales = reinterpret_cast<float *>(out + layout.absmax);
  for (int64_t c = 0; c < layout.absmaxCount; ++c)
    storeF32(scales + c, fp8 ? absmax[static_cast<size_t>(c)] / 448.0f
                             : absmax[static_cast<size_t>(c)]);
  return base::okStatus();
}

Status dequantize(const HostTensor &q, QuantFormat format, int64_t axis, HostTensor &out) {
  RP_ASSIGN_OR_RETURN(QuantLayout l, checkDequantize(q.dtype(), q.shape(), out.dtype(),
                                                     out.shape(), format, axis));
  const int64_t rank = static_cast<int64_t>(out.shape().size());
  const int64_t rows = out.shape()[static_cast<size_t>(rank - 2)], cols = out.shape().back();
  const bool inIsLast = axis == rank - 1;
  const uint8_t *bytes = q.data<uint8_t>();
  switch (out.dtype()) {
  case DType::F16: {
    uint16_t *y = out.data<uint16_t>();
    dequantizeInto(bytes, l, rows, cols, inIsLast,
                   [y](int64_t i, float v) { y[i] = base::floatToHalf(v); });
    break;
  }
  case DType::BF16: {
    uint16_t *y = out.data<uint16_t>();
    dequantizeInto(bytes, l, rows, cols, inIsLast,
                   [y](int64_t i, float v) { y[i] = base::floatToBf16(v); });
    break;
  }
  default: {
    float *y = out.data<float>();
    dequantizeInto(bytes, l, rows, cols, inIsLast, [y](int64_t i, float v) { y[i] = v; });
    break;
  }
  }
  return base::okStatus();
}

} // namespace rp::kernels::cpu
