//===- Sgemm.cpp - The CPU kernels' own f32 GEMM (FMA chains) -------------===//
//
// Goto's blocking: for each [KC, NC] block of op(B) (packed into NR-column panels, zero-padded)
// and each [MC, KC] block of op(A) (packed into MR-row panels), a micro-kernel computes each
// MR x NR tile of C in registers over the block's KC values of k. Blocks of K after the first
// continue from the f32 partial sums stored in C, so the chain of FMAs per element is the same
// whatever KC is (Sgemm.h).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Sgemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace rp::kernels::cpu::detail {

namespace {

constexpr int64_t kKc = 256; // k per block: a B panel (KC x 32 floats) stays in L1
constexpr int64_t kMc = 96;  // rows of A per packed block (a multiple of both MRs)
constexpr int64_t kNc = 512; // columns of B per packed block

/// What a micro-kernel does with its tile after the k loop.
struct Epilogue {
  float alpha, beta;
  bool first;         // start from 0 (else from the partial sums in C)
  bool last;          // apply alpha and beta and store the result (else store partial sums)
  const float *orig;  // C before the product (read when last and beta != 0)
  int64_t ldo;
};

/// c[i, j] for the MR x NR tile at c (row stride ldc) from ap (KC x MR) and bp (KC x NR).
using MicroKernel = void (*)(int64_t kc, const float *ap, const float *bp, float *c,
                             int64_t ldc, const Epilogue &e);

/// MR x 32 (two zmm per row, 2 MR accumulators); MR = 8 measured faster than 12 here.
template <int MR>
__attribute__((target("avx512f"))) void kernelAvx512(int64_t kc, const float *ap,
                                                     const float *bp, float *c, int64_t ldc,
                                                     const Epilogue &e) {
  __m512 acc[MR][2];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h)
      acc[i][h] = e.first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * h);
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(ap[i]);
      acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
    }
    ap += MR;
    bp += 32;
  }
  const __m512 alpha = _mm512_set1_ps(e.alpha), beta = _mm512_set1_ps(e.beta);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) {
      __m512 v = acc[i][h];
      if (e.last && e.alpha != 1.0f)
        v = _mm512_mul_ps(v, alpha);
      if (e.last && e.beta != 0.0f)
        v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_loadu_ps(e.orig + i * e.ldo + 16 * h)));
      _mm512_storeu_ps(c + i * ldc + 16 * h, v);
    }
}

__attribute__((target("avx2,fma"))) void kernelAvx2(int64_t kc, const float *ap, const float *bp,
                                                    float *c, int64_t ldc, const Epilogue &e) {
  constexpr int MR = 6;
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h)
      acc[i][h] = e.first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc + 8 * h);
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(ap + i);
      acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
    }
    ap += MR;
    bp += 16;
  }
  const __m256 alpha = _mm256_set1_ps(e.alpha), beta = _mm256_set1_ps(e.beta);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) {
      __m256 v = acc[i][h];
      if (e.last && e.alpha != 1.0f)
        v = _mm256_mul_ps(v, alpha);
      if (e.last && e.beta != 0.0f)
        v = _mm256_add_ps(v, _mm256_mul_ps(beta, _mm256_loadu_ps(e.orig + i * e.ldo + 8 * h)));
      _mm256_storeu_ps(c + i * ldc + 8 * h, v);
    }
}

/// A 64-byte aligned float buffer that only grows (one per thread and role).
class PackBuffer {
public:
  float *get(int64_t floats) {
    if (floats > size_) {
      data_.reset(static_cast<float *>(
          std::aligned_alloc(64, static_cast<size_t>((floats + 15) / 16 * 16) * sizeof(float))));
      size_ = floats;
    }
    return data_.get();
  }

private:
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

/// Packs op(B)[pc .. pc+kc, jc .. jc+nc) into NR-column panels, each kc x NR, zero-padded.
void packB(bool transB, const float *b, int64_t ldb, int64_t pc, int64_t kc, int64_t jc,
           int64_t nc, int nr, float *out) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    const int64_t w = std::min<int64_t>(nr, nc - j0);
    float *dst = out + j0 * kc; // panel j0 / nr starts at (j0 / nr) * kc * nr
    if (!transB) {
      for (int64_t p = 0; p < kc; ++p) {
        const float *src = b + (pc + p) * ldb + jc + j0;
        std::memcpy(dst + p * nr, src, static_cast<size_t>(w) * sizeof(float));
        std::fill(dst + p * nr + w, dst + (p + 1) * nr, 0.0f);
      }
      continue;
    }
    for (int64_t j = 0; j < nr; ++j) {
      if (j >= w) {
        for (int64_t p = 0; p < kc; ++p)
          dst[p * nr + j] = 0.0f;
        continue;
      }
      const float *src = b + (jc + j0 + j) * ldb + pc;
      for (int64_t p = 0; p < kc; ++p)
        dst[p * nr + j] = src[p];
    }
  }
}

/// Packs op(A)[ic .. ic+mc, pc .. pc+kc) into MR-row panels, each kc x MR, zero-padded.
void packA(bool transA, const float *a, int64_t lda, int64_t ic, int64_t mc, int64_t pc,
           int64_t kc, int mr, float *out) {
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    const int64_t h = std::min<int64_t>(mr, mc - i0);
    float *dst = out + i0 * kc;
    if (transA) {
      for (int64_t p = 0; p < kc; ++p) {
        const float *src = a + (pc + p) * lda + ic + i0;
        std::memcpy(dst + p * mr, src, static_cast<size_t>(h) * sizeof(float));
        std::fill(dst + p * mr + h, dst + (p + 1) * mr, 0.0f);
      }
      continue;
    }
    for (int64_t i = 0; i < mr; ++i) {
      if (i >= h) {
        for (int64_t p = 0; p < kc; ++p)
          dst[p * mr + i] = 0.0f;
        continue;
      }
      const float *src = a + (ic + i0 + i) * lda + pc;
      for (int64_t p = 0; p < kc; ++p)
        dst[p * mr + i] = src[p];
    }
  }
}

