//===- DTypeTest.cpp - DType table and the 16-bit float conversions -------===//
//
// Conversions are checked against the reference in Float16Reference.h:
// exhaustively over all 65536 patterns of each format (decode, round trip,
// and every midpoint between neighbours), on hand-picked ties, and on random
// binary32 / binary64 inputs.
//
//===----------------------------------------------------------------------===//

#include "base/DType.h"
#include "test/Unit/kernels/Float16Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace rp::runtime {
namespace {

using test::Format16;
using test::kBf16;
using test::kHalf;

//===--- table ------------------------------------------------------------===//

TEST(DTypeTest, SizesAndNames) {
  struct Row {
    DType type;
    size_t size;
    const char *name;
    const char *safetensors;
    bool isFloat;
  };
  const Row rows[] = {
      {DType::F32, 4, "f32", "F32", true},   {DType::F16, 2, "f16", "F16", true},
      {DType::BF16, 2, "bf16", "BF16", true}, {DType::F64, 8, "f64", "F64", true},
      {DType::I64, 8, "i64", "I64", false},  {DType::I32, 4, "i32", "I32", false},
      {DType::I1, 1, "i1", "BOOL", false},   {DType::U8, 1, "u8", "U8", false},
  };
  ASSERT_EQ(std::size(rows), std::size(kAllDTypes));
  for (const Row &r : rows) {
    EXPECT_EQ(dtypeSize(r.type), r.size) << r.name;
    EXPECT_STREQ(dtypeName(r.type), r.name);
    EXPECT_EQ(isFloat(r.type), r.isFloat) << r.name;
    StatusOr<DType> a = parseDType(r.name);
    ASSERT_TRUE(a.ok()) << a.status().toString();
    EXPECT_EQ(*a, r.type);
    StatusOr<DType> b = parseDType(r.safetensors);
    ASSERT_TRUE(b.ok()) << b.status().toString();
    EXPECT_EQ(*b, r.type);
  }
}

TEST(DTypeTest, ParseRejectsUnknownNames) {
  for (const char *bad : {"", "float32", "F8_E4M3", "bool", "I1", "f32 ", "U4"}) {
    StatusOr<DType> r = parseDType(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("bf16"), std::string::npos);
  }
}

//===--- helpers ----------------------------------------------------------===//

uint16_t toFormat(Format16 f, float x) {
  return f.fracBits == 10 ? floatToHalf(x) : floatToBf16(x);
}
float fromFormat(Format16 f, uint16_t h) {
  return f.fracBits == 10 ? halfToFloat(h) : bf16ToFloat(h);
}
uint16_t toFormatD(Format16 f, double x) {
  return f.fracBits == 10 ? doubleToHalf(x) : doubleToBf16(x);
}

/// Expects `got == want`, or both NaN with the same sign.
void expectSame16(Format16 f, uint16_t got, uint16_t want, long double input) {
  if (test::isNaN16(f, want)) {
    EXPECT_TRUE(test::isNaN16(f, got)) << std::hex << "input " << (double)input << " got 0x" << got;
    EXPECT_EQ(got & 0x8000u, want & 0x8000u) << "NaN sign";
  } else {
    EXPECT_EQ(got, want) << std::hex << "input " << std::hexfloat << (double)input << " got 0x"
                         << got << " want 0x" << want;
  }
}

class Float16Test : public ::testing::TestWithParam<Format16> {};

//===--- exhaustive -------------------------------------------------------===//

// Every pattern widens to exactly the value the format definition gives.
TEST_P(Float16Test, DecodeAllPatterns) {
  const Format16 f = GetParam();
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = fromFormat(f, static_cast<uint16_t>(h));
    const long double want = test::decode(f, static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << h;
    } else {
      ASSERT_EQ(static_cast<long double>(got), want) << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << h; // -0 stays -0
    }
  }
}

// x -> float -> x is the identity; NaNs stay NaN (signalling ones are quietened).
TEST_P(Float16Test, RoundTripAllPatterns) {
  const Format16 f = GetParam();
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto x = static_cast<uint16_t>(h);
    const uint16_t back = toFormat(f, fromFormat(f, x));
    if (test::isNaN16(f, x)) {
      ASSERT_TRUE(test::isNaN16(f, back)) << h;
      ASSERT_EQ(back & 0x8000u, x & 0x8000u) << h;
      ASSERT_NE(back & (1u << (f.fracBits - 1)), 0u) << "quiet bit " << h;
      ASSERT_EQ(back | (1u << (f.fracBits - 1)), x | (1u << (f.fracBits - 1))) << "payload " << h;
    } else {
      ASSERT_EQ(back, x) << h;
    }
  }
}

