//===- RoutedExpertOps.cpp - graph.moe_* and graph.grouped_matmul(_wgrad) ===//
//
// Type inference (the shape rules, with the verifier's messages) and the VJPs of the routed-
// experts ops (Ops.td, "Routed experts"). The VJPs are written with the same ops: a grouped
// matmul's gradients are grouped matmuls, the dispatch's is a combine with unit weights.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "dialects/Graph/IR/VJPBuilder.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

RankedTensorType tensorOf(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

/// Reports `message` as an error of op `OpTy` at `loc`.
template <typename OpTy>
LogicalResult fail(std::optional<Location> loc, const Twine &message) {
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ", message.str());
}

std::string shapeText(RankedTensorType t) { return formatShape(t.getShape()); }

/// `t` is [E + 1] for some E >= 1: returns E, or -1.
int64_t expertsOf(RankedTensorType offsets) {
  if (offsets.getRank() != 1 || offsets.getDimSize(0) < 2)
    return -1;
  return offsets.getDimSize(0) - 1;
}

/// Rows [R, K] and something else of the same element type.
template <typename OpTy>
LogicalResult sameElement(std::optional<Location> loc, RankedTensorType a, RankedTensorType b,
                          StringRef what) {
  if (a.getElementType() == b.getElementType())
    return success();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "expected " << what << " to have the element type " << a.getElementType() << ", got "
     << b.getElementType();
  return fail<OpTy>(loc, text);
}

} // namespace

LogicalResult MoeSortOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType idx = tensorOf(adaptor.getIndices());
  if (!idx)
    return failure();
  if (idx.getRank() != 2)
    return fail<MoeSortOp>(loc, "expected indices of rank 2 [T, k], got " + shapeText(idx));
  int64_t e = adaptor.getNumExperts();
  if (e < 1)
    return fail<MoeSortOp>(loc, "expected num_experts >= 1, got " + Twine(e));
  Type i64 = IntegerType::get(ctx, 64);
  results.push_back(RankedTensorType::get(idx.getShape(), i64));
  results.push_back(RankedTensorType::get({e + 1}, i64));
  return success();
}

LogicalResult MoeDispatchOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType x = tensorOf(adaptor.getInput()), pos = tensorOf(adaptor.getPositions());
  if (!x || !pos)
    return failure();
  if (x.getRank() != 2)
    return fail<MoeDispatchOp>(loc, "expected input of rank 2 [T, H], got " + shapeText(x));
  if (pos.getRank() != 2 || pos.getDimSize(0) != x.getDimSize(0))
    return fail<MoeDispatchOp>(loc, "expected positions of shape [" + Twine(x.getDimSize(0)) +
                                        ", k], got " + shapeText(pos));
  results.push_back(RankedTensorType::get(
      {pos.getDimSize(0) * pos.getDimSize(1), x.getDimSize(1)}, x.getElementType()));
  return success();
}

LogicalResult MoeCombineOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType rows = tensorOf(adaptor.getRows()), w = tensorOf(adaptor.getWeights()),
                   pos = tensorOf(adaptor.getPositions());
  if (!rows || !w || !pos)
    return failure();
  if (rows.getRank() != 2)
    return fail<MoeCombineOp>(loc, "expected rows of rank 2 [T * k, N], got " + shapeText(rows));
  if (pos.getRank() != 2 || pos.getDimSize(0) * pos.getDimSize(1) != rows.getDimSize(0))
    return fail<MoeCombineOp>(loc, "expected positions [T, k] with T * k = " +
                                       Twine(rows.getDimSize(0)) + " (rows), got " +
                                       shapeText(pos));
  if (w.getShape() != pos.getShape())
    return fail<MoeCombineOp>(loc, "expected weights of shape " + shapeText(pos) +
                                       " (positions), got " + shapeText(w));
  if (failed(sameElement<MoeCombineOp>(loc, rows, w, "weights")))
    return failure();
  results.push_back(
      RankedTensorType::get({pos.getDimSize(0), rows.getDimSize(1)}, rows.getElementType()));
  return success();
}

LogicalResult GroupedMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType rows = tensorOf(adaptor.getRows()), w = tensorOf(adaptor.getWeights()),
                   off = tensorOf(adaptor.getOffsets());
  if (!rows || !w || !off)
    return failure();
  if (rows.getRank() != 2)
    return fail<GroupedMatMulOp>(loc, "expected rows of rank 2 [R, K], got " + shapeText(rows));
  int64_t e = expertsOf(off);
  if (e < 0)
    return fail<GroupedMatMulOp>(loc, "expected offsets of shape [E + 1] with E >= 1, got " +
                                          shapeText(off));
  const bool tb = adaptor.getTransposeB();
  const int64_t k = rows.getDimSize(1);
  if (w.getRank() != 3 || w.getDimSize(0) != e || w.getDimSize(tb ? 2 : 1) != k)
    return fail<GroupedMatMulOp>(loc, "expected weights of shape " +
                                          Twine(tb ? "[" + Twine(e) + ", N, " + Twine(k) + "]"
                                                   : "[" + Twine(e) + ", " + Twine(k) + ", N]") +
                                          ", got " + shapeText(w));
  if (failed(sameElement<GroupedMatMulOp>(loc, rows, w, "weights")))
    return failure();
  results.push_back(RankedTensorType::get({rows.getDimSize(0), w.getDimSize(tb ? 1 : 2)},
                                          rows.getElementType()));
  return success();
}

