//===- GraphDialect.h - the graph dialect -----------------------*- C++ -*-===//

#ifndef RP_DIALECTS_GRAPH_IR_GRAPHDIALECT_H
#define RP_DIALECTS_GRAPH_IR_GRAPHDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/Graph/IR/GraphDialect.h.inc"
#include "dialects/Graph/IR/GraphEnums.h.inc"

#endif // RP_DIALECTS_GRAPH_IR_GRAPHDIALECT_H
