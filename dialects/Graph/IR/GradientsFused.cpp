//===- GradientsFused.cpp - VJPs of the fused graph ops -------------------===//
//
// Each fused op is differentiated from its composed definition (Ops.td, "Fused ops"), with
// graph ops: the backward pass recomputes what it needs (sigmoid, rotate_half) instead of
// keeping intermediates, as the norms do (docs/DECISIONS.md).
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/VJPBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rp::graph;

// y = silu(a) * u, s = sigmoid(a):
//   da = g * u * (s + a s (1 - s)),  du = g * silu(a).
LogicalResult SwigluOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value a = getGate(), u = getUp();
  Value s = SigmoidOp::create(b, getLoc(), a);
  Value one = v.scalar(getType().getElementType(), 1.0);
  Value dsilu = v.add(s, v.mul(v.mul(a, s), v.sub(one, s)));
  out.push_back(v.mul(v.mul(g, u), dsilu));
  out.push_back(v.mul(g, SiluOp::create(b, getLoc(), a)));
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

/// The transpose of rotate_half (its VJP): concat(u2, -u1).
Value rotateHalfTransposed(VJPBuilder &v, Value u) {
  auto [u1, u2] = halves(v, u);
  return concatLast(v, u2, v.neg(u1));
}

} // namespace

// y = x * cos + rotate_half(x) * sin (rotate_half is linear):
//   dx = g * cos + rotate_half^T(g * sin),
//   dcos = unbroadcast(g * x),  dsin = unbroadcast(g * rotate_half(x)).
LogicalResult RopeOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads, SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value x = getInput(), cos = getCos(), sin = getSin();
  out.push_back(v.add(v.mul(g, cos), rotateHalfTransposed(v, v.mul(g, sin))));
  out.push_back(v.unbroadcast(v.mul(g, x), getCos().getType()));
  out.push_back(v.unbroadcast(v.mul(g, rotateHalf(v, x)), getSin().getType()));
  return success();
}

namespace {

/// k or v `[B, Hkv, S, D]` repeated to `[B, Hq, S, D]` (each head `groups` times in a row,
/// HF repeat_kv).
Value repeatHeads(VJPBuilder &v, Value kv, int64_t groups) {
  if (groups == 1)
    return kv;
  ArrayRef<int64_t> s = VJPBuilder::typeOf(kv).getShape();
  Value e = v.expand(v.reshape(kv, {s[0], s[1], 1, s[2], s[3]}), {s[0], s[1], groups, s[2], s[3]});
  return v.reshape(e, {s[0], s[1] * groups, s[2], s[3]});
}

/// The transpose of repeatHeads: sums each group of `groups` heads.
Value sumHeadGroups(VJPBuilder &v, Value g, int64_t groups) {
  if (groups == 1)
    return g;
  ArrayRef<int64_t> s = VJPBuilder::typeOf(g).getShape();
  Value r = v.reshape(g, {s[0], s[1] / groups, groups, s[2], s[3]});
  return v.sum(r, {2}, /*keepdims=*/false);
}

} // namespace

// Recomputes p = softmax(q k^T * scale + mask) (k, v repeated to the query heads), then
//   dv = p^T g, dp = g v^T, ds = p * (dp - sum_j(dp * p)) * scale, dq = ds k, dk = ds^T q,
// with dk and dv summed over each group of query heads.
LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  RankedTensorType qt = getQuery().getType();
  Type e = qt.getElementType();
  int64_t heads = qt.getDimSize(1), seq = qt.getDimSize(2);
  int64_t groups = heads / getKey().getType().getDimSize(1);
  double scale = getScale().convertToDouble();
  Value q = getQuery();
  Value k = repeatHeads(v, getKey(), groups), val = repeatHeads(v, getValue(), groups);
  Value s = v.scale(MatMulOp::create(b, getLoc(), q, k, false, /*transpose_b=*/true), scale);
  if (getCausal()) {
    auto maskType = RankedTensorType::get({seq, seq}, b.getI1Type());
    SmallVector<bool> keep(seq * seq);
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        keep[i * seq + j] = j <= i;
    Value mask = ConstantOp::create(b, getLoc(), maskType,
                                    DenseElementsAttr::get(maskType, ArrayRef<bool>(keep)));
    s = WhereOp::create(b, getLoc(), mask, s, v.scalar(e, -INFINITY));
  }
  Value p = SoftmaxOp::create(b, getLoc(), s, b.getI64IntegerAttr(3));
  Value dv = MatMulOp::create(b, getLoc(), p, g, /*transpose_a=*/true, false);
  Value dp = MatMulOp::create(b, getLoc(), g, val, false, /*transpose_b=*/true);
  Value ds = v.scale(v.mul(p, v.sub(dp, v.sum(v.mul(dp, p), {3}, /*keepdims=*/true))), scale);
  Value dq = MatMulOp::create(b, getLoc(), ds, k);
  Value dk = MatMulOp::create(b, getLoc(), ds, q, /*transpose_a=*/true, false);
  out.push_back(dq);
  out.push_back(sumHeadGroups(v, dk, groups));
  out.push_back(sumHeadGroups(v, dv, groups));
  return success();
}
