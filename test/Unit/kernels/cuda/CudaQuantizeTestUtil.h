//===- CudaQuantizeTestUtil.h - Quantized weights for the dequantize tests -*- C++ -*-===//
//
// The cases of CudaQuantizeHostTest (host replay) and CudaQuantizeTest (device): a weight of
// each format quantized by the CPU (kernels/cpu/Quantize.h), and the CPU's dequantization as
// the expected result, bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAQUANTIZETESTUTIL_H
#define RP_TEST_UNIT_CUDAQUANTIZETESTUTIL_H

#include "base/HostTensor.h"
#include "kernels/cpu/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace rp::kernels::cuda::test {

struct QuantCase {
  QuantFormat format;
  std::vector<int64_t> shape;
  int64_t axis;
};

/// nf4 (with and without double quantization: 3 x 5 blocks of absmax, a stacked weight), int8
/// and fp8 over both input axes.
inline std::vector<QuantCase> quantCases() {
  return {{QuantFormat::NF4, {64, 128}, 1},           {QuantFormat::NF4, {3, 160, 640}, 2},
          {QuantFormat::NF4Fp32Absmax, {96, 64}, 1}, {QuantFormat::Int8, {5, 7}, 1},
          {QuantFormat::Int8, {2, 5, 7}, 1},         {QuantFormat::Fp8, {9, 4}, 0},
          {QuantFormat::Fp8, {3, 4, 6}, 2}};
}

/// The storage of a random weight of `c` (u8 [bytes]), and its layout.
inline base::HostTensor quantized(const QuantCase &c, QuantLayout &layout) {
  auto l = quantLayout(c.format, c.shape, c.axis, "w");
  EXPECT_TRUE(l.ok()) << l.status().toString();
  layout = *l;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(layout.elements));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = normal(rng) * (1.0f + static_cast<float>(i % 13));
  base::HostTensor q(base::DType::U8, {layout.bytes});
  EXPECT_TRUE(cpu::quantizeWeight(w.data(), c.shape, layout, c.axis, q.data<uint8_t>(), "w").ok());
  return q;
}

/// The CPU's dequantization of `q` into `dtype`.
inline base::HostTensor cpuDequantized(const QuantCase &c, const base::HostTensor &q,
                                       base::DType dtype) {
  base::HostTensor out(dtype, c.shape);
  EXPECT_TRUE(cpu::dequantize(q, c.format, c.axis, out).ok());
  return out;
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAQUANTIZETESTUTIL_H
