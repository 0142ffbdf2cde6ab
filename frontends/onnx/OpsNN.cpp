//===- OpsNN.cpp - ONNX contractions, reductions, norms, losses -> graph --===//
//
// MatMul, Gemm, ReduceSum/Mean/Max, CumSum, Softmax, LogSoftmax, LayerNormalization,
// SimplifiedLayerNormalization (onnxruntime), RMSNormalization (opset 23),
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::rp;
using namespace mlir::rp::onnx;

namespace {

LogicalResult matmul(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b))
    return failure();
  if (c.inputType(0).getElementType() != c.inputType(1).getElementType())
    return c.fail("MatMul operands have different element types");
  if (auto s = graph::matmulShape(c.inputType(0).getShape(), c.inputType(1).getShape()); !s)
    return c.fail("MatMul: " + llvm::toString(s.takeError()));
  c.setOutput(0, graph::MatMulOp::create(c.b, c.loc, *a, *b));
  return success();
}

/// Gemm: alpha * A' @ B' + beta * C with A' = transA ? A^T : A (2-D operands).
LogicalResult gemm(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b))
    return failure();
  if (c.inputType(0).getRank() != 2 || c.inputType(1).getRank() != 2)
    return c.fail("Gemm operands must be 2-D");
  auto t = [&](Value v) -> Value {
    return graph::TransposeOp::create(c.b, c.loc, v, c.b.getDenseI64ArrayAttr({1, 0}));
  };
  Value lhs = c.attrInt("transA", 0) ? t(*a) : *a;
  Value rhs = c.attrInt("transB", 0) ? t(*b) : *b;
  auto lt = cast<RankedTensorType>(lhs.getType()), rt = cast<RankedTensorType>(rhs.getType());
  if (lt.getDimSize(1) != rt.getDimSize(0))
    return c.fail("Gemm contraction dimensions differ: " + llvm::Twine(lt.getDimSize(1)) +
                  " and " + llvm::Twine(rt.getDimSize(0)));
  Type element = lt.getElementType();
  Value y = graph::MatMulOp::create(c.b, c.loc, lhs, rhs);
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  if (alpha != 1.0)
    y = graph::MulOp::create(c.b, c.loc, y, c.scalar(element, alpha));
  if (c.hasInput(2) && beta != 0.0) {
    FailureOr<Value> bias = c.input(2);
    if (failed(bias))
      return failure();
    Value cb = *bias;
    if (beta != 1.0)
      cb = graph::MulOp::create(c.b, c.loc, cb, c.scalar(element, beta));
    auto ys = cast<RankedTensorType>(y.getType()).getShape();
    auto s = graph::broadcastShapes({ys, cast<RankedTensorType>(cb.getType()).getShape()});
    if (!s || ArrayRef<int64_t>(*s) != ys) {
      if (!s)
        llvm::consumeError(s.takeError());
      return c.fail("Gemm bias does not broadcast to the product's shape");
    }
    y = graph::AddOp::create(c.b, c.loc, y, cb);
  }
  c.setOutput(0, y);
  return success();
}

