//===- FuseCrossEntropy.cpp - NLL of log-softmax to graph.cross_entropy ----===//
//
// rp-fuse-cross-entropy: finds the negative log-likelihood of class-axis-1 log-probabilities
// (the form the ONNX importer writes for NegativeLogLikelihoodLoss over a LogSoftmax, and the
// forms exporters write for `F.nll_loss(F.log_softmax(z, 1), t)` or `-logp.gather(1,
// t[:, None]).mean()`) and replaces it with one graph.cross_entropy. The matcher walks down
// from the final scalar; a candidate root defers to its user when the user is the root of a
// larger match, so the result does not depend on the order the driver visits ops in.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"
#include "passes/Graph/FusionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <limits>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSECROSSENTROPY
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace fusion;

using graph::CastOp;
using graph::CompareKind;
using graph::CompareOp;
using graph::DivOp;
using graph::GatherElementsOp;
using graph::LogicalNotOp;
using graph::LogOp;
using graph::LogSoftmaxOp;
using graph::LossReduction;
using graph::NegOp;
using graph::ReduceMeanOp;
using graph::ReduceSumOp;
using graph::ReshapeOp;
using graph::SoftmaxOp;
using graph::WhereOp;

/// The ignore_index of a loss without masking: no label equals it (as the ONNX importer).
constexpr int64_t kNoIgnoreIndex = std::numeric_limits<int64_t>::min();

/// True when a reduction covers every axis of its input and keeps none.
template <typename OpTy>
bool reducesEverything(OpTy op) {
  int64_t rank = op.getInput().getType().getRank();
  ArrayRef<int64_t> axes = op.getAxes();
  if (op.getKeepdims() || static_cast<int64_t>(axes.size()) != rank)
    return false;
  for (int64_t i = 0; i < rank; ++i)
    if (axes[i] != i)
      return false;
  return true;
}

/// The masking of ignored labels: `ign = compare eq (labels, c)` and its negation `keep`.
struct Mask {
  Value ignored; // the compare's result
  Value labels;
  int64_t ignoreIndex;
};

/// A select by a mask: `where(not(ign), kept, replacement)` or `where(ign, replacement, kept)`.
struct Select {
  Value ignored, kept, replacement;
};

std::optional<Select> matchSelect(WhereOp where, SmallVectorImpl<Operation *> &inner) {
  Value cond = where.getCondition();
  if (auto keep = cond.getDefiningOp<LogicalNotOp>()) {
    inner.push_back(keep);
    return Select{keep.getInput(), where.getOnTrue(), where.getOnFalse()};
  }
  return Select{cond, where.getOnFalse(), where.getOnTrue()};
}

/// `compare eq, labels, c` (either order) with `c` a splat integer constant.
std::optional<Mask> matchIgnored(Value ignored, SmallVectorImpl<Operation *> &inner) {
  auto cmp = ignored.getDefiningOp<CompareOp>();
  if (!cmp || cmp.getPredicate() != CompareKind::eq)
    return std::nullopt;
  for (auto [labels, c] : {std::pair(cmp.getLhs(), cmp.getRhs()), std::pair(cmp.getRhs(), cmp.getLhs())})
    if (std::optional<int64_t> v = splatInt(c);
        v && !splatInt(labels) &&
        cast<RankedTensorType>(labels.getType()).getShape() == cmp.getType().getShape()) {
      inner.push_back(cmp);
      return Mask{ignored, labels, *v};
    }
  return std::nullopt;
}

/// Skips `graph.neg` ops, counting them.
Value skipNegs(Value v, int &negs, SmallVectorImpl<Operation *> &inner) {
  while (auto neg = v.getDefiningOp<NegOp>()) {
    inner.push_back(neg);
    ++negs;
    v = neg.getInput();
  }
  return v;
}

struct Match {
  Value logits;
  Value labels;         // [N, d1..dk]; null when only `labelsWithClass` is known
  Value labelsWithClass; // [N, 1, d1..dk] when `labels` is null
  int64_t ignoreIndex;
  LossReduction reduction;
  SmallVector<Operation *> inner;
};

/// Matches a whole loss from its final op down, one step per part: the reduction, the
/// per-label loss, the log-probabilities, the labels, the count of a mean.
class LossMatcher {
public:
  /// Matches the whole loss with `root` as its final op.
  std::optional<Match> match(Operation *root) {
    if (root->getNumResults() != 1)
      return std::nullopt;
    auto resultType = dyn_cast<RankedTensorType>(root->getResult(0).getType());
    if (!resultType || resultType.getRank() != 0 || !isa<FloatType>(resultType.getElementType()))
      return std::nullopt;
    fp = resultType.getElementType();
    if (failed(matchReduction(root)) || failed(matchPerLabelLoss()) ||
        failed(matchLogProbabilities()) || failed(matchLabels()) || failed(matchCount()))
      return std::nullopt;
    if (!usedOnlyWithin(m.inner, root))
      return std::nullopt;
    return std::move(m);
  }

private:
  /// The reduction, below negations: `elems` becomes the reduced values and `count` the
  /// divisor of a `div(reduce_sum, count)` mean.
  LogicalResult matchReduction(Operation *root) {
    Operation *red = root;
    if (auto neg = dyn_cast<NegOp>(root)) {
      ++negs;
      red = skipNegs(neg.getInput(), negs, m.inner).getDefiningOp();
      if (!red)
        return failure();
      m.inner.push_back(red);
    }
    if (auto div = dyn_cast<DivOp>(red)) {
      m.reduction = LossReduction::mean;
      count = div.getRhs();
      Value total = skipNegs(div.getLhs(), negs, m.inner);
      auto sum = total.getDefiningOp<ReduceSumOp>();
      if (!sum || !reducesEverything(sum))
        return failure();
      m.inner.push_back(sum);
      elems = sum.getInput();
    } else if (auto sum = dyn_cast<ReduceSumOp>(red)) {
      if (!reducesEverything(sum))
        return failure();
      m.reduction = LossReduction::sum;
      elems = sum.getInput();
    } else if (auto mean = dyn_cast<ReduceMeanOp>(red)) {
      if (!reducesEverything(mean))
        return failure();
      m.reduction = LossReduction::mean;
      elems = mean.getInput();
    } else {
      return failure();
    }
    return success();
  }

  /// The per-label loss: negations (one in all), the where that zeroes ignored labels, the
  /// reshape back.
  LogicalResult matchPerLabelLoss() {
    elems = skipNegs(elems, negs, m.inner);
    if (auto where = elems.getDefiningOp<WhereOp>()) {
      m.inner.push_back(where);
      std::optional<Select> sel = matchSelect(where, m.inner);
      std::optional<double> zero = sel ? splatFloat(sel->replacement) : std::nullopt;
      if (!sel || !zero || *zero != 0.0 || where.getType() != sel->kept.getType())
        return failure();
      lossMask = matchIgnored(sel->ignored, m.inner);
      if (!lossMask)
        return failure();
      elems = skipNegs(sel->kept, negs, m.inner);
    }
    if (auto back = elems.getDefiningOp<ReshapeOp>()) {
      m.inner.push_back(back);
      elems = skipNegs(back.getInput(), negs, m.inner);
    }
    return success(negs == 1);
  }

  /// gather_elements(log_softmax(logits, 1) or log(softmax(logits, 1)), indices, axis 1),
  /// with the label shapes of the logits: [N, d1..dk] and [N, 1, d1..dk].
  LogicalResult matchLogProbabilities() {
    gather = elems.getDefiningOp<GatherElementsOp>();
    if (!gather || gather.getAxisAttr().getInt() != 1)
      return failure();
    m.inner.push_back(gather);
    Value logp = gather.getData();
    if (auto ls = logp.getDefiningOp<LogSoftmaxOp>()) {
      if (ls.getAxisAttr().getInt() != 1)
        return failure();
      m.inner.push_back(ls);
      m.logits = ls.getInput();
    } else if (auto log = logp.getDefiningOp<LogOp>()) {
      auto sm = log.getInput().getDefiningOp<SoftmaxOp>();
      if (!sm || sm.getAxisAttr().getInt() != 1)
        return failure();
      m.inner.append({log, sm});
      m.logits = sm.getInput();
    } else {
      return failure();
    }
    auto logitsType = cast<RankedTensorType>(m.logits.getType());
    if (logitsType.getRank() < 2 || logitsType.getElementType() != fp)
      return failure();
    labelShape.assign(logitsType.getShape().begin(), logitsType.getShape().end());
    withClass = labelShape;
    labelShape.erase(labelShape.begin() + 1);
    withClass[1] = 1;
    return success();
  }

