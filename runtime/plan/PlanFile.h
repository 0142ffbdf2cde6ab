//===- PlanFile.h - Reading and writing .rpplan files -----------*- C++ -*-===//
//
// A `.rpplan` file is one serialized rp.plan.PlanFile (runtime/plan/plan.proto): an envelope
// with a magic number, the schema version and a content hash, around the serialized Plan. The
// reader checks the envelope before it parses the plan, so a plan of another schema version,
// a file that is not a plan, and a corrupted or truncated plan each get their own message.
//
//   RP_RETURN_IF_ERROR(writePlanFile("model.rpplan", plan));        // rpc-compile
//   RP_ASSIGN_OR_RETURN(rp::plan::Plan plan, readPlanFile(path));   // rp-run
//   RP_RETURN_IF_ERROR(validatePlan(plan));                          // PlanValidator.h
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PLANFILE_H
#define RP_RUNTIME_PLAN_PLANFILE_H

#include "base/Status.h"
#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace rp::runtime {

/// PlanFile.magic: "RPLN" read as a little-endian uint32.
constexpr uint32_t kPlanMagic = 0x4e4c5052;
/// The schema version this build writes and reads. Bump it on any change of plan.proto that
/// an older reader would misread (a new field whose absence means something else, a changed
/// meaning); adding an optional field that defaults to the old behaviour does not need it.
/// 3: shared params (grad offsets, owner steps) and LOSS_SEED buffers (the seed argument).
constexpr uint32_t kSchemaVersion = 3;
/// The largest plan file readPlanFile accepts, in bytes (2 GiB, protobuf's message limit).
constexpr uint64_t kMaxPlanFileBytes = uint64_t(2) << 30;

/// PlanFile.content_hash of the serialized plan `bytes`: 64-bit FNV-1a (offset basis
/// 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t planContentHash(std::string_view bytes);

/// Serializes `plan` deterministically (map entries sorted, so the same plan gives the same
/// bytes and hash), wraps it in the envelope and writes it to `path` atomically
/// (base/AtomicFile.h).
/// Errors: Internal when the plan cannot be serialized (over 2 GiB); Unavailable when the file
/// cannot be written.
Status writePlanFile(const std::string &path, const rp::plan::Plan &plan);

/// Reads `path` and returns its plan, not yet validated (run validatePlan before any use).
/// Errors, each message starting with the path:
///  - NotFound / Unavailable: the file does not exist / cannot be read;
///  - InvalidArgument: larger than 2 GiB; "not an rpc plan file" (wrong magic); "plan schema
///    version 7, this rp-run reads version 1: recompile the model with this rpc-compile";
///  - DataLoss: "the plan file is corrupted or truncated" (the envelope does not parse, or a
///    field is missing), "content hash mismatch: the plan file is corrupted or truncated",
///    or the plan itself does not parse.
StatusOr<rp::plan::Plan> readPlanFile(const std::string &path);

/// The plan in protobuf text format (map entries sorted), for `rpc-compile --emit=plan-text`.
std::string planToText(const rp::plan::Plan &plan);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANFILE_H