/// Reductions; `axesInput` says whether axes come as input 1 (else the `axes` attribute).
template <typename OpTy, bool axesInput>
LogicalResult reduce(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  int64_t rank = c.inputType(0).getRank();
  SmallVector<int64_t> raw;
  if constexpr (axesInput) {
    if (c.hasInput(1)) {
      FailureOr<SmallVector<int64_t>> a = c.constInts(1, "axes");
      if (failed(a))
        return failure();
      raw = *a;
    }
  } else if (auto a = c.attrInts("axes")) {
    raw.assign(a->begin(), a->end());
  }
  if (raw.empty()) {
    if (c.attrInt("noop_with_empty_axes", 0)) {
      c.setOutput(0, *x);
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      raw.push_back(i);
  }
  SmallVector<int64_t> axes;
  for (int64_t a : raw) {
    FailureOr<int64_t> ax = c.axis(a, rank);
    if (failed(ax))
      return failure();
    axes.push_back(*ax);
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return c.fail("'" + c.node.op_type() + "' repeats an axis");
  if (rank == 0) {
    c.setOutput(0, *x);
    return success();
  }
  bool keepdims = c.attrInt("keepdims", 1) != 0;
  c.setOutput(0, OpTy::create(c.b, c.loc, *x, c.b.getDenseI64ArrayAttr(axes),
                              keepdims ? c.b.getUnitAttr() : UnitAttr()));
  return success();
}

template <typename OpTy>
LogicalResult softmax(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(c.inputType(0).getElementType()))
    return c.fail("'" + c.node.op_type() + "' of a non-floating-point tensor");
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", -1), c.inputType(0).getRank());
  if (failed(ax))
    return failure();
  c.setOutput(0, OpTy::create(c.b, c.loc, *x, c.b.getI64IntegerAttr(*ax)));
  return success();
}

/// A norm parameter broadcast to the normalised shape `x.shape[axis:]`.
FailureOr<Value> normParam(NodeContext &c, int input, int64_t axis, llvm::StringRef name) {
  FailureOr<Value> p = c.input(input);
  if (failed(p))
    return failure();
  RankedTensorType x = c.inputType(0), t = c.inputType(input);
  if (t.getElementType() != x.getElementType())
    return c.fail("'" + c.node.op_type() + "' " + name + " has a different element type");
  ArrayRef<int64_t> target = x.getShape().drop_front(axis);
  if (t.getShape() == target)
    return *p;
  if (llvm::Error e = graph::checkBroadcastsTo(t.getShape(), target))
    return c.fail("'" + c.node.op_type() + "' " + name + ": " + llvm::toString(std::move(e)));
  return Value(graph::ExpandOp::create(c.b, c.loc, t.clone(target), *p));
}

LogicalResult layerNorm(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  if (c.outputUsed(1) || c.outputUsed(2))
    return c.fail("LayerNormalization outputs Mean and InvStdDev are not supported");
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", -1), c.inputType(0).getRank());
  if (failed(ax))
    return failure();
  FailureOr<Value> scale = normParam(c, 1, *ax, "scale");
  if (failed(scale))
    return failure();
  Value bias;
  if (c.hasInput(2)) {
    FailureOr<Value> b = normParam(c, 2, *ax, "bias");
    if (failed(b))
      return failure();
    bias = *b;
  }
  c.setOutput(0, graph::LayerNormOp::create(c.b, c.loc, c.inputType(0), *x, *scale, bias,
                                            c.b.getI64IntegerAttr(*ax),
                                            c.b.getF64FloatAttr(c.attrFloat("epsilon", 1e-5))));
  return success();
}

LogicalResult rmsNorm(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  for (int i = 1; i < c.numOutputs(); ++i)
    if (c.outputUsed(i))
      return c.fail("'" + c.node.op_type() + "' output " + llvm::Twine(i) + " is not supported");
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", -1), c.inputType(0).getRank());
  if (failed(ax))
    return failure();
  FailureOr<Value> scale = normParam(c, 1, *ax, "scale");
  if (failed(scale))
    return failure();
  c.setOutput(0, graph::RmsNormOp::create(c.b, c.loc, c.inputType(0), *x, *scale,
                                          c.b.getI64IntegerAttr(*ax),
                                          c.b.getF64FloatAttr(c.attrFloat("epsilon", 1e-5))));
  return success();
}

/// The `reduction` attribute of the loss ops: mean or sum ('none' is rejected).
FailureOr<graph::LossReduction> lossReduction(NodeContext &c) {
  std::string r = c.attrString("reduction", "mean");
  if (r == "mean")
    return graph::LossReduction::mean;
  if (r == "sum")
    return graph::LossReduction::sum;
  return c.fail("'" + c.node.op_type() + "' reduction='" + r +
                "' is not supported (expected 'mean' or 'sum')");
}

/// Labels are checked: integer, shape [N, d1..dk] for scores [N, C, d1..dk].
LogicalResult checkLossOperands(NodeContext &c) {
  if (c.hasInput(2))
    return c.fail("'" + c.node.op_type() + "' with class weights is not supported");
  RankedTensorType scores = c.inputType(0), labels = c.inputType(1);
  if (!isa<FloatType>(scores.getElementType()))
    return c.fail("'" + c.node.op_type() + "' scores must be floating point");
  if (!labels.getElementType().isInteger(64) && !labels.getElementType().isInteger(32))
    return c.fail("'" + c.node.op_type() + "' labels must be int64 or int32");
  if (auto s = graph::crossEntropyShape(scores.getShape(), labels.getShape()); !s)
    return c.fail(llvm::toString(s.takeError()));
  return success();
}

/// An ignore_index that no valid label equals, for losses without one.
constexpr int64_t kNoIgnoreIndex = std::numeric_limits<int64_t>::min();

LogicalResult softmaxCrossEntropy(NodeContext &c) {
  FailureOr<Value> scores = c.input(0), labels = c.input(1);
  if (failed(scores) || failed(labels) || failed(checkLossOperands(c)))
    return failure();
  FailureOr<graph::LossReduction> reduction = lossReduction(c);
  if (failed(reduction))
    return failure();
  int64_t ignore = c.attr("ignore_index") ? c.attrInt("ignore_index", 0) : kNoIgnoreIndex;
  c.setOutput(0, graph::CrossEntropyOp::create(
                     c.b, c.loc, graph::LossReductionAttr::get(c.b.getContext(), *reduction),
                     *scores, *labels, c.b.getI64IntegerAttr(ignore)));
  if (c.outputUsed(1))
    c.setOutput(1, graph::LogSoftmaxOp::create(c.b, c.loc, *scores, c.b.getI64IntegerAttr(1)));
  return success();
}

/// NLL over log-probabilities: -input[i, label_i, ...], masked by ignore_index, then mean over
/// the kept labels or sum.
LogicalResult negativeLogLikelihood(NodeContext &c) {
  FailureOr<Value> input = c.input(0), labels = c.input(1);
  if (failed(input) || failed(labels) || failed(checkLossOperands(c)))
    return failure();
  FailureOr<graph::LossReduction> reduction = lossReduction(c);
  if (failed(reduction))
    return failure();
  RankedTensorType scores = c.inputType(0), labelType = c.inputType(1);
  Type fp = scores.getElementType(), idx = labelType.getElementType();
  Value mask, safe = *labels;
  if (c.attr("ignore_index")) {
    Value ignore = c.scalar(idx, static_cast<double>(c.attrInt("ignore_index", 0)));
    Value isIgnored = graph::CompareOp::create(c.b, c.loc, graph::CompareKind::eq, *labels, ignore);
    mask = graph::LogicalNotOp::create(c.b, c.loc, isIgnored);
    safe = graph::WhereOp::create(c.b, c.loc, mask, *labels, c.scalar(idx, 0));
  }
  SmallVector<int64_t> withClass(labelType.getShape());
  withClass.insert(withClass.begin() + 1, 1);
  Value picked = graph::GatherElementsOp::create(c.b, c.loc, *input, c.reshape(safe, withClass),
                                                 c.b.getI64IntegerAttr(1));
  Value loss = graph::NegOp::create(c.b, c.loc, c.reshape(picked, labelType.getShape()));
  if (mask)
    loss = graph::WhereOp::create(c.b, c.loc, mask, loss, c.scalar(fp, 0.0));
  SmallVector<int64_t> all(labelType.getRank());
  std::iota(all.begin(), all.end(), 0);
  Value total = graph::ReduceSumOp::create(c.b, c.loc, loss, c.b.getDenseI64ArrayAttr(all),
                                           UnitAttr());
  if (*reduction == graph::LossReduction::mean) {
    Value count;
    if (mask) {
      Value ones = graph::CastOp::create(c.b, c.loc, labelType.clone(fp), mask);
      count = graph::ReduceSumOp::create(c.b, c.loc, ones, c.b.getDenseI64ArrayAttr(all),
                                         UnitAttr());
    } else {
      count = c.scalar(fp, static_cast<double>(labelType.getNumElements()));
    }
    total = graph::DivOp::create(c.b, c.loc, total, count);
  }
  c.setOutput(0, total);
  return success();
}

/// TopK(x, K) (ONNX TopK-11; torch.topk) with a constant K: indices = graph.top_k (not
/// differentiable), values = graph.gather_elements(x, indices, axis), whose VJP scatters the
/// values' gradient back into x. `sorted = 0` leaves the order free; the sorted order is used.
LogicalResult topK(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<int64_t> k = c.constInt(1, "K");
  if (failed(x) || failed(k))
    return failure();
  RankedTensorType type = c.inputType(0);
  if (!isa<FloatType>(type.getElementType())) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << type;
    return c.fail("TopK: only float inputs are supported (router logits), got " + text);
  }
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", -1), type.getRank());
  if (failed(ax))
    return failure();
  if (*k < 1 || *k > type.getDimSize(*ax))
    return c.fail("TopK: K = " + llvm::Twine(*k) + " is outside [1, " +
                  llvm::Twine(type.getDimSize(*ax)) + "] (the size of axis " + llvm::Twine(*ax) +
                  ")");
  const bool largest = c.attrInt("largest", 1) != 0;
  Value indices = graph::TopKOp::create(c.b, c.loc, *x, c.b.getI64IntegerAttr(*k),
                                        c.b.getI64IntegerAttr(*ax),
                                        largest ? UnitAttr() : c.b.getUnitAttr());
  if (c.outputUsed(0))
    c.setOutput(0, graph::GatherElementsOp::create(c.b, c.loc, *x, indices,
                                                   c.b.getI64IntegerAttr(*ax)));
  c.setOutput(1, indices);
  return success();
}

