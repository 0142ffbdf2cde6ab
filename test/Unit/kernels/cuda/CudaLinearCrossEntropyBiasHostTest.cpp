//===- CudaLinearCrossEntropyBiasHostTest.cpp - the biased LM head's GPU path, on the host -===//
//
// Runs without a GPU: runLinearCrossEntropy with a head bias (kernels/cuda/
// LinearCrossEntropy.h: lceBiasAdd after each chunk's logits GEMM, lceBiasGrad's f32 column
// sums of G, lceStore of dbias) through a host exec (the kernels' host replays; the GEMMs
// through replay::matmul), against the CPU kernel with the same bias on random inputs with
// about a quarter of the labels ignored. Tolerances as the bias-free host test: f32 loss and
// gradients rtol 1e-4 + atol 1e-6 (dbias too: both sum G in row order in f32, G's own f32
// rounding differs); bf16 against the f32 CPU kernel on bf16-representable inputs: loss rtol
// 2e-2, gradients atol 2e-2 of max |gradient|. Chunk sizes 0 (the default), 1, 8 and N. Also:
// the forward's loss equals the VJP's, the bias plan's errors, its scratch, and a bias pointer
// that does not match the plan.
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

float bf(float x) { return base::bf16ToFloat(base::floatToBf16(x)); }

struct Problem {
  int64_t n, h, v;
  std::vector<float> hidden, weight, bias; // bf16-representable values
  std::vector<int64_t> labels;
};

Problem randomProblem(int64_t n, int64_t h, int64_t v, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Problem p{n, h, v, {}, {}, {}, {}};
  for (int64_t i = 0; i < n * h; ++i)
    p.hidden.push_back(bf(u(rng)));
  for (int64_t i = 0; i < v * h; ++i)
    p.weight.push_back(bf(u(rng)));
  for (int64_t i = 0; i < v; ++i)
    p.bias.push_back(bf(2 * u(rng)));
  for (int64_t i = 0; i < n; ++i)
    p.labels.push_back(i > 0 && rng() % 4 == 0 ? kIgnore : static_cast<int64_t>(rng() % v));
  return p;
}

std::vector<uint16_t> toBf16(const std::vector<float> &values) {
  std::vector<uint16_t> out;
  for (float x : values)
    out.push_back(base::floatToBf16(x));
  return out;
}

template <typename T> std::vector<double> widen(const std::vector<T> &v) {
  std::vector<double> out;
  for (T x : v) {
    if constexpr (std::is_same_v<T, uint16_t>)
      out.push_back(base::bf16ToFloat(x));
    else
      out.push_back(x);
  }
  return out;
}

struct Result {
  double loss, forwardLoss;
  std::vector<double> dh, dw, db;
};

/// The plan of the VJP (`grads`) or forward with the problem's bias.
LinearCrossEntropyPlan biasPlan(const Problem &pr, DType dtype, int64_t chunk, bool grads) {
  auto plan = planLinearCrossEntropy(dtype, {pr.n, pr.h}, {pr.v, pr.h}, DType::I64, {pr.n},
                                     kIgnore, LossReduction::Mean, chunk, grads);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  EXPECT_TRUE(planLinearCrossEntropyBias(*plan, dtype, {pr.v}, dtype, {pr.v}).ok());
  return *plan;
}

/// The GPU path's results through the host replay: the VJP, then the forward alone.
template <typename T>
Result runTyped(const Problem &pr, DType dtype, int64_t chunk, const std::vector<T> &h,
                const std::vector<T> &w, const std::vector<T> &b, T seed) {
  const LinearCrossEntropyPlan vjp = biasPlan(pr, dtype, chunk, true),
                               fwd = biasPlan(pr, dtype, chunk, false);
  std::vector<char> scratch(vjp.scratchBytes + 256);
  void *aligned = scratch.data() + (256 - reinterpret_cast<uintptr_t>(scratch.data()) % 256) % 256;
  TestExec e{aligned};
  std::vector<T> dh(h.size()), dw(w.size()), db(b.size());
  T loss{}, forward{};
  EXPECT_TRUE(runLinearCrossEntropy(e, vjp, h.data(), w.data(), pr.labels.data(), &seed, &loss,
                                    dh.data(), dw.data(), b.data(), db.data())
                  .ok());
  EXPECT_TRUE(runLinearCrossEntropy(e, fwd, h.data(), w.data(), pr.labels.data(), nullptr,
                                    &forward, nullptr, nullptr, b.data())
                  .ok());
  return {widen<T>({loss})[0], widen<T>({forward})[0], widen(dh), widen(dw), widen(db)};
}

Result runReplay(const Problem &pr, DType dtype, int64_t chunk, float seed) {
  if (dtype == DType::F32)
    return runTyped<float>(pr, dtype, chunk, pr.hidden, pr.weight, pr.bias, seed);
  return runTyped<uint16_t>(pr, dtype, chunk, toBf16(pr.hidden), toBf16(pr.weight),
                            toBf16(pr.bias), base::floatToBf16(seed));
}

