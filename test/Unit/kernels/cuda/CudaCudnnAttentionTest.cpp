//===- CudaCudnnAttentionTest.cpp - cuDNN's fused SDPA on a GPU ------------===//
//
// CudnnSdpaRunner (kernels/cuda/CudnnAttention.h) against a double-precision attention and
// VJP computed here from the definition (softmax(scale q k^T) v, causal: key j <= query i;
// GQA: the kv gradients summed over the group's heads), on f16 and bf16 inputs, and against
// rpc's own tensor-core kernels (FlashAttention.h, FlashAttentionBackward.h) on the same
// inputs. cuDNN rounds P (and dS) to the storage type as FlashAttention does, so the bound per
// element is the flash tests':
//   |got - want| <= e (max |want| + |want|) + 1e-5,  e = 2^-6 (bf16), 2^-9 (f16),
// normwise under 1e-2 (bf16) and 2e-3 (f16); cuDNN and flash differ by at most twice that.
// The backward must be deterministic (the frontend's deterministic algorithm): a second run
// gives the same bits. Outputs are poisoned before each run. Without a GPU every test skips;
// on a GPU machine a missing cuDNN (libcudnn.so.9 not on LD_LIBRARY_PATH) or a build without
// the frontend fails them: scripts/gpu-check.sh adds PyTorch's nvidia/cudnn/lib.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include "kernels/cuda/AttentionGrad.h"
#include "kernels/cuda/CudnnAttention.h"
#include "kernels/cuda/FlashAttentionBackward.h"
#include "base/HostTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rp::kernels::cuda::test {
namespace {

using base::DType;
using base::HostTensor;

constexpr unsigned char kPoison = 0xFF;

struct Vjp {
  std::vector<double> out, dq, dk, dv;
};

/// Attention and its VJP from the definition. q, dout [B, H, S, D]; k, v [B, Hk, S, D].
Vjp definition(const Shape &qs, const Shape &ks, const std::vector<double> &q,
               const std::vector<double> &k, const std::vector<double> &v,
               const std::vector<double> &dout, double scale, bool causal) {
  const int64_t B = qs[0], H = qs[1], S = qs[2], D = qs[3], Hk = ks[1], G = H / Hk;
  Vjp r;
  r.out.assign(q.size(), 0.0);
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(v.size(), 0.0);
  std::vector<double> p(static_cast<size_t>(S)), dp(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t qi = ((b * H + h) * S + i) * D, kv = (b * Hk + h / G) * S * D;
        const int64_t keys = causal ? i + 1 : S;
        double mx = -INFINITY, sum = 0, di = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += q[qi + d] * k[kv + j * D + d];
          mx = std::max(mx, p[j] = s * scale);
        }
        for (int64_t j = 0; j < keys; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t j = 0; j < keys; ++j) {
          p[j] /= sum;
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            r.out[qi + d] += p[j] * v[kv + j * D + d];
            s += dout[qi + d] * v[kv + j * D + d];
          }
          di += p[j] * (dp[j] = s);
        }
        for (int64_t j = 0; j < keys; ++j) {
          const double ds = p[j] * (dp[j] - di);
          for (int64_t d = 0; d < D; ++d) {
            r.dq[qi + d] += scale * ds * k[kv + j * D + d];
            r.dk[kv + j * D + d] += scale * ds * q[qi + d];
            r.dv[kv + j * D + d] += p[j] * dout[qi + d];
          }
        }
      }
  return r;
}

HostTensor tensorOf(DType dtype, const Shape &shape, const std::vector<double> &values) {
  HostTensor f(DType::F64, shape);
  std::copy(values.begin(), values.end(), f.data<double>());
  return convertTo(f, dtype);
}

HostTensor randomOf(DType dtype, const Shape &shape, std::mt19937 &rng) {
  std::uniform_real_distribution<double> real(-2, 2);
  std::vector<double> values(static_cast<size_t>(numElements(shape)));
  for (double &x : values)
    x = real(rng);
  return tensorOf(dtype, shape, values);
}

