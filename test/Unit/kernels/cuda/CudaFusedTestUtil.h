//===- CudaFusedTestUtil.h - Shared helpers of the fused kernel tests -*- C++ -*-===//
//
// For CudaFusedHostTest.cpp and CudaFusedTest.cpp (kernels/cuda/{Fused,Gather,Generators,
// AdamW}.h) and CudaScatterCumSum{Host,}Test.cpp (Gather.h's overwriting scatters, CumSum.h): random tensors of every GPU dtype rounded once to it (element access through
// CudaTestUtil.h), random and repeated indices, scatter updates, the CPU kernels' inputs for
// a GPU dtype, the random cases of swiglu, rope, attention and the scatters with their CPU
// references, and the comparisons both tests state: bit for bit, within rtol/atol, and within
// 2 ulps of the 16-bit format at max(|reference|, 2^-6) (near zero, float compute errors
// exceed ulps of tiny values).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAFUSEDTESTUTIL_H
#define RP_TEST_UNIT_CUDAFUSEDTESTUTIL_H

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/CumSum.h"
#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cuda/Strided.h"
#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rp::kernels::cuda::test {

/// The float dtypes of the GPU kernels.
inline const DType kGpuFloatTypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16};

/// The byte the tests fill outputs with before a kernel runs (a NaN in every float format).
inline constexpr unsigned char kPoisonByte = 0xA5;

/// A tensor of `dtype` and `shape` filled with kPoisonByte (a NaN for every float format).
inline HostTensor poisoned(DType dtype, const Shape &shape) {
  HostTensor t(dtype, shape);
  if (t.byteSize() > 0)
    std::memset(t.raw(), kPoisonByte, t.byteSize());
  return t;
}

//===--- tensors ----------------------------------------------------------===//

/// Uniform values in [lo, hi) rounded to `dtype` (integers: uniform in [lo, hi], the bounds
/// truncated toward zero; i1: 0/1).
inline HostTensor randomTensor(DType dtype, const Shape &shape, std::mt19937 &rng, double lo = -2,
                               double hi = 2) {
  HostTensor t(dtype, shape);
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo),
                                                 static_cast<int64_t>(hi));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (dtype == DType::I1)
      setValue(t, i, static_cast<double>(rng() & 1));
    else if (dtype == DType::I64 || dtype == DType::I32)
      setValue(t, i, static_cast<double>(integer(rng)));
    else
      setValue(t, i, real(rng));
  }
  return t;
}

/// Random indices in [-size, size) (both signs), of `dtype`.
inline HostTensor randomIndices(DType dtype, const Shape &shape, int64_t size, std::mt19937 &rng) {
  HostTensor t(dtype, shape);
  std::uniform_int_distribution<int64_t> pick(-size, size - 1);
  for (int64_t i = 0; i < t.numElements(); ++i)
    setValue(t, i, static_cast<double>(pick(rng)));
  return t;
}

/// Indices in [-size, size) with many repeats (a few hot targets), of `dtype`.
inline HostTensor repeatedIndices(DType dtype, const Shape &shape, int64_t size,
                                  std::mt19937 &rng) {
  HostTensor t(dtype, shape);
  std::uniform_int_distribution<int64_t> hot(0, size < 3 ? size - 1 : 2), any(-size, size - 1);
  for (int64_t i = 0; i < t.numElements(); ++i)
    setValue(t, i, static_cast<double>((rng() % 2) ? hot(rng) : any(rng)));
  return t;
}

/// Scatter updates: random in [-2, 2]; for f16/bf16 multiples of 1/64, so that every partial
/// sum is exact in float and the 16-bit results are the correctly rounded exact sums (a
/// float sum of many arbitrary f16 terms may be off by more than 2 ulps of a sum near 0).
inline HostTensor scatterUpdates(DType dtype, const Shape &shape, std::mt19937 &rng) {
  if (!is16Bit(dtype))
    return randomTensor(dtype, shape, rng);
  HostTensor t(dtype, shape);
  std::uniform_int_distribution<int> k(-128, 128);
  for (int64_t i = 0; i < t.numElements(); ++i)
    setValue(t, i, k(rng) / 64.0);
  return t;
}

