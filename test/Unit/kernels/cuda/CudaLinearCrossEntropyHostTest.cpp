//===- CudaLinearCrossEntropyHostTest.cpp - the fused LM head's GPU path, on the host -===//
//
// Runs without a GPU: kernels/cuda/LinearCrossEntropy.h's runLinearCrossEntropy through a
// host exec (the kernels' host replays; the GEMMs through replay::matmul, fp32-accumulated
// dot products), compared with the CPU kernel (kernels/cpu/LinearCrossEntropy.h) on random
// inputs with about a quarter of the labels ignored, several chunk sizes, mean and sum.
// Tolerances: f32 loss, dhidden and dweight rtol 1e-4 + atol 1e-6 (the replayed GEMMs sum in
// K order, the row sums combine in the device's tree, the CPU kernel in eight-lane dots);
// bf16 against the f32 CPU kernel on the same (bf16-representable) inputs: loss rtol 2e-2,
// gradients atol 2e-2 of max |gradient| (logits and G are rounded to bf16 per chunk, as the
// device does). Chunk sizes 0 (the default), 1, 8, N and more than N are each held to the
// same tolerance. Also: all labels ignored, the plan's errors and its scratch layout.
//
// Not covered here (no GPU): cuBLASLt's summation order, the kernels' launch geometry.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/LinearCrossEntropy.h"
#include "kernels/cuda/HostReplay.h"
#include "kernels/cuda/LinearCrossEntropy.h"
#include "base/Float16.h"
#include "base/HostTensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace rp::kernels::cuda {
namespace {

using base::DType;
using base::HostTensor;

/// The CUDA kernel table's HostExec, reduced to what runLinearCrossEntropy uses.
struct TestExec {
  void *scratchPtr;
  template <typename Plan, typename Launch, typename Replay, typename... Ptrs>
  base::Status run(const Plan &plan, Launch, Replay replay, Ptrs... ptrs) const {
    replay(plan, ptrs...);
    return base::okStatus();
  }
  base::Status gemm(const MatMulPlan &p, const void *a, const void *b, void *o) const {
    replay::matmul(p, a, b, o);
    return base::okStatus();
  }
  void *scratch() const { return scratchPtr; }
};

constexpr int64_t kIgnore = -100;

struct Problem {
  int64_t n, h, v;
  std::vector<float> hidden, weight; // bf16-representable values
  std::vector<int64_t> labels;
};

Problem randomProblem(int64_t n, int64_t h, int64_t v, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Problem p{n, h, v, {}, {}, {}};
  auto bf = [](float x) { return base::bf16ToFloat(base::floatToBf16(x)); };
  for (int64_t i = 0; i < n * h; ++i)
    p.hidden.push_back(bf(u(rng)));
  for (int64_t i = 0; i < v * h; ++i)
    p.weight.push_back(bf(u(rng)));
  for (int64_t i = 0; i < n; ++i)
    p.labels.push_back(i > 0 && rng() % 4 == 0 ? kIgnore : static_cast<int64_t>(rng() % v));
  return p;
}

/// Host buffer of `values` in `dtype` (f32 or bf16).
std::vector<uint16_t> toBf16(const std::vector<float> &values) {
  std::vector<uint16_t> out;
  for (float x : values)
    out.push_back(base::floatToBf16(x));
  return out;
}

struct Result {
  double loss;
  std::vector<double> dh, dw;
};

/// The GPU path's results through the host replay.
Result runReplay(const Problem &pr, DType dtype, LossReduction r, int64_t chunk, float seed) {
  auto plan = planLinearCrossEntropy(dtype, {pr.n, pr.h}, {pr.v, pr.h}, DType::I64, {pr.n},
                                     kIgnore, r, chunk, true);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  std::vector<char> scratch(plan->scratchBytes + 256);
  void *aligned = scratch.data() + (256 - reinterpret_cast<uintptr_t>(scratch.data()) % 256) % 256;
  TestExec e{aligned};
  Result out;
  if (dtype == DType::F32) {
    std::vector<float> dh(pr.hidden.size()), dw(pr.weight.size());
    float loss = NAN;
    EXPECT_TRUE(runLinearCrossEntropy(e, *plan, pr.hidden.data(), pr.weight.data(),
                                      pr.labels.data(), &seed, &loss, dh.data(), dw.data())
                    .ok());
    out = {loss, {dh.begin(), dh.end()}, {dw.begin(), dw.end()}};
  } else {
    std::vector<uint16_t> h = toBf16(pr.hidden), w = toBf16(pr.weight);
    std::vector<uint16_t> dh(h.size()), dw(w.size());
    uint16_t s = base::floatToBf16(seed), loss = 0;
    EXPECT_TRUE(runLinearCrossEntropy(e, *plan, h.data(), w.data(), pr.labels.data(), &s, &loss,
                                      dh.data(), dw.data())
                    .ok());
    out.loss = base::bf16ToFloat(loss);
    for (uint16_t x : dh)
      out.dh.push_back(base::bf16ToFloat(x));
    for (uint16_t x : dw)
      out.dw.push_back(base::bf16ToFloat(x));
  }
  return out;
}

/// The CPU kernel's results in f32.
Result runCpu(const Problem &pr, LossReduction r, float seed) {
  HostTensor h(DType::F32, {pr.n, pr.h}), w(DType::F32, {pr.v, pr.h}), y(DType::I64, {pr.n});
  std::copy(pr.hidden.begin(), pr.hidden.end(), h.data<float>());
  std::copy(pr.weight.begin(), pr.weight.end(), w.data<float>());
  std::copy(pr.labels.begin(), pr.labels.end(), y.data<int64_t>());
  HostTensor s(DType::F32, {}), loss(DType::F32, {}), dh(DType::F32, h.shape()),
      dw(DType::F32, w.shape());
  s.data<float>()[0] = seed;
  EXPECT_TRUE(cpu::linearCrossEntropyVjp(h, w, y, s, kIgnore, r, 0, loss, dh, dw).ok());
  Result out{loss.data<float>()[0], {}, {}};
  out.dh.assign(dh.data<float>(), dh.data<float>() + dh.numElements());
  out.dw.assign(dw.data<float>(), dw.data<float>() + dw.numElements());
  return out;
}

void expectNear(const std::vector<double> &got, const std::vector<double> &want, double rtol,
                double atol, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", expected " << want[i];
    }
}

