//===- PlanMemoryCheck.h - Refuse plans larger than the machine --*- C++ -*-===//
//
// A plan states every byte a run needs before anything is allocated (plan.proto HostArena and
// DeviceArena), so rp-run can refuse a plan that cannot fit, with the sizes, instead of dying
// in the allocator or being killed by the OOM killer half-way (docs/FUZZING.md, "Path safety
// and limits").
//
//   RP_RETURN_IF_ERROR(checkPlanFitsInMemory(plan, /*hostDeviceArenas=*/workers));
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PLANMEMORYCHECK_H
#define RP_RUNTIME_PLAN_PLANMEMORYCHECK_H

#include "base/Status.h"
#include "base/SystemMemory.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>

namespace rp::runtime {

/// The host arena of a run of `plan`, bytes: weights + 4 fp32 state regions (master weights,
/// AdamW moments, gradients) + 2 activation regions (runtime/exec/HostArena.h).
uint64_t hostArenaBytes(const rp::plan::Plan &plan);

/// One device arena of `plan`, bytes: constants + 2 slots + 2 activation regions + workspace.
uint64_t deviceArenaBytes(const rp::plan::Plan &plan);

/// Checks, before any allocation, that the host arena plus `hostDeviceArenas` device arenas
/// (the CPU backend keeps one per worker in host memory; 0 for a GPU backend) fit in
/// `limitBytes` (default: physicalMemoryBytes(); no check when that is 0).
/// Errors: ResourceExhausted "the plan needs 96.0 GiB of host memory (host arena 64.0 GiB:
/// weights ..., state ..., activations ...; 2 CPU device arenas of 16.0 GiB); this machine has
/// 24.0 GiB". Sizes must come from a validated plan (each at most kMaxPlanBytes).
Status checkPlanFitsInMemory(const rp::plan::Plan &plan, int hostDeviceArenas,
                             uint64_t limitBytes = physicalMemoryBytes());

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANMEMORYCHECK_H
