//===- AdamW.h - AdamW on fp32 master weights ------------------*- C++ -*-===//
//
// The host-side optimizer of RoundPipe training: fp32 master weights and AdamW moments live in
// host memory; each step consumes the gradients accumulated over M micro-batches, clipped by
// the global norm, and writes the compute-dtype weights the devices run with.
//
//   double ss = 0;
//   for (each param) ss += sumOfSquares(grad, n, 1.0f / M);
//   float scale = clippedGradScale(ss, maxNorm, M, step + 1)  (float(clipFactor(sqrt(ss)) / M))
//   AdamWConfig c{learningRate(schedule, step), 0.9, 0.95, 1e-8, 0.1};
//   for (each param) adamwStep(master, m, v, grad, n, c, step + 1, scale);
//
// Every pass streams memory, so the executor makes as few as it can: a param's sumOfSquares
// comes from the pass that wrote its gradient (copyCheckingFinite, addCheckingFinite), and
// sync updates write the compute weights inside AdamW's pass (adamwStepWritingWeights).
// bench/optimizer/rp-bench-optimizer measures each pass against the memory's speed.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_OPTIM_ADAMW_H
#define RP_RUNTIME_OPTIM_ADAMW_H

#include "base/DType.h"
#include "base/Status.h"

#include <cstdint>
#include <string>

