//===- Dialect.cpp - graph dialect registration ---------------------------===//

#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rp::graph;

#include "dialects/Graph/IR/GraphDialect.cpp.inc"
#include "dialects/Graph/IR/GraphEnums.cpp.inc"
#include "dialects/Graph/IR/GraphInterfaces.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/IR/GraphOps.cpp.inc"
      >();
}

/// Folders that produce an elements attribute (constant folding, `graph.constant`'s own folder)
/// are materialised as `graph.constant`.
Operation *GraphDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
