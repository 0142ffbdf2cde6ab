// A loss that adds a second term to the fused cross-entropy (as a mixture of experts adds its
// router's load-balancing loss): the add reads the cross-entropy before the VJP of the sum
// runs. Input of autodiff-linear-cross-entropy.mlir.
graph.param @w trainable : tensor<10x8xf32>
func.func @forward(%x: tensor<2x2x8xf32>, %y: tensor<4xi64> {graph.name = "labels"}) -> tensor<f32> {
  %w = graph.load_param @w : tensor<10x8xf32>
  %h = graph.reshape %x : tensor<2x2x8xf32> to tensor<4x8xf32>
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %sq = graph.mul %h, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %aux = graph.reduce_sum %sq {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  %t = graph.add %l, %aux : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %t : tensor<f32>
}
