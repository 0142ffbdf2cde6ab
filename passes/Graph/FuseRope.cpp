//===- FuseRope.cpp - x * cos + rotate_half(x) * sin -> graph.rope ---------===//
//
// rp-fuse-rope (passes/Graph/BlockFusionPasses.td): matches HF apply_rotary_pos_emb as imported
// (slice/neg/concat/mul/add) at its `graph.add` and replaces it with `graph.rope`; the
// intermediates become dead and the greedy driver erases them.
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

/// Whether `v` is a single-use unit-step slice of `[start, start + d/2)` of the last dimension
/// of its input; returns the input or null.
Value halfSliceSource(Value v, bool second) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || !v.hasOneUse())
    return Value();
  RankedTensorType in = slice.getInput().getType();
  int64_t rank = in.getRank();
  if (rank < 1)
    return Value();
  int64_t d = in.getShape().back(), half = d / 2;
  if (d % 2 != 0 || slice.getAxes() != ArrayRef<int64_t>{rank - 1} ||
      slice.getSteps() != ArrayRef<int64_t>{1} ||
      slice.getStarts() != ArrayRef<int64_t>{second ? half : 0} ||
      slice.getEnds() != ArrayRef<int64_t>{second ? d : half})
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
  Value x = halfSliceSource(neg.getInput(), /*second=*/true);
  if (!x || halfSliceSource(concat.getInputs()[1], /*second=*/false) != x ||
      concat.getAxisAttr().getInt() != cast<RankedTensorType>(x.getType()).getRank() - 1)
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
        if (!x)
          continue;
        Value cos = otherOperand(cosMul, x);
        if (!cos || !ropeTypesMatch(x, cos, sin, root))
          continue;
        rewriter.replaceOpWithNewOp<RopeOp>(root, root.getType(), x, cos, sin);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not x * cos + rotate_half(x) * sin");
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
