//===- FuseRope.cpp - x * cos + rotate(x) * sin -> graph.rope -------------===//
//
// rp-fuse-rope (passes/Graph/BlockFusionPasses.td): matches HF apply_rotary_pos_emb as imported
// (slice/neg/concat/mul/add) at its `graph.add` and replaces it with `graph.rope`; the
// rotation is rotate_half or, interleaved, GPT-J's rotate_every_two (strided slices stacked on
// a new last axis and flattened). The intermediates become dead and the greedy driver erases
// them.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::rp {

#define GEN_PASS_DEF_FUSEROPE
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace graph;

/// Whether `v` is a single-use slice of D / 2 elements of the last dimension (D even) of its
/// input: with `halves`, half `part` (0 or 1) of it, `[part * D/2, (part + 1) * D/2)`; else
/// the elements `part::2` (the first or second of each adjacent pair). Returns the input or
/// null.
Value halfSliceSource(Value v, bool halves, int64_t part) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || !v.hasOneUse())
    return Value();
  RankedTensorType in = slice.getInput().getType();
  int64_t rank = in.getRank();
  if (rank < 1)
    return Value();
  int64_t d = in.getShape().back(), half = d / 2;
  if (d % 2 != 0 || slice.getAxes() != ArrayRef<int64_t>{rank - 1} ||
      slice.getSteps() != ArrayRef<int64_t>{halves ? 1 : 2} ||
      slice.getStarts() != ArrayRef<int64_t>{halves ? part * half : part} ||
      slice.getType().getShape().back() != half)
    return Value();
  return slice.getInput();
}

/// The rotated tensor `x` when `v` is `concat(neg(x2), x1)` (halves of x's last dimension,
/// every intermediate single-use); null otherwise.
Value rotateHalfSource(Value v) {
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || !v.hasOneUse() || concat.getInputs().size() != 2)
    return Value();
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  if (!neg || !neg.getResult().hasOneUse())
    return Value();
  Value x = halfSliceSource(neg.getInput(), /*halves=*/true, 1);
  if (!x || halfSliceSource(concat.getInputs()[1], /*halves=*/true, 0) != x ||
      concat.getAxisAttr().getInt() != cast<RankedTensorType>(x.getType()).getRank() - 1)
    return Value();
  return x;
}

/// `v` without a single-use graph.reshape that appends a unit last dimension (torch.stack's
/// unsqueeze), or null.
Value dropUnitLastDim(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || !v.hasOneUse())
    return Value();
  ArrayRef<int64_t> in = reshape.getInput().getType().getShape(),
                    out = reshape.getType().getShape();
  if (out.size() != in.size() + 1 || out.back() != 1 || out.drop_back() != in)
    return Value();
  return reshape.getInput();
}

/// The rotated tensor `x` when `v` is GPT-J's rotate_every_two(x) as imported:
/// `reshape(concat(unsqueeze(-x[..., 1::2]), unsqueeze(x[..., 0::2]), axis = -1))` back to x's
/// shape (the negation before or after the unsqueeze; every intermediate single-use); null
/// otherwise.
Value rotatePairsSource(Value v) {
  auto flat = v.getDefiningOp<ReshapeOp>();
  if (!flat || !v.hasOneUse())
    return Value();
  auto concat = flat.getInput().getDefiningOp<ConcatOp>();
  if (!concat || !flat.getInput().hasOneUse() || concat.getInputs().size() != 2)
    return Value();
  RankedTensorType stacked = concat.getType();
  if (stacked.getRank() < 2 || stacked.getShape().back() != 2 ||
      concat.getAxisAttr().getInt() != stacked.getRank() - 1)
    return Value();
  // The negated odd elements: neg(unsqueeze(slice)) or unsqueeze(neg(slice)).
  Value first = concat.getInputs()[0], odd;
  if (auto neg = first.getDefiningOp<NegOp>(); neg && first.hasOneUse()) {
    if (Value u = dropUnitLastDim(neg.getInput()))
      odd = halfSliceSource(u, /*halves=*/false, 1);
  } else if (Value u = dropUnitLastDim(first)) {
    auto inner = u.getDefiningOp<NegOp>();
    if (inner && u.hasOneUse())
      odd = halfSliceSource(inner.getInput(), /*halves=*/false, 1);
  }
  Value even = dropUnitLastDim(concat.getInputs()[1]);
  Value x = even ? halfSliceSource(even, /*halves=*/false, 0) : Value();
  if (!odd || odd != x || flat.getType() != x.getType())
    return Value();
  return x;
}

/// The other operand when `mul` has `v` as one operand.
Value otherOperand(MulOp mul, Value v) {
  if (mul.getLhs() == v)
    return mul.getRhs();
  if (mul.getRhs() == v)
    return mul.getLhs();
  return Value();
}

struct FuseRopePattern : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp root, PatternRewriter &rewriter) const override {
    for (auto [p, q] :
         {std::pair(root.getLhs(), root.getRhs()), std::pair(root.getRhs(), root.getLhs())}) {
      auto cosMul = p.getDefiningOp<MulOp>(), sinMul = q.getDefiningOp<MulOp>();
      if (!cosMul || !sinMul || !p.hasOneUse() || !q.hasOneUse())
        continue;
      for (auto [r, sin] : {std::pair(sinMul.getLhs(), sinMul.getRhs()),
                            std::pair(sinMul.getRhs(), sinMul.getLhs())}) {
        Value x = rotateHalfSource(r);
        const bool interleaved = !x;
        if (interleaved)
          x = rotatePairsSource(r);
        if (!x)
          continue;
        Value cos = otherOperand(cosMul, x);
        if (!cos || !ropeTypesMatch(x, cos, sin, root))
          continue;
        rewriter.replaceOpWithNewOp<RopeOp>(root, root.getType(), x, cos, sin,
                                            interleaved ? rewriter.getUnitAttr() : UnitAttr());
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not x * cos + rotate(x) * sin");
  }

  /// What graph.rope's verifier accepts, and no broadcast beyond x's shape.
  static bool ropeTypesMatch(Value x, Value cos, Value sin, AddOp root) {
    auto xt = cast<RankedTensorType>(x.getType());
    auto ct = cast<RankedTensorType>(cos.getType());
    if (ct != sin.getType() || root.getType() != xt || ct.getElementType() != xt.getElementType() ||
        !isa<FloatType>(xt.getElementType()) || ct.getRank() < 1 ||
        ct.getShape().back() != xt.getShape().back())
      return false;
    if (llvm::Error e = checkBroadcastsTo(ct.getShape(), xt.getShape())) {
      llvm::consumeError(std::move(e));
      return false;
    }
    return true;
  }
};

struct FuseRope : impl::FuseRopeBase<FuseRope> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRopePattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