/// got within `factor` times the file comment's bound of want.
void expectNear(const HostTensor &got, const std::vector<double> &want, DType dtype,
                const std::string &what, double factor = 1) {
  const std::vector<double> g = valuesOf(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  double wmax = 0, diff2 = 0, want2 = 0;
  for (double w : want)
    wmax = std::max(wmax, std::fabs(w));
  const double e = factor * (dtype == DType::BF16 ? 0x1p-6 : 0x1p-9);
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff2 += (g[i] - want[i]) * (g[i] - want[i]);
    want2 += want[i] * want[i];
    if (!(std::fabs(g[i] - want[i]) <= e * (wmax + std::fabs(want[i])) + factor * 1e-5) &&
        failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << want[i];
  }
  const double normwise = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  EXPECT_LE(normwise, factor * (dtype == DType::BF16 ? 1e-2 : 2e-3)) << what << " normwise";
}

class CudaCudnnAttention : public CudaStreamTest {
protected:
  void SetUp() override {
    CudaStreamTest::SetUp();
    if (IsSkipped())
      return;
    base::StatusOr<std::unique_ptr<CudnnSdpaRunner>> r =
        CudnnSdpaRunner::create(AttentionKernel::Cudnn, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    runner_ = std::move(r.value());
  }
  std::unique_ptr<CudnnSdpaRunner> runner_;
};

struct Case {
  Shape q, k;
  bool causal;
};
// GQA, MQA, MHA, causal and not, S not a multiple of the tiles, D = 16 to 128.
const Case kCases[] = {{{1, 4, 256, 128}, {1, 2, 256, 128}, true},
                       {{2, 2, 100, 64}, {2, 2, 100, 64}, false},
                       {{1, 3, 65, 16}, {1, 1, 65, 16}, true},
                       {{1, 2, 130, 96}, {1, 1, 130, 96}, true},
                       {{1, 2, 64, 80}, {1, 2, 64, 80}, false}};

TEST_F(CudaCudnnAttention, ForwardMatchesTheDefinitionAndFlash) {
  std::mt19937 rng(7);
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : kCases) {
      SCOPED_TRACE(std::string(base::dtypeName(dtype)) + " q " + base::formatShape(c.q) +
                   " k " + base::formatShape(c.k) + (c.causal ? " causal" : ""));
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
      const HostTensor q = randomOf(dtype, c.q, rng), k = randomOf(dtype, c.k, rng),
                       v = randomOf(dtype, c.k, rng);
      const Vjp want = definition(c.q, c.k, valuesOf(q), valuesOf(k), valuesOf(v),
                                  std::vector<double>(q.numElements(), 0.0), scale, c.causal);
      base::StatusOr<AttentionPlan> plan =
          planAttention(dtype, c.q, c.k, c.k, scale, c.causal, c.q);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      ASSERT_EQ(cudnnSdpaDecline(*plan), "");
      auto dQ = upload(q), dK = upload(k), dV = upload(v);
      auto out = poisonedOutput(q.byteSize(), kPoison, 64);
      base::StatusOr<bool> ran =
          runner_->forward(*plan, "", dQ->get(), dK->get(), dV->get(), out->get(), stream_);
      ASSERT_TRUE(ran.ok()) << ran.status().toString();
      ASSERT_TRUE(ran.value());
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
      const HostTensor got = download(*out, dtype, c.q, kPoison);
      expectNear(got, want.out, dtype, "out");
      auto flash = poisonedOutput(q.byteSize(), kPoison, 64);
      ASSERT_CUDA_OK(launchAttention(*plan, dQ->get(), dK->get(), dV->get(), flash->get(), stream_));
      ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
      expectNear(got, valuesOf(download(*flash, dtype, c.q, kPoison)), dtype, "out vs flash", 2);
    }
}

TEST_F(CudaCudnnAttention, BackwardMatchesTheDefinitionAndFlashDeterministically) {
  std::mt19937 rng(31);
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : kCases) {
      SCOPED_TRACE(std::string(base::dtypeName(dtype)) + " q " + base::formatShape(c.q) +
                   " k " + base::formatShape(c.k) + (c.causal ? " causal" : ""));
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
      const HostTensor q = randomOf(dtype, c.q, rng), k = randomOf(dtype, c.k, rng),
                       v = randomOf(dtype, c.k, rng), dout = randomOf(dtype, c.q, rng);
      const Vjp want = definition(c.q, c.k, valuesOf(q), valuesOf(k), valuesOf(v),
                                  valuesOf(dout), scale, c.causal);
      const HostTensor out = tensorOf(dtype, c.q, want.out);
      base::StatusOr<AttentionVjpPlan> plan = planAttentionVjp(
          dtype, c.q, c.k, c.k, c.q, c.q, scale, c.causal, c.q, c.k, c.k);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dQ = upload(q), dK = upload(k), dV = upload(v), dO = upload(out), ddO = upload(dout);
      DeviceBuffer scratch(std::max(plan->scratchBytes,
                                    cudnnSdpaBackwardScratchBytes(plan->forward)));
      ASSERT_CUDA_OK(scratch.status());
      // Plan load builds both graphs (forward with statistics, backward); the runs add none.
      const size_t graphs = runner_->cachedGraphs();
      base::StatusOr<bool> prepared = runner_->prepare(plan->forward, "", /*backward=*/true);
      ASSERT_TRUE(prepared.ok()) << prepared.status().toString();
      ASSERT_TRUE(prepared.value());
      EXPECT_EQ(runner_->cachedGraphs(), graphs + 2);
      HostTensor runs[3][3]; // cuDNN twice, then flash
      for (int r = 0; r < 3; ++r) {
        auto gq = poisonedOutput(q.byteSize(), kPoison, 64);
        auto gk = poisonedOutput(k.byteSize(), kPoison, 64);
        auto gv = poisonedOutput(v.byteSize(), kPoison, 64);
        if (r < 2) {
          base::StatusOr<bool> ran = runner_->backward(
              plan->forward, "", dQ->get(), dK->get(), dV->get(), dO->get(), ddO->get(),
              gq->get(), gk->get(), gv->get(), scratch.get(), stream_);
          ASSERT_TRUE(ran.ok()) << ran.status().toString();
          ASSERT_TRUE(ran.value());
        } else {
          ASSERT_CUDA_OK(launchAttentionVjp(*plan, dQ->get(), dK->get(), dV->get(), dO->get(),
                                            ddO->get(), gq->get(), gk->get(), gv->get(),
                                            scratch.get(), stream_));
        }
        ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
        EXPECT_EQ(runner_->cachedGraphs(), graphs + 2);
        runs[r][0] = download(*gq, dtype, c.q, kPoison);
        runs[r][1] = download(*gk, dtype, c.k, kPoison);
        runs[r][2] = download(*gv, dtype, c.k, kPoison);
      }
      const std::vector<double> *wants[3] = {&want.dq, &want.dk, &want.dv};
      const char *names[3] = {"dq", "dk", "dv"};
      for (int t = 0; t < 3; ++t) {
        expectNear(runs[0][t], *wants[t], dtype, names[t]);
        expectNear(runs[0][t], valuesOf(runs[2][t]), dtype, std::string(names[t]) + " vs flash", 2);
        EXPECT_EQ(0, std::memcmp(runs[0][t].raw(), runs[1][t].raw(), runs[0][t].byteSize()))
            << names[t] << ": two cuDNN runs differ";
      }
    }
  // Each case built one forward+stats and one backward graph, per dtype.
  EXPECT_EQ(runner_->cachedGraphs(), 2 * 2 * std::size(kCases));
}

