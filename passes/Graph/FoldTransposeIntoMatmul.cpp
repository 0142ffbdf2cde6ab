//===- FoldTransposeIntoMatmul.cpp - Transposed GEMM operands as flags ----===//
//
// rp-fold-transpose-into-matmul: a graph.matmul operand written as a graph.transpose of its
// last two dimensions (every `x @ W^T` linear layer of an export, and the transposes of
// attention scores) becomes the transpose's input with graph.matmul's transpose_a /
// transpose_b flag toggled; the GEMM kernels (OpenBLAS, cuBLASLt) take the operand
// transposed, so the weight is no longer copied before each use. Transposes left without
// users are erased by the greedy driver (they are Pure).
//
// A transpose of a product's last two dimensions is folded too, through the batch sums and
// leading-dimension reshapes between them: (A B)^T = B^T A^T, so
//   transpose(reshape(reduce_sum(matmul(a, b, ta, tb), batch axes)))
//     -> reshape(reduce_sum(matmul(b, a, !tb, !ta), batch axes))
// (the weight gradient of every `x @ W^T` layer, which the VJP writes as (x^T g)^T: it is now
// computed as g^T x in W's own layout, and no plan transposes a parameter-shaped gradient).
// Each output element is the same dot product over the same k.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Graph/FusionUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"

#include <utility>

namespace mlir::rp {

#define GEN_PASS_DEF_FOLDTRANSPOSEINTOMATMUL
#include "passes/Graph/Passes.h.inc"

namespace {

using graph::MatMulOp;
using graph::TransposeOp;

/// The input of `v`'s defining transpose when that transpose swaps exactly the last two
/// dimensions (rank >= 2), else a null Value.
Value lastTwoSwappedSource(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t)
    return Value();
  return fusion::swapsLastTwo(t.getPermutation()) ? t.getInput() : Value();
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

/// `type` with its last two dimensions swapped.
RankedTensorType swapLastTwo(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return type.clone(shape);
}

/// A transpose of the last two dimensions of a single-use chain
///   matmul -> (reduce_sum over other axes | reshape keeping the last two dims)*
/// rebuilt as the chain over the swapped product (see the file comment).
struct FoldTransposeOfProduct : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    if (!lastTwoSwappedSource(op.getResult()))
      return rewriter.notifyMatchFailure(op, "not a last-two-dimension transpose");
    SmallVector<Operation *> chain; // from the transpose's input down to the matmul
    Value v = op.getInput();
    MatMulOp product;
    while (!product) {
      Operation *def = v.getDefiningOp();
      if (!def || !v.hasOneUse())
        return rewriter.notifyMatchFailure(op, "not a single-use chain to a product");
      if (auto m = dyn_cast<MatMulOp>(def)) {
        if (cast<RankedTensorType>(m.getLhs().getType()).getRank() < 2 ||
            cast<RankedTensorType>(m.getRhs().getType()).getRank() < 2)
          return rewriter.notifyMatchFailure(op, "a vector operand");
        product = m;
      } else if (auto r = dyn_cast<graph::ReduceSumOp>(def)) {
        const int64_t rank = cast<RankedTensorType>(r.getInput().getType()).getRank();
        if (!r.getKeepdims() || llvm::any_of(r.getAxes(), [&](int64_t a) { return a >= rank - 2; }))
          return rewriter.notifyMatchFailure(op, "a sum over the transposed dimensions");
        chain.push_back(r);
        v = r.getInput();
      } else if (auto r = dyn_cast<graph::ReshapeOp>(def)) {
        ArrayRef<int64_t> in = cast<RankedTensorType>(r.getInput().getType()).getShape();
        ArrayRef<int64_t> out = r.getType().getShape();
        if (in.size() < 2 || out.size() < 2 || in.take_back(2) != out.take_back(2))
          return rewriter.notifyMatchFailure(op, "a reshape of the transposed dimensions");
        chain.push_back(r);
        v = r.getInput();
      } else {
        return rewriter.notifyMatchFailure(op, "not a product, batch sum or reshape");
      }
    }
    rewriter.setInsertionPoint(op);
    auto flag = [&](bool on) { return on ? rewriter.getUnitAttr() : UnitAttr(); };
    Value result = MatMulOp::create(rewriter, product.getLoc(), swapLastTwo(product.getType()),
                                    product.getRhs(), product.getLhs(),
                                    flag(!product.getTransposeB()), flag(!product.getTransposeA()));
    for (Operation *link : llvm::reverse(chain)) {
      if (auto r = dyn_cast<graph::ReduceSumOp>(link))
        result = graph::ReduceSumOp::create(rewriter, r.getLoc(), swapLastTwo(r.getType()), result,
                                            r.getAxesAttr(), r.getKeepdimsAttr());
      else
        result = graph::ReshapeOp::create(rewriter, link->getLoc(),
                                          swapLastTwo(cast<graph::ReshapeOp>(link).getType()),
                                          result);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct FoldTransposeIntoMatmulPass
    : impl::FoldTransposeIntoMatmulBase<FoldTransposeIntoMatmulPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldTransposeOperand, FoldTransposeOfProduct>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

} // namespace mlir::rp
