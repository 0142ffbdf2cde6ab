//===- LinearCrossEntropyOps.cpp - graph.linear_cross_entropy(_vjp) -------===//
//
// The verifiers of the fused LM-head loss and its one-pass VJP, the forward op's VJP, and the
// canonicalization that lets a `_train` function compute the head once: a forward op whose
// VJP op on the same operands exists (later in the same block, before every use of the
// forward's loss) is replaced by that op's `loss` result.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

/// hidden [N, H], weight [V, H] of hidden's element type, labels [N], a 0-D `loss` of the
/// element type, a non-negative chunk_rows.
LogicalResult verifyLinearLoss(Operation *op, RankedTensorType hidden, RankedTensorType weight,
                               RankedTensorType labels, RankedTensorType loss,
                               std::optional<int64_t> chunkRows) {
  if (hidden.getRank() != 2)
    return op->emitOpError("expected hidden of rank 2 [N, H], got ") << hidden;
  if (weight.getRank() != 2 || weight.getDimSize(1) != hidden.getDimSize(1))
    return op->emitOpError("expected weight of shape [V, ")
           << hidden.getDimSize(1) << "], got " << formatShape(weight.getShape());
  if (weight.getElementType() != hidden.getElementType())
    return op->emitOpError("expected weight element type ")
           << hidden.getElementType() << ", got " << weight.getElementType();
  if (labels.getRank() != 1 || labels.getDimSize(0) != hidden.getDimSize(0))
    return op->emitOpError("expected labels of shape [")
           << hidden.getDimSize(0) << "], got " << formatShape(labels.getShape());
  if (loss.getRank() != 0 || loss.getElementType() != hidden.getElementType())
    return op->emitOpError("expected a 0-D loss of ")
           << hidden.getElementType() << ", got " << loss;
  if (chunkRows && *chunkRows < 0)
    return op->emitOpError("expected chunk_rows >= 0, got ") << *chunkRows;
  return success();
}

/// The forward's uses all come after `vjp` in its block (or there are none).
bool usesFollow(LinearCrossEntropyOp op, Operation *vjp) {
  Block *block = vjp->getBlock();
  for (Operation *user : op->getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || !vjp->isBeforeInBlock(ancestor))
      return false;
  }
  return true;
}

/// linear_cross_entropy(h, W, y) with linear_cross_entropy_vjp(h, W, y, seed) in the same
/// block: the forward's loss is the VJP's (findOnePassVjp).
struct ForwardIntoVjp : OpRewritePattern<LinearCrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearCrossEntropyOp op, PatternRewriter &rewriter) const override {
    LinearCrossEntropyVjpOp vjp = findOnePassVjp(op);
    if (!vjp)
      return failure();
    rewriter.replaceOp(op, vjp.getLoss());
    return success();
  }
};

} // namespace

LinearCrossEntropyVjpOp mlir::rp::graph::findOnePassVjp(LinearCrossEntropyOp op) {
  for (Operation *user : op.getHidden().getUsers()) {
    auto vjp = dyn_cast<LinearCrossEntropyVjpOp>(user);
    if (vjp && vjp->getBlock() == op->getBlock() && vjp.getHidden() == op.getHidden() &&
        vjp.getWeight() == op.getWeight() && vjp.getLabels() == op.getLabels() &&
        vjp.getReduction() == op.getReduction() && vjp.getIgnoreIndex() == op.getIgnoreIndex() &&
        vjp.getLoss().getType() == op.getType() && usesFollow(op, vjp))
      return vjp;
  }
  return nullptr;
}

LogicalResult LinearCrossEntropyOp::verify() {
  return verifyLinearLoss(*this, getHidden().getType(), getWeight().getType(),
                          getLabels().getType(), getType(), getChunkRows());
}

void LinearCrossEntropyOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                       MLIRContext *context) {
  results.add<ForwardIntoVjp>(context);
}

LogicalResult LinearCrossEntropyVjpOp::verify() {
  RankedTensorType hidden = getHidden().getType(), weight = getWeight().getType();
  if (failed(verifyLinearLoss(*this, hidden, weight, getLabels().getType(), getLoss().getType(),
                              getChunkRows())))
    return failure();
  if (getSeed().getType() != getLoss().getType())
    return emitOpError("expected a seed of the loss's type ")
           << getLoss().getType() << ", got " << getSeed().getType();
  if (getDhidden().getType() != hidden || getDweight().getType() != weight)
    return emitOpError("expected dhidden of type ")
           << hidden << " and dweight of type " << weight << ", got " << getDhidden().getType()
           << " and " << getDweight().getType();
  return success();
}

// loss = cross_entropy(h W^T, y): one graph.linear_cross_entropy_vjp gives dh and dW.
LogicalResult LinearCrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                             SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  auto vjp = LinearCrossEntropyVjpOp::create(
      b, getLoc(), TypeRange{getType(), getHidden().getType(), getWeight().getType()},
      getReductionAttr(), getHidden(), getWeight(), getLabels(), g, getIgnoreIndexAttr(),
      getChunkRowsAttr());
  out.append({vjp.getDhidden(), vjp.getDweight(), Value()});
  return success();
}
