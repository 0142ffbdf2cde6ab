//===- CpuCastTest.cpp - kernels::cpu::cast against a reference -----------===//
//
// Every (source, destination) dtype pair is checked element by element
// against a reference that carries values in long double (exact for every
// dtype here) and rounds with the format definitions of Float16Reference.h.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Cast.h"
#include "test/Unit/kernels/Float16Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace rp::kernels::cpu {
namespace {

using base::DType;
using Bytes = std::vector<unsigned char>;

template <typename T>
void put(Bytes &b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof(T));
  std::memcpy(b.data() + at, &v, sizeof(T));
}

template <typename T>
T get(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool isIntegral(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::I1; }

//===--- inputs -----------------------------------------------------------===//

/// Values every float source includes: zeros, infinities, NaNs, subnormals,
/// the f16/bf16 overflow ties, half-integers and the integer saturation edges.
const double kSpecialFloats[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.7, -2.7, 0.999, 65504, 65519.99, 65520, -65520,
    0x1p-24, 0x1p-25, 0x1.8p-24, 0x1p-133, 0x1p-149, 0x1.FFp127, 1.0 + 0x1p-8, 1.0 + 0x1p-11,
    2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0, 0x1p62, 0x1p63, -0x1p63, -0x1p64,
    1e20, -1e20, 1e300, 1e-300, std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
    -std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min()};

const int64_t kSpecialInts[] = {0,
                                1,
                                -1,
                                2,
                                -7,
                                65504,
                                65519,
                                65520,
                                65535,
                                (int64_t(1) << 24) + 1,
                                // just above a bf16 tie, but binary32 rounds it onto the tie
                                (int64_t(1) << 24) + (int64_t(1) << 16) + 1,
                                (int64_t(1) << 31) - 1,
                                int64_t(1) << 31,
                                -(int64_t(1) << 31) - 1,
                                int64_t(0x100000005),
                                (int64_t(1) << 53) + 1,
                                std::numeric_limits<int64_t>::max(),
                                std::numeric_limits<int64_t>::min()};

/// n elements of `t` covering the special values, then random ones.
Bytes makeInput(DType t) {
  Bytes b;
  std::mt19937_64 rng(static_cast<uint64_t>(t) + 17);
  switch (t) {
  case DType::F32:
  case DType::F64: {
    std::vector<double> vals(std::begin(kSpecialFloats), std::end(kSpecialFloats));
    std::uniform_real_distribution<double> small(-300, 300), big(-1e19, 1e19);
    for (int i = 0; i < 20000; ++i) {
      vals.push_back(small(rng));
      vals.push_back(big(rng));
      uint64_t u = rng();
      double d;
      std::memcpy(&d, &u, 8);
      vals.push_back(d); // any binary64 bits
      const auto u32 = static_cast<uint32_t>(u >> 32);
      float f;
      std::memcpy(&f, &u32, 4);
      vals.push_back(f); // any binary32 bits
    }
    for (double v : vals) {
      if (t == DType::F32)
        put(b, static_cast<float>(v));
      else
        put(b, v);
    }
    break;
  }
  case DType::F16:
  case DType::BF16: // exhaustive
    for (uint32_t h = 0; h < 65536; ++h)
      put(b, static_cast<uint16_t>(h));
    break;
  case DType::I64:
  case DType::I32: {
    std::vector<int64_t> vals(std::begin(kSpecialInts), std::end(kSpecialInts));
    std::uniform_int_distribution<int64_t> small(-70000, 70000);
    for (int i = 0; i < 20000; ++i) {
      vals.push_back(small(rng));
      vals.push_back(static_cast<int64_t>(rng()));
      vals.push_back(static_cast<int64_t>(rng() >> (rng() % 64)));
    }
    for (int64_t v : vals) {
      if (t == DType::I64)
        put(b, v);
      else
        put(b, static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))));
    }
    break;
  }
  case DType::I1:
  case DType::U8:
    for (unsigned char c : {0, 1, 2, 255, 0, 1})
      put(b, c);
    break;
  }
  return b;
}

//===--- reference --------------------------------------------------------===//

/// Exact value of the element at p (f16/bf16 decoded from their definition).
long double refLoad(DType t, const unsigned char *p) {
  switch (t) {
  case DType::F32:
    return get<float>(p);
  case DType::F64:
    return get<double>(p);
  case DType::F16:
    return test::decode(test::kHalf, get<uint16_t>(p));
  case DType::BF16:
    return test::decode(test::kBf16, get<uint16_t>(p));
  case DType::I64:
    return static_cast<long double>(get<int64_t>(p));
  case DType::I32:
    return get<int32_t>(p);
  case DType::I1:
  case DType::U8:
    return get<uint8_t>(p) != 0 ? 1 : 0;
  }
  return 0;
}

