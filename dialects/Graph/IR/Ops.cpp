//===- Ops.cpp - graph dialect ops: type inference and verifiers ----------===//
//
// Shape rules live in ShapeInference.cpp; this file applies them to the ops. Messages are
// lower case and state what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rp::graph;
using llvm::Expected;

namespace {

RankedTensorType tensorOf(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

/// Reports a failed shape rule as an error of op `OpTy` at `loc`.
template <typename OpTy>
LogicalResult inferError(std::optional<Location> loc, llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ", message);
}

/// Appends `tensor<shape x element>` to `results`, or reports the failed shape rule.
template <typename OpTy>
LogicalResult pushInferred(std::optional<Location> loc, Expected<Shape> shape, Type element,
                           SmallVectorImpl<Type> &results) {
  if (!shape)
    return inferError<OpTy>(loc, shape.takeError());
  results.push_back(RankedTensorType::get(*shape, element));
  return success();
}

/// Requires `a` and `b` to share an element type.
template <typename OpTy>
LogicalResult sameElementType(std::optional<Location> loc, Type a, Type b, StringRef what) {
  if (a == b)
    return success();
  return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op expected ", what,
                           " to have the same element type, got ", a, " and ", b);
}

/// Shared rule of the elementwise binary ops: equal element types, broadcast shapes.
template <typename OpTy>
LogicalResult inferBroadcastBinary(std::optional<Location> loc, Value lhs, Value rhs,
                                   Type resultElement, SmallVectorImpl<Type> &results) {
  RankedTensorType l = tensorOf(lhs), r = tensorOf(rhs);
  if (!l || !r)
    return failure();
  if (failed(sameElementType<OpTy>(loc, l.getElementType(), r.getElementType(), "operands")))
    return failure();
  return pushInferred<OpTy>(loc, broadcastShapes({l.getShape(), r.getShape()}),
                            resultElement ? resultElement : l.getElementType(), results);
}

} // namespace

//===----------------------------------------------------------------------===//
// ParamOp, LoadParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getTrainable() && !isa<FloatType>(getTensorType().getElementType()))
    return emitOpError("expected a floating-point type for a trainable param, got ")
           << getType();
  if (getInitializer() && getInitializer()->empty())
    return emitOpError("expected a non-empty initializer name");
  const bool quantized = getQuant().has_value();
  if (!quantized) {
    if (getStoredType() || getQuantAxis())
      return emitOpError("expected 'stored_type' and 'quant_axis' only with 'quant'");
    if (getTensorType().getElementType().isUnsignedInteger(8))
      return emitOpError("expected 'quant' on a param of quantized storage ") << getType();
    return success();
  }
  if (!getStoredType())
    return emitOpError("expected 'stored_type' with 'quant'");
  const int64_t axis = getQuantAxis().value_or(0);
  llvm::Expected<int64_t> bytes = quantizedBytes(static_cast<int>(*getQuant()),
                                                 getStoredTensorType().getShape(), axis);
  if (!bytes)
    return emitOpError(llvm::toString(bytes.takeError()));
  auto expected = RankedTensorType::get({*bytes}, IntegerType::get(getContext(), 8, IntegerType::Unsigned));
  if (getType() != expected)
    return emitOpError("expected type ") << expected << " (" << stringifyQuantFormat(*getQuant())
                                         << " of " << getStoredTensorType() << "), got " << getType();
  return success();
}

LogicalResult DequantizeOp::verify() {
  auto result = cast<RankedTensorType>(getResult().getType());
  const bool needsAxis = getFormat() == QuantFormat::int8 || getFormat() == QuantFormat::fp8;
  if (needsAxis != getAxis().has_value())
    return emitOpError(needsAxis ? "expected 'axis' (the input axis) with int8 and fp8"
                                 : "expected no 'axis' with nf4");
  llvm::Expected<int64_t> bytes =
      quantizedBytes(static_cast<int>(getFormat()), result.getShape(), getAxis().value_or(0));
  if (!bytes)
    return emitOpError(llvm::toString(bytes.takeError()));
  const int64_t have = cast<RankedTensorType>(getInput().getType()).getDimSize(0);
  if (have != *bytes)
    return emitOpError("expected ") << *bytes << " bytes of " << stringifyQuantFormat(getFormat())
                                    << " storage for " << result << ", got " << have;
  return success();
}

