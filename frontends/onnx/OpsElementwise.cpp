//===- OpsElementwise.cpp - ONNX elementwise ops -> graph -----------------===//
//
// Unary and binary elementwise ops (Mod among them), comparisons, logic, Where, Cast,
// Max/Min, IsNaN, Identity and Dropout. Binary ops broadcast (multidirectional, numpy rules).
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"

using namespace mlir;
using namespace mlir::rp;
using namespace mlir::rp::onnx;

namespace {

template <typename OpTy>
LogicalResult unary(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  if constexpr (std::is_same_v<OpTy, graph::LogicalNotOp>) {
    c.setOutput(0, OpTy::create(c.b, c.loc, *x));
  } else {
    if (!isa<FloatType>(c.inputType(0).getElementType()) &&
        !std::is_same_v<OpTy, graph::NegOp> && !std::is_same_v<OpTy, graph::ReluOp>)
      return c.fail("'" + c.node.op_type() + "' of a non-floating-point tensor is not supported");
    c.setOutput(0, OpTy::create(c.b, c.loc, *x));
  }
  return success();
}

/// Checks that two operands have the same element type and broadcast-compatible shapes.
LogicalResult checkBinary(NodeContext &c, Value a, Value b) {
  auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
  if (ta.getElementType() != tb.getElementType()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "operand element types differ: " << ta.getElementType() << " and "
       << tb.getElementType();
    return c.fail(os.str());
  }
  llvm::Expected<graph::Shape> shape = graph::broadcastShapes({ta.getShape(), tb.getShape()});
  if (!shape)
    return c.fail(llvm::toString(shape.takeError()));
  return success();
}

template <typename OpTy>
LogicalResult binary(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b) || failed(checkBinary(c, *a, *b)))
    return failure();
  c.setOutput(0, OpTy::create(c.b, c.loc, *a, *b));
  return success();
}

template <graph::CompareKind kind, bool swap = false>
LogicalResult compare(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b) || failed(checkBinary(c, *a, *b)))
    return failure();
  Value l = swap ? *b : *a, r = swap ? *a : *b;
  c.setOutput(0, graph::CompareOp::create(c.b, c.loc, kind, l, r));
  return success();
}

/// Max/Min of one or more operands: pairwise `where(a >= b, a, b)` (`<=` for Min).
template <graph::CompareKind kind>
LogicalResult extremum(NodeContext &c) {
  FailureOr<Value> acc = c.input(0);
  if (failed(acc))
    return failure();
  Value result = *acc;
  for (int i = 1; i < c.numInputs(); ++i) {
    FailureOr<Value> next = c.input(i);
    if (failed(next) || failed(checkBinary(c, result, *next)))
      return failure();
    Value pick = graph::CompareOp::create(c.b, c.loc, kind, result, *next);
    result = graph::WhereOp::create(c.b, c.loc, pick, result, *next);
  }
  c.setOutput(0, result);
  return success();
}

/// Clip(x, min?, max?) (ONNX Clip-13; torch.clamp): `where(x <= min, min, x)`, then
/// `where(y >= max, max, y)`. Either bound may be omitted (an empty input name); a given bound
/// is a scalar (rank 0, or one element) of x's element type. The gradient reaches x only where
/// min < x < max, strictly: at a bound the bound is selected, which carries no gradient to x.
/// That is torch.clamp's backward with scalar bounds (GPT-OSS's clamped SwiGLU); with tensor
/// bounds PyTorch splits a tie evenly between x and the bound instead. A NaN x stays NaN (both
/// comparisons are false) and passes its gradient. min > max gives max everywhere (ONNX).
LogicalResult clip(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  Value y = *x;
  const graph::CompareKind kinds[] = {graph::CompareKind::le, graph::CompareKind::ge};
  for (int i = 1; i <= 2; ++i) {
    if (!c.hasInput(i))
      continue;
    FailureOr<Value> bound = c.input(i);
    if (failed(bound))
      return failure();
    RankedTensorType bt = c.inputType(i);
    if (bt.getNumElements() != 1 || bt.getRank() > 1)
      return c.fail(llvm::Twine("Clip: the ") + (i == 1 ? "min" : "max") +
                    " bound must be a scalar (rank 0 or one element), got a tensor of " +
                    llvm::Twine(bt.getNumElements()) + " elements of rank " +
                    llvm::Twine(bt.getRank()));
    if (failed(checkBinary(c, y, *bound)))
      return failure();
    Value b = c.reshape(*bound, {});
    Value hit = graph::CompareOp::create(c.b, c.loc, kinds[i - 1], y, b);
    y = graph::WhereOp::create(c.b, c.loc, hit, b, y);
  }
  c.setOutput(0, y);
  return success();
}

