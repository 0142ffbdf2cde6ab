// rp-freeze-params: clears `trainable` on the params whose name matches the pattern.
// RUN: rp-opt %s --rp-freeze-params="pattern=embed|norm" | FileCheck %s
// RUN: rp-opt %s --rp-freeze-params="pattern=^lm_head\.weight$" | FileCheck %s --check-prefix=ANCHORED
// RUN: rp-opt %s --rp-freeze-params="pattern=layers\.[0-9]+\.(q|v)_proj" | FileCheck %s --check-prefix=GROUPS

// The pattern is searched in the name (embed matches model.embed_tokens.weight); an
// already-frozen match stays frozen; everything else, functions included, is unchanged.
// CHECK:      graph.param @model.embed_tokens.weight : tensor<16x8xf32> initializer "model.embed_tokens.weight"
// CHECK-NEXT: graph.param @model.layers.0.input_norm.weight : tensor<8xf32>
// CHECK-NEXT: graph.param @model.layers.0.q_proj.weight trainable : tensor<8x8xf32>
// CHECK-NEXT: graph.param @model.layers.1.v_proj.weight trainable : tensor<8x8xf32>
// CHECK-NEXT: graph.param @model.layers.1.k_proj.weight trainable : tensor<8x8xf32>
// CHECK-NEXT: graph.param @lm_head.weight trainable : tensor<8x16xf32>
// CHECK-NEXT: graph.param @lm_head.weight.lora_A trainable : tensor<8x2xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @inv_freq : tensor<4xf32>
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: graph.load_param @model.embed_tokens.weight

// Anchors: only the exact name is frozen (not lm_head.weight.lora_A).
// ANCHORED:      graph.param @model.embed_tokens.weight trainable
// ANCHORED:      graph.param @lm_head.weight : tensor<8x16xf32>
// ANCHORED-NEXT: graph.param @lm_head.weight.lora_A trainable

// Groups and classes: q_proj and v_proj of any layer, not k_proj.
// GROUPS:      graph.param @model.layers.0.input_norm.weight trainable
// GROUPS-NEXT: graph.param @model.layers.0.q_proj.weight : tensor<8x8xf32>
// GROUPS-NEXT: graph.param @model.layers.1.v_proj.weight : tensor<8x8xf32>
// GROUPS-NEXT: graph.param @model.layers.1.k_proj.weight trainable

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32> initializer "model.embed_tokens.weight"
graph.param @model.layers.0.input_norm.weight trainable : tensor<8xf32>
graph.param @model.layers.0.q_proj.weight trainable : tensor<8x8xf32>
graph.param @model.layers.1.v_proj.weight trainable : tensor<8x8xf32>
graph.param @model.layers.1.k_proj.weight trainable : tensor<8x8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
graph.param @lm_head.weight.lora_A trainable : tensor<8x2xf32> init kaiming_uniform
graph.param @inv_freq : tensor<4xf32>
func.func @forward() -> tensor<16x8xf32> {
  %e = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  return %e : tensor<16x8xf32>
}