/// `v` converted to integer dtype `t` with `bits` bits: float sources
/// truncate toward zero and saturate (NaN -> 0), integer sources wrap.
int64_t refToInt(long double v, bool fromInteger, int bits) {
  const long double limit = std::ldexp(1.0L, bits - 1); // 2^(bits-1)
  if (fromInteger) {
    const auto x = static_cast<int64_t>(v); // exact: v came from an integer
    if (bits == 64)
      return x;
    const int64_t m = ((x % (int64_t(1) << 32)) + (int64_t(1) << 32)) % (int64_t(1) << 32);
    return m >= (int64_t(1) << 31) ? m - (int64_t(1) << 32) : m;
  }
  if (std::isnan(v))
    return 0;
  const long double t = std::trunc(v);
  if (t >= limit)
    return bits == 64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  if (t <= -limit)
    return bits == 64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  return static_cast<int64_t>(t);
}

/// The expected destination bytes of one element.
Bytes refStore(DType dst, long double v, bool fromInteger) {
  Bytes b;
  switch (dst) {
  case DType::F32:
    put(b, static_cast<float>(v)); // one RNE rounding from the exact value
    break;
  case DType::F64:
    put(b, static_cast<double>(v));
    break;
  case DType::F16:
    put(b, test::roundToFormat(test::kHalf, v));
    break;
  case DType::BF16:
    put(b, test::roundToFormat(test::kBf16, v));
    break;
  case DType::I64:
    put(b, refToInt(v, fromInteger, 64));
    break;
  case DType::I32:
    put(b, static_cast<int32_t>(refToInt(v, fromInteger, 32)));
    break;
  case DType::I1:
  case DType::U8:
    put(b, static_cast<uint8_t>(v != 0 ? 1 : 0)); // NaN != 0
    break;
  }
  return b;
}

/// NaN test on destination bytes; NaNs are compared as NaN plus sign.
bool isNaNAt(DType t, const unsigned char *p) {
  switch (t) {
  case DType::F32:
    return std::isnan(get<float>(p));
  case DType::F64:
    return std::isnan(get<double>(p));
  case DType::F16:
    return test::isNaN16(test::kHalf, get<uint16_t>(p));
  case DType::BF16:
    return test::isNaN16(test::kBf16, get<uint16_t>(p));
  default:
    return false;
  }
}

bool signBitAt(DType t, const unsigned char *p) {
  return (p[base::dtypeSize(t) - 1] & 0x80) != 0; // little endian
}

std::string hexBytes(const unsigned char *p, size_t n) {
  static const char *kHex = "0123456789abcdef";
  std::string s = "0x";
  for (size_t i = n; i-- > 0;) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

//===--- every pair -------------------------------------------------------===//

class CpuCastPairTest : public ::testing::TestWithParam<std::tuple<DType, DType>> {};

TEST_P(CpuCastPairTest, MatchesReference) {
  const auto [src, dst] = GetParam();
  const Bytes in = makeInput(src);
  const size_t sIn = base::dtypeSize(src), sOut = base::dtypeSize(dst);
  const auto n = static_cast<int64_t>(in.size() / sIn);
  Bytes out(static_cast<size_t>(n) * sOut, 0xA5);
  ASSERT_TRUE(cast(in.data(), src, out.data(), dst, n).ok());
  int failures = 0;
  for (int64_t i = 0; i < n && failures < 10; ++i) {
    const unsigned char *x = in.data() + i * sIn;
    const unsigned char *y = out.data() + i * sOut;
    const Bytes want = refStore(dst, refLoad(src, x), isIntegral(src));
    const bool ok = isNaNAt(dst, want.data())
                        ? isNaNAt(dst, y) && signBitAt(dst, y) == signBitAt(dst, want.data())
                        : std::memcmp(y, want.data(), sOut) == 0;
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": input " << hexBytes(x, sIn) << " got "
                    << hexBytes(y, sOut) << " want " << hexBytes(want.data(), sOut);
    }
  }
}

std::string pairName(const ::testing::TestParamInfo<std::tuple<DType, DType>> &info) {
  return std::string(base::dtypeName(std::get<0>(info.param))) + "_to_" +
         base::dtypeName(std::get<1>(info.param));
}

// Every dtype but u8 (quantized storage: graph.dequantize reads it, cast refuses it).
constexpr DType kCastDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                 DType::I64, DType::I32, DType::I1};
static_assert(std::size(kCastDTypes) + 1 == std::size(base::kAllDTypes));

INSTANTIATE_TEST_SUITE_P(AllPairs, CpuCastPairTest,
                         ::testing::Combine(::testing::ValuesIn(kCastDTypes),
                                            ::testing::ValuesIn(kCastDTypes)),
                         pairName);

//===--- semantics spelled out --------------------------------------------===//

template <typename Out, typename In>
std::vector<Out> castVec(const std::vector<In> &in, DType s, DType d) {
  std::vector<Out> out(in.size());
  base::Status st = cast(in.data(), s, out.data(), d, static_cast<int64_t>(in.size()));
  EXPECT_TRUE(st.ok()) << st.toString();
  return out;
}