LogicalResult where(NodeContext &c) {
  FailureOr<Value> cond = c.input(0), x = c.input(1), y = c.input(2);
  if (failed(cond) || failed(x) || failed(y) || failed(checkBinary(c, *x, *y)))
    return failure();
  auto shape = graph::broadcastShapes({c.inputType(0).getShape(), c.inputType(1).getShape(),
                                       c.inputType(2).getShape()});
  if (!shape)
    return c.fail(llvm::toString(shape.takeError()));
  c.setOutput(0, graph::WhereOp::create(c.b, c.loc, *cond, *x, *y));
  return success();
}

Value castTo(NodeContext &c, Value x, Type element) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() == element)
    return x;
  return graph::CastOp::create(c.b, c.loc, type.clone(element), x);
}

LogicalResult castOp(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  FailureOr<Type> to = c.elementType(static_cast<int>(c.attrInt("to", 0)));
  if (failed(to))
    return failure();
  c.setOutput(0, castTo(c, *x, *to));
  return success();
}

LogicalResult castLike(NodeContext &c) {
  FailureOr<Value> x = c.input(0), like = c.input(1);
  if (failed(x) || failed(like))
    return failure();
  c.setOutput(0, castTo(c, *x, c.inputType(1).getElementType()));
  return success();
}

/// IsNaN(x) = not(x == x).
LogicalResult isNaN(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(c.inputType(0).getElementType()))
    return c.fail("IsNaN of a non-floating-point tensor is not supported");
  Value eq = graph::CompareOp::create(c.b, c.loc, graph::CompareKind::eq, *x, *x);
  c.setOutput(0, graph::LogicalNotOp::create(c.b, c.loc, eq));
  return success();
}

LogicalResult identity(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  c.setOutput(0, *x);
  return success();
}

/// Dropout in inference mode, or in training mode with a constant ratio of 0 (what exporters
/// emit for a model trained with dropout disabled, e.g. TorchScript's TrainingMode.TRAINING), is
/// the identity; training-mode dropout with a non-zero or unknown ratio is rejected.
LogicalResult dropout(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  double ratio = 0.5; // the default of opsets 12+
  if (c.hasInput(1)) {
    FailureOr<double> r = c.constScalar(1, "ratio");
    if (failed(r))
      return failure();
    ratio = *r;
  }
  if (c.hasInput(2)) {
    FailureOr<double> training = c.constScalar(2, "training_mode");
    if (failed(training))
      return failure();
    if (*training != 0.0 && ratio != 0.0)
      return c.fail("training-mode Dropout (ratio " + std::to_string(ratio) +
                    ") is not supported yet; export with model.eval() or dropout disabled");
  }
  c.setOutput(0, *x);
  if (c.outputUsed(1)) {
    auto type = c.inputType(0).clone(c.b.getI1Type());
    c.setOutput(1, c.constant(DenseElementsAttr::get(type, true)));
  }
  return success();
}

LogicalResult gelu(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  std::string approximate = c.attrString("approximate", "none");
  graph::GeluApproximation kind;
  if (approximate == "none")
    kind = graph::GeluApproximation::exact;
  else if (approximate == "tanh")
    kind = graph::GeluApproximation::tanh;
  else
    return c.fail("Gelu approximate='" + approximate + "' is not supported (expected 'none' or "
                  "'tanh')");
  c.setOutput(0, graph::GeluOp::create(c.b, c.loc, kind, *x));
  return success();
}

