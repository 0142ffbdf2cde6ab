// rp-group-layers errors: no scoped names and no repeating residual blocks; a missing function.
// RUN: not rp-opt %s --rp-group-layers 2>&1 | FileCheck %s
// RUN: not rp-opt %s --rp-group-layers="function=nothing" 2>&1 | FileCheck %s --check-prefix=NOFUNC

graph.param @w trainable : tensor<8x8xf32>
func.func @forward(%x: tensor<2x8xf32>) -> tensor<f32> {
  %w = graph.load_param @w : tensor<8x8xf32>
  %y = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK: error: rp-group-layers: found no transformer blocks: no param name or node name of @forward has a layer index (layers.N, h.N, blocks.N), and no repeating residual blocks were found
// NOFUNC: error: rp-group-layers: no function named 'nothing'
