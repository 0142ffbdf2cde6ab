//===- FuseRoutedExperts.cpp - batched_mm experts -> grouped GEMMs --------===//
//
// rp-fuse-routed-experts (passes/Graph/BlockFusionPasses.td): rewrites transformers' `batched_mm`
// experts as imported (the stacked expert weights gathered per (token, choice) by the router's
// top-k indices, then one batched matmul per pair) into the grouped form of Ops.td's "Routed
// experts" ops: the pairs sorted by expert once per router (graph.moe_sort), the rows
// permuted into that order (graph.moe_dispatch), one graph.grouped_matmul against the
// un-gathered weights, and the products permuted back (graph.moe_combine with unit weights)
// or, when they are weighted by the routing probabilities and summed over the k choices,
// combined directly (graph.moe_combine). A per-expert bias gathered by the same indices
// becomes a grouped matmul of a column of ones with the bias as [E, 1, N] (no gather).
//
// Four patterns, each a local rewrite that keeps the function's values (the greedy driver
// erases what becomes dead): GroupExpertMatmul (the matmul of gathered weights),
// SortExpertBias (the bias add after it), CombineRoutedRows (the weighted sum) and
// KeepRowsSorted (row-wise ops between two products computed in expert order, so that the
// permutation back and the next dispatch cancel).
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Graph/FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::rp {

#define GEN_PASS_DEF_FUSEROUTEDEXPERTS
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace graph;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `v` with any chain of graph.reshape removed.
Value throughReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getInput();
  return v;
}

/// The router's graph.top_k when `indices` is a [T * k] reshape of a top-k along axis 1 of
/// [T, E'] scores; null otherwise.
TopKOp routerOf(Value indices) {
  auto flat = indices.getDefiningOp<ReshapeOp>();
  if (!flat || typeOf(indices).getRank() != 1)
    return TopKOp();
  auto topk = flat.getInput().getDefiningOp<TopKOp>();
  if (!topk || topk.getSmallest() || topk.getAxisAttr().getInt() != 1 ||
      typeOf(topk.getResult()).getRank() != 2)
    return TopKOp();
  return topk;
}

/// The stacked weights [E, ...] and the router when `v` is graph.gather(weights, reshape(
/// top_k), axis 0) of float weights of rank `rank`.
std::pair<Value, TopKOp> gatheredByRouter(Value v, int64_t rank) {
  auto gather = v.getDefiningOp<GatherOp>();
  if (!gather || gather.getAxisAttr().getInt() != 0 || typeOf(gather.getData()).getRank() != rank ||
      !isa<FloatType>(typeOf(gather.getData()).getElementType()))
    return {Value(), TopKOp()};
  TopKOp topk = routerOf(gather.getIndices());
  if (!topk)
    return {Value(), TopKOp()};
  return {gather.getData(), topk};
}

/// The router's graph.moe_sort for `experts` experts: an existing one, or a new one right
/// after the top_k.
MoeSortOp sortOf(PatternRewriter &rewriter, TopKOp topk, int64_t experts) {
  for (Operation *user : topk.getResult().getUsers())
    if (auto sort = dyn_cast<MoeSortOp>(user); sort && sort.getNumExperts() == experts)
      return sort;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(topk);
  return MoeSortOp::create(rewriter, topk.getLoc(), topk.getResult(), experts);
}

Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return ReshapeOp::create(rewriter, loc,
                           RankedTensorType::get(shape, typeOf(v).getElementType()), v);
}

Value onesOf(PatternRewriter &rewriter, Location loc, ArrayRef<int64_t> shape, Type element) {
  auto type = RankedTensorType::get(shape, element);
  return ConstantOp::create(rewriter, loc, type,
                            DenseElementsAttr::get(type, rewriter.getFloatAttr(element, 1.0)));
}

/// The tokens [T, H] when `rows` (any shape of T * k * H elements) is every token repeated k
/// times in a row, as the exporters write it: reshape(expand(v)) where the expand stretches
/// one unit dimension to k with T elements before it and H after it. Null otherwise.
Value repeatedTokens(PatternRewriter &rewriter, Value rows, int64_t tokens, int64_t k,
                     int64_t width) {
  auto reshape = rows.getDefiningOp<ReshapeOp>();
  auto expand = reshape ? reshape.getInput().getDefiningOp<ExpandOp>() : ExpandOp();
  if (!expand)
    return Value();
  ArrayRef<int64_t> in = typeOf(expand.getInput()).getShape(), out = typeOf(expand).getShape();
  if (in.size() != out.size())
    return Value();
  int64_t stretched = -1;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != out[d]) {
      if (stretched >= 0 || in[d] != 1 || out[d] != k)
        return Value();
      stretched = static_cast<int64_t>(d);
    }
  int64_t before = 1, after = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(out.size()); ++d)
    (d < stretched ? before : after) *= d == stretched ? 1 : out[d];
  if (stretched < 0 || before != tokens || after != width)
    return Value();
  return reshapeTo(rewriter, expand.getLoc(), expand.getInput(), {tokens, width});
}

