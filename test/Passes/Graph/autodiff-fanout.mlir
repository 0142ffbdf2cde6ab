// rp-autodiff: fan-out accumulation, a trainable param the loss ignores, and wrt-args.
// RUN: rp-opt %s --rp-autodiff | FileCheck %s
// RUN: rp-opt %s --rp-autodiff="wrt-args=0" | FileCheck %s --check-prefix=WRT

// A param read twice accumulates both uses; a trainable param the loss ignores gets zeros;
// wrt-args returns the input gradient too.
graph.param @w trainable : tensor<4xf32>
graph.param @unused trainable : tensor<2x2xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.load_param @w : tensor<4xf32>
  %w_again = graph.load_param @w : tensor<4xf32>
  %a = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.add %a, %w_again : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = graph.reduce_sum %b {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {graph.grad_of = @w}, tensor<2x2xf32> {graph.grad_of = @unused})
// The cotangent of the sum reaches w through the product (times x) and directly.
// CHECK: %[[DB:.+]] = graph.expand %{{.+}} : tensor<1xf32> to tensor<4xf32>
// CHECK: %[[G1:.+]] = graph.mul %[[DB]], %{{.+}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[GW:.+]] = graph.add %[[G1]], %[[DB]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK: return %{{.+}}, %[[GW]], %[[ZERO]]
// WRT-LABEL: func.func @train_step
// WRT-SAME: (%{{.+}}: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {graph.grad_of = @w}, tensor<2x2xf32> {graph.grad_of = @unused}, tensor<4xf32> {graph.grad_of_arg = 0 : i64})

