//===- ExportPasses.h - the compiler's plan-export passes -------*- C++ -*-===//
//
// rp-export-plan (compiler/ExportPasses.td): writes the plan of a memory-planned module. It
// lives here, not in passes/, because it calls the plan exporter (PlanExport.h).
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_EXPORTPASSES_H
#define RP_COMPILER_EXPORTPASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::rp {

#define GEN_PASS_DECL
#include "compiler/ExportPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/ExportPasses.h.inc"

} // namespace mlir::rp

#endif // RP_COMPILER_EXPORTPASSES_H
