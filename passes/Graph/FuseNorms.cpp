//===- FuseNorms.cpp - RMSNorm / LayerNorm chains to fused ops -------------===//
//
// rp-fuse-norms: finds the decomposed RMSNorm (Llama/Qwen, also wrapped in casts to f32 and
// back) and LayerNorm chains that PyTorch's ONNX export writes and replaces each with one
// graph.rms_norm / graph.layer_norm over the last axis. Both patterns are rooted at the
// multiplication by the weight, so they fire whatever order the driver visits ops in.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"
#include "passes/Graph/FusionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSENORMS
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace fusion;

using graph::AddOp;
using graph::CastOp;
using graph::DivOp;
using graph::MulOp;
using graph::PowOp;
using graph::ReciprocalOp;
using graph::ReduceMeanOp;
using graph::SqrtOp;
using graph::SubOp;

/// True when a reduction reduces exactly the last of `rank` dimensions and keeps it.
bool reducesLastAxisKeepingDims(ReduceMeanOp mean, int64_t rank) {
  return rank >= 1 && mean.getAxes().size() == 1 && mean.getAxes()[0] == rank - 1 &&
         mean.getKeepdims();
}

/// The statistic of the chain: `reduce_mean(v^2, last axis, keepdims) + eps`, square as
/// `pow(v, 2)` or `v * v`.
struct MeanSquare {
  double epsilon;
};

/// True when `a` is `v` itself, or `v` and `a` are two graph.sub ops of the same operands
/// (LayerNorm written by hand: PyTorch computes `x - mean` once for the variance and once for
/// the numerator, and neither exporter merges them).
bool sameValue(Value a, Value v) {
  if (a == v)
    return true;
  auto sa = a.getDefiningOp<SubOp>(), sv = v.getDefiningOp<SubOp>();
  return sa && sv && sa.getLhs() == sv.getLhs() && sa.getRhs() == sv.getRhs() &&
         sa.getType() == sv.getType();
}

/// Matches `sqrt(reduce_mean(v^2) + eps)` at `s` for the given `v`; appends the ops it uses
/// (and the square's own copy of `v`, when it has one).
std::optional<MeanSquare> matchRootMeanSquare(Value s, Value v,
                                              SmallVectorImpl<Operation *> &inner) {
  auto sqrt = s.getDefiningOp<SqrtOp>();
  if (!sqrt)
    return std::nullopt;
  auto add = sqrt.getInput().getDefiningOp<AddOp>();
  if (!add || add.getType() != sqrt.getType())
    return std::nullopt;
  ReduceMeanOp mean;
  Value eps;
  for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
    if (auto m = a.getDefiningOp<ReduceMeanOp>()) {
      mean = m;
      eps = b;
      break;
    }
  std::optional<double> epsilon = splatFloat(eps);
  if (!mean || !epsilon || !(*epsilon > 0.0) || !std::isfinite(*epsilon))
    return std::nullopt;
  auto vt = cast<RankedTensorType>(v.getType());
  int64_t rank = vt.getRank();
  if (!reducesLastAxisKeepingDims(mean, rank) || mean.getType() != add.getType())
    return std::nullopt;
  Operation *sq = mean.getInput().getDefiningOp();
  Value base; // what is squared: v or a copy of it
  if (auto pow = dyn_cast_or_null<PowOp>(sq)) {
    if (isSplatNear(pow.getRhs(), 2.0))
      base = pow.getLhs();
  } else if (auto mul = dyn_cast_or_null<MulOp>(sq)) {
    if (mul.getLhs() == mul.getRhs())
      base = mul.getLhs();
  }
  if (!base || !sameValue(base, v) || sq->getResult(0).getType() != vt)
    return std::nullopt;
  inner.append({sqrt, add, mean, sq});
  if (base != v)
    inner.push_back(base.getDefiningOp());
  return MeanSquare{*epsilon};
}

/// A normalised value `v / sqrt(mean(v^2) + eps)` written as `div(v, s)`, `mul(v, r)` or
/// `mul(r, v)` with `r = reciprocal(s)` or `r = div(1, s)`.
struct Normalized {
  Value v;
  double epsilon;
};

std::optional<Normalized> matchNormalized(Value n, SmallVectorImpl<Operation *> &inner) {
  if (auto div = n.getDefiningOp<DivOp>()) {
    Value v = div.getLhs();
    if (div.getType() != v.getType())
      return std::nullopt;
    SmallVector<Operation *> ops{div};
    if (auto ms = matchRootMeanSquare(div.getRhs(), v, ops)) {
      inner.append(ops);
      return Normalized{v, ms->epsilon};
    }
    return std::nullopt;
  }
  auto mul = n.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (auto [v, r] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    if (mul.getType() != v.getType())
      continue;
    SmallVector<Operation *> ops{mul};
    Value s;
    if (auto rec = r.getDefiningOp<ReciprocalOp>()) {
      s = rec.getInput();
      ops.push_back(rec);
    } else if (auto div = r.getDefiningOp<DivOp>();
               div && isSplatNear(div.getLhs(), 1.0) && div.getType() == div.getRhs().getType()) {
      s = div.getRhs();
      ops.push_back(div);
    } else {
      continue;
    }
    if (auto ms = matchRootMeanSquare(s, v, ops)) {
      inner.append(ops);
      return Normalized{v, ms->epsilon};
    }
  }
  return std::nullopt;
}

/// True when `p` can be the scale or bias of a norm of `x` over its last axis.
bool isLastAxisParam(Value p, RankedTensorType x) {
  auto t = cast<RankedTensorType>(p.getType());
  return t.getElementType() == x.getElementType() && t.getRank() == 1 &&
         t.getDimSize(0) == x.getShape().back();
}

/// True when every user of the ops of `inner` is in `inner`, is `root`, or is another
/// norm's scale of the same normalised value `n`: `mul(n, gamma')` with `gamma'` a last-axis
/// param of `x`. TorchScript merges the chains of two LayerNorms of one input (GPT-NeoX's
/// parallel attention and MLP norms written by hand); each then fuses on its own, and the
/// shared ops go with the last.
bool usedWithinOrBySiblingScales(ArrayRef<Operation *> inner, Operation *root, Value n,
                                 RankedTensorType x) {
  llvm::SmallPtrSet<Operation *, 16> set(inner.begin(), inner.end());
  set.insert(root);
  for (Operation *op : inner)
    for (OpOperand &use : op->getUses()) {
      if (set.contains(use.getOwner()))
        continue;
      auto mul = dyn_cast<MulOp>(use.getOwner());
      if (!mul || use.get() != n)
        return false;
      Value other = mul.getLhs() == n ? mul.getRhs() : mul.getLhs();
      if (other == n || !isLastAxisParam(other, x))
        return false;
    }
  return true;
}

/// `mul(normalized, w)` (either side), optionally through `cast(cast(x) ... )` -> rms_norm.
struct FuseRmsNorm : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    for (auto [product, w] : {std::pair(root.getLhs(), root.getRhs()), std::pair(root.getRhs(), root.getLhs())}) {
      SmallVector<Operation *> inner;
      Value n = product;
      // The Hugging Face form: the chain runs in f32 between two casts.
      CastOp castBack = n.getDefiningOp<CastOp>();
      if (castBack) {
        inner.push_back(castBack);
        n = castBack.getInput();
      }
      std::optional<Normalized> norm = matchNormalized(n, inner);
      if (!norm)
        continue;
      Value x = norm->v;
      if (castBack) {
        auto castIn = x.getDefiningOp<CastOp>();
        if (!castIn || castIn.getInput().getType() != castBack.getType())
          continue;
        x = castIn.getInput();
      }
      auto xt = cast<RankedTensorType>(x.getType());
      if (root.getType() != xt || !isLastAxisParam(w, xt) || !usedOnlyWithin(inner, root))
        continue;
      rewriter.setInsertionPoint(root);
      Value fused = graph::RmsNormOp::create(rewriter, root.getLoc(), xt, x, w,
                                             rewriter.getI64IntegerAttr(xt.getRank() - 1),
                                             rewriter.getF64FloatAttr(norm->epsilon));
      replaceChain(rewriter, root, fused, inner);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not the end of an RMSNorm chain");
  }
};

/// `mul(normalized(x - mean(x)), gamma)` (either side), then `add(., beta)` when present
/// -> layer_norm. Rooted at the multiplication; the bias addition is absorbed from its user.
struct FuseLayerNorm : OpRewritePattern<MulOp> {
  // Tried before FuseRmsNorm on the same product: `(x - mean) / rms(x - mean) * gamma` is
  // also an RMSNorm of `x - mean`, but the layer norm is the whole of it.
  explicit FuseLayerNorm(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (auto [n, gamma] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
      SmallVector<Operation *> inner;
      std::optional<Normalized> norm = matchNormalized(n, inner);
      if (!norm)
        continue;
      auto sub = norm->v.getDefiningOp<SubOp>();
      if (!sub)
        continue;
      auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>();
      Value x = sub.getLhs();
      auto xt = cast<RankedTensorType>(x.getType());
      if (!mean || mean.getInput() != x || sub.getType() != xt ||
          !reducesLastAxisKeepingDims(mean, xt.getRank()))
        continue;
      inner.append({sub, mean});
      if (mul.getType() != xt || !isLastAxisParam(gamma, xt))
        continue;
      // Absorb `+ beta` when the product's only user adds a last-axis bias.
      Operation *root = mul;
      Value beta;
      if (mul->hasOneUse())
        if (auto add = dyn_cast<AddOp>(*mul->user_begin()); add && add.getType() == xt) {
          Value other = add.getLhs() == mul.getResult() ? add.getRhs() : add.getLhs();
          if (other != mul.getResult() && isLastAxisParam(other, xt)) {
            inner.push_back(mul);
            root = add;
            beta = other;
          }
        }
      if (!usedWithinOrBySiblingScales(inner, root, n, xt))
        continue;
      rewriter.setInsertionPoint(root);
      Value fused = graph::LayerNormOp::create(rewriter, root->getLoc(), xt, x, gamma, beta,
                                               rewriter.getI64IntegerAttr(xt.getRank() - 1),
                                               rewriter.getF64FloatAttr(norm->epsilon));
      replaceChain(rewriter, root, fused, inner);
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not the scale of a LayerNorm chain");
  }
};

struct FuseNorms : impl::FuseNormsBase<FuseNorms> {
  using FuseNormsBase::FuseNormsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRmsNorm, FuseLayerNorm>(&getContext());
    // Fusion only: no folding or constant CSE, so that unrelated IR stays as it was.
    if (failed(fusion::applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
