//===- Dialect.cpp - schedule dialect registration ------------------------===//

#include "dialects/Schedule/IR/ScheduleDialect.h"
#include "dialects/Schedule/IR/ScheduleOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rp::schedule;

#include "dialects/Schedule/IR/ScheduleDialect.cpp.inc"
#include "dialects/Schedule/IR/ScheduleEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Schedule/IR/ScheduleAttrs.cpp.inc"

FailureOr<llvm::APFloat> mlir::rp::schedule::parseDouble(AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  return llvm::APFloat(value);
}

std::string mlir::rp::schedule::formatDouble(double v) {
  // The shortest %g form that reads back to the same double (17 digits always do).
  std::string text;
  for (int digits = 1; digits <= 17; ++digits) {
    text = llvm::formatv("{0}", llvm::format("%.*g", digits, v)).str();
    if (std::strtod(text.c_str(), nullptr) == v)
      break;
  }
  // An MLIR float literal needs a '.' before any exponent: "1e-08" reads back as "1.0e-08".
  if (!std::isfinite(v) || text.find('.') != std::string::npos)
    return text;
  size_t exponent = text.find_first_of("eE");
  text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  return text;
}

void mlir::rp::schedule::printDouble(AsmPrinter &printer, const llvm::APFloat &value) {
  printer << formatDouble(value.convertToDouble());
}

void ScheduleDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Schedule/IR/ScheduleAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Schedule/IR/ScheduleOps.cpp.inc"
      >();
}
