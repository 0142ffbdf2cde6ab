//===- CudaFlashAttentionTest.cpp - The tensor-core attention VJP on a GPU -===//
//
// launchFlashAttentionBackward (kernels/cuda/FlashAttentionBackward.h) against a
// double-precision VJP computed here from the definition (softmax(scale q k^T) v; GQA: the kv
// gradients summed over the group's heads), on f16 and bf16 inputs, with the forward's output
// given as the reference output rounded to the storage type. P and dS are rounded to the
// storage type before their products, so the bound per element is
//   |got - want| <= e (max |want| + |want|) + 1e-5,  e = 2^-6 (bf16), 2^-9 (f16)
// (the 1e-5: fp32 sums that cancel exactly in the definition, e.g. a single key's zero dq),
// and the normwise error ||got - want|| / ||want|| stays under 1e-2 (bf16) and 2e-3 (f16).
// Outputs are poisoned before the run; a second run must give the same bits. Skips without a
// device.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include "kernels/cuda/FlashAttentionBackward.h"
#include "kernels/cuda/Fused.h"
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

/// The VJP from the definition. q, dout [B, H, S, D]; k, v [B, Hk, S, D]; row-major doubles;
/// `window` a sliding window (keys i - window < j <= i; 0: none).
Vjp referenceVjp(const Shape &qs, const Shape &ks, const std::vector<double> &q,
                 const std::vector<double> &k, const std::vector<double> &v,
                 const std::vector<double> &dout, double scale, bool causal, int64_t window = 0) {
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
        const int64_t first = window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
        double mx = -INFINITY;
        for (int64_t j = first; j < keys; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += q[qi + d] * k[kv + j * D + d];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = first; j < keys; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        double di = 0;
        for (int64_t j = first; j < keys; ++j) {
          p[j] /= sum;
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            r.out[qi + d] += p[j] * v[kv + j * D + d];
            s += dout[qi + d] * v[kv + j * D + d];
          }
          dp[j] = s;
          di += p[j] * s;
        }
        for (int64_t j = first; j < keys; ++j) {
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

std::vector<double> valuesOf(const HostTensor &t) {
  const HostTensor f = convertTo(t, DType::F64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.numElements());
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

void expectNear(const HostTensor &got, const std::vector<double> &want, DType dtype,
                const std::string &what) {
  const std::vector<double> g = valuesOf(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  double wmax = 0, diff2 = 0, want2 = 0;
  for (double w : want)
    wmax = std::max(wmax, std::fabs(w));
  const double e = dtype == DType::BF16 ? 0x1p-6 : 0x1p-9;
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff2 += (g[i] - want[i]) * (g[i] - want[i]);
    want2 += want[i] * want[i];
    if (!(std::fabs(g[i] - want[i]) <= e * (wmax + std::fabs(want[i])) + 1e-5) && failures++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << want[i];
  }
  const double normwise = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  EXPECT_LE(normwise, dtype == DType::BF16 ? 1e-2 : 2e-3) << what << " normwise error";
}

class CudaFlashAttentionBackward : public CudaStreamTest {};

// GQA, MQA, MHA, causal and not, S below, at and past the 64-row tiles, D = 16 to 128;
// sliding windows of 1, 64 and 100 keys (tiles wholly outside the band skipped, a band that
// starts inside a tile).
TEST_F(CudaFlashAttentionBackward, MatchesTheDefinition) {
  std::mt19937 rng(31);
  const struct {
    Shape q, k;
    bool causal;
    int64_t window;
  } cases[] = {{{1, 4, 256, 128}, {1, 2, 256, 128}, true, 0},
               {{2, 2, 100, 64}, {2, 2, 100, 64}, false, 0},
               {{1, 3, 65, 16}, {1, 1, 65, 16}, true, 0},
               {{1, 2, 130, 96}, {1, 1, 130, 96}, true, 0},
               {{2, 2, 1, 32}, {2, 1, 1, 32}, true, 0},
               {{1, 2, 64, 80}, {1, 2, 64, 80}, false, 0},
               {{1, 4, 256, 64}, {1, 2, 256, 64}, true, 100},
               {{1, 2, 200, 32}, {1, 1, 200, 32}, true, 64},
               {{1, 2, 130, 16}, {1, 2, 130, 16}, true, 1}};
  for (DType dtype : {DType::BF16, DType::F16})
    for (const auto &c : cases) {
      SCOPED_TRACE(std::string(base::dtypeName(dtype)) + " q " + base::formatShape(c.q) +
                   " k " + base::formatShape(c.k) + (c.causal ? " causal" : "") +
                   " window " + std::to_string(c.window));
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.q[3]));
      const HostTensor q = randomOf(dtype, c.q, rng), k = randomOf(dtype, c.k, rng),
                       v = randomOf(dtype, c.k, rng), dout = randomOf(dtype, c.q, rng);
      const Vjp want = referenceVjp(c.q, c.k, valuesOf(q), valuesOf(k), valuesOf(v),
                                    valuesOf(dout), scale, c.causal, c.window);
      const HostTensor out = tensorOf(dtype, c.q, want.out);
      base::StatusOr<AttentionPlan> plan =
          planAttention(dtype, c.q, c.k, c.k, scale, c.causal, c.q, c.window);
      ASSERT_TRUE(plan.ok()) << plan.status().toString();
      auto dQ = upload(q), dK = upload(k), dV = upload(v), dO = upload(out), ddO = upload(dout);
      DeviceBuffer scratch(flashAttentionBackwardScratchBytes(*plan));
      ASSERT_CUDA_OK(scratch.status());
      HostTensor runs[2][3];
      for (auto &run : runs) {
        auto gq = poisonedOutput(q.byteSize(), kPoison, 64);
        auto gk = poisonedOutput(k.byteSize(), kPoison, 64);
        auto gv = poisonedOutput(v.byteSize(), kPoison, 64);
        ASSERT_CUDA_OK(launchFlashAttentionBackward(*plan, dQ->get(), dK->get(), dV->get(),
                                                    dO->get(), ddO->get(), gq->get(), gk->get(),
                                                    gv->get(), scratch.get(), stream_));
        ASSERT_CUDA_OK(cudaStreamSynchronize(stream_));
        run[0] = download(*gq, dtype, c.q, kPoison);
        run[1] = download(*gk, dtype, c.k, kPoison);
        run[2] = download(*gv, dtype, c.k, kPoison);
      }
      expectNear(runs[0][0], want.dq, dtype, "dq");
      expectNear(runs[0][1], want.dk, dtype, "dk");
      expectNear(runs[0][2], want.dv, dtype, "dv");
      for (int t = 0; t < 3; ++t)
        EXPECT_EQ(0, std::memcmp(runs[0][t].raw(), runs[1][t].raw(), runs[0][t].byteSize()))
            << "result " << t << ": two runs differ";
    }
}

TEST_F(CudaFlashAttentionBackward, DeclinesWhatItDoesNotTake) {
  base::StatusOr<AttentionPlan> f32 =
      planAttention(DType::F32, {1, 1, 8, 16}, {1, 1, 8, 16}, {1, 1, 8, 16}, 0.25, true, {1, 1, 8, 16});
  ASSERT_TRUE(f32.ok());
  DeviceBuffer buf(4096);
  void *p = buf.get();
  EXPECT_EQ(launchFlashAttentionBackward(*f32, p, p, p, p, p, p, p, p, p, stream_),
            cudaErrorNotSupported);
  base::StatusOr<AttentionPlan> d8 =
      planAttention(DType::BF16, {1, 1, 8, 8}, {1, 1, 8, 8}, {1, 1, 8, 8}, 0.25, true, {1, 1, 8, 8});
  ASSERT_TRUE(d8.ok());
  EXPECT_EQ(launchFlashAttentionBackward(*d8, p, p, p, p, p, p, p, p, p, stream_),
            cudaErrorNotSupported); // D = 8: not a multiple of 16
  base::StatusOr<AttentionPlan> ok =
      planAttention(DType::BF16, {1, 1, 8, 16}, {1, 1, 8, 16}, {1, 1, 8, 16}, 0.25, true, {1, 1, 8, 16});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(launchFlashAttentionBackward(*ok, static_cast<char *>(p) + 2, p, p, p, p, p, p, p, p,
                                         stream_),
            cudaErrorNotSupported); // misaligned q
  EXPECT_EQ(launchFlashAttentionBackward(*ok, p, p, p, p, p, p, p, p, nullptr, stream_),
            cudaErrorInvalidValue); // no scratch
}

} // namespace
} // namespace rp::kernels::cuda::test
