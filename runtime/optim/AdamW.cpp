//===- AdamW.cpp - AdamW on fp32 master weights ---------------------------===//

#include "runtime/optim/AdamW.h"

#include "base/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

/// Elements per OpenMP work item of adamwStep.
constexpr int64_t kStepBlock = 16384;
/// Elements per partial sum of sumOfSquares (part of its determinism contract).
constexpr int64_t kSumBlock = 65536;

/// adamwStep's float scalars (the header's contract), computed once per call.
struct StepScalars {
  float decay, b1, c1, b2, c2, stepSize, bc2Sqrt, eps, gradScale;
};

StepScalars stepScalars(const AdamWConfig &config, int64_t step, float gradScale) {
  const double t = static_cast<double>(step);
  return {static_cast<float>(1.0 - config.lr * config.weightDecay),
          static_cast<float>(config.beta1),
          static_cast<float>(1.0 - config.beta1),
          static_cast<float>(config.beta2),
          static_cast<float>(1.0 - config.beta2),
          static_cast<float>(config.lr / (1.0 - std::pow(config.beta1, t))),
          static_cast<float>(std::sqrt(1.0 - std::pow(config.beta2, t))),
          static_cast<float>(config.eps),
          gradScale};
}

/// What the AdamW pass writes besides the state: nothing, or the updated weights as f32, bf16
/// or f16.
enum class WeightCopy { None, F32, BF16, F16 };

/// The copy of a compute dtype; nullopt for a dtype other than f32, bf16 and f16.
std::optional<WeightCopy> weightCopyOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return WeightCopy::F32;
  case DType::BF16:
    return WeightCopy::BF16;
  case DType::F16:
    return WeightCopy::F16;
  default:
    return std::nullopt;
  }
}

Status unsupportedDType(const char *function, DType dtype) {
  return invalidArgument(std::string(function) + ": compute dtype " + dtypeName(dtype) +
                         " is not f32, bf16 or f16");
}

/// weights[i] = value as the compute dtype (the conversions of kernels/cpu/Cast.h).
template <WeightCopy C>
[[gnu::always_inline]] inline void storeWeight(void *__restrict weights, int64_t i, float value) {
  if constexpr (C == WeightCopy::F32)
    static_cast<float *>(weights)[i] = value;
  else if constexpr (C == WeightCopy::BF16)
    static_cast<uint16_t *>(weights)[i] = floatToBf16(value);
  else if constexpr (C == WeightCopy::F16)
    static_cast<uint16_t *>(weights)[i] = floatToHalf(value);
}

/// Elements [begin, end) of one AdamW step (the header's per-element contract). Inlined into
/// each ISA clone below; every operation is an IEEE one (no contraction: -ffp-contract=off), so
/// the clones compute the same bits at any vector width.
template <WeightCopy C>
[[gnu::always_inline]] inline void adamwRange(const StepScalars &s, float *__restrict master,
                                              float *__restrict m, float *__restrict v,
                                              const float *__restrict grad,
                                              void *__restrict weights, int64_t begin,
                                              int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float g = grad[i] * s.gradScale;
    const float p = master[i] * s.decay;
    const float mi = s.b1 * m[i] + s.c1 * g;
    const float vi = s.b2 * v[i] + s.c2 * (g * g);
    m[i] = mi;
    v[i] = vi;
    const float updated = p - s.stepSize * (mi / (std::sqrt(vi) / s.bc2Sqrt + s.eps));
    master[i] = updated;
    storeWeight<C>(weights, i, updated);
  }
}

/// Elements [begin, end) of writeComputeWeights.
template <WeightCopy C>
[[gnu::always_inline]] inline void convertRange(const float *__restrict master,
                                                void *__restrict weights, int64_t begin,
                                                int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    storeWeight<C>(weights, i, master[i]);
}

// The build targets plain x86-64; AdamW's divisions and square root run twice as wide with
// AVX2 and four times with AVX-512, picked at load time (as kernels/cpu/VectorMath.cpp).
// (noinline keeps GCC from inlining a clone's body into its caller; clang does not inline
// multiversioned functions and refuses the two attributes together.)
#if defined(__clang__)
#define RP_OPTIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RP_OPTIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), noinline))
#endif
#define RP_ADAMW_RANGE(Name, Copy)                                                             \
  RP_OPTIM_CLONES void Name(const StepScalars &s, float *master, float *m, float *v,          \
                            const float *grad, void *weights, int64_t begin, int64_t end) {   \
    adamwRange<Copy>(s, master, m, v, grad, weights, begin, end);                             \
  }