namespace rp::runtime {

/// AdamW hyper-parameters (the names of torch.optim.AdamW).
struct AdamWConfig {
  double lr;          ///< Learning rate of this step (see learningRate).
  double beta1;       ///< First-moment decay, e.g. 0.9.
  double beta2;       ///< Second-moment decay, e.g. 0.95 or 0.999.
  double eps;         ///< Added to the bias-corrected sqrt(v), e.g. 1e-8.
  double weightDecay; ///< Decoupled weight decay, e.g. 0.1 (0: plain Adam).
};

/// One AdamW step (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", alg. 2;
/// the formula of torch.optim.AdamW's single-tensor path) on n fp32 elements, in place on
/// master (the fp32 weights), m and v (the moments, zero before step 1).
///
/// Bit-exact contract (another implementation, e.g. a CUDA one, must follow it): the scalars
/// are computed once in double and rounded to float:
///   decay = float(1 - lr * wd)      b1 = float(beta1)   c1 = float(1 - beta1)
///   stepSize = float(lr / (1 - beta1^t))                b2 = float(beta2)   c2 = float(1 - beta2)
///   bc2Sqrt = float(sqrt(1 - beta2^t))                  epsF = float(eps)
/// (beta^t is std::pow(beta, double(t))); then per element, in float, each operation rounded
/// (no fused multiply-add; this file is built with -ffp-contract=off), in this order:
///   g = grad[i] * gradScale
///   p = master[i] * decay
///   m[i] = b1 * m[i] + c1 * g                 (b1*m and c1*g first, then the sum)
///   v[i] = b2 * v[i] + c2 * (g * g)
///   master[i] = p - stepSize * (m[i] / (sqrtf(v[i]) / bc2Sqrt + epsF))
/// `step` t >= 1 is the 1-based count of steps applied to this tensor (t < 1 is a programmer
/// error: 1 - beta1^0 divides by zero). gradScale: e.g. clipFactor / M for the mean over M
/// micro-batches. Runs on OpenMP threads over fixed-size blocks (thread t takes the t-th
/// contiguous share of them: schedule(static), proc_bind(spread)), one loop per instruction set
/// (AVX-512, AVX2, x86-64) picked at load time; elementwise IEEE operations, so the results do
/// not depend on the thread count or the vector width. n <= 0 does nothing. The arrays must
/// not overlap.
void adamwStep(float *master, float *m, float *v, const float *grad, int64_t n,
               const AdamWConfig &config, int64_t step, float gradScale);

/// adamwStep that writes, in the same pass, the updated master weights into `weights` as
/// `dtype`: F32 copies the float, BF16 and F16 round to nearest even (writeComputeWeights'
/// bits), while the value is in registers (the fused form of kernels/cuda/AdamW.h, whose
/// contract it shares). master, m and v come out exactly as adamwStep leaves them. One pass
/// instead of two: 30 bytes moved per element for bf16 instead of 28 + 6. `weights` must not
/// overlap the other arrays. Errors: InvalidArgument for another dtype, or a null `weights`
/// with n > 0.
Status adamwStepWritingWeights(float *master, float *m, float *v, const float *grad, int64_t n,
                               const AdamWConfig &config, int64_t step, float gradScale,
                               DType dtype, void *weights);

/// Zeroes n floats with adamwStep's distribution of blocks over the OpenMP threads, so that
/// the thread that first touches a page is the one whose AdamW updates it: with bound threads
/// on a machine of several memory nodes (OMP_PLACES), each page of the optimizer state lands
/// on the node of the core that streams it. Zeroing alike elsewhere.
void firstTouch(float *x, int64_t n);

/// The sum over i of (g * g) in double, with g = double(float(grad[i] * scale)) (the float g
/// adamwStep sees for gradScale == scale), in this order: the elements in fixed blocks of 65536
/// (on OpenMP threads); inside a block, 16 lanes, element j of the block added to lane j mod 16
/// (each lane a sequential sum from 0: 16 independent chains, which vectorise), then the lanes
/// in lane order; then the block sums in block order from 0. The same value for any thread
/// count and vector width. 0 for n <= 0. The global norm is sqrt of the sum over every
/// parameter.
/// copyCheckingFinite and addCheckingFinite compute the same value in the pass that writes
/// the gradient, so that the norm needs no pass of its own.
double sumOfSquares(const float *grad, int64_t n, float scale);

/// The clip factor of torch.nn.utils.clip_grad_norm_: min(1, maxNorm / (globalNorm + 1e-6));
/// 1 when maxNorm <= 0 (clipping off). A NaN norm gives NaN and an infinite norm gives 0, so
/// the caller should check the norm is finite before stepping.
double clipFactor(double globalNorm, double maxNorm);

/// The gradScale of a step with clipping: clipFactor(sqrt(sumSquares), maxNorm) / microBatches,
/// sumSquares being the sum of sumOfSquares over every trainable param (at scale
/// 1 / microBatches). Errors: Internal when the global norm is not finite (a gradient overflowed
/// or is NaN: the run diverged), naming the 1-based `step`; nothing should be updated then.
StatusOr<float> clippedGradScale(double sumSquares, double maxNorm, int64_t microBatches,
                                 int64_t step);

/// How the learning rate decays after the warmup (rp-run and rp-ref --lr-schedule).
enum class LrDecay { Constant, Cosine, Linear };

/// "constant", "cosine", "linear".
const char *lrDecayName(LrDecay decay);
/// Parses "constant", "cosine" or "linear". Errors: InvalidArgument naming the text.
StatusOr<LrDecay> parseLrDecay(const std::string &name);

/// A run's learning-rate schedule: a linear warmup to the peak `lr` over `warmup` steps, then
/// `decay` from lr down to `minLr` over the steps [warmup, totalSteps).
struct LrSchedule {
  double lr = 0;           ///< Peak learning rate.
  int64_t warmup = 0;      ///< Linear warmup steps.
  LrDecay decay = LrDecay::Constant;
  double minLr = 0;        ///< The floor the decay ends at (cosine, linear).
  int64_t totalSteps = 0;  ///< The run's total step count: the decay's end.
};

/// Learning rate at 0-based `step` (computed in double, the same in rp-run and rp-ref):
///   step < warmup                 (step + 1) / warmup * lr (lr / warmup at step 0)
///   constant                      lr
///   cosine, linear                with p = (step - warmup) / (totalSteps - warmup), in [0, 1)
///                                 (1 at and beyond totalSteps; the decay starts at the peak):
///     cosine                      minLr + (lr - minLr) * (1 + cos(pi * p)) / 2
///     linear                      minLr + (lr - minLr) * (1 - p)
/// The schedules of transformers' get_cosine_schedule_with_warmup / get_linear_schedule_with_
/// warmup with a floor. warmup <= 0: no warmup; totalSteps <= warmup: no decay (lr).
double learningRate(const LrSchedule &schedule, int64_t step);

/// Folds one micro-batch's fp32 gradient into the accumulator: acc = g when `first`
/// (micro-batch 0), else acc[i] = acc[i] + g[i] in float, element by element. The rule the
/// pipelined executor (the CPU backend's `accumulate`, and the sum of a shared param's
/// readers' gradients) and the non-pipelined reference (rp-ref --train) share, so their sums
/// agree bit for bit. n <= 0 does nothing.
void accumulateGradient(float *acc, const float *g, int64_t n, bool first);

/// Non-finite gradients (a step is skipped whole when any of its gradients is inf or NaN,
/// docs/DECISIONS.md, "Non-finite gradients"). The check rides on a pass the step makes
/// anyway, never on a pass of its own: the download of a gradient slot (copyCheckingFinite, the
/// CPU backend; the CUDA backend flags on the device), the sum of a shared param's readers
/// (addCheckingFinite) and the data-parallel sum's copy back (copyCheckingFinite).
///
/// True when every one of the n floats at `x` is finite (exponent bits not all ones).
bool allFinite(const float *x, int64_t n);
/// dst[i] = src[i] for i < n (memcpy); true when every value is finite. n <= 0: true. One
/// thread (the CPU backend's download queue calls it). With `squares`, also sets *squares to
/// sumOfSquares(dst, n, scale), bit for bit, from the same pass: the gradient norm's share of
/// this gradient.
bool copyCheckingFinite(float *dst, const float *src, int64_t n, float scale = 1.0f,
                        double *squares = nullptr);
/// acc[i] = acc[i] + g[i] in float (accumulateGradient's sum, bit for bit); true when every sum
/// is finite (an overflow of two finite values included). n <= 0: true. On OpenMP threads over
/// sumOfSquares' fixed blocks: the same bits and the same answer for any thread count. With
/// `squares`, *squares = sumOfSquares(acc, n, scale) of the sums, from the same pass.
bool addCheckingFinite(float *acc, const float *g, int64_t n, float scale = 1.0f,
                       double *squares = nullptr);

/// Writes n fp32 master values to `dst` as `dtype`: F32 copies the bytes; BF16 and F16 round to
/// nearest even (kernels/cpu/Cast.h, the same conversion as the CUDA cast kernels).
/// Errors: InvalidArgument for another dtype, n < 0, or a null pointer with n > 0.
Status writeComputeWeights(const float *master, DType dtype, void *dst, int64_t n);

} // namespace rp::runtime

#endif // RP_RUNTIME_OPTIM_ADAMW_H