/// Mod(a, b) with `fmod` (ONNX Mod-10/13): graph.mod, the remainder with the sign of b
/// (fmod = 0) or of a (fmod = 1). ONNX asks fmod = 1 of floats; fmod = 0 on floats is
/// numpy's mod, as ONNX's reference implementation computes it (and torch.remainder).
LogicalResult mod(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b) || failed(checkBinary(c, *a, *b)))
    return failure();
  int64_t fmod = c.attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1)
    return c.fail("Mod: attribute fmod must be 0 or 1, got " + std::to_string(fmod));
  c.setOutput(0, graph::ModOp::create(c.b, c.loc, *a, *b, fmod == 1));
  return success();
}

/// Pow: ONNX lets the exponent have another numeric type than the base; the result has the
/// base's type, and the exponent is converted to it.
LogicalResult pow(NodeContext &c) {
  FailureOr<Value> a = c.input(0), b = c.input(1);
  if (failed(a) || failed(b))
    return failure();
  Type base = c.inputType(0).getElementType();
  Value exponent = castTo(c, *b, base);
  if (failed(checkBinary(c, *a, exponent)))
    return failure();
  c.setOutput(0, graph::PowOp::create(c.b, c.loc, *a, exponent));
  return success();
}

const OpEntry kOps[] = {
    {"Sqrt", 13, unary<graph::SqrtOp>},
    {"Reciprocal", 13, unary<graph::ReciprocalOp>},
    {"Exp", 13, unary<graph::ExpOp>},
    {"Log", 13, unary<graph::LogOp>},
    {"Tanh", 13, unary<graph::TanhOp>},
    {"Sigmoid", 13, unary<graph::SigmoidOp>},
    {"Erf", 13, unary<graph::ErfOp>},
    {"Softplus", 1, unary<graph::SoftplusOp>},
    {"Softplus", 22, unary<graph::SoftplusOp>},
    {"Floor", 6, unary<graph::FloorOp>},
    {"Floor", 13, unary<graph::FloorOp>},
    {"Neg", 13, unary<graph::NegOp>},
    {"Relu", 13, unary<graph::ReluOp>},
    {"Relu", 14, unary<graph::ReluOp>},
    {"Not", 1, unary<graph::LogicalNotOp>},
    {"Gelu", 20, gelu},
    {"Add", 13, binary<graph::AddOp>},
    {"Add", 14, binary<graph::AddOp>},
    {"Sub", 13, binary<graph::SubOp>},
    {"Sub", 14, binary<graph::SubOp>},
    {"Mul", 13, binary<graph::MulOp>},
    {"Mul", 14, binary<graph::MulOp>},
    {"Div", 13, binary<graph::DivOp>},
    {"Div", 14, binary<graph::DivOp>},
    {"Pow", 13, pow},
    {"Pow", 15, pow},
    {"Mod", 10, mod},
    {"Mod", 13, mod},
    {"And", 7, binary<graph::LogicalAndOp>},
    {"Or", 7, binary<graph::LogicalOrOp>},
    {"Equal", 13, compare<graph::CompareKind::eq>},
    {"Equal", 19, compare<graph::CompareKind::eq>},
    {"Less", 13, compare<graph::CompareKind::lt>},
    {"LessOrEqual", 12, compare<graph::CompareKind::le>},
    {"LessOrEqual", 16, compare<graph::CompareKind::le>},
    {"Greater", 13, compare<graph::CompareKind::gt>},
    {"GreaterOrEqual", 12, compare<graph::CompareKind::ge>},
    {"GreaterOrEqual", 16, compare<graph::CompareKind::ge>},
    {"Max", 13, extremum<graph::CompareKind::ge>},
    {"Min", 13, extremum<graph::CompareKind::le>},
    {"Clip", 13, clip},
    {"Where", 9, where},
    {"Where", 16, where},
    {"Cast", 13, castOp},
    {"Cast", 19, castOp},
    {"Cast", 21, castOp},
    {"CastLike", 15, castLike},
    {"CastLike", 19, castLike},
    {"IsNaN", 13, isNaN},
    {"IsNaN", 20, isNaN},
    {"Identity", 13, identity},
    {"Identity", 14, identity},
    {"Identity", 16, identity},
    {"Identity", 19, identity},
    {"Identity", 21, identity},
    {"Dropout", 13, dropout},
    {"Dropout", 22, dropout},
};

} // namespace

llvm::ArrayRef<OpEntry> mlir::rp::onnx::elementwiseOps() { return kOps; }