// For every pair of neighbouring finite patterns: the midpoint (a tie, exact in
// binary32) and the binary32 values one ulp either side of it round as the
// reference says. This covers every tie of both formats, subnormals included.
TEST_P(Float16Test, EveryMidpointAndItsNeighbours) {
  const Format16 f = GetParam();
  for (uint32_t h = 0; h <= f.maxFinite(); ++h) {
    const long double lo = test::decodeMagnitude(f, static_cast<uint16_t>(h));
    const long double hi = test::decodeMagnitude(f, static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<long double>(mid), (lo + hi) / 2) << "midpoint not exact " << h;
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      for (float s : {x, -x}) {
        expectSame16(f, toFormat(f, s), test::roundToFormat(f, s), s);
        expectSame16(f, toFormatD(f, s), test::roundToFormat(f, s), s);
      }
    }
    if (HasFailure())
      return;
  }
}

//===--- hand-picked ------------------------------------------------------===//

TEST(Float16HandPicked, Bf16Ties) {
  struct Case {
    float x;
    uint16_t want;
  };
  const Case cases[] = {
      {1.0f, 0x3F80},
      {1.0f + 0x1p-8f, 0x3F80},           // tie between 0x3F80 (even) and 0x3F81: down
      {1.0f + 0x1p-8f + 0x1p-23f, 0x3F81}, // just above the tie: up
      {1.0f + 3 * 0x1p-8f, 0x3F82},       // tie between 0x3F81 and 0x3F82 (even): up
      {-(1.0f + 3 * 0x1p-8f), 0xBF82},
      {0x1.FEp127f, 0x7F7F},              // largest finite bf16
      {0x1.FFp127f, 0x7F80},              // tie with 2^128, 0x7F7F odd: to infinity
      {0x1.FEFFFEp127f, 0x7F7F},          // just below that tie
      {std::numeric_limits<float>::max(), 0x7F80},
      {std::numeric_limits<float>::denorm_min(), 0x0000}, // 2^-149 far below half a bf16 ulp
      {0x1p-133f, 0x0001},                // smallest bf16 subnormal
      {0x1.8p-133f, 0x0002},              // tie between 0x0001 and 0x0002 (even)
      {-0.0f, 0x8000},
      {INFINITY, 0x7F80},
      {-INFINITY, 0xFF80},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(floatToBf16(c.x), c.want) << std::hexfloat << c.x;
    EXPECT_EQ(test::roundToFormat(kBf16, c.x), c.want) << "reference disagrees " << c.x;
  }
}

TEST(Float16HandPicked, HalfTiesSubnormalsAndOverflow) {
  struct Case {
    float x;
    uint16_t want;
  };
  const Case cases[] = {
      {1.0f, 0x3C00},
      {1.0f + 0x1p-11f, 0x3C00},           // tie: down to even
      {1.0f + 3 * 0x1p-11f, 0x3C02},       // tie: up to even
      {1.0f + 0x1p-11f + 0x1p-23f, 0x3C01}, // above the tie
      {65504.0f, 0x7BFF},                  // largest finite
      {65519.996f, 0x7BFF},                // below the overflow tie
      {65520.0f, 0x7C00},                  // tie with 2^16: to infinity
      {0x1p-14f, 0x0400},                  // smallest normal
      {0x1.FF8p-15f, 0x03FF},              // largest subnormal, 1023 * 2^-24
      {0x1.FFCp-15f, 0x0400},              // tie between 0x03FF and 0x0400 (even)
      {0x1p-24f, 0x0001},                  // smallest subnormal
      {0x1p-25f, 0x0000},                  // tie between 0 and 0x0001: to 0
      {0x1.000002p-25f, 0x0001},           // just above it
      {0x1.8p-24f, 0x0002},                // tie between 0x0001 and 0x0002 (even)
      {0x1.4p-23f, 0x0002},                // 2.5 * 2^-24: tie, down to even
      {-0x1p-24f, 0x8001},
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {-0.0f, 0x8000},
      {-INFINITY, 0xFC00},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(floatToHalf(c.x), c.want) << std::hexfloat << c.x;
    EXPECT_EQ(test::roundToFormat(kHalf, c.x), c.want) << "reference disagrees " << c.x;
  }
}

