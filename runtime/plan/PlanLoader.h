//===- PlanLoader.h - load a compiled plan and its weights ------*- C++ -*-===//
//
// What rp-run does first: read MODEL.rpplan (PlanFile.h: magic, schema version, content hash),
// validate every index, size and offset against the arenas (PlanValidator.h), then read the
// weights file the plan names, beside it, and check that it holds every param with the right
// dtype and shape (Weights.h). Nothing of a plan is used before all of this passed.
//
//===----------------------------------------------------------------------===//

#ifndef RP_RUNTIME_PLAN_PLANLOADER_H
#define RP_RUNTIME_PLAN_PLANLOADER_H

#include "runtime/core/Status.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan.pb.h"

#include <string>

namespace rp::runtime {

/// A validated plan and its initial weights.
struct LoadedPlan {
  rp::plan::Plan plan;
  SafetensorsFile weights;
  std::string planPath;
  std::string weightsPath;
};

/// Reads and validates `planPath` and the weights file it names (resolved in the plan's
/// directory; `weightsPath`, when not empty, overrides it, e.g. a checkpoint). Errors name
/// the file: the plan file's read errors (not found, not a plan, another schema version,
/// corrupted or truncated), the validator's, the weights file's read errors, a missing
/// tensor or a wrong dtype or shape.
StatusOr<LoadedPlan> loadPlan(const std::string &planPath, const std::string &weightsPath = "");

/// A few lines describing a loaded plan: stages, layers, params, arena sizes.
std::string describePlan(const LoadedPlan &loaded);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANLOADER_H