/// The CPU kernels take f32/f64: f32 runs as f32, the others on their f64 values.
inline HostTensor cpuInput(const HostTensor &t) {
  return t.dtype() == DType::F32 ? t.clone() : convertTo(t, DType::F64);
}
inline DType cpuDType(DType d) { return d == DType::F32 ? DType::F32 : DType::F64; }

/// "f32[2, 3]", for traces.
inline std::string label(DType d, const Shape &s) {
  return std::string(base::dtypeName(d)) + formatShape(s);
}

/// `a` with dimension `axis` replaced by the dimensions of `mid` (gather's result shape).
inline Shape spliced(const Shape &a, int64_t axis, const Shape &mid) {
  Shape s(a.begin(), a.begin() + axis);
  s.insert(s.end(), mid.begin(), mid.end());
  s.insert(s.end(), a.begin() + axis + 1, a.end());
  return s;
}

//===--- random cases and their CPU references ----------------------------===//
// Each draws its inputs from `rng` in the order listed and runs the CPU kernel on them
// (cpuInput of each) into `want` (cpuDType); cpuStatus is the CPU kernel's status.

/// swiglu: gate in [-30, 30] (both sigmoid branches, large |gate|), up in [-2, 2].
struct SwigluInputs {
  HostTensor gate, up, want;
  base::Status cpuStatus;
};
inline SwigluInputs randomSwigluInputs(DType dtype, const Shape &shape, std::mt19937 &rng) {
  SwigluInputs in;
  in.gate = randomTensor(dtype, shape, rng, -30, 30);
  in.up = randomTensor(dtype, shape, rng);
  in.want = HostTensor(cpuDType(dtype), shape);
  in.cpuStatus = cpu::swiglu(cpuInput(in.gate), cpuInput(in.up), in.want);
  return in;
}

/// rope: x of `xShape` in [-2, 2], cos and sin of `cosShape` in [-1, 1]; `interleaved`: GPT-J's
/// rotation of adjacent pairs.
struct RopeInputs {
  HostTensor x, cos, sin, want;
  base::Status cpuStatus;
};
inline RopeInputs randomRopeInputs(DType dtype, const Shape &xShape, const Shape &cosShape,
                                   std::mt19937 &rng, bool interleaved = false) {
  RopeInputs in;
  in.x = randomTensor(dtype, xShape, rng);
  in.cos = randomTensor(dtype, cosShape, rng, -1, 1);
  in.sin = randomTensor(dtype, cosShape, rng, -1, 1);
  in.want = HostTensor(cpuDType(dtype), xShape);
  in.cpuStatus =
      cpu::rope(cpuInput(in.x), cpuInput(in.cos), cpuInput(in.sin), in.want, interleaved);
  return in;
}

/// attention: q of `qShape`, k and v of `kvShape`, in [-2, 2]; scale 1 / sqrt(head dim);
/// `window`: a sliding window (0: none).
struct AttentionInputs {
  HostTensor q, k, v, want;
  double scale;
  base::Status cpuStatus;
};
inline AttentionInputs randomAttentionInputs(DType dtype, const Shape &qShape, const Shape &kvShape,
                                             bool causal, std::mt19937 &rng,
                                             int64_t window = 0) {
  AttentionInputs in;
  in.q = randomTensor(dtype, qShape, rng);
  in.k = randomTensor(dtype, kvShape, rng);
  in.v = randomTensor(dtype, kvShape, rng);
  in.scale = 1.0 / std::sqrt(static_cast<double>(qShape[3]));
  in.want = HostTensor(cpuDType(dtype), qShape);
  in.cpuStatus = cpu::attention(cpuInput(in.q), cpuInput(in.k), cpuInput(in.v), in.scale, causal,
                                in.want, nullptr, window);
  return in;
}