/// matmul(gather(W [E, N, K]), rows [R, K, 1]) (Qwen3-MoE: W[e] x) or matmul(rows [R, 1, K],
/// gather(W [E, K, N])) (GPT-OSS: x W[e]) with the gather by a router's top-k indices ->
/// moe_combine(grouped_matmul(moe_dispatch(rows), W), ones): the same [R, N] rows in pair
/// order, reshaped to the matmul's type.
struct GroupExpertMatmul : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp mm, PatternRewriter &rewriter) const override {
    if (mm.getTransposeA() || mm.getTransposeB())
      return rewriter.notifyMatchFailure(mm, "a transposed operand");
    auto [lw, lRouter] = gatheredByRouter(mm.getLhs(), 3);
    auto [rw, rRouter] = gatheredByRouter(mm.getRhs(), 3);
    if (!lw == !rw)
      return rewriter.notifyMatchFailure(mm, "not one operand gathered by a router's top-k");
    const bool weightsLeft = static_cast<bool>(lw); // W[e] x: weights [E, N, K], read transposed
    Value weights = weightsLeft ? lw : rw, rows3 = weightsLeft ? mm.getRhs() : mm.getLhs();
    TopKOp topk = weightsLeft ? lRouter : rRouter;
    ArrayRef<int64_t> w = typeOf(weights).getShape(), x = typeOf(rows3).getShape();
    ArrayRef<int64_t> idx = typeOf(topk.getResult()).getShape();
    const int64_t tokens = idx[0], k = idx[1], pairs = tokens * k, experts = w[0];
    const int64_t width = weightsLeft ? w[2] : w[1];
    const SmallVector<int64_t> want = weightsLeft ? SmallVector<int64_t>{pairs, width, 1}
                                                  : SmallVector<int64_t>{pairs, 1, width};
    if (x != ArrayRef<int64_t>(want) ||
        typeOf(rows3).getElementType() != typeOf(weights).getElementType())
      return rewriter.notifyMatchFailure(mm, "the other operand is not one row per pair");
    if (typeOf(topk.getInput()).getDimSize(1) != experts)
      return rewriter.notifyMatchFailure(mm, "the router scores another number of experts");
    Location loc = mm.getLoc();
    MoeSortOp sort = sortOf(rewriter, topk, experts);
    Type elt = typeOf(weights).getElementType();
    Value pairPos = reshapeTo(rewriter, loc, sort.getPositions(), {pairs, 1});
    Value sorted;
    if (Value t = repeatedTokens(rewriter, rows3, tokens, k, width))
      sorted = MoeDispatchOp::create(rewriter, loc, t, sort.getPositions());
    else
      sorted = MoeDispatchOp::create(rewriter, loc, reshapeTo(rewriter, loc, rows3, {pairs, width}),
                                     pairPos);
    Value product =
        GroupedMatMulOp::create(rewriter, loc, sorted, weights, sort.getOffsets(), weightsLeft);
    Value back = MoeCombineOp::create(rewriter, loc, product, onesOf(rewriter, loc, {pairs, 1}, elt),
                                      pairPos);
    rewriter.replaceOp(mm, reshapeTo(rewriter, loc, back, typeOf(mm).getShape()));
    return success();
  }
};

/// The sort whose positions `v` is (through reshapes), or null.
MoeSortOp sortOfPositions(Value v) {
  Value p = throughReshapes(v);
  auto sort = p.getDefiningOp<MoeSortOp>();
  return sort && sort.getPositions() == p ? sort : MoeSortOp();
}

/// The grouped rows Ys and the pair positions [T * k, 1] when `v` (through reshapes) is
/// moe_combine(Ys, ones [T * k, 1], reshape(moe_sort positions)): rows permuted back to pair
/// order.
std::pair<Value, Value> unsorted(Value v) {
  auto back = throughReshapes(v).getDefiningOp<MoeCombineOp>();
  if (!back || typeOf(back.getWeights()).getShape()[1] != 1 ||
      !fusion::isSplatNear(back.getWeights(), 1.0) || !sortOfPositions(back.getPositions()))
    return {Value(), Value()};
  return {back.getRows(), back.getPositions()};
}

