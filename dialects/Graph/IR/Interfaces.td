//===- Interfaces.td - graph dialect op interfaces ---------*- tablegen -*-===//

#ifndef RP_GRAPH_INTERFACES_TD
#define RP_GRAPH_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Graph_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    An op that can build its vector-Jacobian product (VJP) from `graph` ops, for reverse-mode
    automatic differentiation (`rp-autodiff`). Given the cotangent of each result (a value of
    the result's type, or null when no gradient reaches that result), the op appends one
    cotangent per operand to `operandGrads`, of the operand's type, or null when the operand is
    not differentiable (integer and boolean tensors: indices, masks, labels) or receives no
    contribution. The builder's insertion point is where the VJP ops go.
  }];
  let cppNamespace = "::mlir::rp::graph";
  let methods = [
    InterfaceMethod<
      "Builds the VJP; fails (with an error at the op) when it cannot.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // RP_GRAPH_INTERFACES_TD
