//===- CpuDeterminismTest.cpp - kernels do not depend on the thread count -===//
//
// A project rule (docs/DECISIONS.md, "Numerics"): results are bit-identical
// whatever the number of threads. Each kernel runs on inputs large enough for
// its parallel path, once with one thread and once with several (OpenMP, and
// OpenBLAS for GEMM), and the outputs must match byte for byte.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Kernels.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cblas.h>
#include <omp.h>

#include <functional>

namespace rp::kernels::cpu::test {
namespace {

/// Runs `kernel` into a fresh poisoned `out` with 1 and with 4 threads and
/// expects identical bytes.
void expectThreadIndependent(const char *what,
                             const std::function<base::Status(HostTensor &)> &kernel,
                             DType dtype, const Shape &shape) {
  SCOPED_TRACE(what);
  const int ompThreads = omp_get_max_threads();
  const int blasThreads = openblas_get_num_threads();
  HostTensor serial = poisoned(dtype, shape), parallel = poisoned(dtype, shape);
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  ASSERT_OK(kernel(serial));
  omp_set_num_threads(4);
  openblas_set_num_threads(4);
  ASSERT_OK(kernel(parallel));
  omp_set_num_threads(ompThreads);
  openblas_set_num_threads(blasThreads);
  ASSERT_EQ(serial.byteSize(), parallel.byteSize());
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < serial.numElements(); ++i)
    if (std::memcmp(static_cast<const char *>(serial.raw()) + i * base::dtypeSize(dtype),
                    static_cast<const char *>(parallel.raw()) + i * base::dtypeSize(dtype),
                    base::dtypeSize(dtype)) != 0 &&
        differ++ == 0)
      first = i;
  EXPECT_EQ(differ, 0) << "first differing element " << first << ": " << get(serial, first)
                       << " with 1 thread, " << get(parallel, first) << " with 4";
}

TEST(CpuDeterminism, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(91);
  const HostTensor x = randomTensor(DType::F32, {8, 128, 256}, rng);
  const HostTensor w = randomTensor(DType::F32, {256, 384}, rng);
  const HostTensor g = randomTensor(DType::F32, {256}, rng);
  const HostTensor y = randomTensor(DType::F32, {1, 256}, rng);
  expectThreadIndependent("matmul", [&](HostTensor &o) { return matmul(x, w, o); }, DType::F32,
                          {8, 128, 384});
  // The flagged layouts (x @ W^T with W [384, 256]; a weight gradient x^T @ dy).
  const HostTensor wt = randomTensor(DType::F32, {384, 256}, rng);
  const HostTensor dy = randomTensor(DType::F32, {8, 128, 384}, rng);
  expectThreadIndependent(
      "matmul transpose_b", [&](HostTensor &o) { return matmul(x, wt, false, true, o); },
      DType::F32, {8, 128, 384});
  expectThreadIndependent(
      "matmul transpose_a", [&](HostTensor &o) { return matmul(x, dy, true, false, o); },
      DType::F32, {8, 256, 384});
  expectThreadIndependent("mul", [&](HostTensor &o) { return binary(BinaryKind::Mul, x, y, o); },
                          DType::F32, {8, 128, 256});
  expectThreadIndependent("gelu", [&](HostTensor &o) { return unary(UnaryKind::GeluTanh, x, o); },
                          DType::F32, {8, 128, 256});
  expectThreadIndependent("reduce_sum",
                          [&](HostTensor &o) {
                            return reduce(ReduceKind::Sum, x, {0, 2}, false, o);
                          },
                          DType::F32, {128});
  expectThreadIndependent("reduce_mean",
                          [&](HostTensor &o) {
                            return reduce(ReduceKind::Mean, x, {0, 1, 2}, false, o);
                          },
                          DType::F32, {});
  expectThreadIndependent("log_softmax", [&](HostTensor &o) { return softmax(x, 2, true, o); },
                          DType::F32, {8, 128, 256});
  expectThreadIndependent("rms_norm", [&](HostTensor &o) { return rmsNorm(x, g, 2, 1e-6, o); },
                          DType::F32, {8, 128, 256});
  HostTensor labels(DType::I64, {8, 256});
  for (int64_t i = 0; i < labels.numElements(); ++i)
    labels.data<int64_t>()[i] = i % 7 == 0 ? -100 : i % 128;
  expectThreadIndependent(
      "cross_entropy",
      [&](HostTensor &o) { return crossEntropy(x, labels, -100, LossReduction::Mean, o); },
      DType::F32, {});
  // attention_vjp (grouped-query, causal): each of dq, dk, dv.
  const Shape qs{1, 8, 64, 32}, ks{1, 2, 64, 32};
  const HostTensor q = randomTensor(DType::F32, qs, rng), k = randomTensor(DType::F32, ks, rng),
                   v = randomTensor(DType::F32, ks, rng), out = randomTensor(DType::F32, qs, rng),
                   dout = randomTensor(DType::F32, qs, rng);
  HostTensor dq(DType::F32, qs), dk(DType::F32, ks), dv(DType::F32, ks);
  expectThreadIndependent(
      "attention_vjp dq",
      [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, true, o, dk, dv); },
      DType::F32, qs);
  expectThreadIndependent(
      "attention_vjp dk",
      [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, true, dq, o, dv); },
      DType::F32, ks);
  expectThreadIndependent(
      "attention_vjp dv",
      [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, true, dq, dk, o); },
      DType::F32, ks);
}

