//===- CpuQuantizeTest.cpp - Quantized weights on the CPU ----------------------===//
//
// nf4 against bitsandbytes 0.50 bit for bit (Inputs/nf4-bitsandbytes.safetensors, made by
// Inputs/make_nf4_fixture.py): the codes, the double-quantized absmax, the offset and the
// dequantized values; int8 and fp8 against their definitions; the layouts and the refusals.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Quantize.h"

#include "base/Float16.h"
#include "runtime/io/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace rp::kernels::cpu {
namespace {

using base::DType;
using base::HostTensor;

const std::string kFixture = std::string(RP_SOURCE_DIR) +
                             "/test/Unit/kernels/cpu/Inputs/nf4-bitsandbytes.safetensors";

class CpuQuantizeNf4Test : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    auto file = runtime::readSafetensors(kFixture);
    ASSERT_TRUE(file.ok()) << file.status().toString();
    fixture_ = std::move(*file);
  }
  const runtime::SafetensorsTensorView &tensor(const std::string &name) {
    const runtime::SafetensorsTensorView *t = fixture_.find(name);
    EXPECT_NE(t, nullptr) << name;
    return *t;
  }
  std::vector<float> floats(const std::string &name) {
    const runtime::SafetensorsTensorView &t = tensor(name);
    std::vector<float> v(t.size / 4);
    std::memcpy(v.data(), t.data, t.size);
    return v;
  }
  runtime::SafetensorsFile fixture_;
};

