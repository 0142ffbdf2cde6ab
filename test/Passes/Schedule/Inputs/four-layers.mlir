// A grouped four-layer model (prefix, two residual blocks, tail) with a recorded partition:
// forward stages [0, 2) and [2, 3), the fused tail [3, 4), backward stages [1, 3) and [0, 1).
module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail],
                   graph.partition = {algorithm = "exact", gpus = 2 : i64, micro_batches = 3 : i64,
                                      objective_ms = 1.0 : f64, stage_time_ms = 0.25 : f64,
                                      forward = [array<i64: 0, 2>, array<i64: 2, 3>],
                                      backward = [array<i64: 3, 4>, array<i64: 1, 3>, array<i64: 0, 1>]}} {
  graph.param @embed trainable : tensor<16x8xf32>
  graph.param @layers.0.w trainable : tensor<8x8xf32>
  graph.param @layers.1.w trainable : tensor<8x8xf32>
  graph.param @lm_head trainable : tensor<8x16xf32>
  func.func @prefix(%ids: tensor<2x4xi64> {graph.name = "input_ids"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @embed : tensor<16x8xf32>
    %1 = graph.gather %0, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    return %1 : tensor<2x4x8xf32>
  }
  func.func @block_0(%h: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @layers.0.w : tensor<8x8xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %2 = graph.add %h, %1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %2 : tensor<2x4x8xf32>
  }
  func.func @block_1(%h: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @layers.1.w : tensor<8x8xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %2 = graph.add %h, %1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %2 : tensor<2x4x8xf32>
  }
  func.func @tail(%h: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> tensor<f32> {
    %0 = graph.load_param @lm_head : tensor<8x16xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %2 = graph.reshape %1 : tensor<2x4x16xf32> to tensor<8x16xf32>
    %3 = graph.cross_entropy mean %2, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