/// The CPU kernel's results in f32.
Result runCpu(const Problem &pr, float seed) {
  HostTensor h(DType::F32, {pr.n, pr.h}), w(DType::F32, {pr.v, pr.h}), b(DType::F32, {pr.v}),
      y(DType::I64, {pr.n});
  std::copy(pr.hidden.begin(), pr.hidden.end(), h.data<float>());
  std::copy(pr.weight.begin(), pr.weight.end(), w.data<float>());
  std::copy(pr.bias.begin(), pr.bias.end(), b.data<float>());
  std::copy(pr.labels.begin(), pr.labels.end(), y.data<int64_t>());
  HostTensor s(DType::F32, {}), loss(DType::F32, {}), dh(DType::F32, h.shape()),
      dw(DType::F32, w.shape()), db(DType::F32, b.shape());
  s.data<float>()[0] = seed;
  EXPECT_TRUE(cpu::linearCrossEntropyVjp(h, w, y, s, kIgnore, LossReduction::Mean, 0, loss, dh,
                                         dw, &b, &db)
                  .ok());
  Result out{loss.data<float>()[0], loss.data<float>()[0], {}, {}, {}};
  out.dh.assign(dh.data<float>(), dh.data<float>() + dh.numElements());
  out.dw.assign(dw.data<float>(), dw.data<float>() + dw.numElements());
  out.db.assign(db.data<float>(), db.data<float>() + db.numElements());
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

TEST(CudaLinearCrossEntropyBiasHost, F32MatchesTheCpuKernel) {
  const Problem pr = randomProblem(37, 24, 300, 3);
  const Result want = runCpu(pr, 1.25f);
  for (int64_t chunk : {0, 1, 8, 37}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const Result got = runReplay(pr, DType::F32, chunk, 1.25f);
    expectNear({got.loss}, {want.loss}, 1e-4, 1e-6, "loss");
    EXPECT_EQ(got.forwardLoss, got.loss) << "the forward's loss differs from the VJP's";
    expectNear(got.dh, want.dh, 1e-4, 1e-6, "dhidden");
    expectNear(got.dw, want.dw, 1e-4, 1e-6, "dweight");
    expectNear(got.db, want.db, 1e-4, 1e-6, "dbias");
  }
}

TEST(CudaLinearCrossEntropyBiasHost, Bf16WithinItsPrecisionOfF32) {
  const Problem pr = randomProblem(40, 32, 200, 5);
  const Result want = runCpu(pr, 1.0f);
  for (int64_t chunk : {0, 16}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const Result got = runReplay(pr, DType::BF16, chunk, 1.0f);
    expectNear({got.loss}, {want.loss}, 2e-2, 0, "loss");
    expectNear(got.dh, want.dh, 0, 2e-2 * maxAbs(want.dh), "dhidden");
    expectNear(got.dw, want.dw, 0, 2e-2 * maxAbs(want.dw), "dweight");
    expectNear(got.db, want.db, 0, 2e-2 * maxAbs(want.db), "dbias");
  }
}

TEST(CudaLinearCrossEntropyBiasHost, PlanErrorsAndScratch) {
  auto p = planLinearCrossEntropy(DType::F32, {4, 8}, {10, 8}, DType::I64, {4}, kIgnore,
                                  LossReduction::Mean, 0, true);
  ASSERT_TRUE(p.ok());
  const size_t before = p->scratchBytes;
  LinearCrossEntropyPlan copy = *p;
  base::Status s = planLinearCrossEntropyBias(copy, DType::F32, {9}, DType::F32, {10});
  EXPECT_EQ(s.message(), "linear_cross_entropy_vjp: bias is f32[9], expected f32[10]");
  copy = *p;
  s = planLinearCrossEntropyBias(copy, DType::F32, {10}, DType::BF16, {10});
  EXPECT_EQ(s.message(), "linear_cross_entropy_vjp: dbias is bf16[10], expected f32[10]");
  ASSERT_TRUE(planLinearCrossEntropyBias(*p, DType::F32, {10}, DType::F32, {10}).ok());
  EXPECT_TRUE(p->bias);
  EXPECT_EQ(p->biasAccOffset, before);
  EXPECT_EQ(p->scratchBytes, before + 256); // dbAcc: 10 floats, 256-aligned
  auto f = planLinearCrossEntropy(DType::F32, {4, 8}, {10, 8}, DType::I64, {4}, kIgnore,
                                  LossReduction::Mean, 0, false);
  ASSERT_TRUE(f.ok());
  const size_t forwardBytes = f->scratchBytes;
  s = planLinearCrossEntropyBias(*f, DType::F16, {10});
  EXPECT_EQ(s.message(), "linear_cross_entropy: bias is f16[10], expected f32[10]");
  ASSERT_TRUE(planLinearCrossEntropyBias(*f, DType::F32, {10}).ok());
  EXPECT_EQ(f->scratchBytes, forwardBytes); // the forward needs no accumulator
  // A bias pointer that does not match the plan is refused before any work.
  std::vector<char> scratch(forwardBytes + 256);
  TestExec e{scratch.data()};
  float h[32] = {}, w[80] = {}, loss = 0;
  int64_t y[4] = {0, 1, 2, 3};
  EXPECT_FALSE(runLinearCrossEntropy(e, *f, h, w, y, nullptr, &loss, nullptr, nullptr).ok());
}

} // namespace
} // namespace rp::kernels::cuda
