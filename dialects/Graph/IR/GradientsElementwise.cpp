//===- GradientsElementwise.cpp - VJPs of the elementwise graph ops -------===//
//
// Each VJP maps the result cotangent `g` to operand cotangents with graph ops. Broadcast
// operands get `unbroadcast(...)` (a sum over the broadcast dimensions). Integer operands get
// no cotangent.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/VJPBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rp::graph;

namespace {

/// Shared shape of the unary float VJPs: operand cotangent = g * f'(x, y).
template <typename OpTy, typename Fn>
LogicalResult unaryVJP(OpTy op, OpBuilder &builder, ArrayRef<Value> grads,
                       SmallVectorImpl<Value> &out, Fn derivativeTimesG) {
  Value g = grads[0];
  if (!g || !VJPBuilder::isFloat(op.getInput())) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(builder, op.getLoc());
  out.push_back(derivativeTimesG(v, g, op.getInput(), op.getResult()));
  return success();
}

} // namespace

// d sqrt(x) = 1 / (2 sqrt(x))
LogicalResult SqrtOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value, Value y) {
    return v.div(v.scale(g, 0.5), y);
  });
}

// d (1/x) = -1/x^2 = -y^2
LogicalResult ReciprocalOp::buildVJP(OpBuilder &b, ArrayRef<Value> g,
                                     SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out,
                  [](VJPBuilder &v, Value g, Value, Value y) { return v.neg(v.mul(g, v.mul(y, y))); });
}

// d exp(x) = exp(x)
LogicalResult ExpOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value, Value y) { return v.mul(g, y); });
}

// d log(x) = 1/x
LogicalResult LogOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) { return v.div(g, x); });
}

// d tanh(x) = 1 - tanh(x)^2
LogicalResult TanhOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value, Value y) {
    Value one = v.scalar(VJPBuilder::typeOf(y).getElementType(), 1.0);
    return v.mul(g, v.sub(one, v.mul(y, y)));
  });
}

// d sigmoid(x) = s (1 - s)
LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value, Value y) {
    Value one = v.scalar(VJPBuilder::typeOf(y).getElementType(), 1.0);
    return v.mul(g, v.mul(y, v.sub(one, y)));
  });
}

// d erf(x) = 2/sqrt(pi) exp(-x^2)
LogicalResult ErfOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    Value e = ExpOp::create(v.b, v.loc, v.neg(v.mul(x, x)));
    return v.mul(v.scale(g, 2.0 / std::sqrt(M_PI)), e);
  });
}

// d silu(x) = s + x s (1 - s), s = sigmoid(x)
LogicalResult SiluOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    Value s = SigmoidOp::create(v.b, v.loc, x);
    Value one = v.scalar(VJPBuilder::typeOf(x).getElementType(), 1.0);
    return v.mul(g, v.add(s, v.mul(v.mul(x, s), v.sub(one, s))));
  });
}

// d softplus(x) = sigmoid(x)
LogicalResult SoftplusOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    return v.mul(g, SigmoidOp::create(v.b, v.loc, x));
  });
}

// d cos(x) = -sin(x)
LogicalResult CosOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    return v.neg(v.mul(g, SinOp::create(v.b, v.loc, x)));
  });
}

// d sin(x) = cos(x)
LogicalResult SinOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    return v.mul(g, CosOp::create(v.b, v.loc, x));
  });
}

// d floor(x) = 0 where it exists: no cotangent (PyTorch's is zeros).
LogicalResult FloorOp::buildVJP(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &out) {
  out.push_back(Value());
  return success();
}

// d (-x) = -1
LogicalResult NegOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value, Value) { return v.neg(g); });
}

// d relu(x) = [x > 0]
LogicalResult ReluOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return unaryVJP(*this, b, g, out, [](VJPBuilder &v, Value g, Value x, Value) {
    Value zero = v.scalar(VJPBuilder::typeOf(x).getElementType(), 0.0);
    Value positive = CompareOp::create(v.b, v.loc, CompareKind::gt, x, zero);
    return Value(WhereOp::create(v.b, v.loc, positive, g, zero));
  });
}

// exact: d gelu = Phi(x) + x phi(x); tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2),
// t = tanh(c (x + k x^3)), c = sqrt(2/pi), k = 0.044715.
LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  bool exact = getApproximate() == GeluApproximation::exact;
  return unaryVJP(*this, b, g, out, [exact](VJPBuilder &v, Value g, Value x, Value) {
    Type e = VJPBuilder::typeOf(x).getElementType();
    Value one = v.scalar(e, 1.0);
    if (exact) {
      Value cdf = v.scale(v.add(one, ErfOp::create(v.b, v.loc, v.scale(x, M_SQRT1_2))), 0.5);
      Value pdf = v.scale(ExpOp::create(v.b, v.loc, v.scale(v.mul(x, x), -0.5)),
                          1.0 / std::sqrt(2.0 * M_PI));
      return v.mul(g, v.add(cdf, v.mul(x, pdf)));
    }
    const double c = std::sqrt(2.0 / M_PI), k = 0.044715;
    Value x2 = v.mul(x, x);
    Value inner = v.scale(v.add(x, v.scale(v.mul(x2, x), k)), c);
    Value t = TanhOp::create(v.b, v.loc, inner);
    Value left = v.scale(v.add(one, t), 0.5);
    Value dinner = v.scale(v.add(one, v.scale(x2, 3.0 * k)), c);
    Value right = v.mul(v.scale(v.mul(x, v.sub(one, v.mul(t, t))), 0.5), dinner);
    return v.mul(g, v.add(left, right));
  });
}

