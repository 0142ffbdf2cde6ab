//===- FusionUtils.h - helpers shared by the fusion passes ------*- C++ -*-===//
//
// Matching helpers of the rp-fuse-* passes: splat constants, single-use chains, commutative
// operands, and the greedy driver configured for fusion only.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_FUSIONUTILS_H
#define RP_PASSES_GRAPH_FUSIONUTILS_H

#include "mlir/IR/PatternMatch.h"

#include <array>
#include <optional>
#include <utility>

namespace mlir::rp::fusion {

/// The value of a splat floating-point constant, or nullopt.
std::optional<double> splatFloat(Value v);

/// The value of a splat integer (not i1) constant, or nullopt.
std::optional<int64_t> splatInt(Value v);

/// True when `v` is a splat floating-point constant within a relative 1e-6 of `expected`
/// rounded to the constant's element type (so bf16 graphs match too).
bool isSplatNear(Value v, double expected);

/// True when permutation `perm` swaps exactly the last two dimensions (rank >= 2, the others in
/// place): a transpose that a GEMM's transpose flag can absorb.
bool swapsLastTwo(ArrayRef<int64_t> perm);

/// True when every user of every op in `inner` is in `inner` or is `root`.
bool usedOnlyWithin(ArrayRef<Operation *> inner, Operation *root);

/// Replaces `root` with `value` and erases the now unused ops of `inner` (last first).
void replaceChain(PatternRewriter &rewriter, Operation *root, Value value,
                  SmallVectorImpl<Operation *> &inner);

/// The operands of a commutative binary op, in both orders.
template <typename OpTy>
std::array<std::pair<Value, Value>, 2> bothOrders(OpTy op) {
  return {std::pair(op.getLhs(), op.getRhs()), std::pair(op.getRhs(), op.getLhs())};
}

/// Applies `patterns` greedily with folding, constant CSE and region simplification off, so
/// that IR the patterns do not match stays exactly as it was.
LogicalResult applyFusionPatterns(Operation *op, RewritePatternSet &&patterns);

} // namespace mlir::rp::fusion

#endif // RP_PASSES_GRAPH_FUSIONUTILS_H
