//===- PlanMemoryCheck.cpp - Refuse plans larger than the machine ---------===//

#include "runtime/plan/PlanMemoryCheck.h"

#include "base/FormatBytes.h"

#include <string>

namespace rp::runtime {

// Each field of a validated plan is in [0, kMaxPlanBytes = 2^48]: the sums below stay far
// below 2^64.
uint64_t hostArenaBytes(const rp::plan::Plan &plan) {
  const rp::plan::HostArena &h = plan.host_arena();
  return static_cast<uint64_t>(h.weights()) + 3 * static_cast<uint64_t>(h.state()) +
         static_cast<uint64_t>(h.grads()) + 2 * static_cast<uint64_t>(h.activations());
}

uint64_t deviceArenaBytes(const rp::plan::Plan &plan) {
  const rp::plan::DeviceArena &d = plan.device_arena();
  return static_cast<uint64_t>(d.constants()) + 2 * static_cast<uint64_t>(d.slot()) +
         2 * static_cast<uint64_t>(d.activations()) + static_cast<uint64_t>(d.workspace());
}

Status checkPlanFitsInMemory(const rp::plan::Plan &plan, int hostDeviceArenas,
                             uint64_t limitBytes) {
  if (limitBytes == 0)
    return okStatus();
  const rp::plan::HostArena &h = plan.host_arena();
  const uint64_t host = hostArenaBytes(plan);
  const uint64_t device = deviceArenaBytes(plan);
  const uint64_t arenas = hostDeviceArenas > 0 ? static_cast<uint64_t>(hostDeviceArenas) : 0;
  const uint64_t total = host + arenas * device;
  if (total <= limitBytes)
    return okStatus();
  std::string msg = "the plan needs " + formatBytes(total) + " of host memory (host arena " +
                    formatBytes(host) + ": weights " + formatBytes(static_cast<uint64_t>(h.weights())) +
                    ", 3 x fp32 state " + formatBytes(static_cast<uint64_t>(h.state())) +
                    ", fp32 grads " + formatBytes(static_cast<uint64_t>(h.grads())) +
                    ", 2 x activations " + formatBytes(static_cast<uint64_t>(h.activations()));
  if (arenas > 0)
    msg += "; " + std::to_string(arenas) + " CPU device arena" + (arenas > 1 ? "s" : "") +
           " of " + formatBytes(device);
  msg += "); this machine has " + formatBytes(limitBytes);
  return resourceExhausted(msg);
}

} // namespace rp::runtime
