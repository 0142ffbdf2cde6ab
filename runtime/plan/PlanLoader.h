//===- PlanLoader.h - load a compiled plan and its weights ------*- C++ -*-===//
//
// What rp-run does first: read MODEL.rpplan (PlanFile.h: magic, schema version, content hash),
// validate every index, size and offset against the arenas (PlanValidator.h), then read the
// headers of the weights file the plan names, beside it (or the model's external data ranges
// the plan lists when it has no weights file; or of --weights: a file, a sharded
// checkpoint, a directory; runtime/io/WeightSource.h), and check that they hold every param
// with the right dtype and shape (Weights.h). The weights' data is read later, when the host
// arena is filled. Nothing of a plan is used before all of this passed.
//
//===----------------------------------------------------------------------===//

#ifndef RP_RUNTIME_PLAN_PLANLOADER_H
#define RP_RUNTIME_PLAN_PLANLOADER_H

#include "base/Status.h"
#include "runtime/io/WeightSource.h"
#include "runtime/plan/plan.pb.h"

#include <string>

namespace rp::runtime {

/// A validated plan and its initial weights.
struct LoadedPlan {
  rp::plan::Plan plan;
  WeightSource weights; ///< Headers only: HostArena::loadWeights reads the data.
  std::string planPath;
  std::string weightsPath;
};

/// Reads and validates `planPath` and the weights file it names (resolved in the plan's
/// directory), or, for a plan without one, the external data ranges it lists
/// (WeightSource::fromExternal); `weightsPath`, when not empty, overrides either: a
/// checkpoint, or a Hugging Face checkpoint as WeightSource::open takes it. Errors name the file: the plan file's read
/// errors (not found, not a plan, another schema version, corrupted or truncated), the
/// validator's, the weights' read errors (WeightSource::open), a missing tensor, a wrong dtype
/// or shape, and tensors no param names unless `allowExtraWeights` (validateWeights).
StatusOr<LoadedPlan> loadPlan(const std::string &planPath, const std::string &weightsPath = "",
                              bool allowExtraWeights = false);

/// A few lines describing a loaded plan: stages, layers, params, arena sizes.
std::string describePlan(const LoadedPlan &loaded);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANLOADER_H
