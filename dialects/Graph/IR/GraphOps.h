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

namespace mlir {
class RewriterBase;
} // namespace mlir

namespace mlir::rp::graph {

/// The one-pass `linear_cross_entropy_vjp` that also computes `op`'s loss: an op of the same
/// block on the same hidden, weight and labels with the same reduction and ignore_index,
/// before every use of `op`'s loss; null when there is none. Replacing `op`'s loss by its
/// loss result changes no value (chunk_rows does not change the result) and saves the
/// logits' second computation (the canonicalizer does it; rp-split-gradient does it before
/// splitting a gradient function, where the two would land in different functions).
LinearCrossEntropyVjpOp findOnePassVjp(LinearCrossEntropyOp op);

/// Makes findOnePassVjp(op) succeed where the only obstacle is order: when a VJP of the same
/// block matches `op` (operands and attributes as findOnePassVjp) but some users of `op`'s
/// loss come before it (a loss that adds another term, e.g. a router's load-balancing loss,
/// to the cross-entropy before the VJP of the sum runs), moves every op that depends on the
/// loss (its forward slice in the block, the terminator excepted) right after the VJP, in
/// block order. Nothing moves, and false is returned, when the VJP itself depends on the loss
/// or there is no such VJP. Moving an op later keeps its operands dominating it. The moves go
/// through `rewriter` (the canonicalizer's, or an IRRewriter).
bool moveLossUsersAfterVjp(LinearCrossEntropyOp op, RewriterBase &rewriter);

} // namespace mlir::rp::graph

#endif // RP_DIALECTS_GRAPH_IR_GRAPHOPS_H
