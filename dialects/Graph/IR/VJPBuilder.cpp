//===- VJPBuilder.cpp - helpers for the ops' vector-Jacobian products -----===//

#include "dialects/Graph/IR/VJPBuilder.h"

#include <numeric>

namespace mlir::rp::graph {

SmallVector<int64_t> axesRange(int64_t from, int64_t to) {
  SmallVector<int64_t> axes(std::max<int64_t>(to - from, 0));
  std::iota(axes.begin(), axes.end(), from);
  return axes;
}

Value VJPBuilder::scalar(Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  auto ft = llvm::cast<FloatType>(element);
  APFloat v(value);
  bool lost;
  v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, v));
}

Value VJPBuilder::zeros(RankedTensorType type) {
  Type e = type.getElementType();
  Attribute zero = isa<FloatType>(e) ? Attribute(b.getFloatAttr(e, 0.0))
                                     : Attribute(b.getIntegerAttr(e, 0));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, zero));
}

Value VJPBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc, typeOf(v).clone(shape), v);
}

Value VJPBuilder::transpose(Value v, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, v, b.getDenseI64ArrayAttr(perm));
}

Value VJPBuilder::transposeLast2(Value v) {
  int64_t r = typeOf(v).getRank();
  SmallVector<int64_t> perm = axesRange(0, r);
  std::swap(perm[r - 1], perm[r - 2]);
  return transpose(v, perm);
}

Value VJPBuilder::cast(Value v, Type element) {
  if (typeOf(v).getElementType() == element)
    return v;
  return CastOp::create(b, loc, typeOf(v).clone(element), v);
}

Value VJPBuilder::sum(Value v, ArrayRef<int64_t> axes, bool keepdims) {
  if (axes.empty())
    return v;
  return ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr(axes),
                             keepdims ? b.getUnitAttr() : UnitAttr());
}

Value VJPBuilder::mean(Value v, ArrayRef<int64_t> axes, bool keepdims) {
  if (axes.empty())
    return v;
  return ReduceMeanOp::create(b, loc, v, b.getDenseI64ArrayAttr(axes),
                              keepdims ? b.getUnitAttr() : UnitAttr());
}

Value VJPBuilder::unbroadcast(Value grad, RankedTensorType target) {
  ArrayRef<int64_t> g = typeOf(grad).getShape(), t = target.getShape();
  if (g == t)
    return grad;
  int64_t lead = static_cast<int64_t>(g.size()) - static_cast<int64_t>(t.size());
  SmallVector<int64_t> axes = axesRange(0, lead);
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] == 1 && g[lead + i] != 1)
      axes.push_back(lead + i);
  return reshape(sum(grad, axes, /*keepdims=*/true), t);
}

Value VJPBuilder::expand(Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return ExpandOp::create(b, loc, typeOf(v).clone(shape), v);
}

Value VJPBuilder::rsqrtPlus(Value v, double eps) {
  Value sum = add(v, scalar(typeOf(v).getElementType(), eps));
  return ReciprocalOp::create(b, loc, SqrtOp::create(b, loc, sum));
}

Value VJPBuilder::select01(Value cond, Type element) { return cast(cond, element); }

} // namespace mlir::rp::graph
