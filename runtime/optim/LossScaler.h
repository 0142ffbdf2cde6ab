//===- LossScaler.h - Dynamic loss scaling for fp16 training ----*- C++ -*-===//
//
// Dynamic loss scaling (Micikevicius et al., "Mixed Precision Training", 2018; the constants of
// torch.amp.GradScaler): the fused tail's backward seed is multiplied by the scale S (so small
// fp16 gradients do not flush to zero), the host divides the accumulated gradient by S before
// clipping and AdamW, and
//   a step whose gradients hold a non-finite value anywhere is skipped (no AdamW on any layer)
//   and S *= backoff (0.5); the count of good steps restarts at 0;
//   after `growthInterval` (2000) consecutive good steps S *= growth (2).
// The state is (scale, goodSteps): checkpoints save it, resumed runs restore it.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_OPTIM_LOSSSCALER_H
#define RP_RUNTIME_OPTIM_LOSSSCALER_H

#include "base/Status.h"

#include <cstdint>

namespace rp::runtime {

struct LossScaleConfig {
  bool enabled = false;
  /// 2^15, the largest power of two an fp16 seed holds (GradScaler starts at 2^16, which
  /// overflows the seed's own cast in an fp16 plan and costs the first step).
  double initScale = 32768.0;
  int64_t growthInterval = 2000;
  double growth = 2.0;
  double backoff = 0.5;
};

/// The scaler's state between steps.
struct LossScaleState {
  double scale = 1.0;
  int64_t goodSteps = 0; ///< Consecutive steps with finite gradients since the last change.
};

/// Checks `config` (enabled only): a positive finite initScale, growthInterval >= 1,
/// growth > 1, 0 < backoff < 1. Errors: InvalidArgument naming the value.
Status checkLossScaleConfig(const LossScaleConfig &config);

/// The state after a step with `finite` gradients, from `state` (see the file comment).
LossScaleState nextLossScale(const LossScaleState &state, bool finite,
                             const LossScaleConfig &config);

} // namespace rp::runtime

#endif // RP_RUNTIME_OPTIM_LOSSSCALER_H
