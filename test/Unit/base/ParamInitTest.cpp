//===- ParamInitTest.cpp - Initial values of LoRA adapters ----------------===//
//
// initParam (base/ParamInit.h): zeros, kaiming_uniform bounds and moments,
// determinism by name, golden values (computed by an independent Python implementation of
// FNV-1a, splitmix64 and xoshiro256**), and the errors.
//
//===----------------------------------------------------------------------===//

#include "base/ParamInit.h"

#include "base/Float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

/// Every element of `t` as a double.
std::vector<double> values(const HostTensor &t) {
  std::vector<double> out(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
    case DType::F32:
      out[i] = t.data<float>()[i];
      break;
    case DType::F64:
      out[i] = t.data<double>()[i];
      break;
    case DType::BF16:
      out[i] = bf16ToFloat(t.data<uint16_t>()[i]);
      break;
    case DType::F16:
      out[i] = halfToFloat(t.data<uint16_t>()[i]);
      break;
    default:
      ADD_FAILURE() << "unexpected dtype " << dtypeName(t.dtype());
    }
  }
  return out;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0;
}

TEST(ParamInitTest, Fnv1a64KnownVectors) {
  // FNV test vectors (Fowler, Noll, Vo: "FNV-1a 64-bit").
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(ParamInitTest, GeneratorKnownOutputs) {
  // xoshiro256** seeded by splitmix64(0): the first splitmix64 output is 0xe220a8397b1dcdaf.
  ParamInitRng rng(0);
  EXPECT_EQ(rng.next(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(rng.next(), 0xbf6e1f784956452aull);
  EXPECT_EQ(rng.next(), 0x1a5f849d4933e6e0ull);
}

TEST(ParamInitTest, KaimingUniformGoldenValues) {
  // fan_in 4: bound 0.5. Values pinned so a change of the generator or of the mapping to
  // [-b, b] (which would change every adapter of every run) fails here.
  HostTensor a(DType::F64, {4, 2});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "q_proj.lora_A", a).ok());
  const double expected[] = {0.12747712099847475,  -0.23210192971480714, -0.03249391255737466,
                             -0.4745352883788059,  -0.05525350696734144, 0.47925524932540053,
                             -0.34641286067376875, 0.026508849163626613};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(a.data<double>()[i], expected[i]) << "element " << i;

  // f32 is the same stream rounded once.
  HostTensor f(DType::F32, {4, 2});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "q_proj.lora_A", f).ok());
  const uint32_t bits[] = {0x3e02895d, 0xbe6dac21, 0xbd051856, 0xbef2f64a,
                           0xbd625180, 0x3ef560f2, 0xbeb15d07, 0x3cd92916};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(floatToBits(f.data<float>()[i]), bits[i]) << "element " << i;
}

TEST(ParamInitTest, ZerosOverwritesEveryDType) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    HostTensor t(dtype, {3, 5});
    std::memset(t.raw(), 0x5a, t.byteSize());
    ASSERT_TRUE(initParam(ParamInit::Zeros, "q_proj.lora_B", t).ok()) << dtypeName(dtype);
    for (double v : values(t)) {
      EXPECT_EQ(v, 0.0) << dtypeName(dtype);
      EXPECT_FALSE(std::signbit(v)) << dtypeName(dtype);
    }
  }
  // A 0-D tensor has no fan_in but can be zero.
  HostTensor scalar(DType::F32, {});
  scalar.data<float>()[0] = 1.0f;
  ASSERT_TRUE(initParam(ParamInit::Zeros, "s", scalar).ok());
  EXPECT_EQ(scalar.data<float>()[0], 0.0f);
}

TEST(ParamInitTest, KaimingUniformStaysWithinBoundEveryDType) {
  // fan_in = shape[0] = 48: b = 1/sqrt(48); rounding to the dtype is monotone, so
  // |v| <= b rounded to the dtype.
  const double b = 1.0 / std::sqrt(48.0);
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    HostTensor t(dtype, {48, 64});
    ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "w.lora_A", t).ok()) << dtypeName(dtype);
    double limit = b;
    if (dtype == DType::F32)
      limit = static_cast<float>(b);
    else if (dtype == DType::BF16)
      limit = bf16ToFloat(doubleToBf16(b));
    else if (dtype == DType::F16)
      limit = halfToFloat(doubleToHalf(b));
    double lo = 1.0, hi = -1.0;
    for (double v : values(t)) {
      ASSERT_TRUE(std::isfinite(v));
      ASSERT_LE(std::fabs(v), limit) << dtypeName(dtype);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // 3072 draws: the extremes come within 1% of the bound (fails with probability ~1e-13).
    EXPECT_LT(lo, -0.99 * b) << dtypeName(dtype);
    EXPECT_GT(hi, 0.99 * b) << dtypeName(dtype);
  }
}

