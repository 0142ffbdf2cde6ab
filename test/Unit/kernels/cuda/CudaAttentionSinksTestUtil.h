//===- CudaAttentionSinksTestUtil.h - Random attention cases with sinks -*- C++ -*-===//
//
// For CudaAttentionSinksHostTest.cpp and CudaAttentionSinksTest.cpp: random attention inputs
// with attention sinks (GPT-OSS, [Hq]) and their CPU references (cpu::attention and
// cpu::attentionVjp with sinks), and the f32 tolerance of dsinks.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAATTENTIONSINKSTESTUTIL_H
#define RP_TEST_UNIT_CUDAATTENTIONSINKSTESTUTIL_H

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"

#include <cmath>
#include <random>

namespace rp::kernels::cuda::test {

/// f32 dsinks against the CPU kernel: a sum of B S f32-rounded terms P_sink D_i on the CPU
/// side (the CPU kernel's own dsinks tolerance, test/Unit/kernels/cpu/CpuAttentionSinksTest.cpp).
inline constexpr double kDsinkF32Atol = 2e-5;

/// Random q, k, v, dout in [-2, 2], sinks in [sinkLo, sinkHi] (all rounded to `dtype`); out =
/// the CPU forward rounded to `dtype`; the CPU references (cpuDType) of out and of the VJP.
struct SinkInputs {
  HostTensor q, k, v, sinks, out, dout;
  HostTensor wantOut, wantDq, wantDk, wantDv, wantDsinks;
  double scale = 1;
  base::Status cpuStatus;
};

inline SinkInputs randomSinkInputs(DType dtype, const Shape &qs, const Shape &ks, bool causal,
                            double sinkLo, double sinkHi, std::mt19937 &rng) {
  SinkInputs in;
  in.q = randomTensor(dtype, qs, rng);
  in.k = randomTensor(dtype, ks, rng);
  in.v = randomTensor(dtype, ks, rng);
  in.sinks = randomTensor(dtype, {qs[1]}, rng, sinkLo, sinkHi);
  in.dout = randomTensor(dtype, qs, rng);
  in.scale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
  const DType c = cpuDType(dtype);
  in.wantOut = HostTensor(c, qs);
  const HostTensor cq = cpuInput(in.q), ck = cpuInput(in.k), cv = cpuInput(in.v),
                   csinks = cpuInput(in.sinks);
  in.cpuStatus = cpu::attention(cq, ck, cv, in.scale, causal, in.wantOut, &csinks);
  if (!in.cpuStatus.ok())
    return in;
  in.out = convertTo(in.wantOut, dtype);
  in.wantDq = HostTensor(c, qs);
  in.wantDk = HostTensor(c, ks);
  in.wantDv = HostTensor(c, ks);
  in.wantDsinks = HostTensor(c, {qs[1]});
  in.cpuStatus = cpu::attentionVjp(cq, ck, cv, cpuInput(in.out), cpuInput(in.dout), in.scale,
                                   causal, in.wantDq, in.wantDk, in.wantDv, &csinks,
                                   &in.wantDsinks);
  return in;
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAATTENTIONSINKSTESTUTIL_H
