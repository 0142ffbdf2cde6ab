// rp-autodiff with seed-arg: the loss's seed is the last argument (named loss_seed) instead of
// the constant 1, and the cross-entropy VJP divides by count + (count == 0), so that a batch
// whose labels are all ignored has zero (not NaN) gradients.
// RUN: rp-opt %s --rp-autodiff="seed-arg=1" | FileCheck %s
// RUN: rp-opt %s --rp-autodiff | FileCheck %s --check-prefix=ONE

graph.param @w trainable : tensor<4x3xf32>
func.func @forward(%x: tensor<2x4xf32>, %y: tensor<2xi64> {graph.name = "labels"}) -> tensor<f32> {
  %w = graph.load_param @w : tensor<4x3xf32>
  %z = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = graph.cross_entropy mean %z, %y {ignore_index = -100 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%{{.+}}: tensor<2x4xf32>, %{{.+}}: tensor<2xi64> {graph.name = "labels"}, %[[SEED:.+]]: tensor<f32> {graph.name = "loss_seed"}) -> (tensor<f32>, tensor<4x3xf32> {graph.grad_of = @w})
// CHECK-NOT: dense<1.000000e+00> : tensor<f32>
// CHECK: %[[COUNT:.+]] = graph.reduce_sum %{{.+}} {axes = array<i64: 0, 1>}
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[EMPTY:.+]] = graph.compare eq, %[[COUNT]], %[[ZERO]]
// CHECK: %[[NONE:.+]] = graph.cast %[[EMPTY]]
// CHECK: %[[SAFE:.+]] = graph.add %[[COUNT]], %[[NONE]]
// CHECK: graph.div %[[SEED]], %[[SAFE]]

// Without seed-arg the seed is the constant 1 and the signature is the forward's.
// ONE-LABEL: func.func @train_step
// ONE-SAME: (%{{.+}}: tensor<2x4xf32>, %{{.+}}: tensor<2xi64> {graph.name = "labels"}) -> (tensor<f32>
// ONE: graph.constant dense<1.000000e+00> : tensor<f32>

