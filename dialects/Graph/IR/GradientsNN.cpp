//===- GradientsNN.cpp - VJPs of contractions, reductions, norms, losses --===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "dialects/Graph/IR/VJPBuilder.h"

using namespace mlir;
using namespace mlir::rp::graph;

// Y = op(A) op(B) with numpy.matmul semantics, op the transpose of the last two dimensions
// where the op's flag is set: d op(A) = G op(B)^T and d op(B) = op(A)^T G, transposed back for
// a flagged operand, each written as one matmul whose flags absorb every transpose (no
// graph.transpose is emitted); each is summed over the batch dimensions its operand was
// broadcast along; 1-D operands (never flagged) are promoted and demoted again.
LogicalResult MatMulOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g || !VJPBuilder::isFloat(getLhs())) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  RankedTensorType lt = getLhs().getType(), rt = getRhs().getType();
  Value a = getLhs(), c = getRhs();
  if (lt.getRank() == 1)
    a = v.reshape(a, {1, lt.getDimSize(0)});
  if (rt.getRank() == 1)
    c = v.reshape(c, {rt.getDimSize(0), 1});
  const bool ta = getTransposeA(), tb = getTransposeB();
  llvm::Expected<Shape> full = matmulShape(VJPBuilder::typeOf(a).getShape(),
                                           VJPBuilder::typeOf(c).getShape(), ta, tb);
  if (!full)
    return emitOpError(llvm::toString(full.takeError()));
  Value g2 = v.reshape(g, *full);
  auto mm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return MatMulOp::create(b, getLoc(), x, y, tx, ty);
  };
  // dA = G op(B)^T, or its transpose op(B) G^T when A is flagged.
  Value da = ta ? mm(c, g2, tb, true) : mm(g2, c, false, !tb);
  // dB = op(A)^T G, or its transpose G^T op(A) when B is flagged.
  Value dc = tb ? mm(g2, a, true, ta) : mm(a, g2, !ta, false);
  da = v.unbroadcast(da, VJPBuilder::typeOf(a));
  dc = v.unbroadcast(dc, VJPBuilder::typeOf(c));
  out.push_back(v.reshape(da, lt.getShape()));
  out.push_back(v.reshape(dc, rt.getShape()));
  return success();
}

namespace {

/// The cotangent of a reduction result, reshaped to keepdims form and broadcast to the input.
template <typename OpTy>
Value broadcastBack(VJPBuilder &v, OpTy op, Value g) {
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  SmallVector<int64_t> kept(in);
  for (int64_t a : op.getAxes())
    kept[a] = 1;
  return v.expand(v.reshape(g, kept), in);
}

} // namespace

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  if (!grads[0] || !VJPBuilder::isFloat(getInput())) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  out.push_back(broadcastBack(v, *this, grads[0]));
  return success();
}

LogicalResult ReduceMeanOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  if (!grads[0] || !VJPBuilder::isFloat(getInput())) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= getInput().getType().getDimSize(a);
  out.push_back(v.scale(broadcastBack(v, *this, grads[0]), 1.0 / static_cast<double>(count)));
  return success();
}

// The cotangent goes to the maximal elements, shared evenly among ties (as torch.amax).
LogicalResult ReduceMaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  if (!grads[0] || !VJPBuilder::isFloat(getInput())) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value x = getInput();
  Type e = getInput().getType().getElementType();
  SmallVector<int64_t> kept(getInput().getType().getShape());
  for (int64_t a : getAxes())
    kept[a] = 1;
  Value m = v.reshape(getResult(), kept);
  Value isMax = v.select01(CompareOp::create(b, getLoc(), CompareKind::eq, x, m), e);
  Value count = v.sum(isMax, getAxes(), /*keepdims=*/true);
  out.push_back(v.div(v.mul(isMax, v.reshape(grads[0], kept)), count));
  return success();
}

// y = softmax(x): dx = y * (g - sum(g * y))
LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  if (!grads[0]) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value y = getResult(), g = grads[0];
  int64_t axis = getAxisAttr().getInt();
  Value s = v.sum(v.mul(g, y), {axis}, /*keepdims=*/true);
  out.push_back(v.mul(y, v.sub(g, s)));
  return success();
}

// y_i = sum of x_j over j <= i (j < i: exclusive): dx_j = sum of g_i over i >= j (i > j), the
// cumulative sum in the other direction with the same exclusiveness.
LogicalResult CumSumOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  if (!grads[0] || !VJPBuilder::isFloat(getInput())) {
    out.push_back(Value());
    return success();
  }
  out.push_back(CumSumOp::create(b, getLoc(), grads[0], getAxis(), getExclusive(),
                                 !getReverse()));
  return success();
}

// y = log_softmax(x): dx = g - exp(y) * sum(g)
LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  if (!grads[0]) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value g = grads[0];
  int64_t axis = getAxisAttr().getInt();
  Value p = ExpOp::create(b, getLoc(), getResult());
  out.push_back(v.sub(g, v.mul(p, v.sum(g, {axis}, /*keepdims=*/true))));
  return success();
}

