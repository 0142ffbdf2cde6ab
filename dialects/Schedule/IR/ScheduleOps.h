//===- ScheduleOps.h - schedule dialect ops ---------------------*- C++ -*-===//

#ifndef RP_DIALECTS_SCHEDULE_IR_SCHEDULEOPS_H
#define RP_DIALECTS_SCHEDULE_IR_SCHEDULEOPS_H

#include "dialects/Schedule/IR/ScheduleDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::rp::schedule {
class LayerOp;
class HostBufferOp;
class StageOp;
class OptimizerStepOp;
} // namespace mlir::rp::schedule

#define GET_OP_CLASSES
#include "dialects/Schedule/IR/ScheduleOps.h.inc"

#endif // RP_DIALECTS_SCHEDULE_IR_SCHEDULEOPS_H
