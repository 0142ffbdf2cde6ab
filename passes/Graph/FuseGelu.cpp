//===- FuseGelu.cpp - GELU formulas to graph.gelu ---------------------------===//
//
// rp-fuse-gelu: finds `0.5 * x * (1 + erf(x / sqrt(2)))` and
// `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` as exporters write them (PyTorch's
// opset < 20 symbolic for F.gelu, Hugging Face's NewGELUActivation) and replaces each with one
// graph.gelu. The pattern is rooted at the outermost multiplication: the product is flattened
// into its three factors, so any association and operand order of the multiplications match.
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
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_FUSEGELU
#include "passes/Graph/Passes.h.inc"

namespace {

using namespace fusion;

using graph::AddOp;
using graph::DivOp;
using graph::ErfOp;
using graph::MulOp;
using graph::PowOp;
using graph::TanhOp;

constexpr double kSqrt2 = llvm::numbers::sqrt2;
constexpr double kInvSqrt2 = llvm::numbers::inv_sqrt2;
constexpr double kSqrt2OverPi = llvm::numbers::sqrt2 * llvm::numbers::inv_sqrtpi; // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

/// Matches `op(x, c)` or `op(c, x)` (commutative `OpTy`) with `c` a splat near `constant` and
/// the result of type `type`; appends the op.
template <typename OpTy>
bool matchWithConstant(Value v, Value x, double constant, Type type,
                       SmallVectorImpl<Operation *> &inner) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op || op.getType() != type)
    return false;
  for (auto [a, c] : bothOrders(op))
    if (a == x && isSplatNear(c, constant)) {
      inner.push_back(op);
      return true;
    }
  return false;
}

/// `x / sqrt(2)` or `x * (1 / sqrt(2))`.
bool matchErfArgument(Value v, Value x, SmallVectorImpl<Operation *> &inner) {
  if (auto div = v.getDefiningOp<DivOp>()) {
    if (div.getType() != x.getType() || div.getLhs() != x || !isSplatNear(div.getRhs(), kSqrt2))
      return false;
    inner.push_back(div);
    return true;
  }
  return matchWithConstant<MulOp>(v, x, kInvSqrt2, x.getType(), inner);
}

/// `x^3` as `pow(x, 3)`, `x * (x * x)` or `(x * x) * x`.
bool matchCube(Value v, Value x, SmallVectorImpl<Operation *> &inner) {
  Type type = x.getType();
  if (auto pow = v.getDefiningOp<PowOp>()) {
    if (pow.getType() != type || pow.getLhs() != x || !isSplatNear(pow.getRhs(), 3.0))
      return false;
    inner.push_back(pow);
    return true;
  }
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul || mul.getType() != type)
    return false;
  for (auto [a, sq] : bothOrders(mul)) {
    auto square = sq.getDefiningOp<MulOp>();
    if (a == x && square && square.getType() == type && square.getLhs() == x &&
        square.getRhs() == x) {
      inner.append({mul, square});
      return true;
    }
  }
  return false;
}

/// `sqrt(2/pi) * (x + 0.044715 * x^3)`, every product and sum in either order.
bool matchTanhArgument(Value v, Value x, SmallVectorImpl<Operation *> &inner) {
  Type type = x.getType();
  auto outer = v.getDefiningOp<MulOp>();
  if (!outer || outer.getType() != type)
    return false;
  for (auto [c, u] : bothOrders(outer)) {
    auto sum = u.getDefiningOp<AddOp>();
    if (!isSplatNear(c, kSqrt2OverPi) || !sum || sum.getType() != type)
      continue;
    for (auto [a, scaled] : bothOrders(sum)) {
      auto kappaMul = scaled.getDefiningOp<MulOp>();
      if (a != x || !kappaMul || kappaMul.getType() != type)
        continue;
      for (auto [k, cube] : bothOrders(kappaMul)) {
        SmallVector<Operation *> ops{outer, sum, kappaMul};
        if (isSplatNear(k, kKappa) && matchCube(cube, x, ops)) {
          inner.append(ops);
          return true;
        }
      }
    }
  }
  return false;
}

/// `1 + erf(...)` or `1 + tanh(...)` of `x`: the approximation it stands for.
std::optional<graph::GeluApproximation> matchOnePlus(Value v, Value x,
                                                     SmallVectorImpl<Operation *> &inner) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || add.getType() != x.getType())
    return std::nullopt;
  for (auto [t, one] : bothOrders(add)) {
    if (!isSplatNear(one, 1.0))
      continue;
    SmallVector<Operation *> ops{add};
    if (auto erf = t.getDefiningOp<ErfOp>()) {
      ops.push_back(erf);
      if (matchErfArgument(erf.getInput(), x, ops)) {
        inner.append(ops);
        return graph::GeluApproximation::exact;
      }
    } else if (auto tanh = t.getDefiningOp<TanhOp>()) {
      ops.push_back(tanh);
      if (matchTanhArgument(tanh.getInput(), x, ops)) {
        inner.append(ops);
        return graph::GeluApproximation::tanh;
      }
    }
  }
  return std::nullopt;
}

/// Flattens the product `mul` into its factors: a multiplication of the root's type with
/// one user is expanded. Stops once there are more than three factors.
void collectFactors(MulOp mul, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> &expanded) {
  for (Value operand : {mul.getLhs(), mul.getRhs()}) {
    if (factors.size() > 3)
      return;
    auto inner = operand.getDefiningOp<MulOp>();
    if (inner && inner.getType() == mul.getType() && inner->hasOneUse()) {
      expanded.push_back(inner);
      collectFactors(inner, factors, expanded);
    } else {
      factors.push_back(operand);
    }
  }
}

struct FuseGeluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    SmallVector<Value, 4> factors;
    SmallVector<Operation *> expanded;
    collectFactors(root, factors, expanded);
    if (factors.size() != 3)
      return rewriter.notifyMatchFailure(root, "not a product of three factors");
    for (unsigned half = 0; half < 3; ++half) {
      if (!isSplatNear(factors[half], 0.5))
        continue;
      Value a = factors[(half + 1) % 3], b = factors[(half + 2) % 3];
      for (auto [x, term] : {std::pair(a, b), std::pair(b, a)}) {
        if (x.getType() != root.getType())
          continue;
        SmallVector<Operation *> inner(expanded);
        std::optional<graph::GeluApproximation> kind = matchOnePlus(term, x, inner);
        if (!kind || !usedOnlyWithin(inner, root))
          continue;
        rewriter.setInsertionPoint(root);
        Value fused = graph::GeluOp::create(
            rewriter, root.getLoc(), graph::GeluApproximationAttr::get(getContext(), *kind), x);
        replaceChain(rewriter, root, fused, inner);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not a GELU formula");
  }
};

struct FuseGelu : impl::FuseGeluBase<FuseGelu> {
  using FuseGeluBase::FuseGeluBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGeluPattern>(&getContext());
    // Fusion only: no folding or constant CSE, so that unrelated IR stays as it was.
    if (failed(fusion::applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
