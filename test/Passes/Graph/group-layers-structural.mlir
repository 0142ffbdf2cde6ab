// rp-group-layers without scoped names (structural detection): the residual stream (adds whose
// other operand is computed from the stream through params) is cut into segments whose params
// repeat with a period; here one residual add per block. The result equals the scoped case:
// the rotary table's param, shared by all blocks, is rematerialised, not a block param.
// RUN: rp-opt %s --rp-group-layers | FileCheck %s

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.rotary.inv_freq trainable : tensor<8xf32>
graph.param @norm_a trainable : tensor<8xf32>
graph.param @proj_a trainable : tensor<8x8xf32>
graph.param @norm_b trainable : tensor<8xf32>
graph.param @proj_b trainable : tensor<8x8xf32>
graph.param @model.norm.weight trainable : tensor<8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64>, %labels: tensor<8xi64>) -> tensor<f32> {
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %freq = graph.load_param @model.rotary.inv_freq : tensor<8xf32>
  %n0 = graph.load_param @norm_a : tensor<8xf32>
  %w0 = graph.load_param @proj_a : tensor<8x8xf32>
  %n1 = graph.load_param @norm_b : tensor<8xf32>
  %w1 = graph.load_param @proj_b : tensor<8x8xf32>
  %nf = graph.load_param @model.norm.weight : tensor<8xf32>
  %head = graph.load_param @lm_head.weight : tensor<8x16xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %rot = graph.tanh %freq : tensor<8xf32>
  %ones = graph.constant dense<1.0> : tensor<4x4xf32>
  %mask = graph.trilu %ones {k = 0 : i64} : tensor<4x4xf32>
  // block 0
  %x0 = graph.rms_norm %h0, %n0 {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r0 = graph.mul %x0, %rot : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %a0 = graph.matmul %mask, %r0 : (tensor<4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m0 = graph.matmul %a0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // block 1
  %x1 = graph.rms_norm %h1, %n1 {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r1 = graph.mul %x1, %rot : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %a1 = graph.matmul %mask, %r1 : (tensor<4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m1 = graph.matmul %a1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // tail
  %f = graph.rms_norm %h2, %nf {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %logits = graph.matmul %f, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}
// CHECK-LABEL: func.func @prefix
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK: %[[E:.+]] = graph.load_param @model.embed_tokens.weight
// CHECK: %[[H0:.+]] = graph.gather %[[E]], %[[IDS]]
// CHECK-NOT: graph.rms_norm
// CHECK: return %[[H0]]
// CHECK-LABEL: func.func @block_0
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32>
// The rotary table and the mask are recomputed here.
// CHECK-DAG: graph.load_param @model.rotary.inv_freq
// CHECK-DAG: graph.tanh
// CHECK-DAG: graph.trilu
// CHECK-DAG: graph.load_param @proj_a
// CHECK: graph.rms_norm %[[H]]
// CHECK: %[[OUT:.+]] = graph.add %[[H]], %{{.+}}
// CHECK: return %[[OUT]]
// CHECK-LABEL: func.func @block_1
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32>
// CHECK-DAG: graph.tanh
// CHECK-DAG: graph.trilu
// CHECK-DAG: graph.load_param @proj_b
// CHECK-NOT: @proj_a
// CHECK-LABEL: func.func @tail
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %{{.+}}: tensor<8xi64>) -> tensor<f32>
// CHECK-DAG: graph.load_param @model.norm.weight
// CHECK-DAG: graph.load_param @lm_head.weight
// CHECK: graph.cross_entropy mean
