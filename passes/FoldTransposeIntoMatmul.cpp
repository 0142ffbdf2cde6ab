//===- FoldTransposeIntoMatmul.cpp - Transposed GEMM operands as flags ----===//
//
// rp-fold-transpose-into-matmul: a graph.matmul operand written as a graph.transpose of its
// last two dimensions (every `x @ W^T` linear layer of an export, and the transposes of
// attention scores) becomes the transpose's input with graph.matmul's transpose_a /
// transpose_b flag toggled; the GEMM kernels (OpenBLAS, cuBLASLt) take the operand
// transposed, so the weight is no longer copied before each use. Transposes left without
// users are erased by the greedy driver (they are Pure).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::rp {

#define GEN_PASS_DEF_FOLDTRANSPOSEINTOMATMUL
#include "passes/Passes.h.inc"

namespace {

using graph::MatMulOp;
using graph::TransposeOp;

/// The input of `v`'s defining transpose when that transpose swaps exactly the last two
/// dimensions (rank >= 2), else a null Value.
Value lastTwoSwappedSource(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t)
    return Value();
  ArrayRef<int64_t> perm = t.getPermutation();
  const int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2)
    return Value();
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return Value();
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return Value();
  return t.getInput();
}

struct FoldTransposeOperand : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp op, PatternRewriter &rewriter) const override {
    Value lhs = lastTwoSwappedSource(op.getLhs()), rhs = lastTwoSwappedSource(op.getRhs());
    if (!lhs && !rhs)
      return rewriter.notifyMatchFailure(op, "no operand is a last-two-dimension transpose");
    rewriter.modifyOpInPlace(op, [&] {
      if (lhs) {
        op.getLhsMutable().assign(lhs);
        op.setTransposeA(!op.getTransposeA());
      }
      if (rhs) {
        op.getRhsMutable().assign(rhs);
        op.setTransposeB(!op.getTransposeB());
      }
    });
    return success();
  }
};

struct FoldTransposeIntoMatmulPass
    : impl::FoldTransposeIntoMatmulBase<FoldTransposeIntoMatmulPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldTransposeOperand>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

} // namespace mlir::rp
