//===- CudaAttentionTestUtil.h - Random attention cases and their replays -*- C++ -*-===//
//
// For the CUDA attention tests of attention sinks (CudaAttentionSinks{Host,}Test.cpp) and of
// soft-capped scores and value head sizes other than the query's
// (CudaAttentionVariants{Host,}Test.cpp): random attention inputs with their
// CPU references (cpu::attention and cpu::attentionVjp), the host replay of the row kernels
// on them (replay::attention, replay::attentionVjp), and the f32 tolerance of dsinks.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDAATTENTIONTESTUTIL_H
#define RP_TEST_UNIT_CUDAATTENTIONTESTUTIL_H

#include "kernels/KernelChecks.h"
#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Fused.h"
#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/Fused.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {

/// f32 dsinks against the CPU kernel: a sum of B S f32-rounded terms P_sink D_i on the CPU
/// side (the CPU kernel's own dsinks tolerance, test/Unit/kernels/cpu/
/// CpuAttentionSinksTest.cpp).
inline constexpr double kDsinkF32Atol = 2e-5;

/// The options of a random attention case: the mask, attention sinks (GPT-OSS) drawn in
/// [sinkLo, sinkHi] (drawn always, passed to the kernels when `sinks`), a logit soft-cap
/// (Gemma-2; 0: none) and the value head size Dv (multi-head latent attention; 0: the key's).
struct AttentionCase {
  bool causal = false;
  bool sinks = true;
  double sinkLo = -3, sinkHi = 3;
  double softcap = 0;
  int64_t valueDim = 0;
};

/// v's shape [B, Hkv, S, Dv] for k's shape and a case's value head size.
inline Shape valueShape(const Shape &ks, const AttentionCase &options) {
  return {ks[0], ks[1], ks[2], options.valueDim > 0 ? options.valueDim : ks[3]};
}

/// Random q, k, v, dout in [-2, 2], sinks (all rounded to `dtype`); out = the CPU forward
/// rounded to `dtype`; the CPU references (cpuDType) of out and of the VJP.
struct SinkInputs {
  HostTensor q, k, v, sinks, out, dout;
  HostTensor wantOut, wantDq, wantDk, wantDv, wantDsinks;
  double scale = 1;
  AttentionCase options;
  base::Status cpuStatus;
  /// The sinks the kernels take: &sinks when options.sinks, else null.
  const HostTensor *sinksOrNull() const { return options.sinks ? &sinks : nullptr; }
};

inline SinkInputs randomAttentionInputs(DType dtype, const Shape &qs, const Shape &ks,
                                        const AttentionCase &options, std::mt19937 &rng) {
  SinkInputs in;
  in.options = options;
  const Shape vs = valueShape(ks, options), os = attentionOutShape(qs, vs);
  in.q = randomTensor(dtype, qs, rng);
  in.k = randomTensor(dtype, ks, rng);
  in.v = randomTensor(dtype, vs, rng);
  in.sinks = randomTensor(dtype, {qs[1]}, rng, options.sinkLo, options.sinkHi);
  in.dout = randomTensor(dtype, os, rng);
  in.scale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
  const DType c = cpuDType(dtype);
  in.wantOut = HostTensor(c, os);
  const HostTensor cq = cpuInput(in.q), ck = cpuInput(in.k), cv = cpuInput(in.v),
                   csinks = cpuInput(in.sinks);
  const HostTensor *s = options.sinks ? &csinks : nullptr;
  in.cpuStatus = cpu::attention(cq, ck, cv, in.scale, options.causal, in.wantOut, s, 0,
                                options.softcap);
  if (!in.cpuStatus.ok())
    return in;
  in.out = convertTo(in.wantOut, dtype);
  in.wantDq = HostTensor(c, qs);
  in.wantDk = HostTensor(c, ks);
  in.wantDv = HostTensor(c, vs);
  in.wantDsinks = HostTensor(c, {qs[1]});
  in.cpuStatus = cpu::attentionVjp(cq, ck, cv, cpuInput(in.out), cpuInput(in.dout), in.scale,
                                   options.causal, in.wantDq, in.wantDk, in.wantDv, s,
                                   s ? &in.wantDsinks : nullptr, 0, options.softcap);
  return in;
}

/// randomAttentionInputs with sinks in [sinkLo, sinkHi].
inline SinkInputs randomSinkInputs(DType dtype, const Shape &qs, const Shape &ks, bool causal,
                                   double sinkLo, double sinkHi, std::mt19937 &rng) {
  return randomAttentionInputs(dtype, qs, ks, {causal, true, sinkLo, sinkHi}, rng);
}

