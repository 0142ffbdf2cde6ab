//===- FuseLinearCrossEntropy.cpp - LM head + loss to one fused op --------===//
//
// rp-fuse-linear-cross-entropy: graph.cross_entropy of the logits of a linear head,
// `reshape(matmul(h, transpose(W)))` as both exporters write `lm_head(h)` followed by the
// loss (untied heads read `lm_head.weight`, tied ones the embedding), becomes one
// graph.linear_cross_entropy, whose kernels never hold the [N, V] logits. A biased head
// (Phi: `add(matmul(...), bias [V])`, either operand order) becomes its `bias` operand. Logits
// scaled by a one-element constant (Cohere's `logits * logit_scale`, Granite's
// `logits / logits_scaling`) fuse with the scale moved onto the head's input (and its bias):
// (h W^T + b) * c = (h * c) W^T + b * c, an op on [N, H] (and [V]) instead of [N, V].
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"
#include "passes/Graph/FusionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::rp {

#define GEN_PASS_DEF_FUSELINEARCROSSENTROPY
#include "passes/Graph/Passes.h.inc"

namespace {

using graph::AddOp;
using graph::CrossEntropyOp;
using graph::DivOp;
using graph::LinearCrossEntropyOp;
using graph::MatMulOp;
using graph::MulOp;
using graph::ReshapeOp;
using graph::TransposeOp;

/// The head weight `[V, H]` the matmul reads transposed: `transpose(W) {permutation = [1, 0]}`
/// as its rhs, or W itself with `transpose_b`; null otherwise.
Value headWeight(MatMulOp mm) {
  if (mm.getTransposeA())
    return {};
  Value rhs = mm.getRhs();
  if (mm.getTransposeB())
    return cast<RankedTensorType>(rhs.getType()).getRank() == 2 ? rhs : Value();
  auto t = rhs.getDefiningOp<TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  return t.getInput();
}

/// `add(z, bias)` or `add(bias, z)` with a bias of shape [vocab] (broadcast over the rows):
/// sets `bias` and returns z; otherwise returns `value` and leaves `bias` null.
Value stripBias(Value value, int64_t vocab, Value &bias, SmallVectorImpl<Operation *> &inner) {
  auto add = value.getDefiningOp<AddOp>();
  if (!add)
    return value;
  for (int side = 0; side < 2; ++side) {
    Value b = add->getOperand(side), z = add->getOperand(1 - side);
    auto bt = cast<RankedTensorType>(b.getType());
    if (bt.getRank() == 1 && bt.getDimSize(0) == vocab && z.getType() == add.getType() &&
        z.getDefiningOp<MatMulOp>()) {
      bias = b;
      inner.push_back(add);
      return z;
    }
  }
  return value;
}

/// A logit scale: `mul(z, c)`, `mul(c, z)` or `div(z, c)` with `c` a one-element float
/// constant (rank 0 or all dims 1) of the logits' element type.
struct LogitScale {
  Value constant;
  bool divide = false;
};

/// Strips a logit scale from `value` (recorded in `scale`, its op in `inner`) and returns what
/// it scales; otherwise returns `value` and leaves `scale` empty.
Value stripScale(Value value, LogitScale &scale, SmallVectorImpl<Operation *> &inner) {
  auto oneElement = [&](Value c) {
    auto t = cast<RankedTensorType>(c.getType());
    return fusion::splatFloat(c).has_value() && t.getNumElements() == 1 &&
           t.getElementType() == cast<RankedTensorType>(value.getType()).getElementType();
  };
  if (auto div = value.getDefiningOp<DivOp>()) {
    if (div.getLhs().getType() == div.getType() && oneElement(div.getRhs())) {
      scale = {div.getRhs(), true};
      inner.push_back(div);
      return div.getLhs();
    }
    return value;
  }
  if (auto mul = value.getDefiningOp<MulOp>())
    for (auto [z, c] : fusion::bothOrders(mul))
      if (z.getType() == mul.getType() && oneElement(c)) {
        scale = {c, false};
        inner.push_back(mul);
        return z;
      }
  return value;
}

/// `v` scaled as the logits were: v * c or v / c (c as a rank-0 tensor, so that it
/// broadcasts to any v).
Value applyScale(PatternRewriter &rewriter, Location loc, Value v, const LogitScale &scale) {
  Value c = scale.constant;
  auto ct = cast<RankedTensorType>(c.getType());
  if (ct.getRank() != 0)
    c = ReshapeOp::create(rewriter, loc, RankedTensorType::get({}, ct.getElementType()), c);
  if (scale.divide)
    return DivOp::create(rewriter, loc, v.getType(), v, c);
  return MulOp::create(rewriter, loc, v.getType(), v, c);
}

struct FuseLinearCrossEntropyPattern : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp ce, PatternRewriter &rewriter) const override {
    RankedTensorType logits = ce.getLogits().getType();
    if (logits.getRank() != 2)
      return failure();
    SmallVector<Operation *> inner;
    Value z = ce.getLogits();
    // The scale before or after the reshape to [N, V].
    LogitScale scale;
    z = stripScale(z, scale, inner);
    if (auto reshape = z.getDefiningOp<ReshapeOp>()) {
      inner.push_back(reshape);
      z = reshape.getInput();
    }
    if (!scale.constant)
      z = stripScale(z, scale, inner);
    Value bias;
    z = stripBias(z, logits.getDimSize(1), bias, inner);
    auto mm = z.getDefiningOp<MatMulOp>();
    if (!mm)
      return failure();
    inner.push_back(mm);
    Value w = headWeight(mm);
    Value h = mm.getLhs();
    auto ht = cast<RankedTensorType>(h.getType());
    if (!w || ht.getRank() < 2 || !fusion::usedOnlyWithin(inner, ce))
      return failure();
    auto wt = cast<RankedTensorType>(w.getType());
    const int64_t width = ht.getShape().back(), vocab = logits.getDimSize(1);
    if (wt.getShape() != ArrayRef<int64_t>{vocab, width} ||
        (bias && cast<RankedTensorType>(bias.getType()).getElementType() !=
                     logits.getElementType()) ||
        cast<RankedTensorType>(z.getType()).getShape().back() != vocab ||
        ht.getNumElements() != logits.getDimSize(0) * width)
      return failure();
    // The matmul's leading dims are h's: [..., V] collapses row-major onto [N, V].
    Value h2 = h;
    if (ht.getRank() != 2)
      h2 = ReshapeOp::create(rewriter, ce.getLoc(),
                             RankedTensorType::get({logits.getDimSize(0), width},
                                                   ht.getElementType()),
                             h);
    if (scale.constant) {
      h2 = applyScale(rewriter, ce.getLoc(), h2, scale);
      if (bias)
        bias = applyScale(rewriter, ce.getLoc(), bias, scale);
    }
    auto fused = LinearCrossEntropyOp::create(rewriter, ce.getLoc(), ce.getType(),
                                              ce.getReductionAttr(), h2, w, ce.getLabels(),
                                              bias, ce.getIgnoreIndexAttr(), IntegerAttr());
    Operation *transpose = mm.getRhs().getDefiningOp<TransposeOp>();
    fusion::replaceChain(rewriter, ce, fused, inner);
    if (transpose && transpose->use_empty())
      rewriter.eraseOp(transpose);
    return success();
  }
};

struct FuseLinearCrossEntropy : impl::FuseLinearCrossEntropyBase<FuseLinearCrossEntropy> {
  using FuseLinearCrossEntropyBase::FuseLinearCrossEntropyBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLinearCrossEntropyPattern>(&getContext());
    if (failed(fusion::applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
