// rp-inject-lora: stacked expert weights that match the targets but cannot be adapted.
// RUN: rp-opt %s -split-input-file -verify-diagnostics --rp-inject-lora="rank=4 alpha=8 targets=proj"

// A matching stacked weight read any other way (here: its gather also summed) is refused: a
// broad pattern must not leave it frozen silently.
// expected-error @+1 {{rp-inject-lora: param 'experts.up_proj' matches the targets but has type 'tensor<4x8x6xf32>'; LoRA adapts rank-2 matmul weights and stacked [E, ...] expert weights read as a mixture of experts' batched_mm (matmul of graph.gather(W, routing ids) by one row per pair), not this (narrow the targets, e.g. to the attention projections '(q|k|v|o)_proj', to train with it frozen)}}
graph.param @experts.up_proj trainable : tensor<4x8x6xf32>
func.func @other(%ids: tensor<3xi64>, %h: tensor<3x1x8xf32>) -> (tensor<3x1x6xf32>, tensor<3x8x6xf32>) {
  // expected-note @+1 {{read here}}
  %e = graph.load_param @experts.up_proj : tensor<4x8x6xf32>
  %g = graph.gather %e, %ids {axis = 0 : i64} : (tensor<4x8x6xf32>, tensor<3xi64>) -> tensor<3x8x6xf32>
  %z = graph.matmul %h, %g : (tensor<3x1x8xf32>, tensor<3x8x6xf32>) -> tensor<3x1x6xf32>
  %s = graph.add %g, %g : (tensor<3x8x6xf32>, tensor<3x8x6xf32>) -> tensor<3x8x6xf32>
  return %z, %s : tensor<3x1x6xf32>, tensor<3x8x6xf32>
}

// -----

// A stacked weight read both as W_e x and as x W_e is refused (its adapters fit one).
// expected-error @+1 {{rp-inject-lora: stacked expert weight 'experts.mixed_proj' is read both as W_e x and as x W_e; LoRA adapts one of the two}}
graph.param @experts.mixed_proj trainable : tensor<4x8x8xf32>
func.func @mixed(%ids: tensor<3xi64>, %h: tensor<3x1x8xf32>, %c: tensor<3x8x1xf32>) -> (tensor<3x1x8xf32>, tensor<3x8x1xf32>) {
  %e = graph.load_param @experts.mixed_proj : tensor<4x8x8xf32>
  %g = graph.gather %e, %ids {axis = 0 : i64} : (tensor<4x8x8xf32>, tensor<3xi64>) -> tensor<3x8x8xf32>
  %z = graph.matmul %h, %g : (tensor<3x1x8xf32>, tensor<3x8x8xf32>) -> tensor<3x1x8xf32>
  %e2 = graph.load_param @experts.mixed_proj : tensor<4x8x8xf32>
  %g2 = graph.gather %e2, %ids {axis = 0 : i64} : (tensor<4x8x8xf32>, tensor<3xi64>) -> tensor<3x8x8xf32>
  %w = graph.matmul %g2, %c : (tensor<3x8x8xf32>, tensor<3x8x1xf32>) -> tensor<3x8x1xf32>
  return %z, %w : tensor<3x1x8xf32>, tensor<3x8x1xf32>
}
