//===- OpFolders.cpp - graph dialect folders ------------------------------===//
//
// Identity folds only: they never change a value, only remove ops that compute their operand
// (x + 0, x * 1, reshape of reshape, transpose of transpose, ...). A fold that would let
// broadcasting grow the operand does not apply: the result type must equal the operand type.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

/// Whether `attr` is a splat elements attribute whose value is `value` (integer or float).
bool isSplatOf(Attribute attr, int64_t value) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type element = splat.getElementType();
  if (isa<FloatType>(element))
    return splat.getSplatValue<APFloat>().isExactlyValue(static_cast<double>(value));
  if (isa<IntegerType>(element))
    return splat.getSplatValue<APInt>().getSExtValue() == value;
  return false;
}

/// `lhs op c -> lhs` when c is the splat `identity` and the result keeps lhs's type.
OpFoldResult foldRightIdentity(Value lhs, Attribute rhs, Type resultType, int64_t identity) {
  if (lhs.getType() == resultType && isSplatOf(rhs, identity))
    return lhs;
  return {};
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 0);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1);
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  return foldRightIdentity(getLhs(), adaptor.getRhs(), getType(), 1);
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

// floor is idempotent.
OpFoldResult FloorOp::fold(FoldAdaptor) {
  if (getInput().getDefiningOp<FloorOp>())
    return getInput();
  return {};
}

OpFoldResult LogicalNotOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<LogicalNotOp>())
    return inner.getInput();
  return {};
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto cond = dyn_cast_if_present<SplatElementsAttr>(adaptor.getCondition());
  if (!cond)
    return {};
  Value chosen = cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  if (chosen.getType() == getType())
    return chosen;
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// Reductions over size-1 dimensions with keepdims compute their input.
template <typename OpTy>
static OpFoldResult foldTrivialReduce(OpTy op) {
  if (op.getInput().getType() == op.getType())
    return op.getInput();
  return {};
}
OpFoldResult ReduceSumOp::fold(FoldAdaptor) { return foldTrivialReduce(*this); }
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) { return foldTrivialReduce(*this); }
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) { return foldTrivialReduce(*this); }

// An inclusive cumulative sum over a dimension of size 1 is its input.
OpFoldResult CumSumOp::fold(FoldAdaptor) {
  int64_t axis = getAxisAttr().getInt();
  if (!getExclusive() && axis < getType().getRank() && getType().getDimSize(axis) == 1)
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  // reshape(reshape(x)) -> reshape(x): only element order matters, and it is row-major.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    if (getInput().getType() == getType())
      return getInput();
    return getResult();
  }
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [i, v] : llvm::enumerate(p))
      if (v != static_cast<int64_t>(i))
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  // transpose(transpose(x, inner), outer) = transpose(x, inner[outer[i]]).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    if (isIdentity(composed))
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  // With unit steps, a slice of the input's own type starts at 0 and keeps everything.
  if (getInput().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  return {};
}