/// attention_vjp: q, dout of `qShape`, k, v of `kvShape`, in [-2, 2]; out = the forward (the
/// CPU kernel on the decoded inputs, rounded to `dtype`); scale 1 / sqrt(head dim); the CPU
/// reference dq, dk, dv (f32, or f64 from the decoded inputs).
struct AttentionVjpInputs {
  HostTensor q, k, v, out, dout, wantDq, wantDk, wantDv;
  double scale;
  base::Status cpuStatus;
};
inline AttentionVjpInputs randomAttentionVjpInputs(DType dtype, const Shape &qShape,
                                                   const Shape &kvShape, bool causal,
                                                   std::mt19937 &rng, int64_t window = 0) {
  AttentionVjpInputs in;
  AttentionInputs fwd = randomAttentionInputs(dtype, qShape, kvShape, causal, rng, window);
  in.q = std::move(fwd.q);
  in.k = std::move(fwd.k);
  in.v = std::move(fwd.v);
  in.scale = fwd.scale;
  in.out = convertTo(fwd.want, dtype);
  in.dout = randomTensor(dtype, qShape, rng);
  in.wantDq = HostTensor(cpuDType(dtype), qShape);
  in.wantDk = HostTensor(cpuDType(dtype), kvShape);
  in.wantDv = HostTensor(cpuDType(dtype), kvShape);
  in.cpuStatus = fwd.cpuStatus;
  if (in.cpuStatus.ok())
    in.cpuStatus = cpu::attentionVjp(cpuInput(in.q), cpuInput(in.k), cpuInput(in.v),
                                     cpuInput(in.out), cpuInput(in.dout), in.scale, causal,
                                     in.wantDq, in.wantDk, in.wantDv, nullptr, nullptr, window);
  return in;
}

/// scatter_add into `out` along `axis` by indices of shape `indices` (scatterUpdates, then
/// repeatedIndices of dtype `index`), or scatter_elements_add with updates and indices of
/// shape `updates`.
struct ScatterInputs {
  HostTensor updates, indices, want;
  base::Status cpuStatus;
};
inline ScatterInputs randomScatterAddInputs(DType dtype, DType index, const Shape &out,
                                            const Shape &indices, int64_t axis, std::mt19937 &rng) {
  ScatterInputs in;
  in.updates = scatterUpdates(dtype, spliced(out, axis, indices), rng);
  in.indices = repeatedIndices(index, indices, out[axis], rng);
  in.want = HostTensor(cpuDType(dtype), out);
  in.cpuStatus = cpu::scatterAdd(cpuInput(in.updates), in.indices, axis, in.want);
  return in;
}
inline ScatterInputs randomScatterElementsAddInputs(DType dtype, DType index, const Shape &out,
                                                    const Shape &updates, int64_t axis,
                                                    std::mt19937 &rng) {
  ScatterInputs in;
  in.updates = scatterUpdates(dtype, updates, rng);
  in.indices = repeatedIndices(index, updates, out[axis], rng);
  in.want = HostTensor(cpuDType(dtype), out);
  in.cpuStatus = cpu::scatterElementsAdd(cpuInput(in.updates), in.indices, axis, in.want);
  return in;
}

/// The overwriting scatters (scatter, scatter_elements) move bits: data and updates of
/// `dtype` (any GPU dtype; random, in [-2, 2]), repeated indices of `index`; the CPU reference
/// runs on the same values in a CPU dtype (overwriteCpuDType) and `want` holds them in `dtype`.
/// `elements`: scatter_elements with updates and indices of shape `updates` (else scatter by
/// indices of shape `indices`, updates data[:axis] + indices + data[axis+1:]).
struct OverwriteInputs {
  HostTensor data, indices, updates, want;
  base::Status cpuStatus;
};
/// The CPU kernels' dtype for a moved GPU dtype: f16 and bf16 as f64 (exact), the others
/// themselves.
inline DType overwriteCpuDType(DType d) { return is16Bit(d) ? DType::F64 : d; }
inline OverwriteInputs randomOverwriteInputs(bool elements, DType dtype, DType index,
                                             const Shape &data, const Shape &indices,
                                             int64_t axis, std::mt19937 &rng) {
  OverwriteInputs in;
  in.data = randomTensor(dtype, data, rng);
  in.indices = repeatedIndices(index, indices, data[axis], rng);
  in.updates = randomTensor(dtype, elements ? indices : spliced(data, axis, indices), rng);
  const DType c = overwriteCpuDType(dtype);
  HostTensor want(c, data);
  in.cpuStatus = elements ? cpu::scatterElements(convertTo(in.data, c), in.indices,
                                                 convertTo(in.updates, c), axis, want)
                          : cpu::scatter(convertTo(in.data, c), in.indices,
                                         convertTo(in.updates, c), axis, want);
  in.want = convertTo(want, dtype);
  return in;
}

