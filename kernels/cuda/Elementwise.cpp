//===- Elementwise.cpp - Elementwise graph ops on the GPU: host planning --===//

#include "kernels/cuda/Elementwise.h"

namespace rp::kernels::cuda {

using base::DType;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

namespace {

bool isInt(DType d) { return d == DType::I64 || d == DType::I32; }

Status badDType(const char *op, DType d, const char *takes) {
  return invalidArgument(std::string(op) + ": dtype " + base::dtypeName(d) +
                         "; the GPU kernel takes " + takes);
}

Status checkOut(const char *op, const Shape &want, const Shape &out) {
  if (want != out)
    return invalidArgument(std::string(op) + ": result shape " + formatShape(out) + "; expected " +
                           formatShape(want));
  return base::okStatus();
}

} // namespace

StatusOr<UnaryPlan> planUnary(UnaryOp op, DType dtype, const Shape &x, const Shape &out) {
  const char *name = unaryKindName(op);
  if (op == UnaryOp::LogicalNot) {
    if (dtype != DType::I1)
      return badDType(name, dtype, "i1");
  } else if (op == UnaryOp::Neg || op == UnaryOp::Relu) {
    if (!isFloat(dtype) && !isInt(dtype))
      return badDType(name, dtype, "f32, f16, bf16, f64, i64 or i32");
  } else if (!isFloat(dtype)) {
    return badDType(name, dtype, "f32, f16, bf16 or f64");
  }
  RP_RETURN_IF_ERROR(checkOut(name, x, out));
  const Shape strides = contiguousStrides(x);
  RP_ASSIGN_OR_RETURN(StridedIter<2> iter, makeIter<2>(name, x, {strides, strides}));
  return UnaryPlan{op, dtype, iter};
}

StatusOr<BinaryPlan> planBinary(BinaryOp op, DType dtype, const Shape &a, const Shape &b,
                                const Shape &out) {
  const char *name = binaryKindName(op);
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    if (dtype != DType::I1)
      return badDType(name, dtype, "i1");
  } else if (!isComparison(op) && !isFloat(dtype) && !isInt(dtype)) {
    return badDType(name, dtype, "f32, f16, bf16, f64, i64 or i32");
  }
  RP_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(name, {a, b}));
  RP_RETURN_IF_ERROR(checkOut(name, shape, out));
  RP_ASSIGN_OR_RETURN(StridedIter<3> iter,
                      makeIter<3>(name, shape,
                                  {broadcastStrides(a, shape), broadcastStrides(b, shape),
                                   contiguousStrides(shape)}));
  return BinaryPlan{op, dtype, iter};
}

StatusOr<WherePlan> planWhere(DType dtype, const Shape &cond, const Shape &onTrue,
                              const Shape &onFalse, const Shape &out) {
  RP_ASSIGN_OR_RETURN(Shape shape, broadcastShapes("where", {cond, onTrue, onFalse}));
  RP_RETURN_IF_ERROR(checkOut("where", shape, out));
  RP_ASSIGN_OR_RETURN(StridedIter<4> iter,
                      makeIter<4>("where", shape,
                                  {broadcastStrides(cond, shape), broadcastStrides(onTrue, shape),
                                   broadcastStrides(onFalse, shape), contiguousStrides(shape)}));
  return WherePlan{dtype, iter};
}

StatusOr<CastPlan> planCast(DType from, DType to, const Shape &x, const Shape &out) {
  RP_RETURN_IF_ERROR(checkOut("cast", x, out));
  return CastPlan{from, to, numElements(x)};
}

} // namespace rp::kernels::cuda
