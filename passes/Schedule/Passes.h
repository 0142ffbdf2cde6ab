//===- Passes.h - schedule passes -------------------------------*- C++ -*-===//
//
// The passes from a grouped graph module to a verified RoundPipe plan (Passes.td); their
// enum-valued options are in OptionEnums.h.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_SCHEDULE_PASSES_H
#define RP_PASSES_SCHEDULE_PASSES_H

#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Schedule/IR/ScheduleDialect.h"
#include "passes/Schedule/OptionEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::rp {

#define GEN_PASS_DECL
#include "passes/Schedule/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Schedule/Passes.h.inc"

} // namespace mlir::rp

#endif // RP_PASSES_SCHEDULE_PASSES_H
