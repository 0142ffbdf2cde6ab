//===- Dialect.td - the graph dialect ----------------------*- tablegen -*-===//
//
// The `graph` dialect: tensor-level ops of a decoder-only transformer training graph as
// PyTorch exports it through ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef RP_GRAPH_DIALECT_TD
#define RP_GRAPH_DIALECT_TD

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::mlir::rp::graph";
  let summary = "Tensor-level ops of a transformer training graph";
  let description = [{
    The `graph` dialect is the first IR of rpc. The ONNX importer produces it; fusion, LoRA
    injection, layer grouping and autodiff transform it; the partitioner and the lowering to
    `schedule` read it.

    Every value is a ranked, statically shaped tensor of `f32`, `f16`, `bf16`, `i64`, `i32` or
    `i1`: symbolic dimensions are bound before import. Model parameters are module-level
    symbols (`graph.param`) read inside functions with `graph.load_param`; their values live in
    the weight file and are never printed in the IR.

    Elementwise binary ops broadcast their operands with numpy/ONNX rules (trailing dimensions
    aligned; a dimension of 1 stretches). Axes in attributes are non-negative and in range: the
    importer normalises ONNX's negative axes.

    ```mlir
    graph.param @"lm_head.weight" trainable : tensor<64x256xf32> initializer "lm_head.weight"
    func.func @forward(%h: tensor<2x8x64xf32>) -> tensor<2x8x256xf32> {
      %w = graph.load_param @"lm_head.weight" : tensor<64x256xf32>
      %logits = graph.matmul %h, %w : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
      return %logits : tensor<2x8x256xf32>
    }
    ```
  }];
  let hasConstantMaterializer = 1;
}

#endif // RP_GRAPH_DIALECT_TD
