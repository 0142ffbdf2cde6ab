//===- KernelChecks.h - Argument checks shared by the CPU and GPU kernels -*- C++ -*-===//
//
// The argument checks of the CPU reference kernels (kernels/cpu) and of the GPU planners
// (kernels/cuda), on dtypes and shapes, so that both backends word a rejected argument alike.
// Every message names the op, the argument, the actual and the expected value:
//   "add: out is f32[2, 4], expected f32[2, 3]"
//   "softmax: x has dtype i64, expected f32, f16, bf16 or f64"
//   "gather: axis 3 is out of range, expected [0, 2)"
//
// Header-only plain C++17 (host code of .cpp and .cu files alike); needs runtime/core.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_KERNELCHECKS_H
#define RP_KERNELS_KERNELCHECKS_H

#include "runtime/core/DType.h"
#include "runtime/core/HostTensor.h"
#include "runtime/core/Status.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace rp::kernels {

/// The dtypes of gather and scatter indices and of cross-entropy labels.
inline constexpr std::initializer_list<runtime::DType> kIndexTypes = {runtime::DType::I64,
                                                                      runtime::DType::I32};

/// True when `dtype` is one of `types`.
inline bool dtypeIn(runtime::DType dtype, std::initializer_list<runtime::DType> types) {
  return std::find(types.begin(), types.end(), dtype) != types.end();
}

/// "f32, f64 or i64".
inline std::string dtypeList(std::initializer_list<runtime::DType> types) {
  std::string out;
  size_t i = 0;
  for (runtime::DType t : types) {
    if (i > 0)
      out += i + 1 == types.size() ? " or " : ", ";
    out += runtime::dtypeName(t);
    ++i;
  }
  return out;
}

/// InvalidArgument "<op>: <what> has dtype <d>, expected <allowed><note>" unless `dtype` is one
/// of `allowed` (`note` explains a refusal, e.g. " (CPU kernels take f16/bf16 upcast to f32)").
inline runtime::Status checkDType(std::string_view op, const char *what, runtime::DType dtype,
                                  std::initializer_list<runtime::DType> allowed,
                                  const char *note = "") {
  if (dtypeIn(dtype, allowed))
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": " + what + " has dtype " +
                                  runtime::dtypeName(dtype) + ", expected " + dtypeList(allowed) +
                                  note);
}

/// InvalidArgument "<op>: <whatB> has dtype <b>, expected <a> (the dtype of <whatA>)" unless
/// b == a.
inline runtime::Status checkSameDType(std::string_view op, const char *whatA, runtime::DType a,
                                      const char *whatB, runtime::DType b) {
  if (a == b)
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": " + whatB + " has dtype " +
                                  runtime::dtypeName(b) + ", expected " + runtime::dtypeName(a) +
                                  " (the dtype of " + whatA + ")");
}

/// InvalidArgument "<op>: <what> is <dtype><shape>, expected <wantDType><want>" unless the
/// type is exactly the wanted one.
inline runtime::Status checkType(std::string_view op, const char *what, runtime::DType dtype,
                                 const std::vector<int64_t> &shape, runtime::DType wantDType,
                                 const std::vector<int64_t> &want) {
  if (dtype == wantDType && shape == want)
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": " + what + " is " +
                                  runtime::dtypeName(dtype) + runtime::formatShape(shape) +
                                  ", expected " + runtime::dtypeName(wantDType) +
                                  runtime::formatShape(want));
}

/// checkType for an argument whose dtype is already known to be right: InvalidArgument
/// "<op>: <what> is <dtype><got>, expected <dtype><want>" unless got == want.
inline runtime::Status checkShapeIs(std::string_view op, const char *what, runtime::DType dtype,
                                    const std::vector<int64_t> &got,
                                    const std::vector<int64_t> &want) {
  return checkType(op, what, dtype, got, dtype, want);
}

/// InvalidArgument "<op>: <what> <axis> is out of range, expected [0, <rank>)" unless
/// 0 <= axis < rank (`what` is "axis", or names the attribute).
inline runtime::Status checkAxis(std::string_view op, const char *what, int64_t axis,
                                 int64_t rank) {
  if (axis >= 0 && axis < rank)
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": " + what + " " + std::to_string(axis) +
                                  " is out of range, expected [0, " + std::to_string(rank) + ")");
}

/// InvalidArgument "<op>: expected <what> of rank >= <rank>, got <dtype><shape>" unless
/// shape.size() >= rank.
inline runtime::Status checkRankAtLeast(std::string_view op, const char *what, runtime::DType dtype,
                                        const std::vector<int64_t> &shape, size_t rank) {
  if (shape.size() >= rank)
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": expected " + what +
                                  " of rank >= " + std::to_string(rank) + ", got " +
                                  runtime::dtypeName(dtype) + runtime::formatShape(shape));
}

/// InvalidArgument "<op>: <what> has a negative dimension: <shape>" when one is.
inline runtime::Status checkNoNegativeDim(std::string_view op, const char *what,
                                          const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d < 0)
      return runtime::invalidArgument(std::string(op) + ": " + what +
                                      " has a negative dimension: " + runtime::formatShape(shape));
  return runtime::okStatus();
}

/// InvalidArgument "<op>: <what> of shape <from> does not broadcast to <to>" unless `from`
/// broadcasts to `to` (numpy rules: trailing dimensions aligned, a 1 stretches).
inline runtime::Status checkBroadcastsTo(std::string_view op, const char *what,
                                         const std::vector<int64_t> &from,
                                         const std::vector<int64_t> &to) {
  bool ok = from.size() <= to.size();
  const size_t lead = ok ? to.size() - from.size() : 0;
  for (size_t d = 0; ok && d < from.size(); ++d)
    ok = from[d] == 1 || from[d] == to[lead + d];
  if (ok)
    return runtime::okStatus();
  return runtime::invalidArgument(std::string(op) + ": " + what + " of shape " +
                                  runtime::formatShape(from) + " does not broadcast to " +
                                  runtime::formatShape(to));
}

} // namespace rp::kernels

#endif // RP_KERNELS_KERNELCHECKS_H
