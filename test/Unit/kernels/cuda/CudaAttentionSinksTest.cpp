//===- CudaAttentionSinksTest.cpp - attention with sinks on the GPU -------===//
//
// launchAttention and launchAttentionVjp with attention sinks (GPT-OSS, [Hq]) on the device
// against the CPU kernels on random inputs (CudaAttentionSinksTestUtil.h); outputs poisoned
// (0xA5 bytes, a NaN in every float format), a second launch must give the same bits. Skips
// without a CUDA device.
//  - Row kernels (plan.tensorCores cleared), every dtype: the host-replay tolerances of
//    CudaAttentionSinksHostTest (f32 out rtol 1e-5 + atol 1e-6, dq/dk/dv atol 5e-6, dsinks
//    atol 2e-5; f64 1e-12; f16/bf16 2 ulps of the format at max(|reference|, 2^-6)).
//  - Tensor-core kernels (FlashAttention.h, FlashAttentionBackward.h; f16/bf16, D = 64 and
//    128): P and dS are rounded to the storage type, so against the f64 CPU reference
//    |got - want| <= e (max |want| + |want|) + 1e-5, e = 2^-6 (bf16), 2^-9 (f16), the bound of
//    CudaFlashAttentionTest; dsinks (pass 3 from the flash pass 1's float L and D) within the
//    same bound.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/Fused.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/cuda/CudaAttentionSinksTestUtil.h"
#include "test/Unit/kernels/cuda/CudaFusedTestUtil.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace rp::kernels::cuda::test {
namespace {

class CudaAttentionSinks : public CudaStreamTest {};

struct DeviceResults {
  HostTensor out, dq, dk, dv, dsinks;
};

/// The forward and the VJP with sinks on the device (twice; the second run must give the
/// first's bits). `tensorCores`: let the launchers take the tensor-core kernels.
DeviceResults runOnDevice(const SinkInputs &in, bool causal, bool tensorCores,
                          cudaStream_t stream) {
  const DType dtype = in.q.dtype();
  const Shape &qs = in.q.shape(), &ks = in.k.shape(), hs{qs[1]};
  base::StatusOr<AttentionPlan> fwd = planAttention(dtype, qs, ks, ks, in.scale, causal, qs);
  base::StatusOr<AttentionVjpPlan> vjp =
      planAttentionVjp(dtype, qs, ks, ks, qs, qs, in.scale, causal, qs, ks, ks);
  EXPECT_TRUE(fwd.ok() && vjp.ok());
  EXPECT_TRUE(planAttentionSinks("attention", *fwd, dtype, hs).ok());
  EXPECT_TRUE(planAttentionSinks("attention_vjp", vjp->forward, dtype, hs).ok());
  if (tensorCores)
    EXPECT_TRUE(fwd->tensorCores && vjp->tensorCores);
  fwd->tensorCores = vjp->tensorCores = vjp->forward.tensorCores = tensorCores;
  auto dQ = upload(in.q), dK = upload(in.k), dV = upload(in.v), dS = upload(in.sinks),
       dO = upload(in.out), dDo = upload(in.dout);
  auto gO = poisonedOutput(dtype, qs), gQ = poisonedOutput(dtype, qs),
       gK = poisonedOutput(dtype, ks), gV = poisonedOutput(dtype, ks),
       gS = poisonedOutput(dtype, hs);
  DeviceBuffer scratch(vjp->scratchBytes);
  DeviceResults r[2];
  for (DeviceResults &run : r) {
    EXPECT_CUDA_OK(launchAttention(*fwd, dQ->get(), dK->get(), dV->get(), gO->get(), stream,
                                   dS->get()));
    EXPECT_CUDA_OK(launchAttentionVjp(*vjp, dQ->get(), dK->get(), dV->get(), dO->get(),
                                      dDo->get(), gQ->get(), gK->get(), gV->get(), scratch.get(),
                                      stream, dS->get(), gS->get()));
    run = {download(*gO, dtype, qs, stream), download(*gQ, dtype, qs, stream),
           download(*gK, dtype, ks, stream), download(*gV, dtype, ks, stream),
           download(*gS, dtype, hs, stream)};
  }
  expectBitsEqual(r[1].out, r[0].out, "out rerun");
  expectBitsEqual(r[1].dq, r[0].dq, "dq rerun");
  expectBitsEqual(r[1].dk, r[0].dk, "dk rerun");
  expectBitsEqual(r[1].dv, r[0].dv, "dv rerun");
  expectBitsEqual(r[1].dsinks, r[0].dsinks, "dsinks rerun");
  return std::move(r[0]);
}

TEST_F(CudaAttentionSinks, RowKernelsMatchCpu) {
  std::mt19937 rng(67);
  const struct {
    Shape q, k;
    bool causal;
    double sinkLo, sinkHi;
  } cases[] = {{{2, 4, 7, 5}, {2, 2, 7, 5}, true, -3, 3},
               {{2, 2, 300, 16}, {2, 1, 300, 16}, true, -3, 3},
               {{1, 2, 129, 16}, {1, 2, 129, 16}, false, 5, 8},
               {{2, 2, 1, 8}, {2, 1, 1, 8}, true, -3, 3}};
  for (DType dtype : kGpuFloatTypes)
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : ""));
      const SinkInputs in = randomSinkInputs(dtype, c.q, c.k, c.causal, c.sinkLo, c.sinkHi, rng);
      ASSERT_OK(in.cpuStatus);
      const DeviceResults r = runOnDevice(in, c.causal, false, stream_);
      expectFloat(r.out, in.wantOut, kAttentionF32Rtol, kAttentionF32Atol, "out");
      expectFloat(r.dq, in.wantDq, kAttentionF32Rtol, kAttentionVjpF32Atol, "dq");
      expectFloat(r.dk, in.wantDk, kAttentionF32Rtol, kAttentionVjpF32Atol, "dk");
      expectFloat(r.dv, in.wantDv, kAttentionF32Rtol, kAttentionVjpF32Atol, "dv");
      expectFloat(r.dsinks, in.wantDsinks, kAttentionF32Rtol, kDsinkF32Atol, "dsinks");
    }
}

/// |got - want| <= e (max |want| + |want|) + 1e-5 (the file comment's tensor-core bound).
void expectFlashNear(const HostTensor &got, const HostTensor &want, const std::string &what) {
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

TEST_F(CudaAttentionSinks, TensorCoreKernelsMatchCpu) {
  std::mt19937 rng(71);
  const struct {
    Shape q, k;
    bool causal;
    double sinkLo, sinkHi;
  } cases[] = {{{1, 4, 130, 64}, {1, 2, 130, 64}, true, -3, 3},
               {{2, 2, 64, 128}, {2, 1, 64, 128}, false, 5, 8},
               {{1, 2, 1, 64}, {1, 2, 1, 64}, true, -3, 3}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const auto &c : cases) {
      SCOPED_TRACE(label(dtype, c.q) + " k " + formatShape(c.k) + (c.causal ? " causal" : ""));
      const SinkInputs in = randomSinkInputs(dtype, c.q, c.k, c.causal, c.sinkLo, c.sinkHi, rng);
      ASSERT_OK(in.cpuStatus);
      const DeviceResults r = runOnDevice(in, c.causal, true, stream_);
      expectFlashNear(r.out, in.wantOut, "out");
      expectFlashNear(r.dq, in.wantDq, "dq");
      expectFlashNear(r.dk, in.wantDk, "dk");
      expectFlashNear(r.dv, in.wantDv, "dv");
      expectFlashNear(r.dsinks, in.wantDsinks, "dsinks");
    }
}

} // namespace
} // namespace rp::kernels::cuda::test
