//===- Registry.cpp - The stable kernel ids a plan may name ---------------===//
//
// The table follows dialects/Graph/IR/Ops.td op by op; keep them in step (a new graph op that
// can appear in a layer function needs an entry here).
//
//===----------------------------------------------------------------------===//

#include "kernels/Registry.h"

#include <unordered_map>

namespace rp::kernels {
namespace {

constexpr AttrSpec req(std::string_view name, AttrKind kind) { return {name, kind, true}; }
constexpr AttrSpec opt(std::string_view name, AttrKind kind) { return {name, kind, false}; }

/// A kernel with a fixed operand count.
KernelInfo fixed(std::string_view id, int operands, int results, DTypeRule dtypes,
                 std::vector<AttrSpec> attrs = {}) {
  return KernelInfo{id, operands, operands, results, dtypes, std::move(attrs)};
}

std::vector<KernelInfo> buildTable() {
  using K = AttrKind;
  using R = DTypeRule;
  const std::vector<AttrSpec> sliceAttrs = {req("axes", K::Ints), req("starts", K::Ints),
                                            req("ends", K::Ints), req("steps", K::Ints)};
  const std::vector<AttrSpec> reduceAttrs = {req("axes", K::Ints), opt("keepdims", K::Bool)};
  const std::vector<AttrSpec> axisAttr = {req("axis", K::Int)};
  const std::vector<AttrSpec> normAttrs = {req("axis", K::Int), req("epsilon", K::Float)};
  std::vector<KernelInfo> t;
  // A quantized frozen weight into its GEMM's operand (format: nf4, nf4_fp32_absmax, int8,
  // fp8; axis: the input axis, int8 and fp8).
  t.push_back(fixed("dequantize", 1, 1, R::Dequantize, {req("format", K::String), opt("axis", K::Int)}));
  // Elementwise unary: sqrt .. sin (float), neg, relu (numeric), logical_not (i1), gelu.
  for (std::string_view id : {"sqrt", "reciprocal", "exp", "log", "tanh", "sigmoid", "erf", "silu",
                              "softplus", "floor", "cos", "sin"})
    t.push_back(fixed(id, 1, 1, R::Float));
  t.push_back(fixed("neg", 1, 1, R::Numeric));
  t.push_back(fixed("relu", 1, 1, R::Numeric));
  t.push_back(fixed("logical_not", 1, 1, R::Bool));
  t.push_back(fixed("gelu", 1, 1, R::Float, {req("approximate", K::String)}));
  // Elementwise binary with broadcasting.
  for (std::string_view id : {"add", "sub", "mul", "div", "pow"})
    t.push_back(fixed(id, 2, 1, R::Numeric));
  t.push_back(fixed("mod", 2, 1, R::Numeric, {opt("fmod", K::Bool)}));
  t.push_back(fixed("logical_and", 2, 1, R::Bool));
  t.push_back(fixed("logical_or", 2, 1, R::Bool));
  t.push_back(fixed("compare", 2, 1, R::Compare, {req("predicate", K::String)}));
  t.push_back(fixed("where", 3, 1, R::Where));
  t.push_back(fixed("cast", 1, 1, R::Cast));
  // Contractions, reductions, normalisations.
  t.push_back(fixed("matmul", 2, 1, R::Numeric,
                    {opt("transpose_a", K::Bool), opt("transpose_b", K::Bool)}));
  for (std::string_view id : {"reduce_sum", "reduce_mean", "reduce_max"})
    t.push_back(fixed(id, 1, 1, R::Numeric, reduceAttrs));
  t.push_back(fixed("softmax", 1, 1, R::Float, axisAttr));
  t.push_back(fixed("log_softmax", 1, 1, R::Float, axisAttr));
  t.push_back(fixed("cumsum", 1, 1, R::Numeric,
                    {req("axis", K::Int), opt("exclusive", K::Bool), opt("reverse", K::Bool)}));
  t.push_back(KernelInfo{"layer_norm", 2, 3, 1, R::Float, normAttrs}); // optional bias
  t.push_back(fixed("rms_norm", 2, 1, R::Float, normAttrs));
  t.push_back(fixed("rms_norm_vjp", 3, 2, R::Float, normAttrs));
  t.push_back(fixed("cross_entropy", 2, 1, R::FloatIndexed,
                    {req("reduction", K::String), req("ignore_index", K::Int)}));
  // Shape ops.
  t.push_back(fixed("reshape", 1, 1, R::Same));
  t.push_back(fixed("transpose", 1, 1, R::Same, {req("permutation", K::Ints)}));
  t.push_back(fixed("expand", 1, 1, R::Same));
  t.push_back(KernelInfo{"concat", 1, kVariadic, 1, R::Same, axisAttr});
  t.push_back(fixed("slice", 1, 1, R::Same, sliceAttrs));
  t.push_back(fixed("split", 1, kVariadic, R::Same, {req("axis", K::Int), req("sizes", K::Ints)}));
  t.push_back(fixed("gather", 2, 1, R::Indexed, axisAttr));
  t.push_back(fixed("gather_elements", 2, 1, R::Indexed, axisAttr));
  // The indices of the k largest (or smallest) elements along an axis (ONNX TopK).
  t.push_back(fixed("top_k", 1, 1, R::FloatToIndex,
                    {req("k", K::Int), req("axis", K::Int), opt("smallest", K::Bool)}));
  // Routed experts in grouped-GEMM form (graph.moe_*, graph.grouped_matmul*).
  t.push_back(fixed("moe_sort", 1, 2, R::IndexOnly, {req("num_experts", K::Int)}));
  t.push_back(fixed("moe_dispatch", 2, 1, R::FloatIndexed));
  t.push_back(fixed("moe_combine", 3, 1, R::FloatPairIndexed));
  t.push_back(fixed("grouped_matmul", 3, 1, R::FloatPairIndexed, {opt("transpose_b", K::Bool)}));
  t.push_back(fixed("grouped_matmul_wgrad", 3, 1, R::FloatPairIndexed));
  // Scatters (the VJPs of gathers and slices; ONNX's overwriting scatters).
  t.push_back(fixed("scatter_add", 2, 1, R::FloatIndexed, axisAttr));
  t.push_back(fixed("scatter_elements_add", 2, 1, R::FloatIndexed, axisAttr));
  t.push_back(fixed("scatter", 3, 1, R::Scatter, axisAttr));
  t.push_back(fixed("scatter_elements", 3, 1, R::Scatter, axisAttr));
  t.push_back(fixed("slice_scatter", 1, 1, R::Same, sliceAttrs));
  // Generators.
  t.push_back(fixed(
      "range", 0, 1, R::Range,
      {req("start", K::IntOrFloat), req("limit", K::IntOrFloat), req("delta", K::IntOrFloat)}));
  t.push_back(fixed("trilu", 1, 1, R::Same, {req("k", K::Int), opt("upper", K::Bool)}));
  // Fused ops.
  t.push_back(fixed("swiglu", 2, 1, R::Float));
  t.push_back(fixed("swiglu_vjp", 3, 2, R::Float));
  t.push_back(fixed("rope", 3, 1, R::Float, {opt("interleaved", K::Bool)}));
  t.push_back(fixed("rope_vjp", 3, 1, R::Float, {opt("interleaved", K::Bool)}));
  // Optional attention sinks: one more operand (and attention_vjp's dsinks result).
  // An optional sliding `window` (>= 1, with causal) and logit `softcap` (> 0).
  const std::vector<AttrSpec> attentionAttrs = {req("scale", K::Float), opt("causal", K::Bool),
                                                opt("window", K::Int), opt("softcap", K::Float)};
  t.push_back(KernelInfo{"attention", 3, 4, 1, R::Float, attentionAttrs});
  t.push_back(KernelInfo{"attention_vjp", 5, 6, 3, R::Float, attentionAttrs, 4});
  const std::vector<AttrSpec> linearLossAttrs = {
      req("reduction", K::String), req("ignore_index", K::Int), opt("chunk_rows", K::Int)};
  // Optional head bias: one more operand (and the VJP's dbias result).
  t.push_back(KernelInfo{"linear_cross_entropy", 3, 4, 1, R::LinearLoss, linearLossAttrs});
  t.push_back(KernelInfo{"linear_cross_entropy_vjp", 4, 5, 3, R::LinearLoss, linearLossAttrs, 4});
  // Not a graph op: copies its operand into its result (same type).
  t.push_back(fixed("copy", 1, 1, R::Same));
  return t;
}

} // namespace

const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "int";
  case AttrKind::Float:
    return "float";
  case AttrKind::String:
    return "string";
  case AttrKind::Ints:
    return "ints";
  case AttrKind::Bool:
    return "bool";
  case AttrKind::IntOrFloat:
    return "int or float";
  }
  return "<invalid attribute kind>";
}

const AttrSpec *KernelInfo::findAttr(std::string_view name) const {
  for (const AttrSpec &a : attrs)
    if (a.name == name)
      return &a;
  return nullptr;
}

const std::vector<KernelInfo> &allKernels() {
  static const std::vector<KernelInfo> table = buildTable();
  return table;
}

const KernelInfo *findKernel(std::string_view id) {
  static const std::unordered_map<std::string_view, const KernelInfo *> index = [] {
    std::unordered_map<std::string_view, const KernelInfo *> m;
    for (const KernelInfo &k : allKernels())
      m.emplace(k.id, &k);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

} // namespace rp::kernels
