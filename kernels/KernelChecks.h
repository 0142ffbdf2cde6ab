//===- KernelChecks.h - Argument checks shared by the CPU and GPU kernels -*- C++ -*-===//
//
// The argument checks of the CPU reference kernels (kernels/cpu) and of the GPU planners
// (kernels/cuda), on dtypes and shapes, so that both backends word a rejected argument alike.
// Every message names the op, the argument, the actual and the expected value:
//   "add: out is f32[2, 4], expected f32[2, 3]"
//   "softmax: x has dtype i64, expected f32, f16, bf16 or f64"
//   "gather: axis 3 is out of range, expected [0, 2)"
//
// Two parts: generic checks (a dtype among a list, a type, an axis, a rank, broadcasting), and
// the shape rules of single ops that both backends check the same way (reduce axes, the loss's
// labels, gather/scatter index shapes, rope and attention operands, matmul's contraction).
// graph.range's rules are in kernels/RangeRules.h.
//
// Header-only plain C++17 (host code of .cpp and .cu files alike); needs runtime/core.
//
//===----------------------------------------------------------------------===//
#ifndef RP_KERNELS_KERNELCHECKS_H
#define RP_KERNELS_KERNELCHECKS_H

#include "base/DType.h"
#include "base/HostTensor.h"
#include "base/Status.h"
#include "kernels/Quantization.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace rp::kernels {

/// The dtypes of gather and scatter indices and of cross-entropy labels.
inline constexpr std::initializer_list<base::DType> kIndexTypes = {base::DType::I64,
                                                                      base::DType::I32};

/// True when `dtype` is one of `types`.
inline bool dtypeIn(base::DType dtype, std::initializer_list<base::DType> types) {
  return std::find(types.begin(), types.end(), dtype) != types.end();
}

/// "f32, f64 or i64".
inline std::string dtypeList(std::initializer_list<base::DType> types) {
  std::string out;
  size_t i = 0;
  for (base::DType t : types) {
    if (i > 0)
      out += i + 1 == types.size() ? " or " : ", ";
    out += base::dtypeName(t);
    ++i;
  }
  return out;
}

/// InvalidArgument "<op>: <what> has dtype <d>, expected <allowed><note>" unless `dtype` is one
/// of `allowed` (`note` explains a refusal, e.g. " (CPU kernels take f16/bf16 upcast to f32)").
inline base::Status checkDType(std::string_view op, const char *what, base::DType dtype,
                                  std::initializer_list<base::DType> allowed,
                                  const char *note = "") {
  if (dtypeIn(dtype, allowed))
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + what + " has dtype " +
                                  base::dtypeName(dtype) + ", expected " + dtypeList(allowed) +
                                  note);
}

/// InvalidArgument "<op>: <whatB> has dtype <b>, expected <a> (the dtype of <whatA>)" unless
/// b == a.
inline base::Status checkSameDType(std::string_view op, const char *whatA, base::DType a,
                                      const char *whatB, base::DType b) {
  if (a == b)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + whatB + " has dtype " +
                                  base::dtypeName(b) + ", expected " + base::dtypeName(a) +
                                  " (the dtype of " + whatA + ")");
}

/// InvalidArgument "<op>: <what> is <dtype><shape>, expected <wantDType><want>" unless the
/// type is exactly the wanted one.
inline base::Status checkType(std::string_view op, const char *what, base::DType dtype,
                                 const std::vector<int64_t> &shape, base::DType wantDType,
                                 const std::vector<int64_t> &want) {
  if (dtype == wantDType && shape == want)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + what + " is " +
                                  base::dtypeName(dtype) + base::formatShape(shape) +
                                  ", expected " + base::dtypeName(wantDType) +
                                  base::formatShape(want));
}

/// checkType for an argument whose dtype is already known to be right: InvalidArgument
/// "<op>: <what> is <dtype><got>, expected <dtype><want>" unless got == want.
inline base::Status checkShapeIs(std::string_view op, const char *what, base::DType dtype,
                                    const std::vector<int64_t> &got,
                                    const std::vector<int64_t> &want) {
  return checkType(op, what, dtype, got, dtype, want);
}

/// InvalidArgument "<op>: <what> <axis> is out of range, expected [0, <rank>)" unless
/// 0 <= axis < rank (`what` is "axis", or names the attribute).
inline base::Status checkAxis(std::string_view op, const char *what, int64_t axis,
                                 int64_t rank) {
  if (axis >= 0 && axis < rank)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + what + " " + std::to_string(axis) +
                                  " is out of range, expected [0, " + std::to_string(rank) + ")");
}

