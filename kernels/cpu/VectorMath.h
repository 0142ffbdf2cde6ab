//===- VectorMath.h - f32 array loops built for AVX-512 and AVX2 -*- C++ -*-===//
//
// Internal to kernels/cpu: the f32 loops of exp, sigmoid, silu and swiglu over contiguous
// arrays, each compiled three times (GCC target_clones: AVX-512, AVX2, baseline x86-64) and
// picked at load time for the CPU. The default build targets plain x86-64 (SSE2, 4 lanes);
// these loops then run 16 or 8 lanes wide. Every clone computes the same bits: each element is
// the scalar expression of KernelSupport.h (expF32, sigmoidF32) in f32 operations that are
// exact per lane, with no FMA contraction (kernels/cpu builds with -ffp-contract=off).
// Single-threaded: callers split the arrays among threads.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_VECTORMATH_H
#define RP_KERNELS_CPU_VECTORMATH_H

#include <cstdint>

namespace rp::kernels::cpu::detail {

/// y[i] = expF32(x[i]) for i < n.
void expF32Array(const float *x, float *y, int64_t n);
/// y[i] = sigmoidF32(x[i]).
void sigmoidF32Array(const float *x, float *y, int64_t n);
/// y[i] = x[i] * sigmoidF32(x[i]).
void siluF32Array(const float *x, float *y, int64_t n);
/// y[i] = g[i] * sigmoidF32(g[i]) * u[i] (swiglu: silu(gate) * up).
void swigluF32Array(const float *g, const float *u, float *y, int64_t n);

/// Runs fn(begin, count) over [0, n) in fixed chunks of 8192 elements, spread over OpenMP
/// threads from kParallelMinElements elements on (elementwise: the split changes no bit).
template <typename Fn>
void forChunks(int64_t n, bool parallel, Fn fn) {
  constexpr int64_t kChunk = 8192;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (parallel && chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    fn(c * kChunk, (c + 1) * kChunk < n ? kChunk : n - c * kChunk);
}

} // namespace rp::kernels::cpu::detail

#endif // RP_KERNELS_CPU_VECTORMATH_H
