// rp-inject-lora on a mixture of experts' literal import.
// RUN: rp-opt %s -verify-diagnostics --rp-inject-lora="rank=4 alpha=8 targets=proj"
// RUN: rp-opt %s --rp-inject-lora="rank=4 alpha=8 targets=q_proj" | FileCheck %s

// Targets naming only the attention projection adapt it and freeze the experts.
// CHECK: graph.param @q_proj : tensor<8x8xf32>
// CHECK-NEXT: graph.param @q_proj.lora_A trainable : tensor<8x4xf32>
// CHECK-NEXT: graph.param @q_proj.lora_B trainable : tensor<4x8xf32>
// CHECK-NEXT: graph.param @experts.gate_up_proj : tensor<4x8x8xf32>
// CHECK: graph.gather

// A stacked expert weight [E, in, out] that matches (read through a gather by the routing
// ids, as the literal mixture-of-experts import does) is refused even though another matching
// weight is adapted: a broad pattern must not leave the experts frozen silently.
graph.param @q_proj trainable : tensor<8x8xf32>
// expected-error @+1 {{rp-inject-lora: param 'experts.gate_up_proj' matches the targets but has type 'tensor<4x8x8xf32>'; LoRA adapts rank-2 matmul weights, not stacked [E, ...] expert weights (narrow the targets, e.g. to the attention projections '(q|k|v|o)_proj', to train with the experts frozen)}}
graph.param @experts.gate_up_proj trainable : tensor<4x8x8xf32>
func.func @experts(%x: tensor<3x8xf32>, %ids: tensor<3xi64>, %h: tensor<3x1x8xf32>) -> (tensor<3x8xf32>, tensor<3x1x8xf32>) {
  %w = graph.load_param @q_proj : tensor<8x8xf32>
  %y = graph.matmul %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %e = graph.load_param @experts.gate_up_proj : tensor<4x8x8xf32>
  %g = graph.gather %e, %ids {axis = 0 : i64} : (tensor<4x8x8xf32>, tensor<3xi64>) -> tensor<3x8x8xf32>
  %z = graph.matmul %h, %g : (tensor<3x1x8xf32>, tensor<3x8x8xf32>) -> tensor<3x1x8xf32>
  return %y, %z : tensor<3x8xf32>, tensor<3x1x8xf32>
}