/// InvalidArgument "<op>: expected <what> of rank >= <rank>, got <dtype><shape>" unless
/// shape.size() >= rank.
inline base::Status checkRankAtLeast(std::string_view op, const char *what, base::DType dtype,
                                        const std::vector<int64_t> &shape, size_t rank) {
  if (shape.size() >= rank)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": expected " + what +
                                  " of rank >= " + std::to_string(rank) + ", got " +
                                  base::dtypeName(dtype) + base::formatShape(shape));
}

/// InvalidArgument "<op>: <what> has a negative dimension: <shape>" when one is.
inline base::Status checkNoNegativeDim(std::string_view op, const char *what,
                                          const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    if (d < 0)
      return base::invalidArgument(std::string(op) + ": " + what +
                                      " has a negative dimension: " + base::formatShape(shape));
  return base::okStatus();
}

/// InvalidArgument "<op>: <what> of shape <from> does not broadcast to <to>" unless `from`
/// broadcasts to `to` (numpy rules: trailing dimensions aligned, a 1 stretches).
inline base::Status checkBroadcastsTo(std::string_view op, const char *what,
                                         const std::vector<int64_t> &from,
                                         const std::vector<int64_t> &to) {
  bool ok = from.size() <= to.size();
  const size_t lead = ok ? to.size() - from.size() : 0;
  for (size_t d = 0; ok && d < from.size(); ++d)
    ok = from[d] == 1 || from[d] == to[lead + d];
  if (ok)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + what + " of shape " +
                                  base::formatShape(from) + " does not broadcast to " +
                                  base::formatShape(to));
}

//===--- the shape rules of single ops, as both backends word them ---------===//

namespace detail {
inline std::string typeText(base::DType dtype, const std::vector<int64_t> &shape) {
  return base::dtypeName(dtype) + base::formatShape(shape);
}
} // namespace detail

/// graph.matmul's contraction: InvalidArgument "matmul: contraction dimensions differ: a <a>
/// has K = <ka>, b <b> has K = <kb>" (the shapes as given, before 1-D promotion).
inline base::Status contractionMismatch(const std::vector<int64_t> &a, int64_t ka,
                                           const std::vector<int64_t> &b, int64_t kb) {
  return base::invalidArgument("matmul: contraction dimensions differ: a " +
                                  base::formatShape(a) + " has K = " + std::to_string(ka) +
                                  ", b " + base::formatShape(b) +
                                  " has K = " + std::to_string(kb));
}

/// The reduction axes of reduce_sum/mean/max on a tensor of rank `rank`: at least one, each in
/// range, strictly increasing. Errors: InvalidArgument "<op>: expected at least one axis",
/// checkAxis's, "<op>: expected strictly increasing axes, got <axes>".
inline base::Status checkReduceAxes(std::string_view op, const std::vector<int64_t> &axes,
                                       int64_t rank) {
  if (axes.empty())
    return base::invalidArgument(std::string(op) + ": expected at least one axis");
  for (size_t i = 0; i < axes.size(); ++i) {
    RP_RETURN_IF_ERROR(checkAxis(op, "axis", axes[i], rank));
    if (i > 0 && axes[i] <= axes[i - 1])
      return base::invalidArgument(std::string(op) +
                                      ": expected strictly increasing axes, got " +
                                      base::formatShape(axes));
  }
  return base::okStatus();
}

/// InvalidArgument "<op>: the integer mean of an empty set is undefined (x <type>, axes
/// <axes>)".
inline base::Status emptyIntegerMean(std::string_view op, base::DType dtype,
                                        const std::vector<int64_t> &x,
                                        const std::vector<int64_t> &axes) {
  return base::invalidArgument(std::string(op) + ": the integer mean of an empty set is " +
                                  "undefined (x " + detail::typeText(dtype, x) + ", axes " +
                                  base::formatShape(axes) + ")");
}

/// graph.cross_entropy: logits [N, C, d1, ...] (rank >= 2) and labels [N, d1, ...]. Errors:
/// InvalidArgument "cross_entropy: expected logits of rank >= 2 ([N, C, ...]), got <type>",
/// "cross_entropy: expected labels of shape <shape> for logits <type>, got <labels>".
inline base::Status checkLossShapes(base::DType dtype, const std::vector<int64_t> &logits,
                                       const std::vector<int64_t> &labels) {
  const std::string op = "cross_entropy";
  if (logits.size() < 2)
    return base::invalidArgument(op + ": expected logits of rank >= 2 ([N, C, ...]), got " +
                                    detail::typeText(dtype, logits));
  std::vector<int64_t> labelShape{logits[0]};
  labelShape.insert(labelShape.end(), logits.begin() + 2, logits.end());
  if (labels != labelShape)
    return base::invalidArgument(
        op + ": expected labels of shape " + base::formatShape(labelShape) + " for logits " +
        detail::typeText(dtype, logits) + ", got " + base::formatShape(labels));
  return base::okStatus();
}