/// The dtypes the overwriting scatters move.
inline const DType kMovedTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                    DType::I64, DType::I32, DType::I1};

/// A case of an overwriting scatter: data's shape, the indices' (scatter_elements: also the
/// updates'), the axis.
struct OverwriteCase {
  Shape data, indices;
  int64_t axis;
};

/// For every moved dtype, index dtype (i64, i32) and case: draws the inputs and the CPU
/// reference (randomOverwriteInputs), checks the CPU kernel succeeded and calls
/// run(in, dtype, index, case) under a trace naming them.
template <typename Run>
void forEachOverwriteCase(bool elements, const std::vector<OverwriteCase> &cases,
                          std::mt19937 &rng, Run run) {
  for (DType dtype : kMovedTypes)
    for (DType index : {DType::I64, DType::I32})
      for (const OverwriteCase &c : cases) {
        SCOPED_TRACE(label(dtype, c.data) + " indices " + formatShape(c.indices) + " " +
                     base::dtypeName(index));
        OverwriteInputs in =
            randomOverwriteInputs(elements, dtype, index, c.data, c.indices, c.axis, rng);
        ASSERT_TRUE(in.cpuStatus.ok()) << in.cpuStatus.toString();
        run(in, dtype, index, c);
      }
}

/// cumsum of x (`dtype`, in [-2, 2]; integers in [-100, 100]) along `axis`; the CPU reference
/// in cpuDType (integers themselves).
struct CumSumInputs {
  HostTensor x, want;
  base::Status cpuStatus;
};
inline CumSumInputs randomCumSumInputs(DType dtype, const Shape &shape, int64_t axis,
                                       bool exclusive, bool reverse, std::mt19937 &rng) {
  CumSumInputs in;
  const bool integer = dtype == DType::I64 || dtype == DType::I32;
  in.x = integer ? randomTensor(dtype, shape, rng, -100, 100) : randomTensor(dtype, shape, rng);
  in.want = HostTensor(integer ? dtype : cpuDType(dtype), shape);
  in.cpuStatus =
      cpu::cumsum(integer ? in.x.clone() : cpuInput(in.x), axis, exclusive, reverse, in.want);
  return in;
}

/// For every dtype cumsum takes (f32, f64, f16, bf16, i64, i32), shape, axis and
/// combination of exclusive and reverse: draws the inputs and the CPU reference
/// (randomCumSumInputs), checks the CPU kernel succeeded and calls run(in, dtype, shape, axis,
/// exclusive, reverse) under a trace naming them.
template <typename Run>
void forEachCumSumCase(const std::vector<Shape> &shapes, std::mt19937 &rng, Run run) {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32})
    for (const Shape &shape : shapes)
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        for (bool exclusive : {false, true})
          for (bool reverse : {false, true}) {
            SCOPED_TRACE(label(dtype, shape) + " axis " + std::to_string(axis) +
                         (exclusive ? " exclusive" : "") + (reverse ? " reverse" : ""));
            CumSumInputs in = randomCumSumInputs(dtype, shape, axis, exclusive, reverse, rng);
            ASSERT_TRUE(in.cpuStatus.ok()) << in.cpuStatus.toString();
            run(in, dtype, shape, axis, exclusive, reverse);
          }
}

//===--- comparisons ------------------------------------------------------===//

/// Same shape, same element size, same bits; reports up to 8 differences.
inline void expectBitsEqual(const HostTensor &got, const HostTensor &want,
                            const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(base::dtypeSize(got.dtype()), base::dtypeSize(want.dtype())) << what;
  const size_t size = base::dtypeSize(got.dtype());
  const auto *g = static_cast<const unsigned char *>(got.raw());
  const auto *w = static_cast<const unsigned char *>(want.raw());
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 8; ++i)
    if (std::memcmp(g + i * size, w + i * size, size) != 0) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " of " << got.typeString() << " is "
                    << valueAt(got, i) << ", expected " << valueAt(want, i) << " (bit for bit)";
    }
}

/// |got - want| <= atol + rtol |want| for every element (NaN matches NaN); reports up to 8.
inline void expectClose(const HostTensor &got, const HostTensor &want, double rtol, double atol,
                        const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 8; ++i) {
    const double g = valueAt(got, i), w = valueAt(want, i);
    const bool ok = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
    }
  }
}

