// rp-autodiff on graph.attention: the VJP is one fused graph.attention_vjp (q, k, v, the
// forward output, its cotangent -> dq, dk, dv), never the [B, Hq, S, S] scores.
// RUN: rp-opt %s --rp-autodiff="wrt-args=0,1,2" | FileCheck %s
// RUN: rp-opt %s --rp-autodiff="function=layer output=layer_vjp wrt-args=0,1,2 cotangent-args=1" | FileCheck %s --check-prefix=LAYER
// RUN: rp-opt %s --rp-autodiff="function=sinks output=sinks_vjp wrt-args=0,1,2,3 cotangent-args=1" | FileCheck %s --check-prefix=SINKS

// Grouped-query (4 query heads, 2 key/value heads), causal; the loss weighs the output.
func.func @forward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %w: tensor<2x4x8x16xf32>) -> tensor<f32> {
  %y = graph.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %p = graph.mul %y, %w : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %l = graph.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>} : (tensor<2x4x8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.matmul
// CHECK-NOT: tensor<2x4x8x8xf32>
// CHECK: %[[Y:.+]] = graph.attention %[[Q:[^,]+]], %[[K:[^,]+]], %[[V:[^ ]+]] {causal, scale = 2.500000e-01 : f64}
// The cotangent of y: the seed spread over y, times w.
// CHECK: graph.expand
// CHECK-NEXT: %[[DY:.+]] = graph.mul %{{.+}}, %{{.+}} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = graph.attention_vjp %[[Q]], %[[K]], %[[V]], %[[Y]], %[[DY]] {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// CHECK-NEXT: return %{{.+}}, %[[DQ]], %[[DK]], %[[DV]]
// CHECK-NOT: tensor<2x4x8x8xf32>
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.matmul

// A layer's VJP (the form rpc-compile differentiates): the same single op, its three results
// returned as the gradients of q, k and v.
func.func @layer(%q: tensor<1x2x5x4xf32>, %k: tensor<1x1x5x4xf32>, %v: tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32> {
  %y = graph.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x5x4xf32>
  return %y : tensor<1x2x5x4xf32>
}
// LAYER-LABEL: func.func @layer_vjp
// LAYER-SAME: (%[[Q:[^:]+]]: tensor<1x2x5x4xf32>, %[[K:[^:]+]]: tensor<1x1x5x4xf32>, %[[V:[^:]+]]: tensor<1x1x5x4xf32>, %[[G:[^:]+]]: tensor<1x2x5x4xf32>)
// LAYER: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64}
// LAYER-NEXT: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = graph.attention_vjp %[[Q]], %[[K]], %[[V]], %[[Y]], %[[G]] {scale = 5.000000e-01 : f64}
// LAYER-NEXT: return {{.*}}%[[DQ]], %[[DK]], %[[DV]]

// Attention sinks (GPT-OSS): the VJP takes the sinks and returns their gradient as a fourth
// result.
func.func @sinks(%q: tensor<1x2x5x4xf32>, %k: tensor<1x1x5x4xf32>, %v: tensor<1x1x5x4xf32>, %s: tensor<2xf32>) -> tensor<1x2x5x4xf32> {
  %y = graph.attention %q, %k, %v sinks %s {causal, scale = 0.5 : f64} : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>, tensor<2xf32>) -> tensor<1x2x5x4xf32>
  return %y : tensor<1x2x5x4xf32>
}
// SINKS-LABEL: func.func @sinks_vjp
// SINKS-SAME: (%[[Q:[^:]+]]: tensor<1x2x5x4xf32>, %[[K:[^:]+]]: tensor<1x1x5x4xf32>, %[[V:[^:]+]]: tensor<1x1x5x4xf32>, %[[S:[^:]+]]: tensor<2xf32>, %[[G:[^:]+]]: tensor<1x2x5x4xf32>)
// SINKS: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] sinks %[[S]] {causal, scale = 5.000000e-01 : f64}
// SINKS-NEXT: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]], %[[DS:.+]] = graph.attention_vjp %[[Q]], %[[K]], %[[V]], %[[Y]], %[[G]] sinks %[[S]] {causal, scale = 5.000000e-01 : f64} : {{.*}} -> (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>, tensor<2xf32>)
// SINKS-NEXT: return %[[Y]], %[[DQ]], %[[DK]], %[[DV]], %[[DS]] :