/// add(unsorted(Ys) [R, N], gather(b [E, N], reshape(top_k))) -> unsorted(Ys + bias rows),
/// the sorted bias rows a grouped matmul of ones [R, 1] with b as [E, 1, N].
struct SortExpertBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [a, b] : fusion::bothOrders(add)) {
      auto [rows, pairPos] = unsorted(a);
      auto [bias, topk] = gatheredByRouter(b, 2);
      if (!rows || !bias || typeOf(a) != typeOf(b) || typeOf(a) != typeOf(add) ||
          typeOf(rows) != typeOf(add))
        continue;
      MoeSortOp sort = sortOfPositions(pairPos);
      if (!sort || sort.getIndices() != topk.getResult() ||
          sort.getNumExperts() != typeOf(bias).getDimSize(0))
        continue;
      Location loc = add.getLoc();
      ArrayRef<int64_t> bs = typeOf(bias).getShape();
      const int64_t pairs = typeOf(rows).getDimSize(0);
      Value ones = onesOf(rewriter, loc, {pairs, 1}, typeOf(bias).getElementType());
      Value biasRows = GroupedMatMulOp::create(
          rewriter, loc, ones, reshapeTo(rewriter, loc, bias, {bs[0], 1, bs[1]}),
          sort.getOffsets(), false);
      Value sum = AddOp::create(rewriter, loc, rows, biasRows);
      Value back = MoeCombineOp::create(rewriter, loc, sum,
                                        onesOf(rewriter, loc, {pairs, 1}, typeOf(sum).getElementType()),
                                        pairPos);
      rewriter.replaceOp(add, back);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not grouped rows plus a bias gathered by the router");
  }
};

/// reduce_sum(reshape(unsorted(Ys) * reshape(w [T, k] to [T * k, 1]), [T, k, N]), axis 1)
/// -> moe_combine(Ys, w, positions).
struct CombineRoutedRows : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceSumOp sum, PatternRewriter &rewriter) const override {
    auto shaped = sum.getInput().getDefiningOp<ReshapeOp>();
    auto mul = shaped ? shaped.getInput().getDefiningOp<MulOp>() : MulOp();
    ArrayRef<int64_t> s3 = typeOf(sum.getInput()).getShape();
    if (!mul || s3.size() != 3 || sum.getAxes() != ArrayRef<int64_t>{1})
      return rewriter.notifyMatchFailure(sum, "not a sum over axis 1 of [T, k, N] products");
    for (auto [a, w] : fusion::bothOrders(mul)) {
      auto [rows, pairPos] = unsorted(a);
      MoeSortOp sort = rows ? sortOfPositions(pairPos) : MoeSortOp();
      Value weights = throughReshapes(w);
      ArrayRef<int64_t> pos = sort ? typeOf(sort.getPositions()).getShape() : ArrayRef<int64_t>();
      if (!sort || typeOf(w).getShape() != ArrayRef<int64_t>{s3[0] * s3[1], 1} ||
          typeOf(weights).getShape() != pos || pos != s3.take_front(2) ||
          typeOf(a).getShape() != ArrayRef<int64_t>{s3[0] * s3[1], s3[2]} ||
          typeOf(rows).getShape() != typeOf(a).getShape() || typeOf(mul) != typeOf(a) ||
          typeOf(weights).getElementType() != typeOf(rows).getElementType())
        continue;
      Location loc = sum.getLoc();
      Value combined = MoeCombineOp::create(rewriter, loc, rows, weights, sort.getPositions());
      rewriter.replaceOp(sum, reshapeTo(rewriter, loc, combined, typeOf(sum).getShape()));
      return success();
    }
    return rewriter.notifyMatchFailure(sum, "not routed rows weighted by the routing weights");
  }
};

/// Ops that compute each row of their [R, ...] results from the same row of their operands
/// (elementwise ops with broadcasting, and pieces of the columns): they commute with a row
/// permutation.
bool isRowwise(Operation *op) {
  if (isa<SqrtOp, ReciprocalOp, ExpOp, LogOp, TanhOp, SigmoidOp, ErfOp, SiluOp, NegOp, ReluOp,
          LogicalNotOp, GeluOp, AddOp, SubOp, MulOp, DivOp, PowOp, LogicalAndOp, LogicalOrOp,
          CompareOp, WhereOp, CastOp, SwigluOp>(op))
    return true;
  if (auto slice = dyn_cast<SliceOp>(op))
    return !llvm::is_contained(slice.getAxes(), 0);
  if (auto split = dyn_cast<SplitOp>(op))
    return split.getAxis() != 0;
  return false;
}

