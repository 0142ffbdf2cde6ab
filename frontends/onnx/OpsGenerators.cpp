//===- OpsGenerators.cpp - ONNX Constant, ConstantOfShape, Range, Trilu ---===//

#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rp;
using namespace mlir::rp::onnx;

namespace {

LogicalResult constant(NodeContext &c) {
  MLIRContext *ctx = c.b.getContext();
  if (const auto *a = c.attr("value")) {
    llvm::Expected<::rp::base::HostTensor> t = readTensor(a->t(), "");
    if (!t)
      return c.fail("Constant: " + llvm::toString(t.takeError()));
    c.setOutput(0, c.constant(toAttr(ctx, narrowF64(std::move(*t)))));
    return success();
  }
  if (const auto *a = c.attr("value_float")) {
    c.setOutput(0, c.scalar(c.b.getF32Type(), a->f()));
    return success();
  }
  if (const auto *a = c.attr("value_int")) {
    c.setOutput(0, c.scalar(c.b.getI64Type(), static_cast<double>(a->i())));
    return success();
  }
  if (const auto *a = c.attr("value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    auto type = RankedTensorType::get({static_cast<int64_t>(v.size())}, c.b.getF32Type());
    c.setOutput(0, c.constant(DenseElementsAttr::get(type, ArrayRef<float>(v))));
    return success();
  }
  if (const auto *a = c.attr("value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    auto type = RankedTensorType::get({static_cast<int64_t>(v.size())}, c.b.getI64Type());
    c.setOutput(0, c.constant(DenseElementsAttr::get(type, ArrayRef<int64_t>(v))));
    return success();
  }
  return c.fail("Constant without a supported value attribute (value, value_float, "
                "value_floats, value_int, value_ints)");
}

LogicalResult constantOfShape(NodeContext &c) {
  FailureOr<SmallVector<int64_t>> shape = c.constInts(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return c.fail("ConstantOfShape with a negative dimension");
  DenseElementsAttr fill;
  if (const auto *a = c.attr("value")) {
    llvm::Expected<::rp::base::HostTensor> t = readTensor(a->t(), "");
    if (!t)
      return c.fail("ConstantOfShape: " + llvm::toString(t.takeError()));
    if (t->numElements() != 1)
      return c.fail("ConstantOfShape value must have one element");
    fill = toAttr(c.b.getContext(), narrowF64(std::move(*t)));
  } else {
    fill = DenseElementsAttr::get(RankedTensorType::get({1}, c.b.getF32Type()), 0.0f);
  }
  auto type = RankedTensorType::get(*shape, fill.getElementType());
  c.setOutput(0, c.constant(fill.resizeSplat(type)));
  return success();
}

/// Range with constant start, limit and delta (the result length must be static).
LogicalResult range(NodeContext &c) {
  FailureOr<double> start = c.constScalar(0, "start");
  FailureOr<double> limit = c.constScalar(1, "limit");
  FailureOr<double> delta = c.constScalar(2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  Type element = c.inputType(0).getElementType();
  if (*delta == 0.0)
    return c.fail("Range with delta 0");
  // The length in double first: a NaN, infinite or huge one may not reach the int64 cast.
  const double length = std::ceil((*limit - *start) / *delta);
  if (!(length <= static_cast<double>(graph::kMaxElements)))
    return c.fail("Range from " + formatScalar(*start) + " to " + formatScalar(*limit) + " by " +
                  formatScalar(*delta) + " has more than 2^48 elements");
  const int64_t count = length > 0 ? static_cast<int64_t>(length) : 0;
  auto type = RankedTensorType::get({count}, element);
  Attribute s, l, d;
  if (isa<IntegerType>(element)) {
    FailureOr<int64_t> si = c.constInt(0, "start"), li = c.constInt(1, "limit"),
                       di = c.constInt(2, "delta");
    if (failed(si) || failed(li) || failed(di))
      return failure();
    s = c.b.getI64IntegerAttr(*si);
    l = c.b.getI64IntegerAttr(*li);
    d = c.b.getI64IntegerAttr(*di);
  } else {
    s = c.b.getF64FloatAttr(*start);
    l = c.b.getF64FloatAttr(*limit);
    d = c.b.getF64FloatAttr(*delta);
  }
  c.setOutput(0, graph::RangeOp::create(c.b, c.loc, type, s, l, d));
  return success();
}

LogicalResult trilu(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  if (c.inputType(0).getRank() < 2)
    return c.fail("Trilu input must have rank >= 2");
  int64_t k = 0;
  if (c.hasInput(1)) {
    FailureOr<int64_t> kv = c.constInt(1, "k");
    if (failed(kv))
      return failure();
    k = *kv;
  }
  bool upper = c.attrInt("upper", 1) != 0;
  c.setOutput(0, graph::TriluOp::create(c.b, c.loc, *x, c.b.getI64IntegerAttr(k),
                                        upper ? c.b.getUnitAttr() : UnitAttr()));
  return success();
}

const OpEntry kOps[] = {
    {"Constant", 13, constant},        {"Constant", 19, constant},
    {"Constant", 21, constant},        {"Constant", 23, constant},
    {"ConstantOfShape", 9, constantOfShape}, {"ConstantOfShape", 20, constantOfShape},
    {"ConstantOfShape", 21, constantOfShape}, {"ConstantOfShape", 23, constantOfShape},
    {"Range", 11, range},              {"Trilu", 14, trilu},
};

} // namespace

llvm::ArrayRef<OpEntry> mlir::rp::onnx::generatorOps() { return kOps; }
