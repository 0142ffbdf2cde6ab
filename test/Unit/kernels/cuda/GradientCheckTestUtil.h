//===- GradientCheckTestUtil.h - Inputs of the gradient-check tests -*- C++ -*-===//
//
// Gradient arrays for the tests of launchFlagNonFinite and its host replay
// (CudaGradientCheckTest.cpp, CudaElementwiseHostTest.cpp): finite values of every class and
// the non-finite ones, and the replay's flag.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_KERNELS_CUDA_GRADIENTCHECKTESTUTIL_H
#define RP_TEST_UNIT_KERNELS_CUDA_GRADIENTCHECKTESTUTIL_H

#include "kernels/cuda/Elementwise.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace rp::kernels::cuda::test {

/// n normal values, with a subnormal, -0, the largest and the lowest float among them.
inline std::vector<float> finiteGradients(size_t n, std::mt19937 &rng) {
  std::normal_distribution<float> value(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float &v : x)
    v = value(rng);
  if (n > 4) {
    x[1] = std::numeric_limits<float>::denorm_min();
    x[2] = -0.0f;
    x[3] = std::numeric_limits<float>::max();
    x[4] = std::numeric_limits<float>::lowest();
  }
  return x;
}

/// The values a gradient check must flag.
inline const float kNonFinite[] = {std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN(),
                                   -std::numeric_limits<float>::quiet_NaN()};

/// The host replay's flag for `x`.
inline uint32_t replayFlag(const std::vector<float> &x) {
  uint32_t flag = 0;
  replay::flagNonFinite(x.data(), static_cast<int64_t>(x.size()), &flag);
  return flag;
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_KERNELS_CUDA_GRADIENTCHECKTESTUTIL_H
