// rp-autodiff with cotangent-args: one layer of a pipeline.
// RUN: rp-opt %s --rp-autodiff="function=layer output=layer_vjp wrt-args=0 cotangent-args=1" | FileCheck %s --check-prefix=LAYER

// cotangent-args: one layer of a pipeline; the hidden-state cotangent comes in as an argument
// and the input's gradient goes out, no loss.
graph.param @w trainable : tensor<4x4xf32>
func.func @layer(%h: tensor<2x4xf32>, %ids: tensor<2xi64>) -> tensor<2x4xf32> {
  %w = graph.load_param @w : tensor<4x4xf32>
  %y = graph.matmul %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %t = graph.tanh %y : tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}
// LAYER-LABEL: func.func @layer_vjp
// LAYER-SAME: (%[[H:.+]]: tensor<2x4xf32>, %{{.+}}: tensor<2xi64>, %[[DT:.+]]: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32> {graph.grad_of = @w}, tensor<2x4xf32> {graph.grad_of_arg = 0 : i64})
// LAYER: %[[T:.+]] = graph.tanh
// LAYER: graph.mul %[[T]], %[[T]]
// LAYER: return %[[T]], %{{.+}}, %{{.+}}
