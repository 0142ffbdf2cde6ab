// A weight genuinely shared between layers stays one param read by each of them: one read by
// both blocks (an ALBERT-style shared projection, no layer in its name), and an LM head tied
// to the token embedding (read by the prefix and the tail). The folded rotary table named
// after block 0 (a constant) is not what makes them shared. Each reader accumulates its own
// gradient slot; the owner (lowest reader) holds the fp32 state and the optimizer step.
// RUN: rp-opt %s -split-input-file --rp-compile-pipeline 2>&1 | FileCheck %s

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
// The copy in block 1 shares block 0's state (offset 512) and has its own gradient slot.
// CHECK-LABEL: schedule.plan
// CHECK: schedule.layer @block_0 forward @block_0 saving @block_0_fwd backward @block_0_bwd params [@model.shared.weight, @model.layers.0.norm.weight] {grad_offsets = array<i64: 512, 768>, state_offsets = array<i64: 512, 768>
// CHECK: schedule.layer @block_1 forward @block_1 saving @block_1_fwd backward @block_1_bwd params [@model.shared.weight, @model.layers.1.norm.weight] {grad_offsets = array<i64: 1024, 1280>, state_offsets = array<i64: 512, 1024>
// CHECK: schedule.accumulate %{{.*}} into @model.shared.weight of @block_1
// CHECK: schedule.accumulate %{{.*}} into @model.shared.weight of @block_0
// CHECK: schedule.optimizer_step @block_1
// CHECK: schedule.optimizer_step @block_0

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
// CHECK-LABEL: schedule.plan
// CHECK: schedule.layer @prefix forward @prefix saving @prefix_fwd backward @prefix_bwd params [@model.embed_tokens.weight] {grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>
// CHECK: schedule.layer @tail forward @tail saving @tail_fwd backward @tail_bwd params [@model.embed_tokens.weight] {grad_offsets = array<i64: 1024>, state_offsets = array<i64: 0>
// CHECK: schedule.accumulate %{{.*}} into @model.embed_tokens.weight of @tail
// CHECK: schedule.accumulate %{{.*}} into @model.embed_tokens.weight of @prefix
// CHECK-NOT: schedule.optimizer_step @tail
// CHECK: schedule.optimizer_step @prefix
