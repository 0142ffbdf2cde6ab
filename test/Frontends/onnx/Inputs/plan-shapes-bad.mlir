// A hand-written schedule fragment for real-exports-plan-shapes.test: one layer with
// materialised [2, 4, 16, 16] scores and a transposed weight, and a tail with [32, 264] logits.
  func.func @prefix(%arg0: tensor<2x16xi64> {graph.name = "input_ids"}) -> tensor<2x16x32xf32> {
    %0 = graph.load_param @embed : tensor<264x32xf32>
    %1 = graph.gather %0, %arg0 {axis = 0 : i64} : (tensor<264x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
  }
  func.func @block_0(%arg0: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
    %0 = graph.load_param @w : tensor<32x32xf32>
    %1 = graph.transpose %0 {permutation = array<i64: 1, 0>} : (tensor<32x32xf32>) -> tensor<32x32xf32>
    %2 = graph.matmul %3, %4 : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
    %5 = graph.matmul %arg0, %1 : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x16xf32>
  }
  func.func @tail(%arg0: tensor<32x32xf32>) -> tensor<f32> {
    %0 = graph.load_param @head : tensor<264x32xf32>
    %1 = graph.matmul %arg0, %0 {transpose_b} : (tensor<32x32xf32>, tensor<264x32xf32>) -> tensor<32x264xf32>
  }