TEST_F(CudaCudnnAttention, DeclinedCasesFallBackUnderAutoAndFailUnderCudnn) {
  base::StatusOr<AttentionPlan> f32 =
      planAttention(DType::F32, {1, 1, 8, 16}, {1, 1, 8, 16}, {1, 1, 8, 16}, 0.25, true, {1, 1, 8, 16});
  ASSERT_TRUE(f32.ok());
  const std::string why = cudnnSdpaDecline(*f32);
  ASSERT_NE(why, "");
  DeviceBuffer buf(4096);
  void *p = buf.get();
  base::StatusOr<bool> forced = runner_->forward(*f32, why, p, p, p, p, stream_);
  ASSERT_FALSE(forced.ok());
  EXPECT_EQ(forced.status().code(), base::StatusCode::Unimplemented);
  EXPECT_NE(forced.status().message().find(why), std::string::npos);
  base::StatusOr<std::unique_ptr<CudnnSdpaRunner>> automatic =
      CudnnSdpaRunner::create(AttentionKernel::Auto, nullptr);
  ASSERT_TRUE(automatic.ok() && automatic.value());
  base::StatusOr<bool> fwd = automatic.value()->forward(*f32, why, p, p, p, p, stream_);
  ASSERT_TRUE(fwd.ok());
  EXPECT_FALSE(fwd.value());
  base::StatusOr<bool> bwd =
      automatic.value()->backward(*f32, why, p, p, p, p, p, p, p, p, p, stream_);
  ASSERT_TRUE(bwd.ok());
  EXPECT_FALSE(bwd.value());
  // A supported case at a misaligned pointer: declined (auto) or refused (cudnn), not run.
  base::StatusOr<AttentionPlan> bf16 = planAttention(DType::BF16, {1, 1, 8, 16}, {1, 1, 8, 16},
                                                        {1, 1, 8, 16}, 0.25, true, {1, 1, 8, 16});
  ASSERT_TRUE(bf16.ok());
  void *odd = static_cast<char *>(p) + 2;
  base::StatusOr<bool> misaligned = automatic.value()->forward(*bf16, "", odd, p, p, p, stream_);
  ASSERT_TRUE(misaligned.ok());
  EXPECT_FALSE(misaligned.value());
  base::StatusOr<bool> refused = runner_->forward(*bf16, "", p, p, p, odd, stream_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("16-byte"), std::string::npos);
  EXPECT_EQ(automatic.value()->cachedGraphs(), 0u); // declined before cuDNN was asked
}

} // namespace
} // namespace rp::kernels::cuda::test
