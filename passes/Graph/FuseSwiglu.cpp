//===- FuseSwiglu.cpp - silu(x @ Wg) * (x @ Wu) -> graph.swiglu ------------===//
//
// rp-fuse-swiglu (passes/Graph/BlockFusionPasses.td): matches the gated MLP activation at its final
// `graph.mul` and replaces it with `graph.swiglu`; the SiLU's intermediates become dead and the
// greedy driver erases them.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSESWIGLU
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace graph;

/// The SiLU's argument when `v` is `silu(g)` or `g * sigmoid(g)` (either order) and every
/// intermediate has `v`'s user as its only user; null otherwise.
Value siluArgument(Value v) {
  if (!v.hasOneUse())
    return Value();
  if (auto silu = v.getDefiningOp<SiluOp>())
    return silu.getInput();
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return Value();
  for (auto [g, s] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    auto sigmoid = s.getDefiningOp<SigmoidOp>();
    if (sigmoid && sigmoid.getInput() == g && s.hasOneUse() && g.getType() == v.getType())
      return g;
  }
  return Value();
}

/// A contiguous piece `[begin, end)` of `source`'s last axis.
struct LastAxisPiece {
  Value source;
  int64_t begin = 0, end = 0;
};

/// The piece of a value's last axis that `v` is: a result of `graph.split` along the last axis,
/// or a unit-step `graph.slice` of the last axis alone; nullopt otherwise.
std::optional<LastAxisPiece> lastAxisPiece(Value v) {
  if (auto split = v.getDefiningOp<SplitOp>()) {
    auto type = cast<RankedTensorType>(split.getInput().getType());
    if (static_cast<int64_t>(split.getAxis()) != type.getRank() - 1)
      return std::nullopt;
    int64_t begin = 0;
    ArrayRef<int64_t> sizes = split.getSizes();
    for (unsigned i = 0, n = cast<OpResult>(v).getResultNumber(); i < n; ++i)
      begin += sizes[i];
    return LastAxisPiece{split.getInput(), begin,
                         begin + sizes[cast<OpResult>(v).getResultNumber()]};
  }
  if (auto slice = v.getDefiningOp<SliceOp>()) {
    auto type = cast<RankedTensorType>(slice.getInput().getType());
    if (slice.getAxes().size() != 1 || slice.getAxes()[0] != type.getRank() - 1 ||
        slice.getSteps()[0] != 1)
      return std::nullopt;
    return LastAxisPiece{slice.getInput(), slice.getStarts()[0], slice.getEnds()[0]};
  }
  return std::nullopt;
}

/// True when gate and up are the MLP's two projections: matmuls of one input (Llama's
/// gate_proj and up_proj), or disjoint pieces of the last axis of one matmul's result (Phi-3's
/// fused gate_up_proj, split or sliced in the graph).
bool areProjections(Value gate, Value up) {
  auto gateMm = gate.getDefiningOp<MatMulOp>();
  auto upMm = up.getDefiningOp<MatMulOp>();
  if (gateMm && upMm)
    return gateMm.getLhs() == upMm.getLhs();
  std::optional<LastAxisPiece> g = lastAxisPiece(gate), u = lastAxisPiece(up);
  if (!g || !u || g->source != u->source || !g->source.getDefiningOp<MatMulOp>())
    return false;
  return g->end <= u->begin || u->end <= g->begin;
}

struct FuseSwigluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    for (auto [act, up] :
         {std::pair(root.getLhs(), root.getRhs()), std::pair(root.getRhs(), root.getLhs())}) {
      Value gate = siluArgument(act);
      if (!gate)
        continue;
      if (!areProjections(gate, up))
        continue;
      if (gate.getType() != up.getType() || up.getType() != root.getType() ||
          !isa<FloatType>(root.getType().getElementType()))
        continue;
      rewriter.replaceOpWithNewOp<SwigluOp>(root, gate, up);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not silu(x @ Wg) * (x @ Wu), nor of the halves of one x @ W");
  }
};

struct FuseSwiglu : impl::FuseSwigluBase<FuseSwiglu> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseSwigluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
