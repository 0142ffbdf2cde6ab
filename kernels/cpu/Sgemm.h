//===- Sgemm.h - The CPU kernels' own f32 GEMM (FMA chains) -----*- C++ -*-===//
//
// Internal to kernels/cpu: C = alpha op(A) op(B) + beta C in f32, row-major, on the calling
// thread, with packed panels and register-blocked micro-kernels for AVX-512 (8 x 32 tile) and
// AVX2 + FMA (6 x 16), chosen at run time (the default build targets plain x86-64; the
// micro-kernels carry their own target attributes).
//
// Numerics: every element of op(A) op(B) is one chain of fused multiply-adds in increasing k,
// starting from 0: acc = fma(A[i, k], B[k, j], acc) for k = 0, 1, ..., K-1 (the f32 bits of
// std::fma, the reference the tests compare against bit for bit). Then c = alpha * acc
// (skipped for alpha = 1, which changes no bit) plus, for beta != 0, beta * c (two roundings, no
// FMA). So an element's bits depend only on its row of op(A), its column of op(B), alpha and
// beta: not on the tiling, the blocking of K, the vector width (AVX-512 and AVX2 give the same
// bits), the rest of the matrices, or how callers split the product among threads. OpenBLAS's
// sgemm sums in an order of its own per CPU kernel, so this is both faster at the CPU
// backend's sizes (OpenBLAS 0.3.21 runs Zen 4/5 with its AVX2 Haswell kernels) and
// reproducible across x86-64 CPUs with FMA.
//
// CPUs without FMA (pre-2013 x86-64) have no micro-kernel: sgemmAvailable() is false and
// callers use OpenBLAS (results then differ in the last bits from FMA machines).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_SGEMM_H
#define RP_KERNELS_CPU_SGEMM_H

#include <cstdint>

namespace rp::kernels::cpu::detail {

/// The micro-kernels, in increasing vector width.
enum class SgemmIsa { None, Avx2, Avx512 };

/// The widest micro-kernel this CPU runs (None: no FMA, sgemm unavailable).
SgemmIsa sgemmBestIsa();

/// "avx512", "avx2" or "none".
const char *sgemmIsaName(SgemmIsa isa);

/// True when sgemm() can run on this CPU (sgemmBestIsa() is not None).
bool sgemmAvailable();

/// C = alpha op(A) op(B) + beta C, op(A) [m, k], op(B) [k, n], C [m, n]; transA reads A stored
/// as [k, m], transB B stored as [n, k]; lda, ldb, ldc are the stored row lengths (elements).
/// beta = 0 does not read C. m, n or k may be 0 (k = 0 gives alpha * 0 + beta C). Runs on
/// the calling thread, with thread-local packing buffers. Precondition: sgemmAvailable().
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc);

/// C = op(A) op(B) continuing C's chains: each element's FMA chain starts from its value in C
/// instead of 0 (no alpha, no beta). A product over k split into consecutive pieces and
/// accumulated piece by piece gives the bits of one call over all of k. Precondition:
/// sgemmAvailable().
void sgemmAccumulate(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

/// As sgemm with the micro-kernel of `isa` (tests compare the ISAs; precondition: the CPU
/// runs `isa`, which is not None).
void sgemm(SgemmIsa isa, bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc);

} // namespace rp::kernels::cpu::detail

#endif // RP_KERNELS_CPU_SGEMM_H