/// Rows of a permuted value: rank >= 1 with `rows` along axis 0.
bool hasRows(Value v, int64_t rows) {
  auto t = typeOf(v);
  return t.getRank() >= 1 && t.getDimSize(0) == rows;
}

/// Broadcasts the same data to every row: rank < 2 (trailing alignment against [R, C]) or a
/// leading dimension of 1.
bool rowInvariant(Value v, int64_t rank) {
  auto t = typeOf(v);
  return t.getRank() < rank || t.getDimSize(0) == 1;
}

/// Moves a row-wise computation on rows permuted back to pair order into expert order, so
/// that the permutation back and the dispatch that follows cancel:
/// moe_dispatch(f(unsorted(Ys, p)), p) -> f(Ys) for f a tree of row-wise ops whose other
/// operands broadcast the same data to every row. The activations between two grouped
/// matmuls (Qwen3's split and SwiGLU, GPT-OSS's interleaved slices and clamped SwiGLU) stay in
/// expert order.
struct KeepRowsSorted : OpRewritePattern<MoeDispatchOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Whether `v` is computable from unsorted rows of `sort` by row-wise ops (memoised).
  bool computable(Value v, MoeSortOp sort, int64_t rows, DenseMap<Value, bool> &seen,
                  int depth) const {
    if (auto it = seen.find(v); it != seen.end())
      return it->second;
    bool ok = false;
    auto [sorted, pos] = unsorted(v);
    if (sorted && sortOfPositions(pos) == sort && typeOf(sorted) == typeOf(v)) {
      ok = true;
    } else if (auto reshape = v.getDefiningOp<ReshapeOp>();
               reshape && depth < 64 && hasRows(v, rows) && hasRows(reshape.getInput(), rows)) {
      // A reshape that keeps the leading R rows maps row r to row r.
      ok = computable(reshape.getInput(), sort, rows, seen, depth + 1);
    } else if (Operation *op = v.getDefiningOp();
               op && depth < 64 && hasRows(v, rows) && isRowwise(op)) {
      ok = llvm::all_of(op->getOperands(), [&](Value x) {
        return rowInvariant(x, typeOf(v).getRank()) ||
               (hasRows(x, rows) && computable(x, sort, rows, seen, depth + 1));
      });
      ok = ok && llvm::any_of(op->getOperands(), [&](Value x) { return hasRows(x, rows); });
    }
    seen[v] = ok;
    return ok;
  }

  /// The expert-order counterpart of a computable `v` (`seen` from computable: the operands
  /// it found computable are rebuilt, the row-invariant ones kept), cloned before the dispatch.
  Value build(PatternRewriter &rewriter, Value v, const DenseMap<Value, bool> &seen,
              IRMapping &map) const {
    if (Value done = map.lookupOrNull(v))
      return done;
    if (auto [sorted, pos] = unsorted(v); sorted && typeOf(sorted) == typeOf(v)) {
      map.map(v, sorted);
      return sorted;
    }
    Operation *op = v.getDefiningOp();
    for (Value x : op->getOperands())
      if (seen.lookup(x))
        build(rewriter, x, seen, map);
    Operation *copy = rewriter.clone(*op, map);
    for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
      map.map(from, to);
    return map.lookup(v);
  }

  LogicalResult matchAndRewrite(MoeDispatchOp dispatch, PatternRewriter &rewriter) const override {
    MoeSortOp sort = sortOfPositions(dispatch.getPositions());
    auto pos = typeOf(dispatch.getPositions());
    if (!sort || pos.getDimSize(1) != 1)
      return rewriter.notifyMatchFailure(dispatch, "not a permutation of pairs by a sort");
    const int64_t rows = pos.getDimSize(0);
    DenseMap<Value, bool> seen;
    Value input = dispatch.getInput();
    if (!computable(input, sort, rows, seen, 0))
      return rewriter.notifyMatchFailure(dispatch, "not row-wise ops of rows permuted back");
    IRMapping map;
    rewriter.replaceOp(dispatch, build(rewriter, input, seen, map));
    return success();
  }
};