RP_ADAMW_RANGE(adamwPlain, WeightCopy::None)
RP_ADAMW_RANGE(adamwCopyF32, WeightCopy::F32)
RP_ADAMW_RANGE(adamwCopyBF16, WeightCopy::BF16)
RP_ADAMW_RANGE(adamwCopyF16, WeightCopy::F16)
#undef RP_ADAMW_RANGE
RP_OPTIM_CLONES void convertBF16(const float *master, void *weights, int64_t begin, int64_t end) {
  convertRange<WeightCopy::BF16>(master, weights, begin, end);
}
RP_OPTIM_CLONES void convertF16(const float *master, void *weights, int64_t begin, int64_t end) {
  convertRange<WeightCopy::F16>(master, weights, begin, end);
}

/// fn(b, begin, end) for each fixed block b = [begin, end) of `block` elements of [0, n),
/// spread over the OpenMP threads: schedule(static), so that thread t takes the t-th contiguous
/// share of the blocks in every pass of the same n (the share firstTouch gives it), and
/// proc_bind(spread).
template <typename Fn> void forBlocks(int64_t n, int64_t block, const Fn &fn) {
  if (n <= 0)
    return;
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(static) proc_bind(spread) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b)
    fn(b, b * block, std::min(n, (b + 1) * block));
}

using AdamWRangeFn = void (*)(const StepScalars &, float *, float *, float *, const float *,
                              void *, int64_t, int64_t);

/// The step over fixed blocks of kStepBlock elements.
void runAdamW(AdamWRangeFn fn, float *master, float *m, float *v, const float *grad,
              void *weights, int64_t n, const AdamWConfig &config, int64_t step,
              float gradScale) {
  const StepScalars s = stepScalars(config, step, gradScale);
  forBlocks(n, kStepBlock, [&](int64_t, int64_t begin, int64_t end) {
    fn(s, master, m, v, grad, weights, begin, end);
  });
}

/// Lanes of a block's sum of squares (sumOfSquares' contract): element j of a block goes to
/// lane j mod kSumLanes.
constexpr int kSumLanes = 16;

/// A block's running sum of squares: kSumLanes sequential double sums, added in lane order at
/// the end.
struct BlockSquares {
  double lane[kSumLanes] = {};
  double total() const {
    double t = 0.0;
    for (double l : lane)
      t += l;
    return t;
  }
};

/// Adds the squares of x[0, n) to `lane`, x[0] being a lane-0 element of its block (a stretch
/// starting at a multiple of kSumLanes from the block's start). The lanes are independent
/// chains, so the loop runs as kSumLanes / 8 AVX-512, / 4 AVX2 or / 2 SSE2 vector chains, each
/// lane's sum in the same order at any width.
RP_OPTIM_CLONES void addSquares(double *__restrict lane, const float *__restrict x, int64_t n,
                                float scale) {
  double acc[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l)
    acc[l] = lane[l];
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) {
      const double g = static_cast<double>(x[i + l] * scale);
      acc[l] += g * g;
    }
  for (int l = 0; i + l < n; ++l) {
    const double g = static_cast<double>(x[i + l] * scale);
    acc[l] += g * g;
  }
  for (int l = 0; l < kSumLanes; ++l)
    lane[l] = acc[l];
}

/// The block sums of sumOfSquares added in block order.
double sumInOrder(const std::vector<double> &partial) {
  double total = 0.0;
  for (double s : partial)
    total += s;
  return total;
}

} // namespace

void adamwStep(float *master, float *m, float *v, const float *grad, int64_t n,
               const AdamWConfig &config, int64_t step, float gradScale) {
  runAdamW(&adamwPlain, master, m, v, grad, nullptr, n, config, step, gradScale);
}

Status adamwStepWritingWeights(float *master, float *m, float *v, const float *grad, int64_t n,
                               const AdamWConfig &config, int64_t step, float gradScale,
                               DType dtype, void *weights) {
  if (n > 0 && !weights)
    return invalidArgument("adamwStepWritingWeights: null weights");
  const std::optional<WeightCopy> copy = weightCopyOf(dtype);
  if (!copy)
    return unsupportedDType("adamwStepWritingWeights", dtype);
  static constexpr AdamWRangeFn kByCopy[] = {&adamwPlain, &adamwCopyF32, &adamwCopyBF16,
                                             &adamwCopyF16};
  const AdamWRangeFn fn = kByCopy[static_cast<int>(*copy)];
  runAdamW(fn, master, m, v, grad, weights, n, config, step, gradScale);
  return okStatus();
}

void firstTouch(float *x, int64_t n) {
  forBlocks(n, kStepBlock, [&](int64_t, int64_t begin, int64_t end) {
    std::memset(x + begin, 0, static_cast<size_t>(end - begin) * sizeof(float));
  });
}

double sumOfSquares(const float *grad, int64_t n, float scale) {
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(0, n + kSumBlock - 1) /
                                                  kSumBlock));
  forBlocks(n, kSumBlock, [&](int64_t b, int64_t begin, int64_t end) {
    BlockSquares block;
    addSquares(block.lane, grad + begin, end - begin, scale);
    partial[static_cast<size_t>(b)] = block.total();
  });
  return sumInOrder(partial);
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