double maxAbs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

TEST(CudaLinearCrossEntropyHost, F32MatchesTheCpuKernel) {
  const Problem pr = randomProblem(37, 24, 300, 3);
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum})
    for (int64_t chunk : {0, 1, 8, 37, 64}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      const Result want = runCpu(pr, r, 1.25f), got = runReplay(pr, DType::F32, r, chunk, 1.25f);
      expectNear({got.loss}, {want.loss}, 1e-4, 1e-6, "loss");
      expectNear(got.dh, want.dh, 1e-4, 1e-6, "dhidden");
      expectNear(got.dw, want.dw, 1e-4, 1e-6, "dweight");
    }
}

TEST(CudaLinearCrossEntropyHost, Bf16WithinItsPrecisionOfF32) {
  const Problem pr = randomProblem(40, 32, 200, 5);
  const Result want = runCpu(pr, LossReduction::Mean, 1.0f);
  for (int64_t chunk : {0, 16}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const Result got = runReplay(pr, DType::BF16, LossReduction::Mean, chunk, 1.0f);
    expectNear({got.loss}, {want.loss}, 2e-2, 0, "loss");
    expectNear(got.dh, want.dh, 0, 2e-2 * maxAbs(want.dh), "dhidden");
    expectNear(got.dw, want.dw, 0, 2e-2 * maxAbs(want.dw), "dweight");
  }
}

// Every label ignored: a NaN mean, zero gradients (the CPU kernel's and PyTorch's).
TEST(CudaLinearCrossEntropyHost, AllIgnored) {
  Problem pr = randomProblem(6, 8, 20, 7);
  pr.labels.assign(6, kIgnore);
  const Result got = runReplay(pr, DType::F32, LossReduction::Mean, 4, 1.0f);
  EXPECT_TRUE(std::isnan(got.loss));
  EXPECT_EQ(maxAbs(got.dh), 0.0);
  EXPECT_EQ(maxAbs(got.dw), 0.0);
}

TEST(CudaLinearCrossEntropyHost, PlanErrorsAndScratch) {
  auto bad = planLinearCrossEntropy(DType::F64, {4, 8}, {10, 8}, DType::I64, {4}, kIgnore,
                                    LossReduction::Mean, 0, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("linear_cross_entropy: hidden has dtype f64"),
            std::string::npos)
      << bad.status().toString();
  bad = planLinearCrossEntropy(DType::F32, {4, 8}, {10, 7}, DType::I64, {4}, kIgnore,
                               LossReduction::Mean, 0, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("linear_cross_entropy_vjp: expected hidden [N, H] and "
                                        "weight [V, H], got [4, 8] and [10, 7]"),
            std::string::npos)
      << bad.status().toString();
  bad = planLinearCrossEntropy(DType::F32, {4, 8}, {10, 8}, DType::I64, {5}, kIgnore,
                               LossReduction::Mean, 0, false);
  EXPECT_FALSE(bad.ok());
  bad = planLinearCrossEntropy(DType::F32, {4, 8}, {10, 8}, DType::I64, {4}, kIgnore,
                               LossReduction::Mean, -1, false);
  EXPECT_FALSE(bad.ok());
  // The 1.7B head in bf16 with 1024-row chunks: one chunk's bf16 logits, the bf16 partial and
  // the f32 accumulator of dweight, the row losses; no [4096, 151936] buffer.
  auto p = planLinearCrossEntropy(DType::BF16, {4096, 2048}, {151936, 2048}, DType::I64, {4096},
                                  kIgnore, LossReduction::Mean, 1024, true);
  ASSERT_TRUE(p.ok()) << p.status().toString();
  EXPECT_EQ(p->chunk, 1024);
  EXPECT_EQ(p->scratchBytes, 256 + 4096 * 4 + 1024ull * 151936 * 2 + 151936ull * 2048 * 2 +
                                 151936ull * 2048 * 4);
  EXPECT_LT(p->scratchBytes, 4096ull * 151936 * 2 * 2);
}

} // namespace
} // namespace rp::kernels::cuda