TEST_P(CpuQuantizeNf4Test, MatchesBitsandbytesBitForBit) {
  const std::string name = GetParam();
  const runtime::SafetensorsTensorView &wv = tensor("w." + name);
  const std::vector<float> w = floats("w." + name);
  for (QuantFormat format : {QuantFormat::NF4, QuantFormat::NF4Fp32Absmax}) {
    const std::string prefix = std::string(quantFormatName(format)) + "." + name + ".";
    auto layout = quantLayout(format, wv.shape, 0, name);
    ASSERT_TRUE(layout.ok()) << layout.status().toString();
    std::vector<uint8_t> q(static_cast<size_t>(layout->bytes));
    ASSERT_TRUE(quantizeWeight(w.data(), wv.shape, *layout, 0, q.data(), name).ok());

    const runtime::SafetensorsTensorView &codes = tensor(prefix + "codes");
    ASSERT_EQ(static_cast<int64_t>(codes.size), layout->elements / 2);
    EXPECT_EQ(std::memcmp(q.data(), codes.data, codes.size), 0) << prefix << "codes";
    if (format == QuantFormat::NF4) {
      const runtime::SafetensorsTensorView &qabsmax = tensor(prefix + "qabsmax");
      ASSERT_EQ(static_cast<int64_t>(qabsmax.size), layout->absmaxCount);
      EXPECT_EQ(std::memcmp(q.data() + layout->absmax, qabsmax.data, qabsmax.size), 0)
          << prefix << "qabsmax";
      const runtime::SafetensorsTensorView &absmax2 = tensor(prefix + "absmax2");
      ASSERT_EQ(static_cast<int64_t>(absmax2.size), 4 * layout->absmax2Count);
      EXPECT_EQ(std::memcmp(q.data() + layout->absmax2, absmax2.data, absmax2.size), 0)
          << prefix << "absmax2";
      EXPECT_EQ(std::memcmp(q.data() + layout->offset, tensor(prefix + "offset").data, 4), 0)
          << prefix << "offset";
    } else {
      const runtime::SafetensorsTensorView &absmax = tensor(prefix + "absmax");
      EXPECT_EQ(std::memcmp(q.data() + layout->absmax, absmax.data, absmax.size), 0)
          << prefix << "absmax";
    }

    auto qt = HostTensor::create(DType::U8, {layout->bytes});
    auto out = HostTensor::create(DType::F32, wv.shape);
    ASSERT_TRUE(qt.ok() && out.ok());
    std::memcpy(qt->raw(), q.data(), q.size());
    ASSERT_TRUE(dequantize(*qt, format, 0, *out).ok());
    const runtime::SafetensorsTensorView &want = tensor(prefix + "dequantized");
    ASSERT_EQ(out->byteSize(), want.size);
    EXPECT_EQ(std::memcmp(out->raw(), want.data, want.size), 0) << prefix << "dequantized";

    // bf16 and f16 outputs: the f32 values rounded once.
    for (DType d : {DType::BF16, DType::F16}) {
      auto half = HostTensor::create(d, wv.shape);
      ASSERT_TRUE(half.ok());
      ASSERT_TRUE(dequantize(*qt, format, 0, *half).ok());
      const float *y = out->data<float>();
      for (int64_t i = 0; i < layout->elements; ++i) {
        const uint16_t expect = d == DType::BF16 ? base::floatToBf16(y[i]) : base::floatToHalf(y[i]);
        ASSERT_EQ(half->data<uint16_t>()[i], expect) << prefix << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixture, CpuQuantizeNf4Test,
                         ::testing::Values("small", "proj", "wide", "experts"));

TEST(CpuQuantizeTest, TorchSumOfFewValuesAndManyLanes) {
  // Below 8 values: four interleaved partial sums (x0..x3), the rest into the first, then
  // the others added in order: ((x0 + x4) + x1) + x2 + x3.
  const float few[5] = {1e8f, 1.0f, -1e8f, 1.0f, 1.0f};
  EXPECT_EQ(torchCpuSum(few, 5), (((1e8f + 1.0f) + 1.0f) + -1e8f) + 1.0f);
  std::vector<float> ones(100003, 1.0f);
  EXPECT_EQ(torchCpuSum(ones.data(), 100003), 100003.0f);
}

TEST(CpuQuantizeTest, Int8PerOutputChannel) {
  // W [3, 4] read as x W^T: axis 1 (in) -> one scale per row.
  const std::vector<float> w = {0.5f, -1.0f, 0.25f, 0.0f, 2.0f, 1.0f, -2.0f, 0.1f,
                                0.0f, 0.0f, 0.0f,  0.0f};
  // int8 needs no block size: a 3 x 4 weight is fine.
  auto l = quantLayout(QuantFormat::Int8, {3, 4}, 1, "w");
  ASSERT_TRUE(l.ok()) << l.status().toString();
  EXPECT_EQ(l->absmaxCount, 3);
  EXPECT_EQ(l->bytes, 16 + 12);
  auto q = HostTensor::create(DType::U8, {l->bytes});
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(quantizeWeight(w.data(), {3, 4}, *l, 1, q->data<uint8_t>(), "w").ok());
  const auto *codes = reinterpret_cast<const int8_t *>(q->data<uint8_t>());
  EXPECT_EQ(codes[0], 64); // rint(0.5 * 127) = 64 (63.5: half to even)
  EXPECT_EQ(codes[1], -127);
  EXPECT_EQ(codes[6], -127);
  auto out = HostTensor::create(DType::F32, {3, 4});
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(dequantize(*q, QuantFormat::Int8, 1, *out).ok());
  const float *y = out->data<float>();
  EXPECT_EQ(y[1], -127.0f * 1.0f * (1.0f / 127.0f));
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(y[i], w[static_cast<size_t>(i)], 2.0f / 127.0f) << i;
  for (int i = 8; i < 12; ++i)
    EXPECT_EQ(y[i], 0.0f); // a channel of zeros
  // Axis 0 ([in, out], read as x W): one scale per column.
  auto lc = quantLayout(QuantFormat::Int8, {3, 4}, 0, "w");
  ASSERT_TRUE(lc.ok());
  EXPECT_EQ(lc->absmaxCount, 4);
}

TEST(CpuQuantizeTest, Fp8E4m3) {
  EXPECT_EQ(fp8E4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(fp8E4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(fp8E4m3ToFloat(0x7f)));
  for (int b = 0; b < 256; ++b)
    if ((b & 0x7f) != 0x7f)
      EXPECT_EQ(floatToFp8E4m3(fp8E4m3ToFloat(static_cast<uint8_t>(b))) & 0x7f, b & 0x7f) << b;
  EXPECT_EQ(floatToFp8E4m3(1000.0f), 0x7e); // saturates
  EXPECT_EQ(floatToFp8E4m3(1.0625f), floatToFp8E4m3(1.0f)); // tie to even (1.0 = 0x38)
  const std::vector<float> w = {1.0f, -3.0f, 0.5f, 7.0f};
  auto l = quantLayout(QuantFormat::Fp8, {2, 2}, 1, "w");
  ASSERT_TRUE(l.ok());
  auto q = HostTensor::create(DType::U8, {l->bytes});
  auto out = HostTensor::create(DType::F32, {2, 2});
  ASSERT_TRUE(q.ok() && out.ok());
  ASSERT_TRUE(quantizeWeight(w.data(), {2, 2}, *l, 1, q->data<uint8_t>(), "w").ok());
  ASSERT_TRUE(dequantize(*q, QuantFormat::Fp8, 1, *out).ok());
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(out->data<float>()[i], w[static_cast<size_t>(i)],
                std::fabs(w[static_cast<size_t>(i)]) / 16) << i;
}

TEST(CpuQuantizeTest, Refusals) {
  auto odd = quantLayout(QuantFormat::NF4, {128, 100}, 1, "model.layers.0.mlp.down_proj.weight");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(),
            "model.layers.0.mlp.down_proj.weight [128, 100] cannot be held as nf4: its last "
            "dimension 100 is not a multiple of the nf4 block size 64");
  EXPECT_FALSE(quantLayout(QuantFormat::NF4, {128}, 0, "b").ok());
  EXPECT_FALSE(quantLayout(QuantFormat::Int8, {4, 4}, 2, "w").ok());
  const std::vector<float> w(64, std::nanf(""));
  auto l = quantLayout(QuantFormat::NF4, {1, 64}, 1, "w");
  ASSERT_TRUE(l.ok());
  std::vector<uint8_t> q(static_cast<size_t>(l->bytes));
  EXPECT_FALSE(quantizeWeight(w.data(), {1, 64}, *l, 1, q.data(), "w").ok());
  auto bad = HostTensor::create(DType::U8, {l->bytes - 1});
  auto out = HostTensor::create(DType::F32, {1, 64});
  ASSERT_TRUE(bad.ok() && out.ok());
  base::Status st = dequantize(*bad, QuantFormat::NF4, 1, *out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("dequantize: q is u8["), std::string::npos) << st.message();
}

} // namespace
} // namespace rp::kernels::cpu