/// f(unsorted(Y1, p), ..., unsorted(Yn, p), c...) -> unsorted(f(Y1, ..., Yn, c...), p) for a
/// row-wise op f with float results whose operands with rows are all rows permuted back by the
/// same positions and whose other operands broadcast one row to all: two grouped products
/// summed (LoRA's x W_e + s B_e A_e x on the experts) are summed in expert order and permuted
/// back once, so that CombineRoutedRows and KeepRowsSorted see one permutation.
struct SortRowwiseOp : RewritePattern {
  SortRowwiseOp(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isRowwise(op) || op->getNumResults() == 0)
      return rewriter.notifyMatchFailure(op, "not a row-wise op");
    Value first = op->getResult(0);
    if (!hasRows(first, typeOf(first).getRank() >= 1 ? typeOf(first).getDimSize(0) : -1))
      return failure();
    const int64_t rows = typeOf(first).getDimSize(0);
    for (Value r : op->getResults())
      if (!hasRows(r, rows) || !isa<FloatType>(typeOf(r).getElementType()))
        return rewriter.notifyMatchFailure(op, "a result without the rows or not float");
    Value positions;
    IRMapping map;
    for (Value x : op->getOperands()) {
      if (rowInvariant(x, typeOf(first).getRank()))
        continue;
      auto [sorted, pos] = unsorted(x);
      if (!sorted || !hasRows(x, rows) || typeOf(sorted).getDimSize(0) != rows ||
          typeOf(sorted).getNumElements() != typeOf(x).getNumElements() ||
          (positions && (sortOfPositions(pos) != sortOfPositions(positions) ||
                         typeOf(pos) != typeOf(positions))))
        return rewriter.notifyMatchFailure(op, "an operand that is not rows permuted back");
      positions = pos;
      map.map(x, reshapeTo(rewriter, op->getLoc(), sorted, typeOf(x).getShape()));
    }
    if (!positions)
      return rewriter.notifyMatchFailure(op, "no operand with rows permuted back");
    Operation *copy = rewriter.clone(*op, map);
    SmallVector<Value> results;
    for (Value r : copy->getResults()) {
      Location loc = op->getLoc();
      int64_t width = typeOf(r).getNumElements() / rows;
      Value flat = reshapeTo(rewriter, loc, r, {rows, width});
      Value back = MoeCombineOp::create(
          rewriter, loc, flat, onesOf(rewriter, loc, {rows, 1}, typeOf(r).getElementType()),
          positions);
      results.push_back(reshapeTo(rewriter, loc, back, typeOf(r).getShape()));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Merges identical pure ops of the routed rows in `func`: dispatches, their input reshapes and
/// the ops that (transitively) read a dispatch's results, in program order (the first one
/// stays). Nothing else is touched, so the router's and other readers' ops keep their form.
void mergeRoutedDuplicates(func::FuncOp func) {
  DenseSet<Value> routed;
  DenseMap<OperationName, SmallVector<Operation *>> seen;
  SmallVector<Operation *> dead;
  func.walk([&](Operation *op) {
    // A dispatch's input reshape (each GroupExpertMatmul reshapes the tokens anew) counts too.
    bool dispatchInput = isa<ReshapeOp>(op) && !op->use_empty() &&
                         llvm::all_of(op->getUsers(), [](Operation *u) {
                           return isa<MoeDispatchOp>(u);
                         });
    bool onRows = isa<MoeDispatchOp>(op) || dispatchInput ||
                  llvm::any_of(op->getOperands(), [&](Value v) { return routed.contains(v); });
    if (!onRows || op->getNumRegions() != 0 || !isMemoryEffectFree(op))
      return;
    for (Operation *earlier : seen[op->getName()])
      if (OperationEquivalence::isEquivalentTo(earlier, op,
                                               OperationEquivalence::IgnoreLocations)) {
        op->replaceAllUsesWith(earlier);
        dead.push_back(op);
        return;
      }
    seen[op->getName()].push_back(op);
    for (Value r : op->getResults())
      routed.insert(r);
  });
  for (Operation *op : llvm::reverse(dead))
    op->erase();
}

struct FuseRoutedExperts : impl::FuseRoutedExpertsBase<FuseRoutedExperts> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GroupExpertMatmul, SortExpertBias, CombineRoutedRows, KeepRowsSorted,
                 SortRowwiseOp>(&getContext());
    if (failed(fusion::applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // Routed products that read the same rows (the experts' product and their LoRA update)
    // get one dispatch each, and KeepRowsSorted one copy of the activation per dispatch.
    getOperation()->walk([](func::FuncOp func) { mergeRoutedDuplicates(func); });
  }
};

} // namespace
} // namespace mlir::rp
