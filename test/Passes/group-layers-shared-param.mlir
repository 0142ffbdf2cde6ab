// A weight genuinely shared between layers is still refused after grouping, with the schedule's
// message: one read by both blocks (an ALBERT-style shared projection, no layer in its name),
// and an LM head tied to the token embedding (read by the prefix and the tail). The folded
// rotary table named after block 0 (a constant) is not what makes them shared.
// RUN: not rp-opt %s -split-input-file --rp-compile-pipeline 2>&1 | FileCheck %s

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.shared.weight trainable : tensor<8x8xf32>
graph.param @model.layers.0.norm.weight trainable : tensor<8xf32>
graph.param @model.layers.1.norm.weight trainable : tensor<8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64> {graph.name = "input_ids"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %rot = graph.constant dense<0.5> : tensor<4x8xf32> loc("/model/layers.0/self_attn/Unsqueeze_12")
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %w = graph.load_param @model.shared.weight : tensor<8x8xf32>
  %g0 = graph.load_param @model.layers.0.norm.weight : tensor<8xf32>
  %g1 = graph.load_param @model.layers.1.norm.weight : tensor<8xf32>
  %head = graph.load_param @lm_head.weight : tensor<8x16xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %n0 = graph.rms_norm %h0, %g0 {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r0 = graph.mul %n0, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %m0 = graph.matmul %r0, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n1 = graph.rms_norm %h1, %g1 {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r1 = graph.mul %n1, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %m1 = graph.matmul %r1, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = graph.matmul %h2, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: error: rp-lower-to-schedule: trainable param 'model.shared.weight' is read by @block_0 and @block_1; tied params are not supported by the schedule yet (freeze it or untie it)

// -----

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.layers.0.mlp.weight trainable : tensor<8x8xf32>
graph.param @model.layers.1.mlp.weight trainable : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64> {graph.name = "input_ids"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %rot = graph.constant dense<0.5> : tensor<4x8xf32> loc("/model/layers.0/self_attn/Unsqueeze_12")
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %w0 = graph.load_param @model.layers.0.mlp.weight : tensor<8x8xf32>
  %w1 = graph.load_param @model.layers.1.mlp.weight : tensor<8x8xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %r0 = graph.mul %h0, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/self_attn/Mul")
  %m0 = graph.matmul %r0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/mlp/MatMul")
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/Add")
  %r1 = graph.mul %h1, %rot : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/self_attn/Mul")
  %m1 = graph.matmul %r1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/mlp/MatMul")
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/Add")
  %head = graph.transpose %emb {permutation = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %logits = graph.matmul %h2, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: error: rp-lower-to-schedule: trainable param 'model.embed_tokens.weight' is read by @prefix and @tail; tied params are not supported by the schedule yet (freeze it or untie it)
