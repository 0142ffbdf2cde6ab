//===- GradientsShape.cpp - VJPs of the shape and data-movement ops -------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/VJPBuilder.h"

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

/// The cotangent of a float operand, or none for integer/boolean data.
bool wants(Value grad, Value operand) { return grad && VJPBuilder::isFloat(operand); }

} // namespace

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  VJPBuilder v(b, getLoc());
  out.push_back(wants(g[0], getInput()) ? v.reshape(g[0], getInput().getType().getShape())
                                        : Value());
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                    SmallVectorImpl<Value> &out) {
  if (!wants(g[0], getInput())) {
    out.push_back(Value());
    return success();
  }
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  VJPBuilder v(b, getLoc());
  out.push_back(v.transpose(g[0], inverse));
  return success();
}

LogicalResult ExpandOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  VJPBuilder v(b, getLoc());
  out.push_back(wants(g[0], getInput()) ? v.unbroadcast(g[0], getInput().getType()) : Value());
  return success();
}

// Each operand gets its slice of the cotangent along the axis.
LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  int64_t axis = getAxisAttr().getInt(), offset = 0;
  for (Value in : getInputs()) {
    auto t = cast<RankedTensorType>(in.getType());
    int64_t size = t.getDimSize(axis);
    if (wants(g[0], in))
      out.push_back(SliceOp::create(b, getLoc(), g[0], b.getDenseI64ArrayAttr({axis}),
                                    b.getDenseI64ArrayAttr({offset}),
                                    b.getDenseI64ArrayAttr({offset + size}),
                                    b.getDenseI64ArrayAttr({1})));
    else
      out.push_back(Value());
    offset += size;
  }
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  if (!wants(g[0], getInput())) {
    out.push_back(Value());
    return success();
  }
  out.push_back(SliceScatterOp::create(b, getLoc(), getInput().getType(), g[0], getAxesAttr(),
                                       getStartsAttr(), getEndsAttr(), getStepsAttr()));
  return success();
}

// The pieces' cotangents concatenate (zeros for pieces that received none).
LogicalResult SplitOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  if (!VJPBuilder::isFloat(getInput()) || llvm::all_of(g, [](Value x) { return !x; })) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  SmallVector<Value> pieces;
  for (auto [r, grad] : llvm::zip(getResults(), g))
    pieces.push_back(grad ? grad : v.zeros(cast<RankedTensorType>(r.getType())));
  out.push_back(ConcatOp::create(b, getLoc(), pieces, getAxisAttr()));
  return success();
}

LogicalResult GatherOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  if (wants(g[0], getData()))
    out.push_back(ScatterAddOp::create(b, getLoc(), getData().getType(), g[0], getIndices(),
                                       getAxisAttr()));
  else
    out.push_back(Value());
  out.push_back(Value());
  return success();
}

LogicalResult GatherElementsOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                         SmallVectorImpl<Value> &out) {
  if (wants(g[0], getData()))
    out.push_back(ScatterElementsAddOp::create(b, getLoc(), getData().getType(), g[0],
                                               getIndices(), getAxisAttr()));
  else
    out.push_back(Value());
  out.push_back(Value());
  return success();
}

// scatter_elements_add is gather_elements' transpose, and the reverse: each update's cotangent
// is the result cotangent at the element it was added into.
LogicalResult ScatterElementsAddOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                             SmallVectorImpl<Value> &out) {
  if (wants(g[0], getUpdates()))
    out.push_back(GatherElementsOp::create(b, getLoc(), g[0], getIndices(), getAxisAttr()));
  else
    out.push_back(Value());
  out.push_back(Value());
  return success();
}

// Trilu is a fixed mask: its VJP applies the same mask.
LogicalResult TriluOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  if (!wants(g[0], getInput())) {
    out.push_back(Value());
    return success();
  }
  out.push_back(TriluOp::create(b, getLoc(), g[0], getKAttr(), getUpperAttr()));
  return success();
}
