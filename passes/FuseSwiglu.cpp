//===- FuseSwiglu.cpp - silu(x @ Wg) * (x @ Wu) -> graph.swiglu ------------===//
//
// rp-fuse-swiglu (passes/BlockFusionPasses.td): matches the gated MLP activation at its final
// `graph.mul` and replaces it with `graph.swiglu`; the SiLU's intermediates become dead and the
// greedy driver erases them.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::rp {

#define GEN_PASS_DEF_FUSESWIGLU
#include "passes/Passes.h.inc"

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

struct FuseSwigluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    for (auto [act, up] :
         {std::pair(root.getLhs(), root.getRhs()), std::pair(root.getRhs(), root.getLhs())}) {
      Value gate = siluArgument(act);
      if (!gate)
        continue;
      auto gateMm = gate.getDefiningOp<MatMulOp>();
      auto upMm = up.getDefiningOp<MatMulOp>();
      if (!gateMm || !upMm || gateMm.getLhs() != upMm.getLhs())
        continue;
      if (gate.getType() != up.getType() || up.getType() != root.getType() ||
          !isa<FloatType>(root.getType().getElementType()))
        continue;
      rewriter.replaceOpWithNewOp<SwigluOp>(root, gate, up);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not silu(x @ Wg) * (x @ Wu)");
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