/// The plans of `in`'s forward and VJP (with its soft-cap, and `sinks` when not null), with
/// key/query tiles of `tile`; `tensorCores`: let the launchers take the tensor-core kernels
/// (the plan must take them), otherwise the row kernels only.
inline AttentionPlan forwardPlan(const SinkInputs &in, int64_t tile, const HostTensor *sinks,
                                 bool tensorCores = false) {
  base::StatusOr<AttentionPlan> plan =
      planAttention(in.q.dtype(), in.q.shape(), in.k.shape(), in.v.shape(), in.scale,
                    in.options.causal, in.out.shape(), 0, in.options.softcap);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  if (sinks)
    EXPECT_TRUE(planAttentionSinks("attention", *plan, sinks->dtype(), sinks->shape()).ok());
  plan->tile = tile;
  if (tensorCores)
    EXPECT_TRUE(plan->tensorCores);
  plan->tensorCores = tensorCores;
  return *plan;
}
inline AttentionVjpPlan vjpPlan(const SinkInputs &in, int64_t tile, const HostTensor *sinks,
                                bool tensorCores = false) {
  const Shape &qs = in.q.shape(), &ks = in.k.shape(), &vs = in.v.shape(), &os = in.out.shape();
  base::StatusOr<AttentionVjpPlan> plan =
      planAttentionVjp(in.q.dtype(), qs, ks, vs, os, os, in.scale, in.options.causal, qs, ks, vs,
                       0, in.options.softcap);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  if (sinks)
    EXPECT_TRUE(
        planAttentionSinks("attention_vjp", plan->forward, sinks->dtype(), sinks->shape()).ok());
  plan->tile = tile;
  if (tensorCores)
    EXPECT_TRUE(plan->tensorCores);
  plan->tensorCores = plan->forward.tensorCores = tensorCores;
  return *plan;
}

/// replay::attention of `in` with `sinks` (null: the sink-free kernel) and key tiles of
/// `tile`.
inline HostTensor hostForward(const SinkInputs &in, int64_t tile, const HostTensor *sinks) {
  const AttentionPlan plan = forwardPlan(in, tile, sinks);
  HostTensor out = poisoned(in.q.dtype(), in.out.shape());
  replay::attention(plan, in.q.raw(), in.k.raw(), in.v.raw(), out.raw(),
                    sinks ? sinks->raw() : nullptr);
  return out;
}

struct Grads {
  HostTensor dq, dk, dv, dsinks;
};

/// replay::attentionVjp of `in` with `sinks` (null: the sink-free kernel) and tiles of `tile`.
inline Grads hostVjp(const SinkInputs &in, int64_t tile, const HostTensor *sinks) {
  const Shape &qs = in.q.shape(), &ks = in.k.shape(), &vs = in.v.shape();
  const AttentionVjpPlan plan = vjpPlan(in, tile, sinks);
  Grads g{poisoned(in.q.dtype(), qs), poisoned(in.q.dtype(), ks), poisoned(in.q.dtype(), vs),
          poisoned(in.q.dtype(), {qs[1]})};
  std::vector<double> scratch(plan.scratchBytes / sizeof(double) + 1);
  replay::attentionVjp(plan, in.q.raw(), in.k.raw(), in.v.raw(), in.out.raw(), in.dout.raw(),
                       g.dq.raw(), g.dk.raw(), g.dv.raw(), scratch.data(),
                       sinks ? sinks->raw() : nullptr, sinks ? g.dsinks.raw() : nullptr);
  return g;
}

struct DeviceResults {
  HostTensor out;
  Grads grads;
};

