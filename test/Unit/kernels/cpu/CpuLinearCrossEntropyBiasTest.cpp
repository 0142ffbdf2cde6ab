//===- CpuLinearCrossEntropyBiasTest.cpp - the fused LM head with a bias --===//
//
// cpu::linearCrossEntropy(Vjp) with a head bias (Phi's LM head: logits = h W^T + b) against
// a float64 reference from the definition (loss, G = (softmax - onehot) * keep * scale,
// dh = G W, dW = G^T h, db = sum over the rows of G). Tolerances as the bias-free test
// (CpuLinearCrossEntropyTest): f32 rtol 1e-4, atol 1e-5, f64 rtol 1e-11, atol 1e-12. Also:
// central finite differences of all three gradients (f64, step 1e-5, rtol 1e-6), the bias
// changes the loss (a zero bias gives the bias-free bits), bit-equality across chunk sizes,
// and the error paths.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/LinearCrossEntropy.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cstring>
#include <tuple>

namespace rp::kernels::cpu::test {
namespace {

constexpr int64_t kIgnore = -100;
constexpr Tolerance kLceF32{1e-4, 1e-5};
constexpr Tolerance kLceF64{1e-11, 1e-12};

struct Reference {
  double loss = 0;
  std::vector<double> dh, dw, db;
};

/// The float64 definition with bias b; `seed` scales the gradients.
Reference reference(const HostTensor &h, const HostTensor &w, const HostTensor &b,
                    const HostTensor &y, bool mean, double seed) {
  const int64_t n = h.dim(0), width = h.dim(1), vocab = w.dim(0);
  Reference r;
  r.dh.assign(static_cast<size_t>(n * width), 0.0);
  r.dw.assign(static_cast<size_t>(vocab * width), 0.0);
  r.db.assign(static_cast<size_t>(vocab), 0.0);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    kept += static_cast<int64_t>(get(y, i)) != kIgnore;
  const double scale = mean ? seed / static_cast<double>(kept + (kept == 0)) : seed;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = static_cast<int64_t>(get(y, i));
    if (label == kIgnore)
      continue;
    std::vector<double> z(static_cast<size_t>(vocab));
    double m = -INFINITY;
    for (int64_t v = 0; v < vocab; ++v) {
      z[v] = get(b, v);
      for (int64_t k = 0; k < width; ++k)
        z[v] += get(h, i * width + k) * get(w, v * width + k);
      m = std::max(m, z[v]);
    }
    double sum = 0;
    for (double x : z)
      sum += std::exp(x - m);
    total += m + std::log(sum) - z[label];
    for (int64_t v = 0; v < vocab; ++v) {
      const double g = (std::exp(z[v] - m) / sum - (v == label ? 1.0 : 0.0)) * scale;
      r.db[v] += g;
      for (int64_t k = 0; k < width; ++k) {
        r.dh[i * width + k] += g * get(w, v * width + k);
        r.dw[v * width + k] += g * get(h, i * width + k);
      }
    }
  }
  r.loss = mean ? total / static_cast<double>(kept) : total;
  return r;
}

/// Labels in [0, vocab) with about a quarter ignore_index (never the first).
HostTensor randomLabels(int64_t n, int64_t vocab, std::mt19937 &rng) {
  HostTensor labels(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i)
    set(labels, i,
        static_cast<double>(rng() % 4 == 0 && i > 0 ? kIgnore : static_cast<int64_t>(rng() % vocab)));
  return labels;
}

struct Outputs {
  HostTensor loss, dh, dw, db;
};

Outputs runVjp(const HostTensor &h, const HostTensor &w, const HostTensor &b, const HostTensor &y,
               double seed, LossReduction r, int64_t chunk) {
  Outputs o{poisoned(h.dtype(), {}), poisoned(h.dtype(), h.shape()),
            poisoned(h.dtype(), w.shape()), poisoned(h.dtype(), b.shape())};
  HostTensor s = tensor(h.dtype(), {}, {seed});
  const base::Status st =
      linearCrossEntropyVjp(h, w, y, s, kIgnore, r, chunk, o.loss, o.dh, o.dw, &b, &o.db);
  EXPECT_TRUE(st.ok()) << st.toString();
  return o;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0;
}

TEST(CpuLinearCrossEntropyBias, MatchesReference) {
  std::mt19937 rng(13);
  struct Case {
    int64_t n, width, vocab, chunk;
  };
  for (DType t : kFloatDTypes)
    for (Case c : {Case{16, 8, 10, 0}, Case{37, 20, 300, 5}, Case{64, 33, 129, 64}})
      for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
        SCOPED_TRACE(std::string(base::dtypeName(t)) + " N=" + std::to_string(c.n) +
                     " V=" + std::to_string(c.vocab) + (r == LossReduction::Mean ? " mean" : " sum"));
        HostTensor h = randomTensor(t, {c.n, c.width}, rng, -1, 1);
        HostTensor w = randomTensor(t, {c.vocab, c.width}, rng, -1, 1);
        HostTensor b = randomTensor(t, {c.vocab}, rng, -2, 2);
        HostTensor y = randomLabels(c.n, c.vocab, rng);
        const Tolerance tol = t == DType::F32 ? kLceF32 : kLceF64;
        const Reference want = reference(h, w, b, y, r == LossReduction::Mean, 1.5);
        Outputs got = runVjp(h, w, b, y, 1.5, r, c.chunk);
        expectClose(got.loss, {want.loss}, tol, "loss");
        expectClose(got.dh, want.dh, tol, "dhidden");
        expectClose(got.dw, want.dw, tol, "dweight");
        expectClose(got.db, want.db, tol, "dbias");
        HostTensor fwd = poisoned(t, {});
        ASSERT_OK(linearCrossEntropy(h, w, y, kIgnore, r, c.chunk, fwd, &b));
        EXPECT_TRUE(sameBytes(fwd, got.loss)) << "forward loss differs from the VJP's";
      }
}

