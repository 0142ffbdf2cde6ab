//===- Elementwise.h - Elementwise graph ops on the CPU ---------*- C++ -*-===//
//
// Reference kernels of the elementwise `graph` ops (docs/dialects/Graph.md):
// unary math, binary arithmetic / logic / comparison with numpy broadcasting,
// and `where`. Every kernel writes every element of an output the caller has
// allocated with the result dtype and shape of the op, and checks them.
//
// Numerics: f32 elements are computed in double and rounded once when stored
// (for + - * / and sqrt that equals the correctly rounded f32 operation, so
// those compute in f32 directly; for the transcendental functions it is at least
// as accurate as f32 libm), except exp, sigmoid and silu: f32 arithmetic with
// expF32 (within 2 ulp of e^x, kernels/cpu/KernelSupport.h), which vectorises.
// mod computes in the operands' type (fmod is exact; Mod's one addition rounds
// as it would in double). Integer arithmetic wraps (two's complement) instead of
// overflowing.
//
// Errors (Status, never abort): InvalidArgument naming the op and the
// expected and actual dtype or shape; f16/bf16 are rejected (the caller
// upcasts them to f32).
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_CPU_ELEMENTWISE_H
#define RP_KERNELS_CPU_ELEMENTWISE_H

#include "kernels/OpKinds.h"
#include "base/HostTensor.h"
#include "base/Status.h"

namespace rp::kernels::cpu {

/// Unary ops (kernels/OpKinds.h). Dtypes: Neg and Relu take f32, f64, i64, i32; LogicalNot
/// takes i1; all others take f32 or f64.
using UnaryKind = ::rp::kernels::UnaryKind;

using ::rp::kernels::unaryKindName;

/// out = kind(x). `out` has x's dtype and shape.
base::Status unary(UnaryKind kind, const base::HostTensor &x, base::HostTensor &out);

/// Binary ops (kernels/OpKinds.h) with numpy/ONNX broadcasting (trailing dimensions
/// aligned, a 1 stretches); `a` and `b` have the same dtype. Integer Div, Mod and Fmod by
/// zero are an InvalidArgument error.
using BinaryKind = ::rp::kernels::BinaryKind;

using ::rp::kernels::binaryKindName;

/// out = a `kind` b. out's shape must be the broadcast of a's and b's shapes;
/// its dtype is i1 for comparisons and logic, a's dtype otherwise.
base::Status binary(BinaryKind kind, const base::HostTensor &a, const base::HostTensor &b,
                       base::HostTensor &out);

/// out = cond ? onTrue : onFalse, ONNX Where: `cond` is i1; onTrue and
/// onFalse have the same dtype (f32, f64, i64, i32 or i1), which is out's; the
/// three shapes broadcast together to out's shape.
base::Status where(const base::HostTensor &cond, const base::HostTensor &onTrue,
                      const base::HostTensor &onFalse, base::HostTensor &out);

} // namespace rp::kernels::cpu

#endif // RP_KERNELS_CPU_ELEMENTWISE_H