/// CumSum(x, axis) with `exclusive` and `reverse` (ONNX CumSum-11/14; torch.cumsum):
/// graph.cumsum. The axis must be known at import time; a constant x folds (position ids
/// from a mask of ones), a run-time one runs on the kernels.
LogicalResult cumSum(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  FailureOr<int64_t> axisValue = c.constInt(1, "axis");
  if (failed(axisValue))
    return failure();
  FailureOr<int64_t> axis = c.axis(*axisValue, c.inputType(0).getRank());
  if (failed(axis))
    return failure();
  for (const char *flag : {"exclusive", "reverse"})
    if (int64_t v = c.attrInt(flag, 0); v != 0 && v != 1)
      return c.fail("CumSum: attribute " + std::string(flag) + " must be 0 or 1, got " +
                    std::to_string(v));
  c.setOutput(0, graph::CumSumOp::create(c.b, c.loc, *x, static_cast<uint64_t>(*axis),
                                         c.attrInt("exclusive", 0) != 0,
                                         c.attrInt("reverse", 0) != 0));
  return success();
}

const OpEntry kOps[] = {
    {"MatMul", 13, matmul},
    {"Gemm", 13, gemm},
    {"ReduceSum", 13, reduce<graph::ReduceSumOp, true>},
    {"ReduceMean", 13, reduce<graph::ReduceMeanOp, false>},
    {"ReduceMean", 18, reduce<graph::ReduceMeanOp, true>},
    {"ReduceMax", 13, reduce<graph::ReduceMaxOp, false>},
    {"ReduceMax", 18, reduce<graph::ReduceMaxOp, true>},
    {"ReduceMax", 20, reduce<graph::ReduceMaxOp, true>},
    {"CumSum", 11, cumSum},
    {"CumSum", 14, cumSum},
    {"Softmax", 13, softmax<graph::SoftmaxOp>},
    {"LogSoftmax", 13, softmax<graph::LogSoftmaxOp>},
    {"LayerNormalization", 17, layerNorm},
    {"SimplifiedLayerNormalization", 1, rmsNorm},
    {"RMSNormalization", 23, rmsNorm},
    {"TopK", 11, topK},
    {"SoftmaxCrossEntropyLoss", 13, softmaxCrossEntropy},
    {"NegativeLogLikelihoodLoss", 13, negativeLogLikelihood},
    {"NegativeLogLikelihoodLoss", 22, negativeLogLikelihood},
};

} // namespace

llvm::ArrayRef<OpEntry> mlir::rp::onnx::nnOps() { return kOps; }