TEST(ParamInitTest, KaimingUniformMomentsAndHistogram) {
  // 2^20 draws of U(-b, b), b = 1/32: mean 0 and variance b^2/3. Tolerances are 6 standard
  // errors: sd(mean) = b/sqrt(3n), sd(sample variance) = b^2 sqrt(4/(45 n)).
  const int64_t fanIn = 1024, cols = 1024;
  const double n = static_cast<double>(fanIn * cols);
  const double b = 1.0 / 32.0;
  HostTensor t(DType::F32, {fanIn, cols});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "model.layers.0.q_proj.lora_A", t).ok());
  std::vector<double> v = values(t);

  double sum = 0.0;
  for (double x : v)
    sum += x;
  const double mean = sum / n;
  double sq = 0.0;
  for (double x : v)
    sq += (x - mean) * (x - mean);
  const double var = sq / (n - 1);
  EXPECT_NEAR(mean, 0.0, 6.0 * b / std::sqrt(3.0 * n));
  EXPECT_NEAR(var, b * b / 3.0, 6.0 * b * b * std::sqrt(4.0 / (45.0 * n)));

  // Uniformity: chi-square over 64 equal bins, 63 degrees of freedom; the 1e-6 upper tail
  // is about 135.
  const int kBins = 64;
  std::vector<double> counts(kBins, 0.0);
  for (double x : v) {
    int bin = static_cast<int>((x + b) / (2.0 * b) * kBins);
    counts[static_cast<size_t>(std::clamp(bin, 0, kBins - 1))] += 1.0;
  }
  const double expectedCount = n / kBins;
  double chi2 = 0.0;
  for (double c : counts)
    chi2 += (c - expectedCount) * (c - expectedCount) / expectedCount;
  EXPECT_LT(chi2, 135.0);

  // Neighbouring elements are uncorrelated (lag-1 autocorrelation within 6 / sqrt(n)).
  double lag = 0.0;
  for (size_t i = 1; i < v.size(); ++i)
    lag += (v[i] - mean) * (v[i - 1] - mean);
  EXPECT_NEAR(lag / sq, 0.0, 6.0 / std::sqrt(n));
}

TEST(ParamInitTest, SameNameSameValuesOtherNameOtherValues) {
  HostTensor a1(DType::BF16, {64, 8}), a2(DType::BF16, {64, 8}), other(DType::BF16, {64, 8});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "layers.3.v_proj.lora_A", a1).ok());
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "layers.3.v_proj.lora_A", a2).ok());
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "layers.3.q_proj.lora_A", other).ok());
  EXPECT_TRUE(sameBytes(a1, a2));
  EXPECT_FALSE(sameBytes(a1, other));
  std::vector<double> x = values(a1), y = values(other);
  int equal = 0;
  for (size_t i = 0; i < x.size(); ++i)
    equal += x[i] == y[i];
  EXPECT_LT(equal, 16) << "two names share most values";

  // The values depend on the name and on fan_in, not on the tensor's previous contents.
  std::memset(a2.raw(), 0x7f, a2.byteSize());
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "layers.3.v_proj.lora_A", a2).ok());
  EXPECT_TRUE(sameBytes(a1, a2));

  // Each dtype rounds the same binary64 stream: f32 and f64 agree to f32 precision.
  HostTensor f64(DType::F64, {64, 8}), f32(DType::F32, {64, 8});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "w", f64).ok());
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "w", f32).ok());
  for (int64_t i = 0; i < f64.numElements(); ++i)
    ASSERT_EQ(f32.data<float>()[i], static_cast<float>(f64.data<double>()[i]));
}

TEST(ParamInitTest, EmptyTensorIsFine) {
  HostTensor t(DType::F32, {0, 8});
  EXPECT_TRUE(initParam(ParamInit::KaimingUniform, "w", t).ok());
  EXPECT_TRUE(initParam(ParamInit::Zeros, "w", t).ok());
}

TEST(ParamInitTest, KaimingUniformOnScalarIsAnError) {
  HostTensor t(DType::F32, {});
  t.data<float>()[0] = 3.0f;
  Status s = initParam(ParamInit::KaimingUniform, "scale", t);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "cannot initialise param 'scale' (kaiming_uniform): expected rank 1 or "
                         "2 (fan_in = shape[0]) or 3 (stacked [E, r, in]: fan_in = shape[2]), got "
                         "f32[]");
  EXPECT_EQ(t.data<float>()[0], 3.0f) << "the tensor must be unchanged on error";
  HostTensor four(DType::F32, {2, 2, 2, 2});
  EXPECT_EQ(initParam(ParamInit::KaimingUniform, "w", four).code(), StatusCode::InvalidArgument);
}

TEST(ParamInitTest, KaimingUniformOfStackedExpertAdaptersUsesTheLastDimAsFanIn) {
  // A mixture of experts' A [E, r, in] = [4, 8, 50]: every expert's [r, in] is PEFT's
  // nn.Linear(in, r) weight, bound 1/sqrt(in) = 1/sqrt(50), not 1/sqrt(E) = 0.5.
  HostTensor t(DType::F64, {4, 8, 50});
  ASSERT_TRUE(initParam(ParamInit::KaimingUniform, "experts.down_proj.lora_A", t).ok());
  const double b = 1.0 / std::sqrt(50.0);
  double lo = 1.0, hi = -1.0;
  for (double v : values(t)) {
    ASSERT_LE(std::fabs(v), b);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  // 1600 draws: the extremes come within 2% of the bound (fails with probability ~1e-14).
  EXPECT_LT(lo, -0.98 * b);
  EXPECT_GT(hi, 0.98 * b);
}

TEST(ParamInitTest, NonFloatDTypeIsAnError) {
  for (DType dtype : {DType::I64, DType::I32, DType::I1}) {
    for (ParamInit kind : {ParamInit::Zeros, ParamInit::KaimingUniform}) {
      HostTensor t(dtype, {4, 2});
      Status s = initParam(kind, "ids", t);
      EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
      EXPECT_EQ(s.message(), std::string("cannot initialise param 'ids' (") + paramInitName(kind) +
                                 "): expected an f32, f64, bf16 or f16 tensor, got " +
                                 t.typeString());
    }
  }
}

TEST(ParamInitTest, NamesRoundTrip) {
  for (ParamInit kind : {ParamInit::Zeros, ParamInit::KaimingUniform}) {
    StatusOr<ParamInit> parsed = parseParamInit(paramInitName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  StatusOr<ParamInit> bad = parseParamInit("xavier");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown param init 'xavier': expected zeros or kaiming_uniform");
}

} // namespace
} // namespace rp::runtime
