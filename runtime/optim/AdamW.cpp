//===- AdamW.cpp - AdamW on fp32 master weights ---------------------------===//

#include "runtime/optim/AdamW.h"

#include "kernels/cpu/Cast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

/// Elements per OpenMP work item of adamwStep.
constexpr int64_t kStepBlock = 16384;
/// Elements per partial sum of sumOfSquares (part of its determinism contract).
constexpr int64_t kSumBlock = 65536;

} // namespace

void adamwStep(float *master, float *m, float *v, const float *grad, int64_t n,
               const AdamWConfig &config, int64_t step, float gradScale) {
  if (n <= 0)
    return;
  const double t = static_cast<double>(step);
  const float decay = static_cast<float>(1.0 - config.lr * config.weightDecay);
  const float b1 = static_cast<float>(config.beta1);
  const float c1 = static_cast<float>(1.0 - config.beta1);
  const float b2 = static_cast<float>(config.beta2);
  const float c2 = static_cast<float>(1.0 - config.beta2);
  const float stepSize = static_cast<float>(config.lr / (1.0 - std::pow(config.beta1, t)));
  const float bc2Sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(config.beta2, t)));
  const float epsF = static_cast<float>(config.eps);

  const int64_t blocks = (n + kStepBlock - 1) / kStepBlock;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(n, (b + 1) * kStepBlock);
    for (int64_t i = b * kStepBlock; i < end; ++i) {
      const float g = grad[i] * gradScale;
      const float p = master[i] * decay;
      const float mi = b1 * m[i] + c1 * g;
      const float vi = b2 * v[i] + c2 * (g * g);
      m[i] = mi;
      v[i] = vi;
      master[i] = p - stepSize * (mi / (std::sqrt(vi) / bc2Sqrt + epsF));
    }
  }
}

double sumOfSquares(const float *grad, int64_t n, float scale) {
  if (n <= 0)
    return 0.0;
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> partial(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(n, (b + 1) * kSumBlock);
    double s = 0.0;
    for (int64_t i = b * kSumBlock; i < end; ++i) {
      const double g = static_cast<double>(grad[i] * scale);
      s += g * g;
    }
    partial[static_cast<size_t>(b)] = s;
  }
  double total = 0.0;
  for (double s : partial)
    total += s;
  return total;
}

double clipFactor(double globalNorm, double maxNorm) {
  if (maxNorm <= 0.0)
    return 1.0;
  const double f = maxNorm / (globalNorm + 1e-6);
  return std::isnan(f) ? f : std::min(1.0, f);
}

StatusOr<float> clippedGradScale(double sumSquares, double maxNorm, int64_t microBatches,
                                 int64_t step) {
  const double norm = std::sqrt(sumSquares);
  if (!std::isfinite(norm))
    return internal("the global gradient norm of step " + std::to_string(step) + " is " +
                    (std::isnan(norm) ? "nan" : "inf") +
                    "; the run diverged (try a lower --lr); no weight was updated");
  return static_cast<float>(clipFactor(norm, maxNorm) / static_cast<double>(microBatches));
}

double learningRate(double lr, int64_t warmup, int64_t step) {
  if (warmup <= 0 || step >= warmup)
    return lr;
  return static_cast<double>(step + 1) / static_cast<double>(warmup) * lr;
}

void accumulateGradient(float *acc, const float *g, int64_t n, bool first) {
  if (n <= 0)
    return;
  if (first) {
    std::memcpy(acc, g, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    acc[i] = acc[i] + g[i];
}

namespace {

/// The largest |x| bit pattern over n floats: >= 0x7f800000 exactly when one is inf or NaN.
/// An integer max reduction, which the compiler vectorises (std::isfinite in a loop does not).
uint32_t maxMagnitudeBits(const float *x, int64_t n) {
  uint32_t most = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    most = std::max(most, bits & 0x7fffffffu);
  }
  return most;
}

constexpr uint32_t kInfinityBits = 0x7f800000u;
/// Elements per block of the fused passes: small enough that the check re-reads the block
/// from cache, so the pass reads and writes memory once.
constexpr int64_t kCheckBlock = 4096;

} // namespace

bool allFinite(const float *x, int64_t n) {
  return n <= 0 || maxMagnitudeBits(x, n) < kInfinityBits;
}

bool copyCheckingFinite(float *dst, const float *src, int64_t n) {
  uint32_t most = 0;
  for (int64_t b = 0; b < n; b += kCheckBlock) {
    const int64_t len = std::min(kCheckBlock, n - b);
    std::memcpy(dst + b, src + b, static_cast<size_t>(len) * sizeof(float));
    most = std::max(most, maxMagnitudeBits(dst + b, len));
  }
  return most < kInfinityBits;
}

bool addCheckingFinite(float *acc, const float *g, int64_t n) {
  uint32_t most = 0;
  for (int64_t b = 0; b < n; b += kCheckBlock) {
    const int64_t end = std::min(n, b + kCheckBlock);
    for (int64_t i = b; i < end; ++i)
      acc[i] = acc[i] + g[i];
    most = std::max(most, maxMagnitudeBits(acc + b, end - b));
  }
  return most < kInfinityBits;
}

Status writeComputeWeights(const float *master, DType dtype, void *dst, int64_t n) {
  if (n < 0)
    return invalidArgument("writeComputeWeights: negative element count " + std::to_string(n));
  if (n > 0 && (!master || !dst))
    return invalidArgument("writeComputeWeights: null buffer");
  switch (dtype) {
  case DType::F32:
    if (n > 0)
      std::memcpy(dst, master, static_cast<size_t>(n) * sizeof(float));
    return okStatus();
  case DType::BF16:
  case DType::F16:
    return kernels::cpu::cast(master, DType::F32, dst, dtype, n);
  default:
    return invalidArgument(std::string("writeComputeWeights: compute dtype ") + dtypeName(dtype) +
                           " is not f32, bf16 or f16");
  }
}

} // namespace rp::runtime
