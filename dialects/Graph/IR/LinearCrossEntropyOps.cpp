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
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

/// hidden [N, H], weight [V, H] of hidden's element type, labels [N], a 0-D `loss` of the
/// element type, a non-negative chunk_rows, and (when present) a bias [V] of the element type.
LogicalResult verifyLinearLoss(Operation *op, RankedTensorType hidden, RankedTensorType weight,
                               RankedTensorType labels, RankedTensorType loss,
                               std::optional<int64_t> chunkRows, Value bias) {
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
  if (bias) {
    auto b = cast<RankedTensorType>(bias.getType());
    if (b.getRank() != 1 || b.getDimSize(0) != weight.getDimSize(0) ||
        b.getElementType() != hidden.getElementType())
      return op->emitOpError("expected bias of shape [")
             << weight.getDimSize(0) << "] and element type " << hidden.getElementType()
             << ", got " << b;
  }
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
    moveLossUsersAfterVjp(op, rewriter); // a loss that adds a term before the VJP runs
    LinearCrossEntropyVjpOp vjp = findOnePassVjp(op);
    if (!vjp)
      return failure();
    rewriter.replaceOp(op, vjp.getLoss());
    return success();
  }
};

} // namespace

namespace {

/// A linear_cross_entropy_vjp of `op`'s block on the same operands and attributes (in any
/// position), or null.
LinearCrossEntropyVjpOp matchingVjp(LinearCrossEntropyOp op, bool requireUsesFollow) {
  for (Operation *user : op.getHidden().getUsers()) {
    auto vjp = dyn_cast<LinearCrossEntropyVjpOp>(user);
    if (vjp && vjp->getBlock() == op->getBlock() && vjp.getHidden() == op.getHidden() &&
        vjp.getWeight() == op.getWeight() && vjp.getLabels() == op.getLabels() &&
        vjp.getBias() == op.getBias() &&
        vjp.getReduction() == op.getReduction() && vjp.getIgnoreIndex() == op.getIgnoreIndex() &&
        vjp.getLoss().getType() == op.getType() && (!requireUsesFollow || usesFollow(op, vjp)))
      return vjp;
  }
  return nullptr;
}

} // namespace

LinearCrossEntropyVjpOp mlir::rp::graph::findOnePassVjp(LinearCrossEntropyOp op) {
  return matchingVjp(op, /*requireUsesFollow=*/true);
}

bool mlir::rp::graph::moveLossUsersAfterVjp(LinearCrossEntropyOp op, RewriterBase &rewriter) {
  LinearCrossEntropyVjpOp vjp = matchingVjp(op, /*requireUsesFollow=*/false);
  if (!vjp || usesFollow(op, vjp))
    return false;
  // The ops of the block that depend on the loss, transitively (through nested regions too).
  Block *block = op->getBlock();
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work{op.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || ancestor->hasTrait<OpTrait::IsTerminator>() || !slice.insert(ancestor))
        continue;
      llvm::append_range(work, ancestor->getResults());
    }
  }
  if (slice.contains(vjp.getOperation()))
    return false;
  SmallVector<Operation *> moved(slice.begin(), slice.end());
  llvm::sort(moved, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  Operation *after = vjp;
  for (Operation *o : moved)
    if (o->isBeforeInBlock(vjp)) {
      rewriter.moveOpAfter(o, after);
      after = o;
    }
  return true;
}

LogicalResult LinearCrossEntropyOp::verify() {
  return verifyLinearLoss(*this, getHidden().getType(), getWeight().getType(),
                          getLabels().getType(), getType(), getChunkRows(), getBias());
}

void LinearCrossEntropyOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                       MLIRContext *context) {
  results.add<ForwardIntoVjp>(context);
}

LogicalResult LinearCrossEntropyVjpOp::verify() {
  RankedTensorType hidden = getHidden().getType(), weight = getWeight().getType();
  if (failed(verifyLinearLoss(*this, hidden, weight, getLabels().getType(), getLoss().getType(),
                              getChunkRows(), getBias())))
    return failure();
  if (static_cast<bool>(getBias()) != static_cast<bool>(getDbias()))
    return emitOpError("expected a dbias result exactly when there is a bias");
  if (getBias() && getDbias().getType() != getBias().getType())
    return emitOpError("expected dbias of type ")
           << getBias().getType() << ", got " << getDbias().getType();
  if (getSeed().getType() != getLoss().getType())
    return emitOpError("expected a seed of the loss's type ")
           << getLoss().getType() << ", got " << getSeed().getType();
  if (getDhidden().getType() != hidden || getDweight().getType() != weight)
    return emitOpError("expected dhidden of type ")
           << hidden << " and dweight of type " << weight << ", got " << getDhidden().getType()
           << " and " << getDweight().getType();
  return success();
}

// loss = cross_entropy(h W^T [+ bias], y): one graph.linear_cross_entropy_vjp gives dh, dW
// (and dbias).
LogicalResult LinearCrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                             SmallVectorImpl<Value> &out) {
  Value g = grads[0], bias = getBias();
  if (!g) {
    out.append({Value(), Value(), Value()});
    if (bias)
      out.push_back(Value());
    return success();
  }
  SmallVector<Type> types{getType(), getHidden().getType(), getWeight().getType()};
  if (bias)
    types.push_back(bias.getType());
  auto vjp = LinearCrossEntropyVjpOp::create(b, getLoc(), types, getReductionAttr(), getHidden(),
                                             getWeight(), getLabels(), g, bias,
                                             getIgnoreIndexAttr(), getChunkRowsAttr());
  out.append({vjp.getDhidden(), vjp.getDweight(), Value()});
  if (bias)
    out.push_back(vjp.getDbias());
  return success();
}