/// got (f16/bf16) within 2 ulps of the format of want at max(|want|, 2^-6); reports up to 8.
inline void expectUlps(const HostTensor &got, const HostTensor &want, const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 8; ++i) {
    const double g = valueAt(got, i), w = valueAt(want, i);
    const double tol = 2 * ulp16(got.dtype(), std::fmax(std::fabs(w), 0x1p-6));
    if (!(std::fabs(g - w) <= tol)) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w << " within "
                    << tol;
    }
  }
}

/// A GPU result against the CPU reference: 2 ulps (expectUlps) for f16/bf16, rtol32 relative
/// and 1e-7 absolute for f32, 1e-12 for f64.
inline void expectFloat(const HostTensor &got, const HostTensor &cpuResult, double rtol32,
                        double atol32, const std::string &what) {
  if (is16Bit(got.dtype()))
    expectUlps(got, convertTo(cpuResult, got.dtype()), what);
  else if (got.dtype() == DType::F32)
    expectClose(got, cpuResult, rtol32, atol32, what);
  else
    expectClose(got, cpuResult, 1e-12, 1e-12, what);
}
inline void expectFloat(const HostTensor &got, const HostTensor &cpuResult, double rtol32,
                        const std::string &what) {
  expectFloat(got, cpuResult, rtol32, 1e-7, what);
}

/// f32 attention (forward and VJP) against the CPU kernel: the CPU computes it in f32 (scores
/// and products by sgemm, kernels/cpu/KernelSupport.h expF32), the GPU bodies in double, so
/// they differ by f32 rounding of sums of D and S terms: the CPU kernels' own tolerance against
/// a float64 reference (rtol 1e-5, atol 1e-6; test/Unit/kernels/KernelTestUtil.h kF32).
inline constexpr double kAttentionF32Rtol = 1e-5, kAttentionF32Atol = 1e-6;

/// f32 attention_vjp against the CPU kernel: dk and dv sum up to G S terms of size up to
/// |dout| (G query heads per k/v head, S positions), which the CPU accumulates in f32 (sgemm),
/// an error growing like sqrt(G S) f32 ulps of |dout|: measured up to 1.4e-6 at S = 257,
/// D = 64, G = 3 (the CPU kernel's own f32 VJP tolerance, test/Unit/kernels/cpu/CpuAttentionGradTest.cpp).
inline constexpr double kAttentionVjpF32Atol = 5e-6;

/// f32 swiglu against the CPU kernel: the CPU computes g sigmoid(g) u in f32 with expF32 (within
/// 2 ulp of e^x), the GPU bodies in double rounded once: a few f32 ulp apart.
inline constexpr double kSwigluF32Rtol = 1e-6;

/// A device output of dtype/shape, every byte kPoisonByte.
inline std::unique_ptr<DeviceBuffer> poisonedOutput(DType dtype, const Shape &shape) {
  return poisonedOutput(static_cast<size_t>(numElements(shape)) * base::dtypeSize(dtype),
                        kPoisonByte);
}

/// Waits for `stream` and copies a device output of dtype/shape back as a tensor.
inline HostTensor download(const DeviceBuffer &buffer, DType dtype, const Shape &shape,
                           cudaStream_t stream) {
  EXPECT_CUDA_OK(cudaStreamSynchronize(stream));
  return download(buffer, dtype, shape, kPoisonByte);
}

/// A GPU result against the CPU reference computed in cpuDType: bit for bit for f32/f64,
/// 2 ulps of the reference rounded to the format for f16/bf16.
inline void expectExactOrUlps(const HostTensor &got, const HostTensor &cpuResult,
                              const std::string &what) {
  if (is16Bit(got.dtype()))
    expectUlps(got, convertTo(cpuResult, got.dtype()), what);
  else
    expectBitsEqual(got, cpuResult, what);
}

/// As expectExactOrUlps, but f32 within rtol (atol 0): for ops whose CPU kernel computes f32 in
/// f32 (swiglu) while the GPU body computes in double.
inline void expectExactOrCloseF32(const HostTensor &got, const HostTensor &cpuResult, double rtol,
                                  const std::string &what) {
  if (got.dtype() == DType::F32)
    expectClose(got, cpuResult, rtol, 0.0, what);
  else
    expectExactOrUlps(got, cpuResult, what);
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAFUSEDTESTUTIL_H
