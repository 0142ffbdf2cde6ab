//===- FuseAttention.cpp - matmul/softmax attention -> graph.attention -----===//
//
// rp-fuse-attention (passes/Graph/BlockFusionPasses.td): matches eager scaled dot-product attention
// as imported at its final `graph.matmul` and replaces it with `graph.attention`; the
// intermediates become dead and the greedy driver erases them. GPT-OSS's attention sinks (a
// concatenated sink column, softmax, the column sliced off) become its `sinks` operand; a
// sliding-window causal mask (passes/Analysis/CausalMask.h) becomes its `window`; Gemma-2's
// logit soft-cap (`tanh(s / c) * c` on the scaled scores) becomes its `softcap`.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "passes/Analysis/CausalMask.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <optional>
#include <tuple>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace graph;

/// The elements of a constant float tensor as doubles, or nullopt.
std::optional<SmallVector<double>> floatValues(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  SmallVector<double> out;
  for (const APFloat &f : attr.getValues<APFloat>())
    out.push_back(f.convertToDouble());
  return out;
}

/// The scalar of a constant splat (any shape of ones), or nullopt.
std::optional<double> splatScalar(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getNumElements() != 1)
    return std::nullopt;
  std::optional<SmallVector<double>> values = floatValues(v);
  if (!values)
    return std::nullopt;
  return (*values)[0];
}

/// HF repeat_kv as imported: reshape(expand(reshape(kv [B, Hkv, S, D] -> [B, Hkv, 1, S, D])
/// -> [B, Hkv, G, S, D]) -> [B, Hkv * G, S, D]. Returns (kv, G), or (v, 1) for anything else.
std::pair<Value, int64_t> unrepeatHeads(Value v) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  if (!outer || !v.hasOneUse())
    return {v, 1};
  auto expand = outer.getInput().getDefiningOp<ExpandOp>();
  if (!expand || !expand.getResult().hasOneUse())
    return {v, 1};
  auto inner = expand.getInput().getDefiningOp<ReshapeOp>();
  if (!inner || !inner.getResult().hasOneUse())
    return {v, 1};
  ArrayRef<int64_t> o = outer.getType().getShape(), e = expand.getType().getShape(),
                    i = inner.getType().getShape(), b = inner.getInput().getType().getShape();
  if (o.size() != 4 || e.size() != 5 || b.size() != 4 ||
      e != ArrayRef<int64_t>{b[0], b[1], e[2], b[2], b[3]} ||
      i != ArrayRef<int64_t>{b[0], b[1], 1, b[2], b[3]} ||
      o != ArrayRef<int64_t>{b[0], b[1] * e[2], b[2], b[3]})
    return {v, 1};
  return {inner.getInput(), e[2]};
}

/// The probabilities under torch.onnx's NaN guard of the SDPA decomposition,
/// `where(not(p == p), 0, p)`, when `v` is that guard and `p` has no user outside it; `v`
/// otherwise. The guard zeroes NaN probabilities, which a softmax makes only from NaN scores
/// or a fully masked row; the causal mask never masks the diagonal, so it is the identity on
/// finite scores.
Value stripNanGuard(Value v) {
  auto where = v.getDefiningOp<WhereOp>();
  if (!where || !v.hasOneUse())
    return v;
  Value p = where.getOnFalse();
  auto notOp = where.getCondition().getDefiningOp<LogicalNotOp>();
  auto eq = notOp ? notOp.getInput().getDefiningOp<CompareOp>() : CompareOp();
  std::optional<double> zero = splatScalar(where.getOnTrue());
  if (!eq || !notOp.getResult().hasOneUse() || !eq.getResult().hasOneUse() ||
      eq.getPredicate() != CompareKind::eq || eq.getLhs() != p || eq.getRhs() != p ||
      !zero || *zero != 0.0 || p.getType() != where.getType())
    return v;
  bool onlyGuard = llvm::all_of(p.getUsers(), [&](Operation *user) {
    return user == eq.getOperation() || user == where.getOperation();
  });
  return onlyGuard ? p : v;
}