// d(seed * loss)/dx by central differences, in f64, on every element of small h, W and b.
TEST(CpuLinearCrossEntropyBias, FiniteDifferences) {
  std::mt19937 rng(17);
  const double seed = 0.75, step = 1e-5;
  HostTensor h = randomTensor(DType::F64, {6, 5}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F64, {9, 5}, rng, -1, 1);
  HostTensor b = randomTensor(DType::F64, {9}, rng, -1, 1);
  HostTensor y = tensor(DType::I64, {6}, {3, kIgnore, 0, 8, 8, 1});
  Outputs got = runVjp(h, w, b, y, seed, LossReduction::Mean, 2);
  auto loss = [&]() {
    HostTensor l(DType::F64, {});
    EXPECT_TRUE(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, l, &b).ok());
    return seed * get(l, 0);
  };
  expectCentralDifferences(
      {{&h, &got.dh, "dhidden"}, {&w, &got.dw, "dweight"}, {&b, &got.db, "dbias"}}, loss, step,
      1e-6);
}

// A zero bias gives the bias-free kernel's bits; a non-zero one changes the loss.
TEST(CpuLinearCrossEntropyBias, ZeroBiasIsNoBias) {
  std::mt19937 rng(19);
  HostTensor h = randomTensor(DType::F32, {12, 7}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F32, {20, 7}, rng, -1, 1);
  HostTensor y = randomLabels(12, 20, rng);
  HostTensor zero = tensor(DType::F32, {20}, std::vector<double>(20, 0.0));
  HostTensor plain(DType::F32, {}), zeroBias(DType::F32, {}), biased(DType::F32, {});
  ASSERT_OK(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, plain));
  ASSERT_OK(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, zeroBias, &zero));
  EXPECT_TRUE(sameBytes(plain, zeroBias));
  HostTensor b = randomTensor(DType::F32, {20}, rng, 1, 2);
  ASSERT_OK(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, biased, &b));
  EXPECT_NE(get(biased, 0), get(plain, 0));
}

TEST(CpuLinearCrossEntropyBias, ChunkSizeDoesNotChangeResults) {
  std::mt19937 rng(23);
  HostTensor h = randomTensor(DType::F32, {29, 12}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F32, {50, 12}, rng, -1, 1);
  HostTensor b = randomTensor(DType::F32, {50}, rng, -1, 1);
  HostTensor y = randomLabels(29, 50, rng);
  const Outputs one = runVjp(h, w, b, y, 1.0, LossReduction::Mean, 29);
  for (int64_t chunk : {1, 4, 7, 0}) {
    const Outputs o = runVjp(h, w, b, y, 1.0, LossReduction::Mean, chunk);
    EXPECT_TRUE(sameBytes(o.loss, one.loss) && sameBytes(o.dh, one.dh) &&
                sameBytes(o.dw, one.dw) && sameBytes(o.db, one.db))
        << "chunk " << chunk;
  }
}

TEST(CpuLinearCrossEntropyBias, Errors) {
  const DType f = DType::F32;
  HostTensor h(f, {4, 3}), w(f, {5, 3}), y = tensor(DType::I64, {4}, {0, 1, 2, 3});
  HostTensor loss(f, {}), seed = tensor(f, {}, {1.0}), dh(f, {4, 3}), dw(f, {5, 3});
  HostTensor shortBias(f, {4}), f64Bias(DType::F64, {5}), bias(f, {5}), db(f, {5}),
      badDb(f, {6});
  EXPECT_ERROR(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, loss, &shortBias),
               base::StatusCode::InvalidArgument,
               "linear_cross_entropy: bias is f32[4], expected f32[5]");
  EXPECT_ERROR(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, loss, &f64Bias),
               base::StatusCode::InvalidArgument,
               "linear_cross_entropy: bias is f64[5], expected f32[5]");
  EXPECT_ERROR(linearCrossEntropyVjp(h, w, y, seed, kIgnore, LossReduction::Mean, 0, loss, dh,
                                     dw, &bias, nullptr),
               base::StatusCode::InvalidArgument, "bias and dbias come together");
  EXPECT_ERROR(linearCrossEntropyVjp(h, w, y, seed, kIgnore, LossReduction::Mean, 0, loss, dh,
                                     dw, &bias, &badDb),
               base::StatusCode::InvalidArgument,
               "linear_cross_entropy_vjp: dbias is f32[6], expected f32[5]");
  EXPECT_ERROR(linearCrossEntropyVjp(h, w, y, seed, kIgnore, LossReduction::Mean, 0, loss, dh,
                                     dw, &shortBias, &db),
               base::StatusCode::InvalidArgument,
               "linear_cross_entropy_vjp: bias is f32[4], expected f32[5]");
}

} // namespace
} // namespace rp::kernels::cpu::test