TEST(Float16HandPicked, NaNsStayQuietNaNs) {
  auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(floatToBf16(bits(0x7FC00000u)), 0x7FC0);
  EXPECT_EQ(floatToBf16(bits(0xFF800001u)), 0xFFC0); // signalling, payload only in low bits
  EXPECT_EQ(floatToBf16(bits(0x7FFFFFFFu)), 0x7FFF); // no rounding carry into the sign
  EXPECT_EQ(floatToHalf(bits(0x7FC00000u)), 0x7E00);
  EXPECT_EQ(floatToHalf(bits(0xFF800001u)), 0xFE00);
  EXPECT_EQ(floatToHalf(bits(0x7FFFFFFFu)), 0x7FFF);
  EXPECT_TRUE(std::isnan(doubleToFloatRoundToOdd(std::nan(""))));
  EXPECT_EQ(doubleToHalf(-std::numeric_limits<double>::quiet_NaN()) & 0xFE00u, 0xFE00u);
}

// binary64 inputs: one rounding, not two. 1 + 2^-11 + 2^-40 rounds to binary32
// as the tie 1 + 2^-11, which RNE then sends down to 1.0; the correct binary16
// result is 1 + 2^-10.
TEST(Float16HandPicked, DoubleInputsAreRoundedOnce) {
  const double x = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(floatToHalf(static_cast<float>(x)), 0x3C00); // the double-rounding trap
  EXPECT_EQ(doubleToHalf(x), 0x3C01);
  EXPECT_EQ(doubleToHalf(-x), 0xBC01);
  const double y = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(floatToBf16(static_cast<float>(y)), 0x3F80);
  EXPECT_EQ(doubleToBf16(y), 0x3F81);
  EXPECT_EQ(doubleToHalf(1e300), 0x7C00);
  EXPECT_EQ(doubleToBf16(-1e300), 0xFF80);
  EXPECT_EQ(doubleToHalf(1e-300), 0x0000);
  EXPECT_EQ(doubleToBf16(-1e-300), 0x8000);
  EXPECT_EQ(doubleToHalf(0x1p-25 + 0x1p-70), 0x0001); // not a binary32
  EXPECT_EQ(doubleToHalf(0x1p-25), 0x0000);
}

//===--- random -----------------------------------------------------------===//

TEST_P(Float16Test, RandomFloatBitsMatchReference) {
  const Format16 f = GetParam();
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = rng();
    float x;
    std::memcpy(&x, &u, 4);
    expectSame16(f, toFormat(f, x), test::roundToFormat(f, x), x);
    if (HasFailure())
      return;
  }
}

TEST_P(Float16Test, RandomDoublesMatchReference) {
  const Format16 f = GetParam();
  std::mt19937_64 rng(99);
  // Exponents around the format's range so ties, subnormals and overflow all occur.
  const int emin = f.fracBits == 10 ? -30 : -140;
  const int emax = f.fracBits == 10 ? 17 : 129;
  std::uniform_int_distribution<int> exp(emin, emax);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(mant(rng), exp(rng));
    const auto h = static_cast<uint16_t>(toFormat(f, static_cast<float>(x)) & 0x7FFFu);
    if (i % 4 == 0 && h <= f.maxFinite()) { // on a midpoint, or one binary64 ulp beside it
      const double mid = static_cast<double>(
          (test::decodeMagnitude(f, h) + test::decodeMagnitude(f, static_cast<uint16_t>(h + 1))) /
          2);
      const int side = static_cast<int>(rng() % 3) - 1;
      x = side == 0 ? mid : std::nextafter(mid, side * INFINITY);
    }
    if (rng() & 1)
      x = -x;
    expectSame16(f, toFormatD(f, x), test::roundToFormat(f, x), x);
    if (HasFailure())
      return;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Float16Test, ::testing::Values(kHalf, kBf16),
                         [](const ::testing::TestParamInfo<Format16> &info) {
                           return std::string(info.param.fracBits == 10 ? "f16" : "bf16");
                         });

} // namespace
} // namespace rp::runtime