/// When `v` is a single-use `graph.mul` of a value of `v`'s type by a constant scalar, sets
/// `v` to that value and returns the scalar (torch.onnx scales q and k^T each by
/// sqrt(scale)); nullopt and `v` unchanged otherwise.
std::optional<double> takeScalarFactor(Value &v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul || !v.hasOneUse())
    return std::nullopt;
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())})
    if (std::optional<double> s = splatScalar(c); s && x.getType() == mul.getType()) {
      v = x;
      return s;
    }
  return std::nullopt;
}

/// torch.onnx's key transpose in the SDPA decomposition: `reshape(transpose(reshape(k ->
/// [B * H, S, D]), [0, 2, 1]) -> [B, H, D, S])`, with `k` either `[B, H, S, D]` or HF
/// repeat_kv's expanded `[B, Hkv, G, S, D]` (its last reshape merged into the flattening).
/// Returns the key and its head groups: (k, 1), the unrepeated (kv, G), or nullopt.
std::optional<std::pair<Value, int64_t>> flatKeyTranspose(Value kT) {
  auto unflatten = kT.getDefiningOp<ReshapeOp>();
  auto transpose = unflatten ? unflatten.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
  auto flatten = transpose ? transpose.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!flatten || !kT.hasOneUse() || !transpose.getResult().hasOneUse() ||
      !flatten.getResult().hasOneUse() || transpose.getPermutation() != ArrayRef<int64_t>{0, 2, 1})
    return std::nullopt;
  ArrayRef<int64_t> out = unflatten.getType().getShape(), x = flatten.getInput().getType().getShape();
  if (out.size() != 4 || flatten.getType().getShape() != ArrayRef<int64_t>{out[0] * out[1], out[3], out[2]})
    return std::nullopt;
  if (x == ArrayRef<int64_t>{out[0], out[1], out[3], out[2]})
    return unrepeatHeads(flatten.getInput());
  auto expand = flatten.getInput().getDefiningOp<ExpandOp>();
  auto inner = expand ? expand.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!inner || x.size() != 5 || !expand.getResult().hasOneUse() || !inner.getResult().hasOneUse())
    return std::nullopt;
  ArrayRef<int64_t> b = inner.getInput().getType().getShape();
  if (b.size() != 4 || x != ArrayRef<int64_t>{b[0], b[1], x[2], b[2], b[3]} ||
      inner.getType().getShape() != ArrayRef<int64_t>{b[0], b[1], 1, b[2], b[3]} ||
      out != ArrayRef<int64_t>{b[0], b[1] * x[2], b[3], b[2]})
    return std::nullopt;
  return std::pair(inner.getInput(), x[2]);
}