namespace {

/// The part of the layer-norm and RMS-norm VJPs they share, with xhat the normalised input and
/// rstd the inverse (root-mean-square or standard) deviation over `norm`:
///   dxhat = g * scale, dscale = sum_lead(g * xhat),
///   dx = rstd * (dxhat - [mean(dxhat) if centered] - xhat * mean(dxhat * xhat)).
std::pair<Value, Value> normVJP(VJPBuilder &v, Value g, Value scale, Value xhat, Value rstd,
                                ArrayRef<int64_t> norm, ArrayRef<int64_t> lead, bool centered) {
  Value dxhat = v.mul(g, scale);
  Value inner = centered ? v.sub(dxhat, v.mean(dxhat, norm, true)) : dxhat;
  inner = v.sub(inner, v.mul(xhat, v.mean(v.mul(dxhat, xhat), norm, true)));
  return {v.mul(rstd, inner), v.sum(v.mul(g, xhat), lead, false)};
}

} // namespace

// Layer norm over N normalised elements, xhat = (x - mu) * rstd:
//   dbias = sum_lead(g), dscale = sum_lead(g * xhat), dxhat = g * scale,
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value()});
    if (getBias())
      out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value x = getInput();
  int64_t rank = getInput().getType().getRank(), axis = getAxisAttr().getInt();
  SmallVector<int64_t> norm = axesRange(axis, rank), lead = axesRange(0, axis);
  Value mu = v.mean(x, norm, true);
  Value xc = v.sub(x, mu);
  Value var = v.mean(v.mul(xc, xc), norm, true);
  Value rstd = v.rsqrtPlus(var, getEpsilon().convertToDouble());
  Value xhat = v.mul(xc, rstd);
  auto [dx, dscale] = normVJP(v, g, getScale(), xhat, rstd, norm, lead, /*centered=*/true);
  out.append({dx, dscale});
  if (getBias())
    out.push_back(v.sum(g, lead, false));
  return success();
}

// RMS norm, xhat = x * r, r = 1 / sqrt(mean(x^2) + eps):
//   dscale = sum_lead(g * xhat), dx = r * (dxhat - xhat * mean(dxhat * xhat)), dxhat = g * scale,
// as one graph.rms_norm_vjp (dx and g * xhat, its kernels recomputing r) and the sum over the
// leading dimensions.
LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  RankedTensorType t = getInput().getType();
  auto vjp = RmsNormVjpOp::create(b, getLoc(), TypeRange{t, t}, getInput(), getScale(), g,
                                  getAxisAttr(), getEpsilonAttr());
  out.append({vjp.getDinput(),
              v.sum(vjp.getDscaleRows(), axesRange(0, getAxisAttr().getInt()), false)});
  return success();
}

// Softmax cross-entropy: dlogits = (softmax(logits) - onehot(labels)) * keep * g / count
// (count = number of kept labels for `mean`, 1 for `sum`; a count of 0 divides by 1, so that
// all-ignored labels give zero gradients); labels get no cotangent.
LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  RankedTensorType lt = getLogits().getType(), yt = getLabels().getType();
  Type e = lt.getElementType(), idx = yt.getElementType();
  int64_t rank = lt.getRank(), classes = lt.getDimSize(1);
  // labels [N, d...] -> [N, 1, d...]; classes [C] -> [1, C, 1...]
  SmallVector<int64_t> labelShape(yt.getShape());
  labelShape.insert(labelShape.begin() + 1, 1);
  Value labels = v.reshape(getLabels(), labelShape);
  auto classType = RankedTensorType::get({classes}, idx);
  Value range = RangeOp::create(b, getLoc(), classType, b.getI64IntegerAttr(0),
                                b.getI64IntegerAttr(classes), b.getI64IntegerAttr(1));
  SmallVector<int64_t> classShape(rank, 1);
  classShape[1] = classes;
  Value onehot = v.select01(
      CompareOp::create(b, getLoc(), CompareKind::eq, labels, v.reshape(range, classShape)), e);
  auto ignoreType = RankedTensorType::get({}, idx);
  Value ignore = ConstantOp::create(
      b, getLoc(), ignoreType,
      DenseElementsAttr::get(ignoreType, b.getIntegerAttr(idx, getIgnoreIndexAttr().getInt())));
  Value keep = v.select01(
      LogicalNotOp::create(b, getLoc(),
                           CompareOp::create(b, getLoc(), CompareKind::eq, labels, ignore)),
      e);
  Value p = SoftmaxOp::create(b, getLoc(), getLogits(), b.getI64IntegerAttr(1));
  Value scale = g;
  if (getReduction() == LossReduction::mean) {
    // count + (count == 0): a batch whose labels are all ignored gets zero gradients (as
    // PyTorch's nll_loss backward), not 0 * g / 0 = NaN; any other count is unchanged.
    Value count = v.sum(keep, axesRange(0, rank), false);
    Value none = v.select01(
        CompareOp::create(b, getLoc(), CompareKind::eq, count, v.scalar(e, 0.0)), e);
    scale = v.div(g, v.add(count, none));
  }
  out.push_back(v.mul(v.mul(v.sub(p, onehot), keep), scale));
  out.push_back(Value());
  return success();
}
