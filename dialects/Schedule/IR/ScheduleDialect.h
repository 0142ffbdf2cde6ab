//===- ScheduleDialect.h - the schedule dialect -----------------*- C++ -*-===//

#ifndef RP_DIALECTS_SCHEDULE_IR_SCHEDULEDIALECT_H
#define RP_DIALECTS_SCHEDULE_IR_SCHEDULEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Attributes.h"
#include "llvm/ADT/APFloat.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include <string>

#include "dialects/Schedule/IR/ScheduleDialect.h.inc"

namespace mlir::rp::schedule {
/// A floating-point attribute parameter: parsed as a float literal, printed in the shortest
/// form that reads back to the same double.
FailureOr<llvm::APFloat> parseDouble(AsmParser &parser);
void printDouble(AsmPrinter &printer, const llvm::APFloat &value);
/// `v` in the shortest form that reads back to the same double, always with a '.' as MLIR's
/// float literals need ("0.001", "1.0", "1.0e-08"); used by the printer and in messages.
std::string formatDouble(double v);
} // namespace mlir::rp::schedule
#include "dialects/Schedule/IR/ScheduleEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Schedule/IR/ScheduleAttrs.h.inc"

#endif // RP_DIALECTS_SCHEDULE_IR_SCHEDULEDIALECT_H