// The f32 paths of the CPU backend's hot kernels: f32 arithmetic with expF32 (swiglu, silu,
// sigmoid, exp), the blocked attention (S = 130: three query blocks, the last partial; per
// block GEMMs), the leading-axes reduction (blocks of outputs), layer_norm with a bias.
TEST(CpuDeterminism, VectorisedF32KernelsDoNotDependOnThreads) {
  std::mt19937 rng(93);
  const HostTensor x = randomTensor(DType::F32, {8, 128, 384}, rng);
  const HostTensor u = randomTensor(DType::F32, {8, 128, 384}, rng);
  const HostTensor g = randomTensor(DType::F32, {384}, rng);
  const HostTensor b = randomTensor(DType::F32, {384}, rng);
  const Shape xs{8, 128, 384};
  expectThreadIndependent("swiglu", [&](HostTensor &o) { return swiglu(x, u, o); }, DType::F32,
                          xs);
  for (UnaryKind kind : {UnaryKind::Silu, UnaryKind::Sigmoid, UnaryKind::Exp})
    expectThreadIndependent(unaryKindName(kind),
                            [&](HostTensor &o) { return unary(kind, x, o); }, DType::F32, xs);
  expectThreadIndependent("reduce_sum leading axes",
                          [&](HostTensor &o) {
                            return reduce(ReduceKind::Sum, x, {0, 1}, false, o);
                          },
                          DType::F32, {384});
  expectThreadIndependent("layer_norm",
                          [&](HostTensor &o) { return layerNorm(x, g, &b, 2, 1e-5, o); },
                          DType::F32, xs);
  const Shape qs{2, 6, 130, 32}, ks{2, 2, 130, 32};
  const HostTensor q = randomTensor(DType::F32, qs, rng), k = randomTensor(DType::F32, ks, rng),
                   v = randomTensor(DType::F32, ks, rng), dout = randomTensor(DType::F32, qs, rng);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    HostTensor out(DType::F32, qs);
    ASSERT_OK(attention(q, k, v, 0.2, causal, out));
    expectThreadIndependent(
        "attention", [&](HostTensor &o) { return attention(q, k, v, 0.2, causal, o); },
        DType::F32, qs);
    HostTensor dq(DType::F32, qs), dk(DType::F32, ks), dv(DType::F32, ks);
    expectThreadIndependent(
        "attention_vjp dq",
        [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, causal, o, dk, dv); },
        DType::F32, qs);
    expectThreadIndependent(
        "attention_vjp dk",
        [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, causal, dq, o, dv); },
        DType::F32, ks);
    expectThreadIndependent(
        "attention_vjp dv",
        [&](HostTensor &o) { return attentionVjp(q, k, v, out, dout, 0.2, causal, dq, dk, o); },
        DType::F32, ks);
  }
}

} // namespace
} // namespace rp::kernels::cpu::test
