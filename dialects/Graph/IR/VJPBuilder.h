//===- VJPBuilder.h - helpers for the ops' vector-Jacobian products ---*- C++ -*-===//
//
// Internal to dialects/Graph/IR: a small builder used by the GradientOpInterface
// implementations (Gradients*.cpp) to write VJPs as graph ops.
//
//===----------------------------------------------------------------------===//

#ifndef RP_DIALECTS_GRAPH_IR_VJPBUILDER_H
#define RP_DIALECTS_GRAPH_IR_VJPBUILDER_H

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::rp::graph {

/// Builds graph ops at one location.
class VJPBuilder {
public:
  VJPBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &b;
  Location loc;

  static RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }
  static bool isFloat(Value v) { return llvm::isa<FloatType>(typeOf(v).getElementType()); }

  /// A 0-D constant of `element` with `value`.
  Value scalar(Type element, double value);
  /// A splat zero of `type`.
  Value zeros(RankedTensorType type);

  Value add(Value a, Value c) { return AddOp::create(b, loc, a, c); }
  Value sub(Value a, Value c) { return SubOp::create(b, loc, a, c); }
  Value mul(Value a, Value c) { return MulOp::create(b, loc, a, c); }
  Value div(Value a, Value c) { return DivOp::create(b, loc, a, c); }
  Value neg(Value a) { return NegOp::create(b, loc, a); }
  /// `a * value` with a scalar constant.
  Value scale(Value a, double value) { return mul(a, scalar(typeOf(a).getElementType(), value)); }
  Value reshape(Value v, ArrayRef<int64_t> shape);
  Value transpose(Value v, ArrayRef<int64_t> perm);
  /// Swaps the last two dimensions.
  Value transposeLast2(Value v);
  Value cast(Value v, Type element);
  /// `reduce_sum` over `axes` (nothing when empty).
  Value sum(Value v, ArrayRef<int64_t> axes, bool keepdims);
  Value mean(Value v, ArrayRef<int64_t> axes, bool keepdims);
  /// Sums `grad` (of a broadcast result) back to `target`'s shape: the VJP of broadcasting.
  Value unbroadcast(Value grad, RankedTensorType target);
  /// `graph.expand` of `v` to `shape` (nothing when it has that shape).
  Value expand(Value v, ArrayRef<int64_t> shape);
  /// 1 / sqrt(v + eps): the inverse standard deviation of the norms.
  Value rsqrtPlus(Value v, double eps);
  /// 1.0 where `cond` else 0.0, in `element`.
  Value select01(Value cond, Type element);
};

/// Axes `[from, to)`.
SmallVector<int64_t> axesRange(int64_t from, int64_t to);

} // namespace mlir::rp::graph

#endif // RP_DIALECTS_GRAPH_IR_VJPBUILDER_H