/// A partial tile (h < MR rows or w < NR columns): the kernel runs on a full local tile.
void edgeTile(MicroKernel kernel, int nr, int64_t kc, const float *ap, const float *bp,
              float *c, int64_t ldc, int64_t h, int64_t w, const Epilogue &e) {
  alignas(64) float tile[16 * 32] = {};
  alignas(64) float orig[16 * 32] = {};
  Epilogue local = e;
  for (int64_t i = 0; i < h; ++i) {
    if (!e.first)
      std::memcpy(tile + i * nr, c + i * ldc, static_cast<size_t>(w) * sizeof(float));
    if (e.last && e.beta != 0.0f)
      std::memcpy(orig + i * nr, e.orig + i * e.ldo, static_cast<size_t>(w) * sizeof(float));
  }
  local.orig = orig;
  local.ldo = nr;
  kernel(kc, ap, bp, tile, nr, local);
  for (int64_t i = 0; i < h; ++i)
    std::memcpy(c + i * ldc, tile + i * nr, static_cast<size_t>(w) * sizeof(float));
}

/// k = 0: alpha * 0 (+ beta * c), the epilogue of an empty chain.
void emptyProduct(int64_t m, int64_t n, float alpha, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float v = alpha == 1.0f ? 0.0f : alpha * 0.0f;
      if (beta != 0.0f)
        v = v + beta * c[i * ldc + j];
      c[i * ldc + j] = v;
    }
}

struct Problem {
  bool transA, transB;
  int64_t m, n, k;
  float alpha, beta;
  const float *a;
  int64_t lda;
  const float *b;
  int64_t ldb;
  float *c;
  int64_t ldc;
  bool accumulate = false; // chains start from C (sgemmAccumulate)
};

/// The blocked loops around `kernel` (tile MR x NR).
void blocked(const Problem &q, MicroKernel kernel, int mr, int nr) {
  thread_local PackBuffer bufA, bufB, bufOrig;
  // With several blocks of K, C holds partial sums in between: keep C's values for beta.
  const float *orig = q.c;
  int64_t ldo = q.ldc;
  if (q.k > kKc && q.beta != 0.0f) {
    float *copy = bufOrig.get(q.m * q.n);
    for (int64_t i = 0; i < q.m; ++i)
      std::memcpy(copy + i * q.n, q.c + i * q.ldc, static_cast<size_t>(q.n) * sizeof(float));
    orig = copy;
    ldo = q.n;
  }
  float *pa = bufA.get(kMc * kKc);
  float *pb = bufB.get((kNc + nr) * kKc);
  for (int64_t jc = 0; jc < q.n; jc += kNc) {
    const int64_t nc = std::min(kNc, q.n - jc);
    for (int64_t pc = 0; pc < q.k; pc += kKc) {
      const int64_t kc = std::min(kKc, q.k - pc);
      packB(q.transB, q.b, q.ldb, pc, kc, jc, nc, nr, pb);
      for (int64_t ic = 0; ic < q.m; ic += kMc) {
        const int64_t mc = std::min(kMc, q.m - ic);
        packA(q.transA, q.a, q.lda, ic, mc, pc, kc, mr, pa);
        for (int64_t jr = 0; jr < nc; jr += nr)
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t row = ic + ir, col = jc + jr;
            const Epilogue e{q.alpha, q.beta, pc == 0 && !q.accumulate, pc + kc == q.k,
                             orig + row * ldo + col, ldo};
            float *c = q.c + row * q.ldc + col;
            const int64_t h = std::min<int64_t>(mr, mc - ir), w = std::min<int64_t>(nr, nc - jr);
            if (h == mr && w == nr)
              kernel(kc, pa + ir * kc, pb + jr * kc, c, q.ldc, e);
            else
              edgeTile(kernel, nr, kc, pa + ir * kc, pb + jr * kc, c, q.ldc, h, w, e);
          }
      }
    }
  }
}

SgemmIsa detectIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return SgemmIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return SgemmIsa::Avx2;
  return SgemmIsa::None;
}

} // namespace

SgemmIsa sgemmBestIsa() {
  static const SgemmIsa isa = detectIsa();
  return isa;
}

const char *sgemmIsaName(SgemmIsa isa) {
  switch (isa) {
  case SgemmIsa::Avx512:
    return "avx512";
  case SgemmIsa::Avx2:
    return "avx2";
  case SgemmIsa::None:
    break;
  }
  return "none";
}

bool sgemmAvailable() { return sgemmBestIsa() != SgemmIsa::None; }

static void runProblem(SgemmIsa isa, const Problem &q) {
  if (isa == SgemmIsa::Avx512)
    blocked(q, kernelAvx512<8>, 8, 32);
  else
    blocked(q, kernelAvx2, 6, 16);
}

void sgemm(SgemmIsa isa, bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0)
    return emptyProduct(m, n, alpha, beta, c, ldc);
  runProblem(isa, Problem{transA, transB, m, n, k, alpha, beta, a, lda, b, ldb, c, ldc});
}

void sgemmAccumulate(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0)
    return;
  runProblem(sgemmBestIsa(),
      Problem{transA, transB, m, n, k, 1.0f, 0.0f, a, lda, b, ldb, c, ldc, /*accumulate=*/true});
}

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
           const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc) {
  sgemm(sgemmBestIsa(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace rp::kernels::cpu::detail
