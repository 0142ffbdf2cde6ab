//===- FuseAttention.cpp - matmul/softmax attention -> graph.attention -----===//
//
// rp-fuse-attention (passes/BlockFusionPasses.td): matches eager scaled dot-product attention
// as imported at its final `graph.matmul` and replaces it with `graph.attention`; the
// intermediates become dead and the greedy driver erases them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"

namespace {

using namespace graph;

/// Masked scores at or below this count as -inf (PyTorch exports use -inf, finfo.min or
/// -1e9; exp(-1e9 - max) is 0 in f32 and f64 alike).
constexpr double kMaskedAt = -1e9;

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

/// Whether `type` is `[1, ..., 1, S, S]`.
bool isSquareMaskShape(RankedTensorType type, int64_t seq) {
  ArrayRef<int64_t> s = type.getShape();
  if (s.size() < 2 || s[s.size() - 1] != seq || s[s.size() - 2] != seq)
    return false;
  return llvm::all_of(s.drop_back(2), [](int64_t d) { return d == 1; });
}

/// Whether `v` is a constant `[1.., S, S]` additive causal mask: 0 for j <= i, masked above.
bool isCausalAdditiveMask(Value v, int64_t seq) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!isSquareMaskShape(type, seq))
    return false;
  std::optional<SmallVector<double>> values = floatValues(v);
  if (!values)
    return false;
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j) {
      double m = (*values)[i * seq + j];
      if (j <= i ? m != 0.0 : !(m <= kMaskedAt))
        return false;
    }
  return true;
}

/// Whether `cond` is a constant `[1.., S, S]` i1 lower triangle (true for j <= i) and `fill` a
/// constant whose every element is masked.
bool isCausalWhereMask(Value cond, Value fill, int64_t seq) {
  auto type = cast<RankedTensorType>(cond.getType());
  DenseElementsAttr attr;
  if (!isSquareMaskShape(type, seq) || !matchPattern(cond, m_Constant(&attr)) ||
      !attr.getElementType().isInteger(1))
    return false;
  SmallVector<bool> keep(attr.getValues<bool>());
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j)
      if (keep[i * seq + j] != (j <= i))
        return false;
  std::optional<SmallVector<double>> fillValues = floatValues(fill);
  return fillValues && llvm::all_of(*fillValues, [](double f) { return f <= kMaskedAt; });
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

struct FuseAttentionPattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp root, PatternRewriter &rewriter) const override {
    auto fail = [&](const char *why) { return rewriter.notifyMatchFailure(root, why); };
    auto softmax = root.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax.getResult().hasOneUse() ||
        softmax.getAxisAttr().getInt() != softmax.getType().getRank() - 1)
      return fail("lhs is not a single-use last-axis softmax");
    RankedTensorType qType = root.getType();
    if (qType.getRank() != 4 || softmax.getType().getRank() != 4)
      return fail("not rank-4 attention");
    int64_t seq = qType.getDimSize(2);

    // Optional causal mask.
    Value scores = softmax.getInput();
    bool causal = false;
    if (auto add = scores.getDefiningOp<AddOp>(); add && scores.hasOneUse()) {
      for (auto [s, m] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
        if (s.getType() == add.getType() && isCausalAdditiveMask(m, seq)) {
          scores = s;
          causal = true;
          break;
        }
    } else if (auto where = scores.getDefiningOp<WhereOp>(); where && scores.hasOneUse()) {
      if (where.getOnTrue().getType() == where.getType() &&
          isCausalWhereMask(where.getCondition(), where.getOnFalse(), seq)) {
        scores = where.getOnTrue();
        causal = true;
      }
    }

    // Optional scale: mul by or div by a constant scalar.
    double scale = 1.0;
    Value qk = scores;
    if (auto mul = scores.getDefiningOp<MulOp>(); mul && scores.hasOneUse()) {
      for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())})
        if (std::optional<double> s = splatScalar(c); s && x.getType() == mul.getType()) {
          scale = *s;
          qk = x;
          break;
        }
    } else if (auto div = scores.getDefiningOp<DivOp>(); div && scores.hasOneUse()) {
      if (std::optional<double> s = splatScalar(div.getRhs());
          s && div.getLhs().getType() == div.getType()) {
        scale = 1.0 / *s;
        qk = div.getLhs();
      }
    }
    if (!(scale > 0.0) || !std::isfinite(scale))
      return fail("the scale is not positive and finite");

    auto scoreMm = qk.getDefiningOp<MatMulOp>();
    if (!scoreMm || !qk.hasOneUse())
      return fail("scores are not a single-use matmul");
    auto kT = scoreMm.getRhs().getDefiningOp<TransposeOp>();
    if (!kT || !kT.getResult().hasOneUse())
      return fail("the key is not transposed");
    // k^T is `transpose(k, [0, 1, 3, 2])`, or, once the canonicalizer has composed it with the
    // head split `transpose(x, [0, 2, 1, 3])`, `transpose(x, [0, 2, 3, 1])` of x [B, S, H, D].
    bool composed = kT.getPermutation() == ArrayRef<int64_t>{0, 2, 3, 1};
    if (!composed && kT.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return fail("the key is not transposed in its last two dimensions");
    Value q = scoreMm.getLhs();
    auto [k, kGroups] = composed ? std::pair<Value, int64_t>(kT.getInput(), 1)
                                 : unrepeatHeads(kT.getInput());
    auto [v, vGroups] = unrepeatHeads(root.getRhs());
    RankedTensorType kType = cast<RankedTensorType>(k.getType());
    if (composed) {
      ArrayRef<int64_t> x = kType.getShape();
      if (x.size() != 4)
        return fail("the key is not rank 4");
      kType = kType.clone({x[0], x[2], x[1], x[3]});
    }
    if (kGroups != vGroups || kType != v.getType() || q.getType() != qType)
      return fail("query, key and value types do not form attention");
    ArrayRef<int64_t> qs = qType.getShape(), ks = kType.getShape();
    if (ks.size() != 4 || ks[0] != qs[0] || ks[1] * kGroups != qs[1] || ks[2] != qs[2] ||
        ks[3] != qs[3] || kType.getElementType() != qType.getElementType())
      return fail("key/value shapes do not match the query");
    if (composed)
      k = TransposeOp::create(rewriter, kT.getLoc(), k, rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    rewriter.replaceOpWithNewOp<AttentionOp>(root, qType, q, k, v, rewriter.getF64FloatAttr(scale),
                                             causal ? rewriter.getUnitAttr() : UnitAttr());
    return success();
  }
};

struct FuseAttention : impl::FuseAttentionBase<FuseAttention> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