/// graph.gather_elements (axis in range): indices of data's rank, no larger than the data
/// but along `axis`. Errors: InvalidArgument "gather_elements: indices of shape <shape> do not
/// fit data <type>: expected rank <r> and every dimension but <axis> at most the data's".
inline base::Status checkGatherElementsFit(base::DType dtype,
                                              const std::vector<int64_t> &data,
                                              const std::vector<int64_t> &indices, int64_t axis) {
  bool fits = indices.size() == data.size();
  for (size_t d = 0; fits && d < data.size(); ++d)
    fits = static_cast<int64_t>(d) == axis || indices[d] <= data[d];
  if (fits)
    return base::okStatus();
  return base::invalidArgument(
      "gather_elements: indices of shape " + base::formatShape(indices) + " do not fit data " +
      detail::typeText(dtype, data) + ": expected rank " + std::to_string(data.size()) +
      " and every dimension but " + std::to_string(axis) + " at most the data's");
}

/// graph.scatter_add and graph.scatter (`op`; axis in range): updates are the gather of the
/// scattered tensor (`role`: "out", "data") along `axis` by the indices, target[:axis] +
/// indices + target[axis+1:]. Errors: InvalidArgument "<op>: updates is <type>, expected
/// <type> (gather of <role> <type> along axis <axis> by indices of shape <shape>)".
inline base::Status checkScatterUpdates(std::string_view op, const char *role,
                                        base::DType updatesDType,
                                        const std::vector<int64_t> &updates,
                                        base::DType targetDType,
                                        const std::vector<int64_t> &target,
                                        const std::vector<int64_t> &indices, int64_t axis) {
  std::vector<int64_t> shape(target.begin(), target.begin() + axis);
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), target.begin() + axis + 1, target.end());
  if (updates == shape)
    return base::okStatus();
  return base::invalidArgument(
      std::string(op) + ": updates is " + detail::typeText(updatesDType, updates) +
      ", expected " + detail::typeText(targetDType, shape) + " (gather of " + role + " " +
      detail::typeText(targetDType, target) + " along axis " + std::to_string(axis) +
      " by indices of shape " + base::formatShape(indices) + ")");
}

/// graph.scatter_elements_add and graph.scatter_elements (`op`; axis in range): indices of the
/// updates' shape, updates of the scattered tensor's (`role`: "out", "data") rank and no larger
/// but along `axis`. Errors: InvalidArgument "<op>: indices have shape <shape>, expected the
/// shape of updates <shape>", "<op>: updates of shape <shape> do not fit <role> <type>:
/// expected rank <r> and every dimension but <axis> at most <role>'s".
inline base::Status checkScatterElementsFit(std::string_view opName, const char *role,
                                            const std::vector<int64_t> &updates,
                                            const std::vector<int64_t> &indices,
                                            base::DType outDType,
                                            const std::vector<int64_t> &out, int64_t axis) {
  const std::string op(opName);
  if (indices != updates)
    return base::invalidArgument(op + ": indices have shape " + base::formatShape(indices) +
                                    ", expected the shape of updates " +
                                    base::formatShape(updates));
  bool fits = updates.size() == out.size();
  for (size_t d = 0; fits && d < out.size(); ++d)
    fits = static_cast<int64_t>(d) == axis || updates[d] <= out[d];
  if (fits)
    return base::okStatus();
  return base::invalidArgument(
      op + ": updates of shape " + base::formatShape(updates) + " do not fit " + role + " " +
      detail::typeText(outDType, out) + ": expected rank " + std::to_string(out.size()) +
      " and every dimension but " + std::to_string(axis) + " at most " + role + "'s");
}

/// graph.rope's x (graph.rope_vjp's g): rank >= 1 with an even last dimension. Errors:
/// InvalidArgument "rope: x is <shape>, expected rank >= 1 with an even last dimension".
inline base::Status checkRopeInput(const std::vector<int64_t> &x, std::string_view op = "rope",
                                   std::string_view role = "x") {
  if (!x.empty() && x.back() % 2 == 0)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": " + std::string(role) + " is " +
                               base::formatShape(x) +
                               ", expected rank >= 1 with an even last dimension");
}

/// graph.rope's cos (and sin) table: x's last dimension. Errors: InvalidArgument "rope: cos is
/// <shape>, expected a last dimension of <d>".
inline base::Status checkRopeTable(const std::vector<int64_t> &x, const std::vector<int64_t> &cos,
                                   std::string_view op = "rope") {
  if (!cos.empty() && cos.back() == x.back())
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": cos is " + base::formatShape(cos) +
                               ", expected a last dimension of " + std::to_string(x.back()));
}

/// graph.attention's q: [B, Hq, S, D]. Errors: InvalidArgument "<op>: q is <shape>,
/// expected [B, Hq, S, D]" (op: "attention" or "attention_vjp").
inline base::Status checkAttentionQuery(const std::vector<int64_t> &q,
                                           std::string_view op = "attention") {
  if (q.size() == 4)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": q is " + base::formatShape(q) +
                                  ", expected [B, Hq, S, D]");
}

