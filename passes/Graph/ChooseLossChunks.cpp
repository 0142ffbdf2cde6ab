//===- ChooseLossChunks.cpp - chunk_rows of the fused LM-head losses ------===//
//
// rp-choose-loss-chunks: the rows per chunk of graph.linear_cross_entropy(_vjp), from a
// memory budget (Passes.td; the rule is in docs/DECISIONS.md).
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

namespace mlir::rp {

#define GEN_PASS_DEF_CHOOSELOSSCHUNKS
#include "passes/Graph/Passes.h.inc"

namespace {

/// Bytes of a ranked tensor of a float or integer element type (sub-byte types as 1 byte).
int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  const int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

/// The rule of the pass description for N rows, V classes and `budget` bytes.
int64_t chunkRows(int64_t rows, int64_t vocab, int64_t budget) {
  int64_t c = budget / (4 * std::max<int64_t>(vocab, 1));
  if (c >= rows)
    return std::max<int64_t>(rows, 1); // one chunk
  return c >= 64 ? c / 64 * 64 : std::max<int64_t>(c, 1); // GEMM tiles
}

struct ChooseLossChunks : impl::ChooseLossChunksBase<ChooseLossChunks> {
  using ChooseLossChunksBase::ChooseLossChunksBase;

  void runOnOperation() override {
    if (budgetFloor <= 0) {
      getOperation().emitError() << "rp-choose-loss-chunks: budget-floor must be positive, got "
                                 << static_cast<int64_t>(budgetFloor);
      return signalPassFailure();
    }
    int64_t largest = 0;
    getOperation().walk([&](func::FuncOp f) {
      f.walk([&](Operation *op) {
        for (Type t : op->getResultTypes())
          if (isa<RankedTensorType>(t) && cast<RankedTensorType>(t).getElementType().isIntOrFloat())
            largest = std::max(largest, tensorBytes(t));
      });
    });
    const int64_t budget = std::max<int64_t>(budgetFloor, largest);
    getOperation().walk([&](Operation *op) {
      if (!isa<graph::LinearCrossEntropyOp, graph::LinearCrossEntropyVjpOp>(op) ||
          op->hasAttr("chunk_rows"))
        return;
      auto hidden = cast<RankedTensorType>(op->getOperand(0).getType());
      auto weight = cast<RankedTensorType>(op->getOperand(1).getType());
      int64_t c = chunkRows(hidden.getDimSize(0), weight.getDimSize(0), budget);
      op->setAttr("chunk_rows", IntegerAttr::get(IntegerType::get(op->getContext(), 64), c));
    });
  }
};

} // namespace
} // namespace mlir::rp
