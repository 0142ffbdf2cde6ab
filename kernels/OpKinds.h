//===- OpKinds.h - The kinds of the elementwise, reduction and loss ops -*- C++ -*-===//
//
// The op kinds shared by the CPU reference kernels (kernels/cpu) and the GPU kernels
// (kernels/cuda), so that both backends map the plan's kernel ids onto one enum
// (runtime/exec/InstructionDecoder.h). The semantics below are the CPU reference kernels';
// each kernel family documents the dtypes it takes and any deviation (kernels/cuda/*.h).
// Plain C++17, no dependency.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_OPKINDS_H
#define RP_KERNELS_OPKINDS_H

#include <cstdint>

namespace rp::kernels {

/// Unary ops. Formulas (ONNX / torch.nn.functional):
///   Sqrt sqrt(x); Reciprocal 1/x; Exp, Log, Tanh, Erf as libm;
///   Sigmoid 1/(1+exp(-x)), evaluated as exp(x)/(1+exp(x)) for x < 0 so that
///     no exp overflows; Silu x*sigmoid(x);
///   Softplus log(1 + exp(x)), evaluated as max(x, 0) + log1p(exp(-|x|)) (no
///     overflow, no loss of the tiny values of very negative x); Floor floor(x);
///   Cos, Sin as libm (radians);
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
  Softplus,
  Floor,
  Cos,
  Sin,
  Neg,
  Relu,
  GeluExact,
  GeluTanh,
  LogicalNot
};

/// Name of the graph op ("sqrt", "gelu exact", "logical_not", ...) and of a binary op ("add",
/// "logical_and", "compare eq", ...), for messages.
inline const char *unaryKindName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Reciprocal:
    return "reciprocal";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Log:
    return "log";
  case UnaryKind::Tanh:
    return "tanh";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Erf:
    return "erf";
  case UnaryKind::Silu:
    return "silu";
  case UnaryKind::Softplus:
    return "softplus";
  case UnaryKind::Floor:
    return "floor";
  case UnaryKind::Cos:
    return "cos";
  case UnaryKind::Sin:
    return "sin";
  case UnaryKind::Neg:
    return "neg";
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::GeluExact:
    return "gelu exact";
  case UnaryKind::GeluTanh:
    return "gelu tanh";
  case UnaryKind::LogicalNot:
    return "logical_not";
  }
  return "<invalid unary kind>";
}

/// Binary ops with numpy/ONNX broadcasting (trailing dimensions aligned, a 1
/// stretches); `a` and `b` have the same dtype.
///   Add, Sub, Mul, Div, Pow: f32, f64, i64, i32; out has the inputs' dtype.
///     Integer Div truncates toward zero (C++, ONNX; INT_MIN / -1 wraps to
///     INT_MIN) and a zero divisor is an InvalidArgument error. Float Pow is
///     std::pow; integer Pow is exact repeated squaring (wrapping), and a
///     negative exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise
///     (PyTorch's integer pow).
///   Mod, Fmod (graph.mod without and with `fmod`): f32, f64, i64, i32; the
///     remainder of a / b with the sign of b (Mod: Python's %, torch.remainder)
///     or of a (Fmod: C's fmod, torch.fmod). Integers are exact (a zero divisor
///     is an InvalidArgument error; x mod -1 is 0); floats are std::fmod(a, b),
///     plus b for Mod when the result is non-zero with a sign other than b's
///     (PyTorch's and numpy's rule).
///   And, Or: i1 -> i1.
///   Eq, Lt, Le, Gt, Ge: f32, f64, i64, i32, i1 -> i1 (IEEE: every
///     comparison with a NaN is false).
enum class BinaryKind { Add, Sub, Mul, Div, Pow, Mod, Fmod, And, Or, Eq, Lt, Le, Gt, Ge };

/// True for the comparisons Eq .. Ge (result i1).
inline bool isComparison(BinaryKind k) { return k >= BinaryKind::Eq; }

inline const char *binaryKindName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Pow:
    return "pow";
  case BinaryKind::Mod:
    return "mod";
  case BinaryKind::Fmod:
    return "mod fmod";
  case BinaryKind::And:
    return "logical_and";
  case BinaryKind::Or:
    return "logical_or";
  case BinaryKind::Eq:
    return "compare eq";
  case BinaryKind::Lt:
    return "compare lt";
  case BinaryKind::Le:
    return "compare le";
  case BinaryKind::Gt:
    return "compare gt";
  case BinaryKind::Ge:
    return "compare ge";
  }
  return "<invalid binary kind>";
}

/// Sum: f32 and f64 accumulate in double (f32 rounds once at the end);
///   integers accumulate in int64 (wrapping) and wrap to i32 when stored.
/// Mean: Sum / count. Integers: the int64 sum divided by the count with
///   truncation toward zero (ONNX Runtime; PyTorch has no integer mean).
/// Max: NaN propagates (PyTorch, numpy). Over an empty set: -inf for floats,
///   the dtype's minimum for integers (ONNX ReduceMax, opset 18).
/// An empty Sum is 0; an empty float Mean is NaN (0/0); an empty integer
/// Mean is an InvalidArgument error.
enum class ReduceKind { Sum, Mean, Max };

/// The op's name: "reduce_sum", "reduce_mean", "reduce_max".
inline const char *reduceKindName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "reduce_sum";
  case ReduceKind::Mean:
    return "reduce_mean";
  case ReduceKind::Max:
    return "reduce_max";
  }
  return "reduce";
}

/// How the per-position losses combine: Mean divides the sum by the number of
/// positions whose label is not ignore_index (NaN when there is none, as
/// PyTorch); Sum adds them (0 when every label is ignored).
enum class LossReduction { Mean, Sum };

/// linear_cross_entropy(_vjp) without chunk_rows: the most rows whose f32 logits fit in
/// kDefaultLogitsChunkBytes (32 MiB), at least 1 and at most `rows` (both backends).
inline constexpr int64_t kDefaultLogitsChunkBytes = int64_t(32) << 20;
inline int64_t defaultLossChunkRows(int64_t rows, int64_t vocab) {
  const int64_t fit = kDefaultLogitsChunkBytes / (4 * (vocab > 1 ? vocab : 1));
  const int64_t c = rows < fit ? rows : fit;
  return c > 1 ? c : 1;
}

} // namespace rp::kernels

#endif // RP_KERNELS_OPKINDS_H
