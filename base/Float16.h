//===- Float16.h - Scalar binary16 / bfloat16 conversions -------*- C++ -*-===//
//
// Bit-exact scalar conversions between binary32/binary64 and the two 16-bit
// float formats, on uint16_t bit patterns. Every function is inline and, when
// compiled by nvcc, __host__ __device__: the CUDA cast kernels
// (kernels/cuda/Cast.cu) call these same functions, so GPU and CPU casts agree
// bit for bit by construction (tests check it on hardware).
//
// Formats:
//  - binary16 ("f16", IEEE 754-2008 binary16): 1 sign, 5 exponent (bias 15),
//    10 fraction bits; max finite 65504; subnormals down to 2^-24.
//  - bfloat16 ("bf16"): the upper 16 bits of a binary32: 1 sign, 8 exponent
//    (bias 127), 7 fraction bits; same range as binary32.
//
// Rounding is IEEE round-to-nearest-even (RNE) everywhere. NaN inputs give a
// quiet NaN of the same sign keeping the top payload bits; infinities and
// overflow (after rounding) give infinity; binary16 subnormals are exact.
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_FLOAT16_H
#define RP_BASE_FLOAT16_H

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define RP_HOST_DEVICE __host__ __device__
#else
#define RP_HOST_DEVICE
#endif

namespace rp {
inline namespace base {

//===--- bit casts (std::bit_cast is C++20) -------------------------------===//

RP_HOST_DEVICE inline uint32_t floatToBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

RP_HOST_DEVICE inline float bitsToFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

//===--- bfloat16 ---------------------------------------------------------===//

/// binary32 -> bfloat16 bits: the upper 16 bits of `f` rounded to nearest,
/// ties to even (add 0x7FFF plus the kept LSB, then truncate). Values beyond
/// the largest finite bf16 round to infinity; NaN -> quiet NaN (bit 6 set).
RP_HOST_DEVICE inline uint16_t floatToBf16(float f) {
  uint32_t u = floatToBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep sign and top payload, force quiet.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// bfloat16 bits -> binary32 (exact: append 16 zero bits).
RP_HOST_DEVICE inline float bf16ToFloat(uint16_t h) {
  return bitsToFloat(static_cast<uint32_t>(h) << 16);
}

//===--- binary16 ---------------------------------------------------------===//

/// binary32 -> binary16 bits, round to nearest even. |f| >= 65520 (the midpoint
/// between 65504 and 2^16) gives infinity; results below 2^-14 are binary16
/// subnormals rounded exactly (ties to even, so 2^-25 -> +0).
RP_HOST_DEVICE inline uint16_t floatToHalf(float f) {
  const uint32_t u = floatToBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) { // inf or NaN
    if (a == 0x7F800000u)
      return sign | 0x7C00u;
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu)); // quiet NaN
  }
  if (a >= 0x477FF000u) // >= 65520: rounds to infinity
    return sign | 0x7C00u;
  if (a >= 0x38800000u) { // >= 2^-14: normal binary16. Rebias exponent 127 -> 15.
    uint32_t r = a - 0x38000000u;
    r += 0x0FFFu + ((r >> 13) & 1u); // RNE on the 13 dropped bits; a carry bumps the exponent
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal binary16: result = round(|f| / 2^-24), f = mant * 2^(e - 150).
  const uint32_t e = a >> 23;
  if (e < 102) // |f| < 2^-25 (or a binary32 subnormal): rounds to zero
    return sign;
  const uint32_t mant = (a & 0x007FFFFFu) | 0x00800000u;
  const uint32_t shift = 126u - e; // in [14, 24]
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u)))
    ++q; // q == 0x400 is the smallest normal, encoded correctly
  return static_cast<uint16_t>(sign | q);
}

/// binary16 bits -> binary32 (exact). NaN payloads are kept (shifted up 13).
RP_HOST_DEVICE inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x03FFu;
  if (e == 0x1Fu) // inf / NaN
    return bitsToFloat(sign | 0x7F800000u | (m << 13));
  if (e == 0) { // zero or subnormal: m * 2^-24, a normal binary32 when m != 0
    const float mag = static_cast<float>(m) * 5.9604644775390625e-08f; // 2^-24, exact
    return bitsToFloat(sign | floatToBits(mag));
  }
  return bitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

//===--- from binary64, correctly rounded ---------------------------------===//

/// binary64 -> binary32 with round-to-odd (truncate, then set the LSB when
/// inexact). Rounding the result again to a format with at most 22 fraction
/// bits (binary16, bfloat16) with RNE equals rounding `d` directly: no
/// double-rounding error (Boldo & Melquiond, "Emulation of FMA and correctly
/// rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
RP_HOST_DEVICE inline float doubleToFloatRoundToOdd(double d) {
  const float f = static_cast<float>(d); // RNE; NaN stays NaN; overflow -> inf
  const double back = static_cast<double>(f);
  if (back == d || d != d)
    return f;
  uint32_t u = floatToBits(f);
  const bool aboveInMagnitude = d > 0 ? back > d : back < d;
  if (aboveInMagnitude)
    u -= 1; // one ulp toward zero (inf -> FLT_MAX); the sign bit is untouched
  return bitsToFloat(u | 1u);
}

/// binary64 -> bfloat16 bits, correctly rounded (RNE), via round-to-odd.
/// (PyTorch converts through binary32 and may differ by one ulp on rare ties.)
RP_HOST_DEVICE inline uint16_t doubleToBf16(double d) {
  return floatToBf16(doubleToFloatRoundToOdd(d));
}

/// binary64 -> binary16 bits, correctly rounded (RNE) like NumPy astype.
RP_HOST_DEVICE inline uint16_t doubleToHalf(double d) {
  return floatToHalf(doubleToFloatRoundToOdd(d));
}

} // namespace base
} // namespace rp

#endif // RP_BASE_FLOAT16_H
