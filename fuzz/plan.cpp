//===- plan.cpp - Fuzz target: .rpplan reader and plan validator -----------===//
//
// The first input byte picks what the rest is:
//  - even: a whole .rpplan file (envelope included), read as rp-run reads it;
//  - odd: a serialized Plan, wrapped in a correct envelope (magic, schema version, content
//    hash) so that mutations reach the plan parser and the validator instead of stopping at
//    the hash check.
// A plan that reads is validated; a valid one is also described (rp-run --check's summary),
// its inputs derived (PlanInputs.h) and its host memory checked against the machine
// (checkPlanFitsInMemory), exactly what rp-run does before it allocates anything, and its
// plan report made as text and JSON (rp-run --report, --report-json).
// Seeds: every .rpplan the lit tests compile (scripts/fuzz.sh).

#include "fuzz/FuzzScratch.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanInputs.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanReport.h"
#include "runtime/plan/PlanValidator.h"

#include <google/protobuf/stubs/logging.h>

using namespace rp::runtime;
using namespace rp::base;

// Protobuf logs every string field with invalid UTF-8 to stderr; rejecting them is expected.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const rp::fuzz::Scratch &scratch = rp::fuzz::scratch();
  std::string path;
  if (data[0] % 2 == 0) {
    path = scratch.write("model.rpplan", data + 1, size - 1);
  } else {
    const std::string bytes(reinterpret_cast<const char *>(data + 1), size - 1);
    rp::plan::PlanFile file;
    file.set_magic(kPlanMagic);
    file.set_schema_version(kSchemaVersion);
    file.set_content_hash(planContentHash(bytes));
    file.set_plan(bytes);
    path = scratch.write("model.rpplan", file.SerializeAsString());
  }
  StatusOr<rp::plan::Plan> plan = readPlanFile(path);
  if (!plan.ok() || !validatePlan(*plan).ok())
    return 0;
  LoadedPlan loaded;
  loaded.planPath = path;
  loaded.plan = std::move(*plan);
  (void)describePlan(loaded);
  (void)analyzeInputs(loaded.plan);
  (void)checkPlanFitsInMemory(loaded.plan, /*workers=*/2);
  const PlanReport report = computePlanReport(loaded.plan);
  (void)formatPlanReport(report, loaded.plan);
  (void)formatPlanReportJson(report, loaded.plan);
  return 0;
}
