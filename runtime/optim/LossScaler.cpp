//===- LossScaler.cpp - Dynamic loss scaling for fp16 training ------------===//

#include "runtime/optim/LossScaler.h"

#include <cmath>
#include <string>

namespace rp::runtime {

Status checkLossScaleConfig(const LossScaleConfig &config) {
  if (!config.enabled)
    return okStatus();
  if (!(std::isfinite(config.initScale) && config.initScale > 0))
    return invalidArgument("--loss-scale must be a positive finite number (got " +
                           std::to_string(config.initScale) + ")");
  if (config.growthInterval < 1)
    return invalidArgument("--loss-scale-growth-interval must be at least 1 (got " +
                           std::to_string(config.growthInterval) + ")");
  if (!(config.growth > 1) || !std::isfinite(config.growth) || !(config.backoff > 0) ||
      !(config.backoff < 1))
    return invalidArgument("loss scaling needs a growth factor > 1 and a backoff in (0, 1)");
  return okStatus();
}

LossScaleState nextLossScale(const LossScaleState &state, bool finite,
                             const LossScaleConfig &config) {
  LossScaleState next = state;
  if (!finite) {
    next.scale = state.scale * config.backoff;
    next.goodSteps = 0;
    return next;
  }
  next.goodSteps = state.goodSteps + 1;
  if (next.goodSteps >= config.growthInterval) {
    next.scale = state.scale * config.growth;
    next.goodSteps = 0;
  }
  return next;
}

} // namespace rp::runtime