/// graph.attention's k for a 4-D q: [B, Hkv, S, D] with Hkv dividing Hq. Errors:
/// InvalidArgument "<op>: k is <shape>, expected [B, Hkv, S, D] with Hkv dividing <Hq>"
/// (B, S, D as numbers; op: "attention" or "attention_vjp").
inline base::Status checkAttentionKey(const std::vector<int64_t> &q,
                                         const std::vector<int64_t> &k,
                                         std::string_view op = "attention") {
  if (k.size() == 4 && k[0] == q[0] && k[2] == q[2] && k[3] == q[3] && k[1] != 0 &&
      q[1] % k[1] == 0)
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": k is " + base::formatShape(k) + ", expected [" +
                                  std::to_string(q[0]) + ", Hkv, " + std::to_string(q[2]) + ", " +
                                  std::to_string(q[3]) + "] with Hkv dividing " +
                                  std::to_string(q[1]));
}

/// graph.attention's v for a 4-D k: [B, Hkv, S, Dv], the key's batch, heads and positions
/// with any head size Dv (multi-head latent attention: Dv != D). Errors: InvalidArgument
/// "<op>: v is <shape>, expected [B, Hkv, S, Dv]" (B, Hkv, S as numbers).
inline base::Status checkAttentionValue(const std::vector<int64_t> &k,
                                           const std::vector<int64_t> &v,
                                           std::string_view op = "attention") {
  if (v.size() == 4 && v[0] == k[0] && v[1] == k[1] && v[2] == k[2])
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": v is " + base::formatShape(v) + ", expected [" +
                                  std::to_string(k[0]) + ", " + std::to_string(k[1]) + ", " +
                                  std::to_string(k[2]) + ", Dv]");
}

/// The shape of attention's result for q [B, Hq, S, D] and v [B, Hkv, S, Dv]: [B, Hq, S, Dv].
inline std::vector<int64_t> attentionOutShape(const std::vector<int64_t> &q,
                                              const std::vector<int64_t> &v) {
  return {q[0], q[1], q[2], v[3]};
}

/// graph.attention's sliding window: 0 (none) or >= 1 with `causal`. Errors: InvalidArgument
/// "<op>: window <w> is negative" or "<op>: a sliding window (<w>) needs causal attention".
inline base::Status checkAttentionWindow(std::string_view op, bool causal, int64_t window) {
  if (window < 0)
    return base::invalidArgument(std::string(op) + ": window " + std::to_string(window) +
                                    " is negative");
  if (window > 0 && !causal)
    return base::invalidArgument(std::string(op) + ": a sliding window (" +
                                    std::to_string(window) + ") needs causal attention");
  return base::okStatus();
}

/// graph.attention's soft-cap: 0 (none) or positive and finite. Errors: InvalidArgument
/// "<op>: softcap <c> is not positive and finite".
inline base::Status checkAttentionSoftcap(std::string_view op, double softcap) {
  if (softcap == 0.0 || (softcap > 0.0 && softcap <= 1.7976931348623157e308))
    return base::okStatus();
  return base::invalidArgument(std::string(op) + ": softcap " + std::to_string(softcap) +
                                  " is not positive and finite");
}

/// graph.dequantize's operands (CPU kernel and GPU planner): `q` u8 of one dimension holding
/// the quantized storage of a weight of out's shape, out f32, f16 or bf16. Returns the layout.
/// Errors: InvalidArgument, e.g. "dequantize: q is u8[100], expected u8[8456] (nf4 of
/// [128, 128])", "dequantize: out has dtype i64, expected f32, f16 or bf16".
inline base::StatusOr<QuantLayout> checkDequantize(base::DType qDType,
                                                   const std::vector<int64_t> &q,
                                                   base::DType outDType,
                                                   const std::vector<int64_t> &out,
                                                   QuantFormat format, int64_t axis) {
  RP_RETURN_IF_ERROR(checkDType("dequantize", "out", outDType,
                                {base::DType::F32, base::DType::F16, base::DType::BF16}));
  RP_ASSIGN_OR_RETURN(QuantLayout layout, quantLayout(format, out, axis, "dequantize: out"));
  if (qDType != base::DType::U8 || q.size() != 1 || q[0] != layout.bytes)
    return base::invalidArgument("dequantize: q is " + std::string(base::dtypeName(qDType)) +
                                 base::formatShape(q) + ", expected u8[" +
                                 std::to_string(layout.bytes) + "] (" +
                                 quantFormatName(format) + " of " + base::formatShape(out) + ")");
  return layout;
}

} // namespace rp::kernels

#endif // RP_KERNELS_KERNELCHECKS_H
