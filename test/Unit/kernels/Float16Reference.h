//===- Float16Reference.h - Reference rounding for the unit tests -*- C++ -*-===//
//
// An independent, slow reference for the 16-bit float formats, written from
// the format definitions rather than from bit tricks: decode a bit pattern to
// its exact value, and round a real number to the nearest representable value
// (ties to the even bit pattern) by binary search over the ordered finite
// patterns. Values are carried in long double (x86-64: 64-bit significand),
// which holds every binary16, bfloat16, binary32, binary64 value exactly and
// every int64, so the reference itself never rounds.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_FLOAT16REFERENCE_H
#define RP_TEST_UNIT_FLOAT16REFERENCE_H

#include <cmath>
#include <cstdint>
#include <limits>

namespace rp::test {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "the reference needs an extended long double (x86-64)");

/// A 16-bit float format: `fracBits` fraction bits, exponent bias `bias`,
/// exponent field width 15 - fracBits.
struct Format16 {
  int fracBits;
  int bias;
  /// The largest finite positive bit pattern (exponent field all ones minus one).
  uint16_t maxFinite() const {
    return static_cast<uint16_t>(0x7FFFu - (1u << fracBits)); // 0x7BFF / 0x7F7F
  }
  uint16_t infinity() const { return static_cast<uint16_t>(maxFinite() + 1); }
};
inline constexpr Format16 kHalf{10, 15};
inline constexpr Format16 kBf16{7, 127};

/// Exact value of a finite positive pattern (sign bit clear); for
/// infinity() returns the "virtual" next value 2^(emax+1) that IEEE 754 uses
/// to decide overflow.
inline long double decodeMagnitude(Format16 f, uint16_t bits) {
  const int e = bits >> f.fracBits;
  const long double m = bits & ((1u << f.fracBits) - 1u);
  if (e == 0) // subnormal: m * 2^(1 - bias - fracBits)
    return std::ldexp(m, 1 - f.bias - f.fracBits);
  return std::ldexp(1.0L + std::ldexp(m, -f.fracBits), e - f.bias);
}

/// Exact value of any pattern (inf / NaN included).
inline long double decode(Format16 f, uint16_t bits) {
  const uint16_t mag = bits & 0x7FFFu;
  long double v;
  if (mag > f.infinity())
    v = std::numeric_limits<long double>::quiet_NaN();
  else if (mag == f.infinity())
    v = std::numeric_limits<long double>::infinity();
  else
    v = decodeMagnitude(f, mag);
  return (bits & 0x8000u) ? -v : v;
}

/// x rounded to the nearest pattern, ties to the even pattern; |x| at or past
/// the midpoint between the largest finite value and 2^(emax+1) gives
/// infinity. NaN gives the canonical quiet NaN with x's sign (the payload is
/// not modelled; callers compare NaNs as NaN).
inline uint16_t roundToFormat(Format16 f, long double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (std::isnan(x))
    return static_cast<uint16_t>(sign | f.infinity() | (1u << (f.fracBits - 1)));
  const long double a = std::fabs(x);
  if (std::isinf(a))
    return sign | f.infinity();
  // Largest pattern p in [0, maxFinite] with value(p) <= a.
  uint32_t lo = 0, hi = f.maxFinite();
  if (decodeMagnitude(f, f.maxFinite()) <= a) {
    lo = f.maxFinite();
  } else {
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      (decodeMagnitude(f, static_cast<uint16_t>(mid)) <= a ? lo : hi) = mid;
    }
  }
  const uint16_t below = static_cast<uint16_t>(lo);
  const uint16_t above = static_cast<uint16_t>(lo + 1);
  const long double vBelow = decodeMagnitude(f, below);
  if (vBelow == a)
    return sign | below;
  const long double midpoint = (vBelow + decodeMagnitude(f, above)) / 2; // exact
  uint16_t r;
  if (a < midpoint)
    r = below;
  else if (a > midpoint)
    r = above;
  else
    r = (below & 1u) ? above : below;
  return sign | r;
}

inline bool isNaN16(Format16 f, uint16_t bits) { return (bits & 0x7FFFu) > f.infinity(); }

} // namespace rp::test

#endif // RP_TEST_UNIT_FLOAT16REFERENCE_H
