//===- VectorMath.cpp - f32 array loops built for AVX-512 and AVX2 --------===//

#include "kernels/cpu/VectorMath.h"

#include "kernels/cpu/KernelSupport.h"

namespace rp::kernels::cpu::detail {

#define RP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

RP_VECTOR_CLONES void expF32Array(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = expF32(x[i]);
}

RP_VECTOR_CLONES void sigmoidF32Array(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = sigmoidF32(x[i]);
}

RP_VECTOR_CLONES void siluF32Array(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * sigmoidF32(x[i]);
}

RP_VECTOR_CLONES void swigluF32Array(const float *g, const float *u, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = g[i] * sigmoidF32(g[i]) * u[i];
}

} // namespace rp::kernels::cpu::detail
