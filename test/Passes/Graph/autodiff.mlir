// rp-autodiff: the structure of @train_step for a two-layer MLP with a frozen param.
// RUN: rp-opt %s --rp-autodiff | FileCheck %s

// Two-layer MLP: loss = mean((relu(x @ w1) @ w2)^2). Gradients of w1 and w2 in module order;
// the frozen @scale gets none.
graph.param @w1 trainable : tensor<4x8xf32>
graph.param @scale : tensor<8xf32>
graph.param @w2 trainable : tensor<8x2xf32>
func.func @forward(%x: tensor<3x4xf32>) -> tensor<f32> {
  %w1 = graph.load_param @w1 : tensor<4x8xf32>
  %s = graph.load_param @scale : tensor<8xf32>
  %w2 = graph.load_param @w2 : tensor<8x2xf32>
  %h = graph.matmul %x, %w1 : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %a = graph.relu %h : tensor<3x8xf32>
  %as = graph.mul %a, %s : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %y = graph.matmul %as, %w2 : (tensor<3x8xf32>, tensor<8x2xf32>) -> tensor<3x2xf32>
  %sq = graph.mul %y, %y : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %l = graph.reduce_mean %sq {axes = array<i64: 0, 1>} : (tensor<3x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<3x4xf32>) -> (tensor<f32>, tensor<4x8xf32> {graph.grad_of = @w1}, tensor<8x2xf32> {graph.grad_of = @w2})
// CHECK: %[[W1:.+]] = graph.load_param @w1
// CHECK: %[[W2:.+]] = graph.load_param @w2
// CHECK: %[[H:.+]] = graph.matmul %[[X]], %[[W1]]
// CHECK: %[[A:.+]] = graph.relu %[[H]]
// CHECK: %[[AS:.+]] = graph.mul %[[A]], %{{.+}}
// CHECK: %[[Y:.+]] = graph.matmul %[[AS]], %[[W2]]
// CHECK: %[[L:.+]] = graph.reduce_mean
// The seed, and the mean's 1/6 spread back over [3, 2].
// CHECK: graph.constant dense<1.000000e+00> : tensor<f32>
// y * y: the two uses of y accumulate.
// CHECK: %[[DY1:.+]] = graph.mul %[[DSQ:.+]], %[[Y]]
// CHECK: %[[DY2:.+]] = graph.mul %[[DSQ]], %[[Y]]
// CHECK: %[[DY:.+]] = graph.add %[[DY1]], %[[DY2]]
// dAS = dY @ W2^T and dW2 = AS^T @ dY, the transposes as matmul flags (no graph.transpose).
// CHECK-NOT: graph.transpose
// CHECK: graph.matmul %[[DY]], %[[W2]] {transpose_b} : (tensor<3x2xf32>, tensor<8x2xf32>) -> tensor<3x8xf32>
// CHECK: %[[DW2:.+]] = graph.matmul %[[AS]], %[[DY]] {transpose_a} : (tensor<3x8xf32>, tensor<3x2xf32>) -> tensor<8x2xf32>
// The relu mask.
// CHECK: graph.compare gt, %[[H]]
// CHECK-NOT: graph.transpose
// CHECK: %[[DW1:.+]] = graph.matmul %[[X]], %{{.+}} {transpose_a} : (tensor<3x4xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
// CHECK: return %[[L]], %[[DW1]], %[[DW2]]

