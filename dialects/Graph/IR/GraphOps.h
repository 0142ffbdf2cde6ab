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

namespace mlir::rp::graph {

/// The one-pass `linear_cross_entropy_vjp` that also computes `op`'s loss: an op of the same
/// block on the same hidden, weight and labels with the same reduction and ignore_index,
/// before every use of `op`'s loss; null when there is none. Replacing `op`'s loss by its
/// loss result changes no value (chunk_rows does not change the result) and saves the
/// logits' second computation (the canonicalizer does it; rp-split-gradient does it before
/// splitting a gradient function, where the two would land in different functions).
LinearCrossEntropyVjpOp findOnePassVjp(LinearCrossEntropyOp op);

} // namespace mlir::rp::graph

#endif // RP_DIALECTS_GRAPH_IR_GRAPHOPS_H
