//===- Attrs.td - graph dialect enum attributes ------------*- tablegen -*-===//

#ifndef RP_GRAPH_ATTRS_TD
#define RP_GRAPH_ATTRS_TD

include "dialects/Graph/IR/Dialect.td"
include "mlir/IR/EnumAttr.td"

// Enums are specialised integer attributes: ops print them as bare keywords
// (`graph.compare lt, ...`).

def Graph_CompareKindAttr : I32EnumAttr<"CompareKind", "elementwise comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"lt", 1>, I32EnumAttrCase<"le", 2>,
    I32EnumAttrCase<"gt", 3>, I32EnumAttrCase<"ge", 4>]> {
  let cppNamespace = "::mlir::rp::graph";
}
def Graph_GeluApproximationAttr : I32EnumAttr<"GeluApproximation",
    "gelu form: exact (erf) or the tanh approximation", [
    I32EnumAttrCase<"exact", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::rp::graph";
}
def Graph_LossReductionAttr : I32EnumAttr<"LossReduction",
    "how a loss reduces over its non-ignored elements", [
    I32EnumAttrCase<"mean", 0>, I32EnumAttrCase<"sum", 1>]> {
  let cppNamespace = "::mlir::rp::graph";
}
def Graph_ParamInitAttr : I32EnumAttr<"ParamInit",
    "how a param without a stored value starts", [
    I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"kaiming_uniform", 1>]> {
  let cppNamespace = "::mlir::rp::graph";
}

def Graph_QuantFormatAttr : I32EnumAttr<"QuantFormat",
    "how a frozen weight is held quantized (kernels/Quantization.h)", [
    I32EnumAttrCase<"nf4", 0>, I32EnumAttrCase<"nf4_fp32_absmax", 1>,
    I32EnumAttrCase<"int8", 2>, I32EnumAttrCase<"fp8", 3>]> {
  let cppNamespace = "::mlir::rp::graph";
}

#endif // RP_GRAPH_ATTRS_TD