LogicalResult LoadParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(*this, getParamAttr());
  auto param = dyn_cast_or_null<ParamOp>(symbol);
  if (!param)
    return emitOpError("expected '") << getParam() << "' to name a graph.param";
  if (param.getType() != getType())
    return emitOpError("expected result type ")
           << param.getType() << " of param '" << getParam() << "', got " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

#define RP_BROADCAST_BINARY(OP, RESULT_ELEMENT)                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,           \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {        \
    (void)ctx;                                                                                 \
    return inferBroadcastBinary<OP>(loc, adaptor.getLhs(), adaptor.getRhs(), RESULT_ELEMENT,  \
                                    results);                                                  \
  }
RP_BROADCAST_BINARY(AddOp, Type())
RP_BROADCAST_BINARY(SubOp, Type())
RP_BROADCAST_BINARY(MulOp, Type())
RP_BROADCAST_BINARY(DivOp, Type())
RP_BROADCAST_BINARY(PowOp, Type())
RP_BROADCAST_BINARY(ModOp, Type())
RP_BROADCAST_BINARY(LogicalAndOp, Type())
RP_BROADCAST_BINARY(LogicalOrOp, Type())
RP_BROADCAST_BINARY(CompareOp, IntegerType::get(ctx, 1))
#undef RP_BROADCAST_BINARY

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType c = tensorOf(adaptor.getCondition()), t = tensorOf(adaptor.getOnTrue()),
                   f = tensorOf(adaptor.getOnFalse());
  if (!c || !t || !f)
    return failure();
  if (failed(sameElementType<WhereOp>(loc, t.getElementType(), f.getElementType(),
                                      "on_true and on_false")))
    return failure();
  return pushInferred<WhereOp>(loc, broadcastShapes({c.getShape(), t.getShape(), f.getShape()}),
                               t.getElementType(), results);
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("expected the result shape to equal the input shape ")
           << formatShape(getInput().getType().getShape()) << ", got "
           << formatShape(getType().getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalisations
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType l = tensorOf(adaptor.getLhs()), r = tensorOf(adaptor.getRhs());
  if (!l || !r)
    return failure();
  if (failed(sameElementType<MatMulOp>(loc, l.getElementType(), r.getElementType(), "operands")))
    return failure();
  return pushInferred<MatMulOp>(loc,
                                matmulShape(l.getShape(), r.getShape(), adaptor.getTransposeA(),
                                            adaptor.getTransposeB()),
                                l.getElementType(), results);
}

#define RP_REDUCE(OP)                                                                          \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,              \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {        \
    RankedTensorType in = tensorOf(adaptor.getInput());                                        \
    if (!in)                                                                                   \
      return failure();                                                                        \
    return pushInferred<OP>(                                                                   \
        loc, reduceShape(in.getShape(), adaptor.getAxes(), adaptor.getKeepdims()),             \
        in.getElementType(), results);                                                         \
  }
RP_REDUCE(ReduceSumOp)
RP_REDUCE(ReduceMeanOp)
RP_REDUCE(ReduceMaxOp)
#undef RP_REDUCE

