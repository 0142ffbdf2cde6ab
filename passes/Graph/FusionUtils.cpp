//===- FusionUtils.cpp - helpers shared by the fusion passes --------------===//

#include "passes/Graph/FusionUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

namespace mlir::rp::fusion {

std::optional<double> splatFloat(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

std::optional<int64_t> splatInt(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !attr.getElementType().isSignlessInteger() || attr.getElementType().isInteger(1))
    return std::nullopt;
  return attr.getSplatValue<APInt>().getSExtValue();
}

bool isSplatNear(Value v, double expected) {
  std::optional<double> got = splatFloat(v);
  if (!got)
    return false;
  auto ft = cast<FloatType>(getElementTypeOrSelf(v.getType()));
  APFloat want(expected);
  bool lost;
  want.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  double w = want.convertToDouble();
  return std::abs(*got - w) <= 1e-6 * std::abs(w);
}

bool usedOnlyWithin(ArrayRef<Operation *> inner, Operation *root) {
  llvm::SmallPtrSet<Operation *, 16> set(inner.begin(), inner.end());
  set.insert(root);
  for (Operation *op : inner)
    for (Operation *user : op->getUsers())
      if (!set.contains(user))
        return false;
  return true;
}

void replaceChain(PatternRewriter &rewriter, Operation *root, Value value,
                  SmallVectorImpl<Operation *> &inner) {
  rewriter.replaceOp(root, value);
  llvm::sort(inner, [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  inner.erase(llvm::unique(inner), inner.end());
  for (Operation *op : inner)
    if (op->use_empty())
      rewriter.eraseOp(op);
}

LogicalResult applyFusionPatterns(Operation *op, RewritePatternSet &&patterns) {
  GreedyRewriteConfig config;
  config.enableFolding(false).enableConstantCSE(false).setRegionSimplificationLevel(
      GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(op, std::move(patterns), config);
}

bool swapsLastTwo(ArrayRef<int64_t> perm) {
  const int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

} // namespace mlir::rp::fusion