const char *lrDecayName(LrDecay decay) {
  switch (decay) {
  case LrDecay::Constant:
    return "constant";
  case LrDecay::Cosine:
    return "cosine";
  case LrDecay::Linear:
    return "linear";
  }
  return "?";
}

StatusOr<LrDecay> parseLrDecay(const std::string &name) {
  for (LrDecay d : {LrDecay::Constant, LrDecay::Cosine, LrDecay::Linear})
    if (name == lrDecayName(d))
      return d;
  return invalidArgument("unknown learning-rate schedule '" + name +
                         "' (expected constant, cosine or linear)");
}

double learningRate(const LrSchedule &s, int64_t step) {
  if (s.warmup > 0 && step < s.warmup)
    return static_cast<double>(step + 1) / static_cast<double>(s.warmup) * s.lr;
  if (s.decay == LrDecay::Constant || s.totalSteps <= std::max<int64_t>(s.warmup, 0))
    return s.lr;
  const int64_t from = std::max<int64_t>(s.warmup, 0);
  const double p = step >= s.totalSteps ? 1.0
                                        : static_cast<double>(step - from) /
                                              static_cast<double>(s.totalSteps - from);
  const double kept = s.decay == LrDecay::Cosine
                           ? 0.5 * (1.0 + std::cos(3.14159265358979323846 * p))
                           : 1.0 - p;
  return s.minLr + (s.lr - s.minLr) * kept;
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
/// Elements per chunk of the checked passes: small enough that the check and the squares
/// re-read the chunk from cache, so the pass reads and writes memory once.
constexpr int64_t kCheckBlock = 4096;

/// A pass that writes n floats at `out` (`write(begin, end)` writes out[begin, end)), a chunk
/// of kCheckBlock at a time, each chunk then checked for inf and NaN and, with `squares`,
/// squared: *squares = sumOfSquares(out, n, scale), summed as sumOfSquares sums. `parallel`: the blocks are
/// spread over the OpenMP threads; every result is the same for any thread count. Returns
/// whether every value written is finite.
template <typename Write>
bool checkedPass(float *out, int64_t n, bool parallel, float scale, double *squares,
                 const Write &write) {
  if (squares)
    *squares = 0.0;
  if (n <= 0)
    return true;
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> partial(squares ? static_cast<size_t>(blocks) : 0);
  uint32_t most = 0;
#pragma omp parallel for schedule(static) proc_bind(spread) reduction(max : most) \
    if (parallel && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(n, (b + 1) * kSumBlock);
    BlockSquares block;
    for (int64_t c = b * kSumBlock; c < end; c += kCheckBlock) { // kSumLanes divides kCheckBlock
      const int64_t chunkEnd = std::min(end, c + kCheckBlock);
      write(c, chunkEnd);
      most = std::max(most, maxMagnitudeBits(out + c, chunkEnd - c));
      if (squares)
        addSquares(block.lane, out + c, chunkEnd - c, scale);
    }
    if (squares)
      partial[static_cast<size_t>(b)] = block.total();
  }
  if (squares)
    *squares = sumInOrder(partial);
  return most < kInfinityBits;
}

} // namespace

bool allFinite(const float *x, int64_t n) {
  return n <= 0 || maxMagnitudeBits(x, n) < kInfinityBits;
}

bool copyCheckingFinite(float *dst, const float *src, int64_t n, float scale, double *squares) {
  return checkedPass(dst, n, /*parallel=*/false, scale, squares, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
  });
}

bool addCheckingFinite(float *acc, const float *g, int64_t n, float scale, double *squares) {
  return checkedPass(acc, n, /*parallel=*/true, scale, squares, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      acc[i] = acc[i] + g[i];
  });
}

Status writeComputeWeights(const float *master, DType dtype, void *dst, int64_t n) {
  if (n < 0)
    return invalidArgument("writeComputeWeights: negative element count " + std::to_string(n));
  if (n > 0 && (!master || !dst))
    return invalidArgument("writeComputeWeights: null buffer");
  const std::optional<WeightCopy> copy = weightCopyOf(dtype);
  if (!copy)
    return unsupportedDType("writeComputeWeights", dtype);
  using ConvertFn = void (*)(const float *, void *, int64_t, int64_t);
  static constexpr ConvertFn kByCopy[] = {nullptr, nullptr, &convertBF16, &convertF16};
  const ConvertFn convert = kByCopy[static_cast<int>(*copy)]; // null: f32, a copy
  // adamwStep's blocks and schedule: each thread converts the pages its AdamW updates.
  forBlocks(n, kStepBlock, [&](int64_t, int64_t begin, int64_t end) {
    if (convert)
      convert(master, dst, begin, end);
    else
      std::memcpy(static_cast<float *>(dst) + begin, master + begin,
                  static_cast<size_t>(end - begin) * sizeof(float));
  });
  return okStatus();
}

} // namespace rp::runtime
