//===- GradientsShape.cpp - VJPs of the shape and data-movement ops -------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/VJPBuilder.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

#include <type_traits>

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

// scatter_add is gather's transpose, and the reverse.
LogicalResult ScatterAddOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  if (wants(g[0], getUpdates()))
    out.push_back(GatherOp::create(b, getLoc(), g[0], getIndices(), getAxisAttr()));
  else
    out.push_back(Value());
  out.push_back(Value());
  return success();
}

/// Whether the constant `indices` of an overwriting scatter never select one element twice
/// (no update is overwritten by a later one): along `axis` of a dimension of `size`, each line
/// along the axis on its own (`perLine`: scatter_elements) or all positions (scatter).
static bool distinctConstantTargets(Value indices, int64_t size, int64_t axis, bool perLine) {
  DenseElementsAttr attr;
  if (!matchPattern(indices, m_Constant(&attr)))
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(indices.getType()).getShape();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; perLine && d < shape.size(); ++d)
    inner *= shape[d];
  const int64_t length = perLine ? shape[axis] : 1;
  llvm::DenseSet<int64_t> seen;
  int64_t p = 0;
  for (const APInt &v : attr.getValues<APInt>()) {
    int64_t t = v.getSExtValue();
    t = t < 0 ? t + size : t;
    const int64_t line = perLine ? (p / (length * inner)) * inner + p % inner : 0;
    ++p;
    if (!seen.insert(line * size + t).second)
      return false;
  }
  return true;
}

/// The VJP of an overwriting scatter (scatter, scatter_elements: ScatterOp) whose forward
/// gather is `Gather`. The data's cotangent is g with the overwritten elements zeroed (the same
/// scatter of zeros into g); an update's is the gather of g at its target when it is the one
/// that lands there (the last of its target, as the kernels write), else 0. Which one lands
/// is computed by scattering the positions' numbers (a graph.range) and gathering them back;
/// constant indices that never repeat a target need no such mask.
template <typename ScatterOp, typename Gather>
static LogicalResult overwriteVJP(ScatterOp op, OpBuilder &b, ArrayRef<Value> g,
                                  SmallVectorImpl<Value> &out) {
  constexpr bool elements = std::is_same_v<ScatterOp, ScatterElementsOp>;
  Value grad = g[0], indices = op.getIndices();
  VJPBuilder v(b, op.getLoc());
  if (wants(grad, op.getData())) {
    Value zeros = v.zeros(op.getUpdates().getType());
    out.push_back(ScatterOp::create(b, op.getLoc(), grad, indices, zeros, op.getAxisAttr()));
  } else {
    out.push_back(Value());
  }
  out.push_back(Value());
  if (!wants(grad, op.getUpdates())) {
    out.push_back(Value());
    return success();
  }
  Value gathered = Gather::create(b, op.getLoc(), grad, indices, op.getAxisAttr());
  const int64_t axis = op.getAxisAttr().getInt();
  RankedTensorType data = op.getData().getType(), updates = op.getUpdates().getType();
  const int64_t size = data.getDimSize(axis);
  if (distinctConstantTargets(indices, size, axis, elements)) {
    out.push_back(gathered);
    return success();
  }
  // ids: each index position's number; winners: the number that lands on each target (-1:
  // none), over data's shape (scatter_elements) or the indexed dimension alone (scatter).
  ArrayRef<int64_t> is = VJPBuilder::typeOf(indices).getShape();
  auto i64 = b.getI64Type();
  const int64_t count = VJPBuilder::typeOf(indices).getNumElements();
  Value range = RangeOp::create(b, op.getLoc(), RankedTensorType::get({count}, i64),
                                b.getI64IntegerAttr(0), b.getI64IntegerAttr(count),
                                b.getI64IntegerAttr(1));
  Value ids = v.reshape(range, is);
  auto winnersType = RankedTensorType::get(
      elements ? data.getShape() : ArrayRef<int64_t>{size}, i64);
  Value none = ConstantOp::create(b, op.getLoc(), winnersType,
                                  DenseElementsAttr::get(winnersType, b.getI64IntegerAttr(-1)));
  IntegerAttr winnerAxis = elements ? op.getAxisAttr() : b.getI64IntegerAttr(0);
  Value winners = ScatterOp::create(b, op.getLoc(), none, indices, ids, winnerAxis);
  Value mine = Gather::create(b, op.getLoc(), winners, indices, winnerAxis);
  Value lands = CompareOp::create(b, op.getLoc(), CompareKind::eq, mine, ids);
  // Broadcast over the updates: scatter's updates are data[:axis] + indices + data[axis+1:].
  SmallVector<int64_t> maskShape(elements ? 0 : axis, 1);
  maskShape.append(is.begin(), is.end());
  maskShape.resize(updates.getRank(), 1);
  Value zero = v.scalar(updates.getElementType(), 0.0);
  out.push_back(WhereOp::create(b, op.getLoc(), v.reshape(lands, maskShape), gathered, zero));
  return success();
}

LogicalResult ScatterOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return overwriteVJP<ScatterOp, GatherOp>(*this, b, g, out);
}

LogicalResult ScatterElementsOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                          SmallVectorImpl<Value> &out) {
  return overwriteVJP<ScatterElementsOp, GatherElementsOp>(*this, b, g, out);
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