namespace {

/// Binary VJP: `lhsGrad(g)`, `rhsGrad(g)` at the broadcast shape, summed back per operand.
template <typename OpTy, typename L, typename R>
LogicalResult binaryVJP(OpTy op, OpBuilder &builder, ArrayRef<Value> grads,
                        SmallVectorImpl<Value> &out, L lhsGrad, R rhsGrad) {
  Value g = grads[0];
  if (!g || !VJPBuilder::isFloat(op.getLhs())) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(builder, op.getLoc());
  out.push_back(v.unbroadcast(lhsGrad(v, g), VJPBuilder::typeOf(op.getLhs())));
  out.push_back(v.unbroadcast(rhsGrad(v, g), VJPBuilder::typeOf(op.getRhs())));
  return success();
}

} // namespace

LogicalResult AddOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return binaryVJP(*this, b, g, out, [](VJPBuilder &, Value g) { return g; },
                   [](VJPBuilder &, Value g) { return g; });
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  return binaryVJP(*this, b, g, out, [](VJPBuilder &, Value g) { return g; },
                   [](VJPBuilder &v, Value g) { return v.neg(g); });
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  Value lhs = getLhs(), rhs = getRhs();
  return binaryVJP(*this, b, g, out, [&](VJPBuilder &v, Value g) { return v.mul(g, rhs); },
                   [&](VJPBuilder &v, Value g) { return v.mul(g, lhs); });
}

// d(l/r)/dl = 1/r; d(l/r)/dr = -l/r^2 = -y/r
LogicalResult DivOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  Value rhs = getRhs(), y = getResult();
  return binaryVJP(*this, b, g, out, [&](VJPBuilder &v, Value g) { return v.div(g, rhs); },
                   [&](VJPBuilder &v, Value g) { return v.neg(v.div(v.mul(g, y), rhs)); });
}

// d(l^r)/dl = r l^(r-1); d(l^r)/dr = l^r log(l)
LogicalResult PowOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  Value lhs = getLhs(), rhs = getRhs(), y = getResult();
  return binaryVJP(
      *this, b, g, out,
      [&](VJPBuilder &v, Value g) {
        Value one = v.scalar(VJPBuilder::typeOf(rhs).getElementType(), 1.0);
        Value p = PowOp::create(v.b, v.loc, lhs, v.sub(rhs, one));
        return v.mul(v.mul(g, rhs), p);
      },
      [&](VJPBuilder &v, Value g) {
        return v.mul(v.mul(g, y), LogOp::create(v.b, v.loc, lhs));
      });
}

// lhs mod rhs = lhs - q rhs with q = floor(lhs / rhs) (trunc with fmod), piecewise constant:
// d/dlhs = 1; d/drhs = -q = -(lhs - y) / rhs.
LogicalResult ModOp::buildVJP(OpBuilder &b, ArrayRef<Value> g, SmallVectorImpl<Value> &out) {
  Value lhs = getLhs(), rhs = getRhs(), y = getResult();
  return binaryVJP(*this, b, g, out, [](VJPBuilder &, Value g) { return g; },
                   [&](VJPBuilder &v, Value g) {
                     return v.neg(v.div(v.mul(g, v.sub(lhs, y)), rhs));
                   });
}

LogicalResult WhereOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  out.push_back(Value()); // the condition is boolean
  if (!g || !VJPBuilder::isFloat(getOnTrue())) {
    out.append({Value(), Value()});
    return success();
  }
  VJPBuilder v(b, getLoc());
  Value zero = v.scalar(VJPBuilder::typeOf(g).getElementType(), 0.0);
  out.push_back(v.unbroadcast(WhereOp::create(b, getLoc(), getCondition(), g, zero),
                              VJPBuilder::typeOf(getOnTrue())));
  out.push_back(v.unbroadcast(WhereOp::create(b, getLoc(), getCondition(), zero, g),
                              VJPBuilder::typeOf(getOnFalse())));
  return success();
}

// A cast's cotangent is cast back; integer operands get none.
LogicalResult CastOp::buildVJP(OpBuilder &b, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  if (!g || !VJPBuilder::isFloat(getInput()) || !VJPBuilder::isFloat(getResult())) {
    out.push_back(Value());
    return success();
  }
  VJPBuilder v(b, getLoc());
  out.push_back(v.cast(g, getInput().getType().getElementType()));
  return success();
}
