//===- Elementwise.h - Elementwise graph ops on the CPU ---------*- C++ -*-===//
//
// Reference kernels of the elementwise `graph` ops (docs/dialects/Graph.md):
// unary math, binary arithmetic / logic / comparison with numpy broadcasting,
// and `where`. Every kernel writes every element of an output the caller has
// allocated with the result dtype and shape of the op, and checks them.
//
// Numerics: f32 elements are computed in double and rounded once when stored
// (for + - * / and sqrt that equals the correctly rounded f32 operation; for
// the transcendental functions it is at least as accurate as f32 libm).
// Integer arithmetic wraps (two's complement) instead of overflowing.
//
// Errors (Status, never abort): InvalidArgument naming the op and the
// expected and actual dtype or shape; f16/bf16 are rejected (the caller
// upcasts them to f32).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_ELEMENTWISE_H
#define RP_KERNELS_CPU_ELEMENTWISE_H

#include "runtime/core/HostTensor.h"
#include "runtime/core/Status.h"

namespace rp::kernels::cpu {

/// Unary ops. Dtypes: Neg and Relu take f32, f64, i64, i32; LogicalNot takes
/// i1; all others take f32 or f64. Formulas (ONNX / torch.nn.functional):
///   Sqrt sqrt(x); Reciprocal 1/x; Exp, Log, Tanh, Erf as libm;
///   Sigmoid 1/(1+exp(-x)), evaluated as exp(x)/(1+exp(x)) for x < 0 so that
///     no exp overflows; Silu x*sigmoid(x);
///   GeluExact 0.5 x (1 + erf(x / sqrt(2)));
///   GeluTanh 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
///   Neg -x (integers wrap: -INT_MIN = INT_MIN); Relu max(x, 0) (NaN stays
///     NaN, as PyTorch); LogicalNot !x.
enum class UnaryKind {
  Sqrt,
  Reciprocal,
  Exp,
  Log,
  Tanh,
  Sigmoid,
  Erf,
  Silu,
  Neg,
  Relu,
  GeluExact,
  GeluTanh,
  LogicalNot
};

/// Name of the graph op ("sqrt", "gelu_exact", "logical_not", ...).
const char *unaryKindName(UnaryKind kind);

/// out = kind(x). `out` has x's dtype and shape.
runtime::Status unary(UnaryKind kind, const runtime::HostTensor &x, runtime::HostTensor &out);

/// Binary ops with numpy/ONNX broadcasting (trailing dimensions aligned, a 1
/// stretches); `a` and `b` have the same dtype.
///   Add, Sub, Mul, Div, Pow: f32, f64, i64, i32; out has the inputs' dtype.
///     Integer Div truncates toward zero (C++, ONNX; INT_MIN / -1 wraps to
///     INT_MIN) and a zero divisor is an InvalidArgument error. Float Pow is
///     std::pow; integer Pow is exact repeated squaring (wrapping), and a
///     negative exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise
///     (PyTorch's integer pow).
///   And, Or: i1 -> i1.
///   Eq, Lt, Le, Gt, Ge: f32, f64, i64, i32, i1 -> i1 (IEEE: every
///     comparison with a NaN is false).
enum class BinaryKind { Add, Sub, Mul, Div, Pow, And, Or, Eq, Lt, Le, Gt, Ge };

/// Name of the graph op ("add", "logical_and", "compare eq", ...).
const char *binaryKindName(BinaryKind kind);

/// out = a `kind` b. out's shape must be the broadcast of a's and b's shapes;
/// its dtype is i1 for comparisons and logic, a's dtype otherwise.
runtime::Status binary(BinaryKind kind, const runtime::HostTensor &a, const runtime::HostTensor &b,
                       runtime::HostTensor &out);

/// out = cond ? onTrue : onFalse, ONNX Where: `cond` is i1; onTrue and
/// onFalse have the same dtype (f32, f64, i64, i32 or i1), which is out's; the
/// three shapes broadcast together to out's shape.
runtime::Status where(const runtime::HostTensor &cond, const runtime::HostTensor &onTrue,
                      const runtime::HostTensor &onFalse, runtime::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_ELEMENTWISE_H