/// The forward and the VJP of `in` (with its sinks when options.sinks) on the device, twice:
/// the second run must give the first's bits. `tensorCores`: let the launchers take the
/// tensor-core kernels.
inline DeviceResults runOnDevice(const SinkInputs &in, bool tensorCores, cudaStream_t stream) {
  const DType dtype = in.q.dtype();
  const Shape &qs = in.q.shape(), &ks = in.k.shape(), &vs = in.v.shape(), &os = in.out.shape(),
              hs{qs[1]};
  const HostTensor *sinks = in.sinksOrNull();
  const AttentionPlan fwd = forwardPlan(in, kAttentionTile, sinks, tensorCores);
  const AttentionVjpPlan vjp = vjpPlan(in, kAttentionTile, sinks, tensorCores);
  auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v), dS = upload(in.sinks),
       dO = upload(in.out), dDo = upload(in.dout);
  auto gO = poisonedOutput(dtype, os), gQ = poisonedOutput(dtype, qs),
       gK = poisonedOutput(dtype, ks), gV = poisonedOutput(dtype, vs),
       gS = poisonedOutput(dtype, hs);
  void *pS = sinks ? dS->get() : nullptr, *pdS = sinks ? gS->get() : nullptr;
  DeviceBuffer scratch(vjp.scratchBytes);
  DeviceResults r[2];
  for (DeviceResults &run : r) {
    EXPECT_CUDA_OK(launchAttention(fwd, dQ->get(), dK->get(), dV->get(), gO->get(), stream, pS));
    EXPECT_CUDA_OK(launchAttentionVjp(vjp, dQ->get(), dK->get(), dV->get(), dO->get(),
                                      dDo->get(), gQ->get(), gK->get(), gV->get(), scratch.get(),
                                      stream, pS, pdS));
    run = {download(*gO, dtype, os, stream),
           {download(*gQ, dtype, qs, stream), download(*gK, dtype, ks, stream),
            download(*gV, dtype, vs, stream), download(*gS, dtype, hs, stream)}};
  }
  expectBitsEqual(r[1].out, r[0].out, "out rerun");
  expectBitsEqual(r[1].grads.dq, r[0].grads.dq, "dq rerun");
  expectBitsEqual(r[1].grads.dk, r[0].grads.dk, "dk rerun");
  expectBitsEqual(r[1].grads.dv, r[0].grads.dv, "dv rerun");
  if (sinks)
    expectBitsEqual(r[1].grads.dsinks, r[0].grads.dsinks, "dsinks rerun");
  return std::move(r[0]);
}

/// The row kernels' results (replayed or launched) against `in`'s CPU references at the
/// host-replay tolerances: f32 out rtol 1e-5 + atol 1e-6, dq/dk/dv atol 5e-6, dsinks atol
/// 2e-5 (when in.options.sinks); f64 1e-12; f16/bf16 2 ulps of the format at
/// max(|reference|, 2^-6).
inline void expectMatchesCpu(const SinkInputs &in, const HostTensor &out, const Grads &g) {
  expectFloat(out, in.wantOut, kAttentionF32Rtol, kAttentionF32Atol, "out");
  expectFloat(g.dq, in.wantDq, kAttentionF32Rtol, kAttentionVjpF32Atol, "dq");
  expectFloat(g.dk, in.wantDk, kAttentionF32Rtol, kAttentionVjpF32Atol, "dk");
  expectFloat(g.dv, in.wantDv, kAttentionF32Rtol, kAttentionVjpF32Atol, "dv");
  if (in.options.sinks)
    expectFloat(g.dsinks, in.wantDsinks, kAttentionF32Rtol, kDsinkF32Atol, "dsinks");
}

/// |got - want| <= e (max |want| + |want|) + 1e-5, e = 2^-6 (bf16), 2^-9 (f16): the
/// tensor-core kernels against an f64 CPU reference (they round P and dS to the storage type;
/// CudaFlashAttentionTest's bound).
inline void expectFlashNear(const HostTensor &got, const HostTensor &want,
                            const std::string &what) {
  ASSERT_EQ(got.numElements(), want.numElements()) << what;
  double wmax = 0;
  for (int64_t i = 0; i < want.numElements(); ++i)
    wmax = std::max(wmax, std::fabs(valueAt(want, i)));
  const double e = got.dtype() == DType::BF16 ? 0x1p-6 : 0x1p-9;
  int failures = 0;
  for (int64_t i = 0; i < got.numElements() && failures < 5; ++i) {
    const double g = valueAt(got, i), w = valueAt(want, i);
    if (!(std::fabs(g - w) <= e * (wmax + std::fabs(w)) + 1e-5)) {
      ++failures;
      ADD_FAILURE() << what << " element " << i << ": got " << g << ", want " << w;
    }
  }
}

/// The tensor-core kernels' results against `in`'s f64 CPU references (expectFlashNear).
inline void expectFlashMatchesCpu(const SinkInputs &in, const DeviceResults &r) {
  expectFlashNear(r.out, in.wantOut, "out");
  expectFlashNear(r.grads.dq, in.wantDq, "dq");
  expectFlashNear(r.grads.dk, in.wantDk, "dk");
  expectFlashNear(r.grads.dv, in.wantDv, "dv");
  if (in.options.sinks)
    expectFlashNear(r.grads.dsinks, in.wantDsinks, "dsinks");
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDAATTENTIONTESTUTIL_H
