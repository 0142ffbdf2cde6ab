// rp-group-layers with one constant shared by every block but named after the first one (the
// TorchScript exporter folds the rotary table once, under /model/layers.0/): constants are
// free, so each block gets its own copy and the boundary carries only the hidden state.
// RUN: rp-opt %s --rp-group-layers | FileCheck %s

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.layers.0.mlp.weight trainable : tensor<8x8xf32>
graph.param @model.layers.1.mlp.weight trainable : tensor<8x8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64>, %labels: tensor<8xi64>) -> tensor<f32> {
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %w0 = graph.load_param @model.layers.0.mlp.weight : tensor<8x8xf32>
  %w1 = graph.load_param @model.layers.1.mlp.weight : tensor<8x8xf32>
  %head = graph.load_param @lm_head.weight : tensor<8x16xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %rot = graph.constant dense<0.5> : tensor<8xf32> loc("/model/layers.0/self_attn/Unsqueeze")
  %r0 = graph.mul %h0, %rot : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/self_attn/Mul")
  %m0 = graph.matmul %r0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r1 = graph.mul %h1, %rot : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/self_attn/Mul")
  %m1 = graph.matmul %r1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = graph.matmul %h2, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}
// CHECK-LABEL: func.func @block_0
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "{{.+}}"}) -> tensor<2x4x8xf32>
// CHECK: graph.constant dense<5.000000e-01> : tensor<8xf32>
// CHECK-LABEL: func.func @block_1
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "{{.+}}"}) -> tensor<2x4x8xf32>
// CHECK: graph.constant dense<5.000000e-01> : tensor<8xf32>
// CHECK-LABEL: func.func @tail