  /// The gather's indices: the labels reshaped to [N, 1, d1..dk], where ignored labels may be
  /// replaced by 0 (then the per-label loss masks the same labels with the same comparison).
  LogicalResult matchLabels() {
    auto indices = gather.getIndices();
    if (indices.getType().getShape() != ArrayRef<int64_t>(withClass))
      return failure();
    Value src = indices;
    if (auto idxReshape = indices.getDefiningOp<ReshapeOp>();
        idxReshape && idxReshape.getInput().getType().getShape() == ArrayRef<int64_t>(labelShape)) {
      m.inner.push_back(idxReshape);
      src = idxReshape.getInput();
    }
    std::optional<Mask> labelMask;
    if (auto where = src.getDefiningOp<WhereOp>()) {
      SmallVector<Operation *> ops{where};
      std::optional<Select> sel = matchSelect(where, ops);
      std::optional<int64_t> zero = sel ? splatInt(sel->replacement) : std::nullopt;
      if (sel && zero && *zero == 0 && where.getType() == sel->kept.getType() &&
          (labelMask = matchIgnored(sel->ignored, ops))) {
        m.inner.append(ops);
        src = sel->kept;
      }
    }
    // Both masks or neither, on the same labels and the same comparison.
    if (lossMask.has_value() != labelMask.has_value())
      return failure();
    if (lossMask && (lossMask->ignored != labelMask->ignored || lossMask->labels != src))
      return failure();
    auto srcType = cast<RankedTensorType>(src.getType());
    if (srcType.getShape() == ArrayRef<int64_t>(labelShape))
      m.labels = src;
    else if (!lossMask && srcType.getShape() == ArrayRef<int64_t>(withClass))
      m.labelsWithClass = src;
    else
      return failure();
    m.ignoreIndex = lossMask ? lossMask->ignoreIndex : kNoIgnoreIndex;
    return success();
  }

  /// The count of a mean: reduce_sum(cast(keep)) with a mask, the number of labels without.
  LogicalResult matchCount() {
    if (!count) {
      // reduce_mean over masked losses divides by all labels, not the kept.
      return success(!(m.reduction == LossReduction::mean && lossMask));
    }
    if (!lossMask) {
      int64_t numLabels = 1;
      for (int64_t d : labelShape)
        numLabels *= d;
      std::optional<double> n = splatFloat(count);
      return success(n && *n == static_cast<double>(numLabels));
    }
    auto cnt = count.getDefiningOp<ReduceSumOp>();
    auto toFloat = cnt ? cnt.getInput().getDefiningOp<CastOp>() : CastOp();
    if (!cnt || !reducesEverything(cnt) || !toFloat || toFloat.getType().getElementType() != fp)
      return failure();
    auto keep = toFloat.getInput().getDefiningOp<LogicalNotOp>();
    if (!keep || keep.getInput() != lossMask->ignored)
      return failure();
    m.inner.append({cnt, toFloat, keep});
    return success();
  }

  Match m;
  int negs = 0;
  Type fp;                      ///< the loss's element type
  Value elems;                  ///< the values being matched, from the reduction down
  Value count;                  ///< the divisor of a div mean; null otherwise
  std::optional<Mask> lossMask; ///< the masking of the per-label loss
  GatherElementsOp gather;
  SmallVector<int64_t> labelShape, withClass;
};

/// Matches the whole loss with `root` as its final op.
std::optional<Match> matchLoss(Operation *root) { return LossMatcher().match(root); }

struct FuseCrossEntropyPattern : RewritePattern {
  explicit FuseCrossEntropyPattern(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *root, PatternRewriter &rewriter) const override {
    if (!isa<NegOp, DivOp, ReduceSumOp, ReduceMeanOp>(root))
      return failure();
    // Defer to the user when it ends a larger match (a division or negation of this value).
    if (root->hasOneUse()) {
      Operation *user = *root->user_begin();
      if (isa<NegOp, DivOp>(user) && user->getOperand(0) == root->getResult(0) &&
          matchLoss(user))
        return rewriter.notifyMatchFailure(root, "part of a larger cross-entropy");
    }
    std::optional<Match> m = matchLoss(root);
    if (!m)
      return rewriter.notifyMatchFailure(root, "not the end of a cross-entropy");
    rewriter.setInsertionPoint(root);
    Value labels = m->labels;
    if (!labels) {
      auto t = cast<RankedTensorType>(m->labelsWithClass.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape.erase(shape.begin() + 1);
      labels = ReshapeOp::create(rewriter, root->getLoc(), t.clone(shape), m->labelsWithClass);
    }
    Value fused = graph::CrossEntropyOp::create(
        rewriter, root->getLoc(), graph::LossReductionAttr::get(getContext(), m->reduction),
        m->logits, labels, rewriter.getI64IntegerAttr(m->ignoreIndex));
    rewriter.replaceOp(root, fused);
    llvm::sort(m->inner, [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
    m->inner.erase(llvm::unique(m->inner), m->inner.end());
    for (Operation *op : m->inner)
      if (op->use_empty())
        rewriter.eraseOp(op);
    return success();
  }
};

struct FuseCrossEntropy : impl::FuseCrossEntropyBase<FuseCrossEntropy> {
  using FuseCrossEntropyBase::FuseCrossEntropyBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseCrossEntropyPattern>(&getContext());
    // Fusion only: no folding or constant CSE, so that unrelated IR stays as it was.
    if (failed(fusion::applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
