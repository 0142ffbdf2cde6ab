//===- CudaFusedVjpTestUtil.h - Cases of the fused VJP kernel tests -*- C++ -*-===//
//
// Random cases of rms_norm_vjp, swiglu_vjp and rope_vjp with their CPU references (the CPU
// kernels on cpuInput of each operand, into cpuDType), shared by the host replay test
// (CudaFusedVjpHostTest.cpp) and the device test (CudaFusedVjpTest.cpp). Inputs are drawn in
// the order listed; gate in [-30, 30] (both sigmoid branches), the others in [-2, 2].
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAFUSEDVJPTESTUTIL_H
#define RP_TEST_UNIT_CUDAFUSEDVJPTESTUTIL_H

#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Norm.h"
#include "kernels/cuda/Fused.h"
#include "kernels/cuda/Norm.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"

namespace rp::kernels::cuda::test {

/// rms_norm_vjp over dims [axis, rank) of `shape`.
struct RmsNormVjpCase {
  HostTensor x, scale, g, wantDx, wantRows;
  int64_t axis = 0;
  double epsilon = 1e-6;
  base::Status cpuStatus;
};
inline RmsNormVjpCase randomRmsNormVjp(DType dtype, const Shape &shape, int64_t axis,
                                       std::mt19937 &rng) {
  RmsNormVjpCase c;
  c.axis = axis;
  const Shape scaleShape(shape.begin() + axis, shape.end());
  c.x = randomTensor(dtype, shape, rng);
  c.scale = randomTensor(dtype, scaleShape, rng);
  c.g = randomTensor(dtype, shape, rng);
  c.wantDx = HostTensor(cpuDType(dtype), shape);
  c.wantRows = HostTensor(cpuDType(dtype), shape);
  c.cpuStatus = cpu::rmsNormVjp(cpuInput(c.x), cpuInput(c.scale), cpuInput(c.g), axis, c.epsilon,
                                c.wantDx, c.wantRows);
  return c;
}

/// swiglu_vjp of `shape`.
struct SwigluVjpCase {
  HostTensor gate, up, g, wantGate, wantUp;
  base::Status cpuStatus;
};
inline SwigluVjpCase randomSwigluVjp(DType dtype, const Shape &shape, std::mt19937 &rng) {
  SwigluVjpCase c;
  c.gate = randomTensor(dtype, shape, rng, -30, 30);
  c.up = randomTensor(dtype, shape, rng);
  c.g = randomTensor(dtype, shape, rng);
  c.wantGate = HostTensor(cpuDType(dtype), shape);
  c.wantUp = HostTensor(cpuDType(dtype), shape);
  c.cpuStatus =
      cpu::swigluVjp(cpuInput(c.gate), cpuInput(c.up), cpuInput(c.g), c.wantGate, c.wantUp);
  return c;
}

/// rope_vjp: g of `gShape`, cos and sin of `tableShape` in [-1, 1].
struct RopeVjpCase {
  HostTensor g, cos, sin, want;
  bool interleaved = false;
  base::Status cpuStatus;
};
inline RopeVjpCase randomRopeVjp(DType dtype, const Shape &gShape, const Shape &tableShape,
                                 bool interleaved, std::mt19937 &rng) {
  RopeVjpCase c;
  c.interleaved = interleaved;
  c.g = randomTensor(dtype, gShape, rng);
  c.cos = randomTensor(dtype, tableShape, rng, -1, 1);
  c.sin = randomTensor(dtype, tableShape, rng, -1, 1);
  c.want = HostTensor(cpuDType(dtype), gShape);
  c.cpuStatus = cpu::ropeVjp(cpuInput(c.g), cpuInput(c.cos), cpuInput(c.sin), c.want, interleaved);
  return c;
}

/// The shapes of the tests: rms_norm_vjp (shape, axis) rows of 1 thread, a warp and a block.
struct NormVjpShape {
  Shape shape;
  int64_t axis;
};
inline const NormVjpShape kNormVjpShapes[] = {
    {{4, 8}, 1}, {{3, 4, 5}, 1}, {{2, 1500}, 1}, {{3, 5000}, 1}, {{6, 4, 64}, 2}, {{0, 8}, 1}};
inline const Shape kSwigluVjpShapes[] = {{7}, {3, 5, 8}, {4, 64, 688}, {0, 3}};
inline const std::pair<Shape, Shape> kRopeVjpShapes[] = {
    {{2, 16, 4, 4}, {1, 16, 1, 4}}, {{2, 3, 5, 8}, {5, 8}}, {{2, 8, 128, 64}, {128, 64}}};

/// f(dtype, shape, case, plan) over every dtype and kNormVjpShapes case (traced), the case's
/// CPU status and plan checked first.
template <typename F> void forEachRmsNormVjpCase(std::mt19937 &rng, F f) {
  for (DType dtype : kGpuFloatTypes)
    for (const NormVjpShape &s : kNormVjpShapes) {
      SCOPED_TRACE(label(dtype, s.shape) + " axis " + std::to_string(s.axis));
      const RmsNormVjpCase c = randomRmsNormVjp(dtype, s.shape, s.axis, rng);
      ASSERT_TRUE(c.cpuStatus.ok()) << c.cpuStatus.toString();
      auto plan = planRmsNormVjp(dtype, s.shape, c.scale.shape(), s.shape, s.axis, c.epsilon,
                                 s.shape, s.shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      f(dtype, s.shape, c, *plan);
    }
}

/// f(dtype, shape, case, plan) over every dtype and kSwigluVjpShapes case, as above.
template <typename F> void forEachSwigluVjpCase(std::mt19937 &rng, F f) {
  for (DType dtype : kGpuFloatTypes)
    for (const Shape &shape : kSwigluVjpShapes) {
      SCOPED_TRACE(label(dtype, shape));
      const SwigluVjpCase c = randomSwigluVjp(dtype, shape, rng);
      ASSERT_TRUE(c.cpuStatus.ok()) << c.cpuStatus.toString();
      auto plan = planSwigluVjp(dtype, shape, shape, shape, shape, shape);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      f(dtype, shape, c, *plan);
    }
}

/// f(dtype, g shape, case, plan) over every dtype, both rotations and kRopeVjpShapes, as above.
template <typename F> void forEachRopeVjpCase(std::mt19937 &rng, F f) {
  for (DType dtype : kGpuFloatTypes)
    for (bool interleaved : {false, true})
      for (const auto &[gs, ts] : kRopeVjpShapes) {
        SCOPED_TRACE(label(dtype, gs) + " table " + formatShape(ts) +
                     (interleaved ? " interleaved" : ""));
        const RopeVjpCase c = randomRopeVjp(dtype, gs, ts, interleaved, rng);
        ASSERT_TRUE(c.cpuStatus.ok()) << c.cpuStatus.toString();
        auto plan = planRopeVjp(dtype, gs, ts, ts, gs, interleaved);
        ASSERT_TRUE(plan.ok()) << plan.status().toString();
        EXPECT_TRUE(plan->transposed);
        f(dtype, gs, c, *plan);
      }
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAFUSEDVJPTESTUTIL_H
