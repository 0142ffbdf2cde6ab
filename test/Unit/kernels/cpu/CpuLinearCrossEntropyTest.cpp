//===- CpuLinearCrossEntropyTest.cpp - fused LM head + cross-entropy ------===//
//
// cpu::linearCrossEntropy(Vjp) against a float64 reference computed from the definition
// (logits = h W^T, loss, G = (softmax - onehot) * keep * scale, dh = G W, dW = G^T h).
// Tolerances: f32 rtol 1e-4, atol 1e-5 (f32 dot products over H and sums over V or N of
// up to a few hundred terms), f64 rtol 1e-11, atol 1e-12. Also: a central finite-difference
// check of both gradients (f64, step 1e-5, rtol 1e-6), bit-equality across chunk sizes and
// between 1 and 4 OpenMP threads, the forward's loss = the VJP's, all-ignored labels, and
// the error paths.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/LinearCrossEntropy.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cstring>
#include <omp.h>

namespace rp::kernels::cpu::test {
namespace {

constexpr int64_t kIgnore = -100;
constexpr Tolerance kLceF32{1e-4, 1e-5};
constexpr Tolerance kLceF64{1e-11, 1e-12};

struct Reference {
  double loss = 0;
  std::vector<double> dh, dw;
};

/// The float64 definition; `seed` scales the gradients.
Reference reference(const HostTensor &h, const HostTensor &w, const HostTensor &y, bool mean,
                    double seed) {
  const int64_t n = h.dim(0), width = h.dim(1), vocab = w.dim(0);
  Reference r;
  r.dh.assign(static_cast<size_t>(n * width), 0.0);
  r.dw.assign(static_cast<size_t>(vocab * width), 0.0);
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
HostTensor randomLabels(DType t, int64_t n, int64_t vocab, std::mt19937 &rng) {
  HostTensor labels(t, {n});
  for (int64_t i = 0; i < n; ++i)
    set(labels, i, static_cast<double>(rng() % 4 == 0 && i > 0 ? kIgnore : static_cast<int64_t>(rng() % vocab)));
  return labels;
}

struct Outputs {
  HostTensor loss, dh, dw;
};

Outputs runVjp(const HostTensor &h, const HostTensor &w, const HostTensor &y, double seed,
               LossReduction r, int64_t chunk) {
  Outputs o{poisoned(h.dtype(), {}), poisoned(h.dtype(), h.shape()),
            poisoned(h.dtype(), w.shape())};
  HostTensor s = tensor(h.dtype(), {}, {seed});
  const base::Status st =
      linearCrossEntropyVjp(h, w, y, s, kIgnore, r, chunk, o.loss, o.dh, o.dw);
  EXPECT_TRUE(st.ok()) << st.toString();
  return o;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.raw(), b.raw(), a.byteSize()) == 0;
}

TEST(CpuLinearCrossEntropy, MatchesReference) {
  std::mt19937 rng(7);
  struct Case {
    int64_t n, width, vocab, chunk;
  };
  for (DType t : kFloatDTypes)
    for (DType lt : {DType::I64, DType::I32})
      for (Case c : {Case{16, 8, 10, 0}, Case{37, 20, 300, 5}, Case{64, 33, 129, 64}})
        for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
          SCOPED_TRACE(std::string(base::dtypeName(t)) + " N=" + std::to_string(c.n) +
                       " H=" + std::to_string(c.width) + " V=" + std::to_string(c.vocab) +
                       (r == LossReduction::Mean ? " mean" : " sum"));
          HostTensor h = randomTensor(t, {c.n, c.width}, rng, -1, 1);
          HostTensor w = randomTensor(t, {c.vocab, c.width}, rng, -1, 1);
          HostTensor y = randomLabels(lt, c.n, c.vocab, rng);
          const Tolerance tol = t == DType::F32 ? kLceF32 : kLceF64;
          const Reference want = reference(h, w, y, r == LossReduction::Mean, 1.5);
          Outputs got = runVjp(h, w, y, 1.5, r, c.chunk);
          expectClose(got.loss, {want.loss}, tol, "loss");
          expectClose(got.dh, want.dh, tol, "dhidden");
          expectClose(got.dw, want.dw, tol, "dweight");
          HostTensor fwd = poisoned(t, {});
          ASSERT_OK(linearCrossEntropy(h, w, y, kIgnore, r, c.chunk, fwd));
          EXPECT_TRUE(sameBytes(fwd, got.loss)) << "forward loss differs from the VJP's";
        }
}

// d(seed * loss)/dx by central differences, in f64, on every element of small h and W.
TEST(CpuLinearCrossEntropy, FiniteDifferences) {
  std::mt19937 rng(11);
  const double seed = 0.75, step = 1e-5;
  HostTensor h = randomTensor(DType::F64, {6, 5}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F64, {9, 5}, rng, -1, 1);
  HostTensor y = tensor(DType::I64, {6}, {3, kIgnore, 0, 8, 8, 1});
  Outputs got = runVjp(h, w, y, seed, LossReduction::Mean, 2);
  auto loss = [&]() {
    HostTensor l(DType::F64, {});
    EXPECT_TRUE(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, l).ok());
    return seed * get(l, 0);
  };
  expectCentralDifferences({{&h, &got.dh, "dhidden"}, {&w, &got.dw, "dweight"}}, loss, step, 1e-6);
}

// The chunking bounds memory only: every chunk size gives the same bytes.
TEST(CpuLinearCrossEntropy, ChunkSizeDoesNotChangeResults) {
  std::mt19937 rng(13);
  HostTensor h = randomTensor(DType::F32, {45, 24}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F32, {200, 24}, rng, -1, 1);
  HostTensor y = randomLabels(DType::I64, 45, 200, rng);
  Outputs base = runVjp(h, w, y, 1.0, LossReduction::Mean, 0);
  for (int64_t chunk : {1, 2, 7, 44, 45, 1000}) {
    SCOPED_TRACE("chunk_rows " + std::to_string(chunk));
    Outputs o = runVjp(h, w, y, 1.0, LossReduction::Mean, chunk);
    EXPECT_TRUE(sameBytes(o.loss, base.loss));
    EXPECT_TRUE(sameBytes(o.dh, base.dh));
    EXPECT_TRUE(sameBytes(o.dw, base.dw));
  }
}

// Large enough for the parallel loops (c V H >= 2^15): 1 and 4 threads give the same bytes.
TEST(CpuLinearCrossEntropy, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(17);
  HostTensor h = randomTensor(DType::F32, {96, 40}, rng, -1, 1);
  HostTensor w = randomTensor(DType::F32, {500, 40}, rng, -1, 1);
  HostTensor y = randomLabels(DType::I32, 96, 500, rng);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  Outputs one = runVjp(h, w, y, 1.0, LossReduction::Mean, 32);
  omp_set_num_threads(4);
  Outputs four = runVjp(h, w, y, 1.0, LossReduction::Mean, 32);
  omp_set_num_threads(threads);
  EXPECT_TRUE(sameBytes(one.loss, four.loss));
  EXPECT_TRUE(sameBytes(one.dh, four.dh));
  EXPECT_TRUE(sameBytes(one.dw, four.dw));
}

// Every label ignored: a NaN mean (0/0, as PyTorch), zero gradients (as the composed VJP).
TEST(CpuLinearCrossEntropy, AllIgnored) {
  std::mt19937 rng(19);
  HostTensor h = randomTensor(DType::F32, {4, 3}, rng);
  HostTensor w = randomTensor(DType::F32, {5, 3}, rng);
  HostTensor y = tensor(DType::I64, {4}, {kIgnore, kIgnore, kIgnore, kIgnore});
  Outputs o = runVjp(h, w, y, 1.0, LossReduction::Mean, 0);
  EXPECT_TRUE(std::isnan(get(o.loss, 0)));
  expectEqual(o.dh, std::vector<double>(12, 0.0), "dhidden");
  expectEqual(o.dw, std::vector<double>(15, 0.0), "dweight");
  Outputs s = runVjp(h, w, y, 1.0, LossReduction::Sum, 0);
  EXPECT_EQ(get(s.loss, 0), 0.0);
}

TEST(CpuLinearCrossEntropy, Errors) {
  HostTensor h(DType::F32, {4, 3}), w(DType::F32, {5, 3}), loss(DType::F32, {});
  HostTensor y = tensor(DType::I64, {4}, {0, 1, 5, 2});
  EXPECT_ERROR(linearCrossEntropy(h, w, y, kIgnore, LossReduction::Mean, 0, loss),
               base::StatusCode::OutOfRange, "label 5 at position 2 is outside [0, 5)");
  HostTensor ok = tensor(DType::I64, {4}, {0, 1, 4, 2});
  EXPECT_ERROR(linearCrossEntropy(h, HostTensor(DType::F32, {5, 2}), ok, kIgnore,
                                  LossReduction::Mean, 0, loss),
               base::StatusCode::InvalidArgument, "expected hidden [N, H] and weight [V, H]");
  EXPECT_ERROR(linearCrossEntropy(h, w, tensor(DType::I64, {3}, {0, 1, 2}), kIgnore,
                                  LossReduction::Mean, 0, loss),
               base::StatusCode::InvalidArgument, "labels");
  EXPECT_ERROR(linearCrossEntropy(h, w, ok, kIgnore, LossReduction::Mean, -1, loss),
               base::StatusCode::InvalidArgument, "chunk_rows must be >= 0");
  EXPECT_ERROR(linearCrossEntropy(h, HostTensor(DType::F64, {5, 3}), ok, kIgnore,
                                  LossReduction::Mean, 0, loss),
               base::StatusCode::InvalidArgument, "weight");
  HostTensor dh(DType::F32, {4, 3}), dw(DType::F32, {5, 3}), badSeed(DType::F32, {1});
  EXPECT_ERROR(linearCrossEntropyVjp(h, w, ok, badSeed, kIgnore, LossReduction::Mean, 0, loss, dh,
                                     dw),
               base::StatusCode::InvalidArgument, "seed");
  HostTensor seed(DType::F32, {}), badDw(DType::F32, {3, 5});
  EXPECT_ERROR(linearCrossEntropyVjp(h, w, ok, seed, kIgnore, LossReduction::Mean, 0, loss, dh,
                                     badDw),
               base::StatusCode::InvalidArgument, "dweight");
}

TEST(CpuLinearCrossEntropy, DefaultChunkRows) {
  EXPECT_EQ(defaultChunkRows(4096, 151936), (int64_t(32) << 20) / (4 * 151936));
  EXPECT_EQ(defaultChunkRows(10, 100), 10);
  EXPECT_EQ(defaultChunkRows(10, int64_t(1) << 40), 1);
}

} // namespace
} // namespace rp::kernels::cpu::test