LogicalResult GroupedMatMulWgradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &results) {
  RankedTensorType a = tensorOf(adaptor.getLhs()), c = tensorOf(adaptor.getRhs()),
                   off = tensorOf(adaptor.getOffsets());
  if (!a || !c || !off)
    return failure();
  if (a.getRank() != 2 || c.getRank() != 2 || a.getDimSize(0) != c.getDimSize(0))
    return fail<GroupedMatMulWgradOp>(loc, "expected lhs [R, K] and rhs [R, N], got " +
                                               shapeText(a) + " and " + shapeText(c));
  int64_t e = expertsOf(off);
  if (e < 0)
    return fail<GroupedMatMulWgradOp>(
        loc, "expected offsets of shape [E + 1] with E >= 1, got " + shapeText(off));
  if (failed(sameElement<GroupedMatMulWgradOp>(loc, a, c, "rhs")))
    return failure();
  results.push_back(
      RankedTensorType::get({e, a.getDimSize(1), c.getDimSize(1)}, a.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// VJPs
//===----------------------------------------------------------------------===//

// d input[t] = sum_j d rows[positions[t, j]]: a combine with unit weights.
LogicalResult MoeDispatchOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                      SmallVectorImpl<Value> &out) {
  if (!g[0]) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  auto pos = cast<RankedTensorType>(getPositions().getType());
  Type elt = getInput().getType().getElementType();
  Value ones = v.expand(v.scalar(elt, 1.0), pos.getShape());
  out.push_back(MoeCombineOp::create(b, getLoc(), g[0], ones, getPositions()));
  out.push_back(Value());
  return success();
}

// d rows[positions[t, j]] = w[t, j] * g[t]; d w[t, j] = <g[t], rows[positions[t, j]]>.
LogicalResult MoeCombineOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  if (!g[0]) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  Location loc = getLoc();
  ArrayRef<int64_t> ps = getPositions().getType().getShape();
  const int64_t t = ps[0], k = ps[1], pairs = t * k;
  const int64_t n = getRows().getType().getDimSize(1);
  // Row positions[t, j] of a [T * k, 1] dispatch of the pairs' weights holds w[t, j].
  Value pairPos = v.reshape(getPositions(), {pairs, 1});
  Value wRows = MoeDispatchOp::create(b, loc, v.reshape(getWeights(), {pairs, 1}), pairPos);
  out.push_back(v.mul(MoeDispatchOp::create(b, loc, g[0], getPositions()), wRows));
  Value picked = GatherOp::create(b, loc, getRows(), v.reshape(getPositions(), {pairs}),
                                  b.getI64IntegerAttr(0));
  Value prod = v.mul(v.reshape(picked, {t, k, n}), v.reshape(g[0], {t, 1, n}));
  out.push_back(v.sum(prod, {2}, false));
  out.push_back(Value());
  return success();
}

// d rows = g op(W_e)^T per segment; d W_e = rows_e^T g_e (or g_e^T rows_e when transposed).
LogicalResult GroupedMatMulOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                        SmallVectorImpl<Value> &out) {
  if (!g[0]) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  Location loc = getLoc();
  const bool tb = getTransposeB();
  out.push_back(GroupedMatMulOp::create(b, loc, g[0], getWeights(), getOffsets(), !tb));
  out.push_back(tb ? GroupedMatMulWgradOp::create(b, loc, g[0], getRows(), getOffsets())
                   : GroupedMatMulWgradOp::create(b, loc, getRows(), g[0], getOffsets()));
  out.push_back(Value());
  return success();
}

// result_e = lhs_e^T rhs_e: d lhs_e = rhs_e G_e^T, d rhs_e = lhs_e G_e.
LogicalResult GroupedMatMulWgradOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                             SmallVectorImpl<Value> &out) {
  if (!g[0]) {
    out.append({Value(), Value(), Value()});
    return success();
  }
  Location loc = getLoc();
  out.push_back(GroupedMatMulOp::create(b, loc, getRhs(), g[0], getOffsets(), true));
  out.push_back(GroupedMatMulOp::create(b, loc, getLhs(), g[0], getOffsets(), false));
  out.push_back(Value());
  return success();
}
