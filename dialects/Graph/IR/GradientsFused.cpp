//===- GradientsFused.cpp - VJPs of the fused graph ops -------------------===//
//
// Each fused op is differentiated from its composed definition (Ops.td, "Fused ops") into one
// fused VJP op whose kernels recompute what they need (the sigmoid, the scores) instead of
// keeping intermediates, as the norms do (docs/DECISIONS.md): graph.swiglu_vjp,
// graph.rope_vjp (dx; the gradients of cos and sin stay graph ops), graph.attention_vjp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/VJPBuilder.h"

using namespace mlir;
using namespace mlir::rp::graph;

// y = silu(a) * u, s = sigmoid(a):
//   da = g * u * s * (1 + a (1 - s)),  du = g * silu(a) = g * a * s,
// one graph.swiglu_vjp.
LogicalResult SwigluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value()});
    return success();
  }
  Type t = getType();
  auto vjp = SwigluVjpOp::create(b, getLoc(), TypeRange{t, t}, getGate(), getUp(), g);
  out.push_back(vjp.getDgate());
  out.push_back(vjp.getDup());
  return success();
}

namespace {

/// The two halves of the last dimension of `x`.
std::pair<Value, Value> halves(VJPBuilder &v, Value x) {
  RankedTensorType t = VJPBuilder::typeOf(x);
  int64_t axis = t.getRank() - 1, d = t.getShape().back();
  auto half = [&](int64_t start, int64_t end) -> Value {
    return SliceOp::create(v.b, v.loc, x, v.b.getDenseI64ArrayAttr({axis}),
                           v.b.getDenseI64ArrayAttr({start}), v.b.getDenseI64ArrayAttr({end}),
                           v.b.getDenseI64ArrayAttr({1}));
  };
  return {half(0, d / 2), half(d / 2, d)};
}

Value concatLast(VJPBuilder &v, Value first, Value second) {
  int64_t axis = VJPBuilder::typeOf(first).getRank() - 1;
  return ConcatOp::create(v.b, v.loc, ValueRange{first, second}, v.b.getI64IntegerAttr(axis));
}

/// rotate_half(x) = concat(-x2, x1).
Value rotateHalf(VJPBuilder &v, Value x) {
  auto [x1, x2] = halves(v, x);
  return concatLast(v, v.neg(x2), x1);
}

/// `f` applied to the pairs of adjacent elements of x's last dimension: x [.., D] viewed as
/// [.., D / 2, 2], whose halves are the pairs' first and second elements, and back.
template <typename F> Value onPairs(VJPBuilder &v, Value x, F f) {
  ArrayRef<int64_t> shape = VJPBuilder::typeOf(x).getShape();
  SmallVector<int64_t> pairs(shape.drop_back());
  pairs.append({shape.back() / 2, 2});
  return v.reshape(f(v, v.reshape(x, pairs)), shape);
}

/// The rotation of rope: rotate_half, or with `interleaved` the rotation of adjacent pairs
/// (x[2i], x[2i + 1]) -> (-x[2i + 1], x[2i]) (rotate_half on the [.., D / 2, 2] view).
Value rotate(VJPBuilder &v, Value x, bool interleaved) {
  return interleaved ? onPairs(v, x, rotateHalf) : rotateHalf(v, x);
}

} // namespace

// y = x * cos + rotate(x) * sin (rotate_half, or the interleaved pairs' rotation; linear):
//   dx = g * cos + rotate^T(g * sin)  (one graph.rope_vjp),
//   dcos = unbroadcast(g * x),  dsin = unbroadcast(g * rotate(x))  (graph ops; dead where
//   cos and sin are constants, as in every export's rotary tables).
LogicalResult RopeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads, SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value x = getInput();
  const bool pairs = getInterleaved();
  out.push_back(RopeVjpOp::create(b, getLoc(), x.getType(), g, getCos(), getSin(),
                                  getInterleavedAttr()));
  out.push_back(v.unbroadcast(v.mul(g, x), getCos().getType()));
  out.push_back(v.unbroadcast(v.mul(g, rotate(v, x, pairs)), getSin().getType()));
  return success();
}

// The fused backward (graph.attention_vjp, Dao 2023 Algorithm 2): the kernels recompute
// p = softmax(q k^T * scale + mask) row by row from q, k and the forward output y, and form
//   dv = p^T g, dp = g v^T, ds = p * (dp - sum_d(g * y)), dq = scale ds k, dk = scale ds^T q,
// with dk and dv summed over each group of query heads; no [B, Hq, S, S] value is created.
// With attention sinks, also dsinks = -sum_(b, i) p_sink * sum_d(g * y) (Ops.td).
LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Value g = grads[0], sinks = getSinks();
  if (!g) {
    out.append({Value(), Value(), Value()});
    if (sinks)
      out.push_back(Value());
    return success();
  }
  SmallVector<Type> types{getQuery().getType(), getKey().getType(), getValue().getType()};
  if (sinks)
    types.push_back(sinks.getType());
  auto vjp = AttentionVjpOp::create(b, getLoc(), types, getQuery(), getKey(), getValue(),
                                    getResult(), g, sinks, getScaleAttr(), getCausalAttr(),
                                    getWindowAttr(), getSoftcapAttr());
  out.push_back(vjp.getDquery());
  out.push_back(vjp.getDkey());
  out.push_back(vjp.getDvalue());
  if (sinks)
    out.push_back(vjp.getDsinks());
  return success();
}
