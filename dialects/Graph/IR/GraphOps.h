//===- GraphOps.h - graph dialect ops ---------------------------*- C++ -*-===//

#ifndef RP_DIALECTS_GRAPH_IR_GRAPHOPS_H
#define RP_DIALECTS_GRAPH_IR_GRAPHOPS_H

#include "dialects/Graph/IR/GraphDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/IR/GraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/IR/GraphOps.h.inc"

#endif // RP_DIALECTS_GRAPH_IR_GRAPHOPS_H
