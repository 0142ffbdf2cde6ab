// rp-group-layers on a GPT-NeoX-style parallel-residual graph as the TorchScript exporter
// writes it: attention and MLP both read the block input, x + attn(ln1(x)) + mlp(ln2(x)) is
// `(mlp + attn) + x`, and the folded rotary table is named after the first block and hoisted
// above the embedding lookup by the canonicalizer. The table is no evidence of block 0: the
// gather stays in the prefix, and layer 0's last residual add stays in block 0 (with the
// gather rematerialised, the add moved to block 1, which then read the embedding too).
// RUN: rp-opt %s --rp-group-layers | FileCheck %s
// The grouped graph compiles (the embedding is read by one layer only).
// RUN: rp-opt %s --rp-compile-pipeline | FileCheck %s --check-prefix=PLAN

graph.param @gpt_neox.embed_in.weight trainable : tensor<16x8xf32>
graph.param @gpt_neox.layers.0.input_layernorm.weight trainable : tensor<8xf32>
graph.param @gpt_neox.layers.0.input_layernorm.bias trainable : tensor<8xf32>
graph.param @gpt_neox.layers.0.post_attention_layernorm.weight trainable : tensor<8xf32>
graph.param @gpt_neox.layers.0.post_attention_layernorm.bias trainable : tensor<8xf32>
graph.param @gpt_neox.layers.0.attention.dense.weight trainable : tensor<8x8xf32>
graph.param @gpt_neox.layers.0.mlp.dense_h_to_4h.weight trainable : tensor<8x8xf32>
graph.param @gpt_neox.layers.1.input_layernorm.weight trainable : tensor<8xf32>
graph.param @gpt_neox.layers.1.input_layernorm.bias trainable : tensor<8xf32>
graph.param @gpt_neox.layers.1.post_attention_layernorm.weight trainable : tensor<8xf32>
graph.param @gpt_neox.layers.1.post_attention_layernorm.bias trainable : tensor<8xf32>
graph.param @gpt_neox.layers.1.attention.dense.weight trainable : tensor<8x8xf32>
graph.param @gpt_neox.layers.1.mlp.dense_h_to_4h.weight trainable : tensor<8x8xf32>
graph.param @gpt_neox.final_layer_norm.weight trainable : tensor<8xf32>
graph.param @gpt_neox.final_layer_norm.bias trainable : tensor<8xf32>
graph.param @embed_out.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64> {graph.name = "input_ids"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %rot = graph.constant dense<0.5> : tensor<4x8xf32> loc("/gpt_neox/layers.0/attention/Unsqueeze_3")
  %emb = graph.load_param @gpt_neox.embed_in.weight : tensor<16x8xf32>
  %x0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("/gpt_neox/embed_in/Gather")
  %g10 = graph.load_param @gpt_neox.layers.0.input_layernorm.weight : tensor<8xf32>
  %b10 = graph.load_param @gpt_neox.layers.0.input_layernorm.bias : tensor<8xf32>
  %g20 = graph.load_param @gpt_neox.layers.0.post_attention_layernorm.weight : tensor<8xf32>
  %b20 = graph.load_param @gpt_neox.layers.0.post_attention_layernorm.bias : tensor<8xf32>
  %wa0 = graph.load_param @gpt_neox.layers.0.attention.dense.weight : tensor<8x8xf32>
  %wm0 = graph.load_param @gpt_neox.layers.0.mlp.dense_h_to_4h.weight : tensor<8x8xf32>
  %n10 = graph.layer_norm %x0, %g10, %b10 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/input_layernorm/LayerNormalization")
  %q0 = graph.mul %n10, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/attention/Mul")
  %a0 = graph.matmul %q0, %wa0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/attention/dense/MatMul")
  %n20 = graph.layer_norm %x0, %g20, %b20 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/post_attention_layernorm/LayerNormalization")
  %h0 = graph.matmul %n20, %wm0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/mlp/dense_h_to_4h/MatMul")
  %m0 = graph.gelu exact %h0 : tensor<2x4x8xf32> loc("/gpt_neox/layers.0/mlp/act/Gelu")
  %s0 = graph.add %m0, %a0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/Add")
  %x1 = graph.add %s0, %x0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.0/Add_1")
  %g11 = graph.load_param @gpt_neox.layers.1.input_layernorm.weight : tensor<8xf32>
  %b11 = graph.load_param @gpt_neox.layers.1.input_layernorm.bias : tensor<8xf32>
  %g21 = graph.load_param @gpt_neox.layers.1.post_attention_layernorm.weight : tensor<8xf32>
  %b21 = graph.load_param @gpt_neox.layers.1.post_attention_layernorm.bias : tensor<8xf32>
  %wa1 = graph.load_param @gpt_neox.layers.1.attention.dense.weight : tensor<8x8xf32>
  %wm1 = graph.load_param @gpt_neox.layers.1.mlp.dense_h_to_4h.weight : tensor<8x8xf32>
  %n11 = graph.layer_norm %x1, %g11, %b11 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/input_layernorm/LayerNormalization")
  %q1 = graph.mul %n11, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/attention/Mul")
  %a1 = graph.matmul %q1, %wa1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/attention/dense/MatMul")
  %n21 = graph.layer_norm %x1, %g21, %b21 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/post_attention_layernorm/LayerNormalization")
  %h1 = graph.matmul %n21, %wm1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/mlp/dense_h_to_4h/MatMul")
  %m1 = graph.gelu exact %h1 : tensor<2x4x8xf32> loc("/gpt_neox/layers.1/mlp/act/Gelu")
  %s1 = graph.add %m1, %a1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/Add")
  %x2 = graph.add %s1, %x1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/layers.1/Add_1")
  %gf = graph.load_param @gpt_neox.final_layer_norm.weight : tensor<8xf32>
  %bf = graph.load_param @gpt_neox.final_layer_norm.bias : tensor<8xf32>
  %head = graph.load_param @embed_out.weight : tensor<8x16xf32>
  %f = graph.layer_norm %x2, %gf, %bf {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/gpt_neox/final_layer_norm/LayerNormalization")
  %logits = graph.matmul %f, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/embed_out/MatMul")
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}
// CHECK-LABEL: func.func @prefix
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x4xi64> {graph.name = "input_ids"}) -> tensor<2x4x8xf32>
// CHECK: %[[E:.+]] = graph.load_param @gpt_neox.embed_in.weight
// CHECK: %[[X0:.+]] = graph.gather %[[E]], %[[IDS]]
// CHECK: return %[[X0]]
// Block 0 receives only the hidden state and returns x0 + attn + mlp.
// CHECK-LABEL: func.func @block_0
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32>
// CHECK-NOT: embed_in
// CHECK: graph.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-NOT: embed_in
// CHECK: %[[S:.+]] = graph.add %{{.+}}, %{{.+}}
// CHECK: %[[X1:.+]] = graph.add %[[S]], %[[X]]
// CHECK: return %[[X1]]
// CHECK-LABEL: func.func @block_1
// CHECK-SAME: (%[[Y:.+]]: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32>
// CHECK-NOT: embed_in
// CHECK: graph.layer_norm %[[Y]]
// CHECK-NOT: embed_in
// CHECK: %[[S1:.+]] = graph.add %{{.+}}, %{{.+}}
// CHECK: %[[X2:.+]] = graph.add %[[S1]], %[[Y]]
// CHECK: return %[[X2]]
// CHECK-LABEL: func.func @tail
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %{{.+}}: tensor<8xi64> {graph.name = "labels"})
// CHECK-NOT: embed_in
// CHECK: return

// PLAN: schedule.plan