TEST(CpuCastTest, FloatToIntTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(castVec<int32_t>(std::vector<float>{2.7f, -2.7f, -0.5f, 3e9f, -3e9f, nan, INFINITY},
                             DType::F32, DType::I32),
            (std::vector<int32_t>{2, -2, 0, INT32_MAX, INT32_MIN, 0, INT32_MAX}));
  EXPECT_EQ(castVec<int64_t>(std::vector<double>{-1e300, 0x1p63, -0x1p63, 123.999},
                             DType::F64, DType::I64),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX, INT64_MIN, 123}));
}

TEST(CpuCastTest, IntNarrowingWraps) {
  EXPECT_EQ(castVec<int32_t>(std::vector<int64_t>{0x100000005, -1, int64_t(1) << 31},
                             DType::I64, DType::I32),
            (std::vector<int32_t>{5, -1, INT32_MIN}));
}

TEST(CpuCastTest, BoolSemantics) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(castVec<uint8_t>(std::vector<float>{0.0f, -0.0f, 0.1f, nan, -INFINITY}, DType::F32,
                             DType::I1),
            (std::vector<uint8_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(castVec<uint8_t>(std::vector<uint8_t>{0, 1, 2, 255}, DType::I1, DType::I1),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(castVec<uint16_t>(std::vector<uint8_t>{0, 7}, DType::I1, DType::BF16),
            (std::vector<uint16_t>{0x0000, 0x3F80}));
  EXPECT_EQ(castVec<float>(std::vector<uint8_t>{0, 7}, DType::I1, DType::F32),
            (std::vector<float>{0.0f, 1.0f}));
}

// i64 -> bf16 and f64 -> f16 round once: (2^24 + 2^16 + 1) is just above a bf16 tie.
TEST(CpuCastTest, NoDoubleRounding) {
  EXPECT_EQ(castVec<uint16_t>(std::vector<int64_t>{(int64_t(1) << 24) + (int64_t(1) << 16) + 1},
                              DType::I64, DType::BF16),
            (std::vector<uint16_t>{0x4B81}));
  EXPECT_EQ(castVec<uint16_t>(std::vector<double>{1.0 + 0x1p-11 + 0x1p-40}, DType::F64, DType::F16),
            (std::vector<uint16_t>{0x3C01}));
}

// Above the OpenMP threshold the result is the same as the scalar conversion.
TEST(CpuCastTest, LargeParallelMatchesScalar) {
  const size_t n = (size_t(1) << 21) + 3;
  std::vector<float> in(n);
  std::mt19937 rng(7);
  for (float &x : in) {
    const uint32_t u = rng();
    std::memcpy(&x, &u, 4);
  }
  const auto bf = castVec<uint16_t>(in, DType::F32, DType::BF16);
  const auto hf = castVec<uint16_t>(in, DType::F32, DType::F16);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(bf[i], base::floatToBf16(in[i])) << i;
    ASSERT_EQ(hf[i], base::floatToHalf(in[i])) << i;
  }
}

TEST(CpuCastTest, InPlaceEqualSize) {
  std::vector<float> buf = {1.5f, -2.5f, 1e10f};
  ASSERT_TRUE(cast(buf.data(), DType::F32, buf.data(), DType::I32, 3).ok());
  int32_t got[3];
  std::memcpy(got, buf.data(), sizeof(got));
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], -2);
  EXPECT_EQ(got[2], INT32_MAX);
}

TEST(CpuCastTest, MisalignedBuffers) {
  Bytes in(1 + 3 * sizeof(double)), out(1 + 3 * sizeof(float));
  const double vals[3] = {1.25, -3.0, 1e40};
  std::memcpy(in.data() + 1, vals, sizeof(vals));
  ASSERT_TRUE(cast(in.data() + 1, DType::F64, out.data() + 1, DType::F32, 3).ok());
  float got[3];
  std::memcpy(got, out.data() + 1, sizeof(got));
  EXPECT_EQ(got[0], 1.25f);
  EXPECT_EQ(got[1], -3.0f);
  EXPECT_EQ(got[2], INFINITY);
}

TEST(CpuCastTest, SameTypeCopies) {
  const std::vector<int64_t> in = {1, -2, INT64_MAX};
  EXPECT_EQ(castVec<int64_t>(in, DType::I64, DType::I64), in);
}

TEST(CpuCastTest, RejectsBadArguments) {
  float f = 0;
  uint16_t h = 0;
  base::Status s = cast(&f, DType::F32, &h, DType::BF16, -1);
  EXPECT_EQ(s.code(), base::StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("-1"), std::string::npos) << s.message();

  s = cast(nullptr, DType::F32, &h, DType::BF16, 1);
  EXPECT_EQ(s.code(), base::StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("null source"), std::string::npos) << s.message();

  s = cast(&f, DType::F32, nullptr, DType::BF16, 1);
  EXPECT_EQ(s.code(), base::StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("null destination"), std::string::npos) << s.message();

  s = cast(&f, static_cast<DType>(99), &h, DType::BF16, 1);
  EXPECT_EQ(s.code(), base::StatusCode::InvalidArgument);

  EXPECT_TRUE(cast(nullptr, DType::F32, nullptr, DType::BF16, 0).ok()); // nothing to do
}

} // namespace
} // namespace rp::kernels::cpu