/// Strips an optional causal mask (passes/Analysis/CausalMask.h: folded or computed by ops from
/// constants) off the softmax's input `scores`; returns its window (0: plain causal), or
/// nullopt when there was none.
std::optional<int64_t> takeCausalMask(Value &scores, int64_t seq, CausalMaskRecognizer &masks) {
  if (auto add = scores.getDefiningOp<AddOp>(); add && scores.hasOneUse()) {
    for (auto [s, m] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
      if (s.getType() == add.getType())
        if (std::optional<int64_t> window = masks.additiveBand(m, seq)) {
          scores = s;
          return window;
        }
  } else if (auto where = scores.getDefiningOp<WhereOp>(); where && scores.hasOneUse()) {
    if (where.getOnTrue().getType() == where.getType())
      if (std::optional<int64_t> window =
              masks.keepWhereBand(where.getCondition(), where.getOnFalse(), seq)) {
        scores = where.getOnTrue();
        return window;
      }
  }
  return std::nullopt;
}

/// The divisor of `v` when it is a single-use `div(x, c)` or `mul(x, 1 / c)` (either side)
/// of a constant scalar, and sets `x`; nullopt and `x` untouched otherwise.
std::optional<double> takeScalarDivisor(Value v, Value &x) {
  if (!v.hasOneUse())
    return std::nullopt;
  if (auto div = v.getDefiningOp<DivOp>())
    if (std::optional<double> c = splatScalar(div.getRhs());
        c && div.getLhs().getType() == div.getType()) {
      x = div.getLhs();
      return *c;
    }
  Value y = v;
  if (std::optional<double> r = takeScalarFactor(y); r && *r != 0.0) {
    x = y;
    return 1.0 / *r;
  }
  return std::nullopt;
}

/// Strips an optional logit soft-cap, `mul(tanh(div(s, c)), c)` (Gemma-2: the scaled scores
/// divided by c, tanh, times c; the division may be a product by 1 / c; either operand order
/// of the products; every intermediate single-use), off `scores`; returns c (positive, the
/// two constants equal within a relative 1e-6), or 0 when there is none.
double takeSoftcap(Value &scores) {
  Value capped = scores;
  std::optional<double> outer = takeScalarFactor(capped);
  auto tanh = outer ? capped.getDefiningOp<TanhOp>() : TanhOp();
  if (!tanh || !tanh.getResult().hasOneUse() || !(*outer > 0.0) || !std::isfinite(*outer))
    return 0.0;
  Value s;
  std::optional<double> inner = takeScalarDivisor(tanh.getInput(), s);
  if (!inner || std::abs(*inner - *outer) > 1e-6 * *outer)
    return 0.0;
  scores = s;
  return *outer;
}

/// Strips an optional scale (mul by or div by a constant scalar) off `scores`; returns it.
double takeScale(Value &scores) {
  if (std::optional<double> s = takeScalarFactor(scores))
    return *s;
  if (auto div = scores.getDefiningOp<DivOp>(); div && scores.hasOneUse()) {
    if (std::optional<double> s = splatScalar(div.getRhs());
        s && div.getLhs().getType() == div.getType()) {
      scores = div.getLhs();
      return 1.0 / *s;
    }
  }
  return 1.0;
}

/// The key of `k^T` and its head groups, and whether k^T was composed with the head split:
/// `transpose(k, [0, 1, 3, 2])` (k possibly HF repeat_kv), `transpose(x, [0, 2, 3, 1])` of
/// x [B, S, H, D] (the canonicalizer composed it with the head split), or torch.onnx's
/// flattened transpose (flatKeyTranspose).
std::optional<std::tuple<Value, int64_t, bool>> matchKey(Value kTValue) {
  if (std::optional<std::pair<Value, int64_t>> flat = flatKeyTranspose(kTValue))
    return std::tuple(flat->first, flat->second, false);
  auto kT = kTValue.getDefiningOp<TransposeOp>();
  if (!kT || !kT.getResult().hasOneUse())
    return std::nullopt;
  if (kT.getPermutation() == ArrayRef<int64_t>{0, 2, 3, 1})
    return std::tuple(kT.getInput(), int64_t{1}, true);
  if (kT.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
    return std::nullopt;
  auto [k, groups] = unrepeatHeads(kT.getInput());
  return std::tuple(k, groups, false);
}

/// The sinks [H] of GPT-OSS's sink column, `expand(reshape(sinks [H] -> [1, H, 1, 1]) ->
/// [B, H, S, 1])` with both single-use, or a null value.
Value sinkColumn(Value column) {
  auto expand = column.getDefiningOp<ExpandOp>();
  auto reshape = expand ? expand.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!reshape || !column.hasOneUse() || !reshape.getResult().hasOneUse())
    return Value();
  Value sinks = reshape.getInput();
  ArrayRef<int64_t> c = expand.getType().getShape(), r = reshape.getType().getShape();
  auto type = cast<RankedTensorType>(sinks.getType());
  if (type.getRank() != 1 || c.size() != 4 || c[3] != 1 ||
      r != ArrayRef<int64_t>{1, c[1], 1, 1} || type.getDimSize(0) != c[1])
    return Value();
  return sinks;
}

/// Attention sinks as transformers' eager GPT-OSS attention exports them: `slice(softmax(
/// [sub(x, reduce_max(x, last, keepdims))] of x = concat(scores [B, H, S, S], sinkColumn),
/// last axis) -> [..., 0:S])`. On a match returns the probabilities' softmax and sets `scores`
/// and `sinks`; the subtracted row max leaves the softmax unchanged. Null otherwise.
SoftmaxOp matchSinkSoftmax(Value probs, Value &scores, Value &sinks) {
  auto slice = probs.getDefiningOp<SliceOp>();
  auto softmax = slice ? slice.getInput().getDefiningOp<SoftmaxOp>() : SoftmaxOp();
  if (!softmax || !probs.hasOneUse() || !softmax.getResult().hasOneUse() ||
      softmax.getType().getRank() != 4 || softmax.getAxisAttr().getInt() != 3)
    return SoftmaxOp();
  const int64_t keys = slice.getType().getDimSize(3);
  if (slice.getAxes() != ArrayRef<int64_t>{3} || slice.getStarts() != ArrayRef<int64_t>{0} ||
      slice.getEnds() != ArrayRef<int64_t>{keys} || slice.getSteps() != ArrayRef<int64_t>{1} ||
      softmax.getType().getDimSize(3) != keys + 1)
    return SoftmaxOp();
  Value x = softmax.getInput();
  if (auto shift = x.getDefiningOp<SubOp>(); shift && x.hasOneUse()) {
    auto max = shift.getRhs().getDefiningOp<ReduceMaxOp>();
    if (!max || !max.getResult().hasOneUse() || max.getInput() != shift.getLhs() ||
        max.getAxes() != ArrayRef<int64_t>{3} || !max.getKeepdims() ||
        shift.getLhs().getType() != shift.getType())
      return SoftmaxOp();
    x = shift.getLhs();
    bool onlyShift = llvm::all_of(x.getUsers(), [&](Operation *user) {
      return user == shift.getOperation() || user == max.getOperation();
    });
    if (!onlyShift)
      return SoftmaxOp();
  } else if (!x.hasOneUse()) {
    return SoftmaxOp();
  }
  auto concat = x.getDefiningOp<ConcatOp>();
  if (!concat || concat.getAxisAttr().getInt() != 3 || concat.getInputs().size() != 2)
    return SoftmaxOp();
  Value s = concat.getInputs()[0], column = concat.getInputs()[1];
  if (cast<RankedTensorType>(s.getType()).getDimSize(3) != keys || !s.hasOneUse())
    return SoftmaxOp();
  sinks = sinkColumn(column);
  if (!sinks)
    return SoftmaxOp();
  scores = s;
  return softmax;
}

struct FuseAttentionPattern : OpRewritePattern<MatMulOp> {
  FuseAttentionPattern(MLIRContext *context, CausalMaskRecognizer &masks, bool sinks)
      : OpRewritePattern(context), masks(masks), fuseSinks(sinks) {}
  CausalMaskRecognizer &masks;
  bool fuseSinks; ///< also match the attention-sinks form (matchSinkSoftmax)

  LogicalResult matchAndRewrite(MatMulOp root, PatternRewriter &rewriter) const override {
    auto fail = [&](const char *why) { return rewriter.notifyMatchFailure(root, why); };
    Value qk, sinks;
    SoftmaxOp softmax = fuseSinks ? matchSinkSoftmax(root.getLhs(), qk, sinks) : SoftmaxOp();
    if (!softmax) {
      softmax = stripNanGuard(root.getLhs()).getDefiningOp<SoftmaxOp>();
      bool guarded = softmax && softmax.getResult() != root.getLhs();
      if (!softmax || (!guarded && !softmax.getResult().hasOneUse()) ||
          softmax.getAxisAttr().getInt() != softmax.getType().getRank() - 1)
        return fail("lhs is not a single-use last-axis softmax");
      qk = softmax.getInput();
    }
    // The result [B, Hq, S, Dv]: the value head size Dv may differ from the query's D
    // (multi-head latent attention).
    RankedTensorType outType = root.getType();
    if (outType.getRank() != 4 || softmax.getType().getRank() != 4)
      return fail("not rank-4 attention");
    int64_t seq = outType.getDimSize(2);
    if (sinks && (cast<RankedTensorType>(sinks.getType()).getDimSize(0) != outType.getDimSize(1) ||
                  cast<RankedTensorType>(sinks.getType()).getElementType() !=
                      outType.getElementType()))
      return fail("the sinks are not one per query head of the query's element type");

    std::optional<int64_t> window = takeCausalMask(qk, seq, masks);
    const double softcap = takeSoftcap(qk);
    double scale = takeScale(qk);
    auto scoreMm = qk.getDefiningOp<MatMulOp>();
    if (!scoreMm || !qk.hasOneUse())
      return fail("scores are not a single-use matmul");
    if (scoreMm.getTransposeA() || scoreMm.getTransposeB())
      return fail("the score matmul takes a transposed operand");
    // torch.onnx scales both operands by sqrt(scale) before the product.
    Value q = scoreMm.getLhs(), kT = scoreMm.getRhs();
    scale *= takeScalarFactor(q).value_or(1.0) * takeScalarFactor(kT).value_or(1.0);
    if (!(scale > 0.0) || !std::isfinite(scale))
      return fail("the scale is not positive and finite");

    std::optional<std::tuple<Value, int64_t, bool>> key = matchKey(kT);
    if (!key)
      return fail("the key is not transposed in its last two dimensions");
    auto [k, kGroups, composed] = *key;
    auto [v, vGroups] = unrepeatHeads(root.getRhs());
    RankedTensorType kType = cast<RankedTensorType>(k.getType());
    if (composed) {
      ArrayRef<int64_t> x = kType.getShape();
      if (x.size() != 4)
        return fail("the key is not rank 4");
      kType = kType.clone({x[0], x[2], x[1], x[3]});
    }
    auto qType = cast<RankedTensorType>(q.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    ArrayRef<int64_t> qs = qType.getShape(), ks = kType.getShape(), vs = vType.getShape(),
                      os = outType.getShape();
    if (kGroups != vGroups || qs.size() != 4 || ks.size() != 4 || vs.size() != 4 ||
        qs.take_front(3) != os.take_front(3) || vs.take_front(3) != ks.take_front(3) ||
        vs[3] != os[3] || qType.getElementType() != outType.getElementType() ||
        kType.getElementType() != outType.getElementType() ||
        vType.getElementType() != outType.getElementType())
      return fail("query, key and value types do not form attention");
    // Multi-query attention (Falcon): a key and value of one head that the two matmuls
    // broadcast over the query's heads are grouped-query attention with one kv head.
    if (ks[1] == 1 && kGroups == 1)
      kGroups = qs[1];
    if (ks[0] != qs[0] || ks[1] * kGroups != qs[1] || ks[2] != qs[2] || ks[3] != qs[3])
      return fail("key/value shapes do not match the query");
    if (composed)
      k = TransposeOp::create(rewriter, root.getLoc(), k, rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    rewriter.replaceOpWithNewOp<AttentionOp>(
        root, outType, q, k, v, sinks, rewriter.getF64FloatAttr(scale),
        window ? rewriter.getUnitAttr() : UnitAttr(),
        window && *window > 0 ? rewriter.getI64IntegerAttr(*window) : IntegerAttr(),
        softcap > 0.0 ? rewriter.getF64FloatAttr(softcap) : FloatAttr());
    return success();
  }
};

/// Keeps the mask recogniser's answers true to the IR: an erased or changed op's results
/// are forgotten (a new op may take an erased one's address).
struct ForgetChangedMasks : RewriterBase::Listener {
  explicit ForgetChangedMasks(CausalMaskRecognizer &masks) : masks(masks) {}
  void notifyOperationErased(Operation *op) override { masks.forget(op); }
  void notifyOperationModified(Operation *op) override { masks.forget(op); }
  void notifyOperationReplaced(Operation *op, ValueRange) override { masks.forget(op); }
  CausalMaskRecognizer &masks;
};

struct FuseAttention : impl::FuseAttentionBase<FuseAttention> {
  using FuseAttentionBase::FuseAttentionBase;
  void runOnOperation() override {
    // One recogniser for the whole run: every layer's mask usually reads one boolean mask,
    // which an unfolded long-sequence mask makes worth evaluating once.
    CausalMaskRecognizer masks;
    ForgetChangedMasks listener(masks);
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext(), masks, sinks);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     GreedyRewriteConfig().setListener(&listener))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