/// Softmax, log-softmax and cumsum: the axis is within the rank.
template <typename OpTy>
static LogicalResult verifyAxisInRank(OpTy op) {
  int64_t rank = op.getType().getRank();
  int64_t axis = op.getAxisAttr().getInt();
  if (axis >= rank)
    return op.emitOpError("expected axis in [0, ") << rank << "), got " << axis;
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifyAxisInRank(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxisInRank(*this); }
LogicalResult CumSumOp::verify() { return verifyAxisInRank(*this); }

/// The norms' parameters (scale, bias): element types and shapes x.shape[axis:].
template <typename OpTy>
static LogicalResult verifyNormParams(OpTy op, ArrayRef<Value> params) {
  RankedTensorType in = op.getInput().getType();
  int64_t axis = op.getAxisAttr().getInt();
  static constexpr const char *names[] = {"scale", "bias"};
  for (auto [i, p] : llvm::enumerate(params)) {
    auto t = cast<RankedTensorType>(p.getType());
    if (t.getElementType() != in.getElementType())
      return op.emitOpError("expected ")
             << names[i] << " element type " << in.getElementType() << ", got "
             << t.getElementType();
    if (llvm::Error e = checkNormParam(in.getShape(), axis, t.getShape(), names[i]))
      return op.emitOpError(llvm::toString(std::move(e)));
  }
  return success();
}

/// The norms' epsilon: positive and finite.
template <typename OpTy> static LogicalResult verifyNormEpsilon(OpTy op) {
  double eps = op.getEpsilon().convertToDouble();
  if (!(eps > 0.0) || !std::isfinite(eps))
    return op.emitOpError("expected a positive finite epsilon, got ") << eps;
  return success();
}

/// Layer norm and RMS norm: parameter shapes, element types, result type, epsilon.
template <typename OpTy>
static LogicalResult verifyNorm(OpTy op, ArrayRef<Value> params) {
  if (failed(verifyNormParams(op, params)))
    return failure();
  RankedTensorType in = op.getInput().getType();
  if (op.getType() != in)
    return op.emitOpError("expected result type ") << in << ", got " << op.getType();
  return verifyNormEpsilon(op);
}

LogicalResult LayerNormOp::verify() {
  SmallVector<Value, 2> params{getScale()};
  if (getBias())
    params.push_back(getBias());
  return verifyNorm(*this, params);
}

LogicalResult RmsNormOp::verify() { return verifyNorm(*this, {getScale()}); }

LogicalResult RmsNormVjpOp::verify() {
  if (failed(verifyNormParams(*this, {getScale()})))
    return failure();
  RankedTensorType in = getInput().getType();
  const std::pair<StringRef, Type> same[] = {{"grad", getGrad().getType()},
                                             {"dinput", getDinput().getType()},
                                             {"dscale_rows", getDscaleRows().getType()}};
  for (auto [name, type] : same)
    if (type != in)
      return emitOpError("expected ") << name << " of the input's type " << in << ", got " << type;
  return verifyNormEpsilon(*this);
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType logits = tensorOf(adaptor.getLogits()), labels = tensorOf(adaptor.getLabels());
  if (!logits || !labels)
    return failure();
  return pushInferred<CrossEntropyOp>(loc, crossEntropyShape(logits.getShape(), labels.getShape()),
                                      logits.getElementType(), results);
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expected result element type ")
           << in.getElementType() << ", got " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("expected ")
           << in.getNumElements() << " elements in the result (input "
           << formatShape(in.getShape()) << "), got " << out.getNumElements() << " (result "
           << formatShape(out.getShape()) << ")";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  if (!in)
    return failure();
  return pushInferred<TransposeOp>(loc, transposeShape(in.getShape(), adaptor.getPermutation()),
                                   in.getElementType(), results);
}

LogicalResult ExpandOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expected result element type ")
           << in.getElementType() << ", got " << out.getElementType();
  if (llvm::Error e = checkBroadcastsTo(in.getShape(), out.getShape()))
    return emitOpError(llvm::toString(std::move(e)));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  SmallVector<ArrayRef<int64_t>> shapes;
  Type element;
  for (Value v : adaptor.getInputs()) {
    RankedTensorType t = tensorOf(v);
    if (!t)
      return failure();
    if (element && failed(sameElementType<ConcatOp>(loc, element, t.getElementType(),
                                                    "all operands")))
      return failure();
    element = t.getElementType();
    shapes.push_back(t.getShape());
  }
  return pushInferred<ConcatOp>(loc, concatShape(shapes, adaptor.getAxisAttr().getInt()), element,
                                results);
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  if (!in)
    return failure();
  return pushInferred<SliceOp>(loc,
                               sliceShape(in.getShape(), adaptor.getAxes(), adaptor.getStarts(),
                                          adaptor.getEnds(), adaptor.getSteps()),
                               in.getElementType(), results);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  if (!in)
    return failure();
  auto shapes = splitShapes(in.getShape(), adaptor.getAxisAttr().getInt(), adaptor.getSizes());
  if (!shapes)
    return inferError<SplitOp>(loc, shapes.takeError());
  for (const Shape &s : *shapes)
    results.push_back(RankedTensorType::get(s, in.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  if (!data || !idx)
    return failure();
  return pushInferred<GatherOp>(
      loc, gatherShape(data.getShape(), idx.getShape(), adaptor.getAxisAttr().getInt()),
      data.getElementType(), results);
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &results) {
  RankedTensorType data = tensorOf(adaptor.getData()), idx = tensorOf(adaptor.getIndices());
  if (!data || !idx)
    return failure();
  return pushInferred<GatherElementsOp>(
      loc, gatherElementsShape(data.getShape(), idx.getShape(), adaptor.getAxisAttr().getInt()),
      data.getElementType(), results);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType in = tensorOf(adaptor.getInput());
  if (!in)
    return failure();
  return pushInferred<TopKOp>(
      loc, topKShape(in.getShape(), adaptor.getK(), adaptor.getAxisAttr().getInt()),
      IntegerType::get(ctx, 64), results);
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// A scatter's update must have the shape its forward op (gather, gather_elements, slice)
/// would produce from a tensor of the result type.
template <typename OpTy>
static LogicalResult verifyScatter(OpTy op, Value update, Expected<Shape> expected) {
  if (!expected)
    return op.emitOpError(llvm::toString(expected.takeError()));
  auto updateType = cast<RankedTensorType>(update.getType());
  if (updateType.getElementType() != op.getType().getElementType())
    return op.emitOpError("expected result element type ")
           << updateType.getElementType() << ", got " << op.getType().getElementType();
  if (updateType.getShape() != ArrayRef<int64_t>(*expected))
    return op.emitOpError("expected an update of shape ")
           << formatShape(*expected) << " for the result " << op.getType() << ", got "
           << formatShape(updateType.getShape());
  return success();
}

LogicalResult ScatterAddOp::verify() {
  return verifyScatter(*this, getUpdates(),
                       gatherShape(getType().getShape(), getIndices().getType().getShape(),
                                   getAxisAttr().getInt()));
}

/// scatter_elements(_add): indices of the updates' shape, which gather_elements of the result
/// by them would produce.
template <typename OpTy>
static LogicalResult verifyScatterElements(OpTy op) {
  ArrayRef<int64_t> updates = op.getUpdates().getType().getShape();
  if (op.getIndices().getType().getShape() != updates)
    return op.emitOpError("expected indices of the updates' shape ")
           << formatShape(updates) << ", got "
           << formatShape(op.getIndices().getType().getShape());
  return verifyScatter(op, op.getUpdates(),
                       gatherElementsShape(op.getType().getShape(),
                                           op.getIndices().getType().getShape(),
                                           op.getAxisAttr().getInt()));
}

LogicalResult ScatterElementsAddOp::verify() { return verifyScatterElements(*this); }

LogicalResult ScatterOp::verify() {
  return verifyScatter(*this, getUpdates(),
                       gatherShape(getType().getShape(), getIndices().getType().getShape(),
                                   getAxisAttr().getInt()));
}

LogicalResult ScatterElementsOp::verify() { return verifyScatterElements(*this); }

LogicalResult SliceScatterOp::verify() {
  return verifyScatter(*this, getUpdate(),
                       sliceShape(getType().getShape(), getAxes(), getStarts(), getEnds(),
                                  getSteps()));
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

LogicalResult RangeOp::verify() {
  RankedTensorType type = getType();
  if (type.getRank() != 1)
    return emitOpError("expected a 1-D result, got rank ") << type.getRank();
  bool integerResult = isa<IntegerType>(type.getElementType());
  Attribute bounds[] = {getStartAttr(), getLimitAttr(), getDeltaAttr()};
  if (integerResult && !llvm::all_of(bounds, [](Attribute a) { return isa<IntegerAttr>(a); }))
    return emitOpError("expected integer start, limit and delta for a result of ")
           << type.getElementType();
  int64_t count;
  if (integerResult) {
    int64_t start = cast<IntegerAttr>(bounds[0]).getInt();
    int64_t limit = cast<IntegerAttr>(bounds[1]).getInt();
    int64_t delta = cast<IntegerAttr>(bounds[2]).getInt();
    if (delta == 0)
      return emitOpError("expected a non-zero delta");
    // ceil((limit - start) / delta) in exact integer arithmetic.
    int64_t span = limit - start;
    count = span / delta + ((span % delta != 0 && ((span < 0) == (delta < 0))) ? 1 : 0);
  } else {
    auto value = [](Attribute a) {
      if (auto i = dyn_cast<IntegerAttr>(a))
        return static_cast<double>(i.getInt());
      return cast<FloatAttr>(a).getValueAsDouble();
    };
    double start = value(bounds[0]), limit = value(bounds[1]), delta = value(bounds[2]);
    if (delta == 0.0 || !std::isfinite(delta))
      return emitOpError("expected a non-zero finite delta");
    count = static_cast<int64_t>(std::ceil((limit - start) / delta));
  }
  count = std::max<int64_t>(count, 0);
  if (type.getDimSize(0) != count)
    return emitOpError("expected ") << count << " elements from start, limit and delta, got "
                                    << type.getDimSize(0);
  return success();
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("expected an input of rank >= 2, got rank ") << getType().getRank();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Graph/IR/GraphOps.cpp.inc"
