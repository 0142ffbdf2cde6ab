// A loss through a biased LM head (Phi's), for autodiff-linear-cross-entropy.mlir.
graph.param @w trainable : tensor<10x8xf32>
graph.param @b trainable : tensor<10xf32>
func.func @forward(%x: tensor<2x2x8xf32>, %y: tensor<4xi64> {graph.name = "labels"}) -> tensor<f32> {
  %w = graph.load_param @w : tensor<10x8xf32>
  %b = graph.load_param @b : tensor<10xf32>
  %h = graph.reshape %x : tensor<2x2x8xf32> to tensor<4x8xf32>
  %l = graph.linear_cross_entropy mean %h, %w, %y bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
