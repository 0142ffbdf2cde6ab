// rp-group-layers on a GPT-2-style graph: param names transformer.h.N, learned position
// embeddings (wpe gathered at a range of positions: prefix), layer_norm + gelu blocks, and an
// LM head tied to the token embedding (wte read again in the tail).
// RUN: rp-opt %s --rp-group-layers | FileCheck %s

graph.param @transformer.wte.weight trainable : tensor<32x8xf32>
graph.param @transformer.wpe.weight trainable : tensor<16x8xf32>
graph.param @transformer.h.0.ln_1.weight trainable : tensor<8xf32>
graph.param @transformer.h.0.ln_1.bias trainable : tensor<8xf32>
graph.param @transformer.h.0.mlp.c_fc.weight trainable : tensor<8x8xf32>
graph.param @transformer.h.1.ln_1.weight trainable : tensor<8xf32>
graph.param @transformer.h.1.ln_1.bias trainable : tensor<8xf32>
graph.param @transformer.h.1.mlp.c_fc.weight trainable : tensor<8x8xf32>
graph.param @transformer.ln_f.weight trainable : tensor<8xf32>
graph.param @transformer.ln_f.bias trainable : tensor<8xf32>
func.func @forward(%ids: tensor<2x4xi64>, %labels: tensor<8xi64>) -> tensor<f32> {
  %wte = graph.load_param @transformer.wte.weight : tensor<32x8xf32>
  %wpe = graph.load_param @transformer.wpe.weight : tensor<16x8xf32>
  %pos = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %tok = graph.gather %wte, %ids {axis = 0 : i64} : (tensor<32x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %pe = graph.gather %wpe, %pos {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %h0 = graph.add %tok, %pe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %g0 = graph.load_param @transformer.h.0.ln_1.weight : tensor<8xf32>
  %b0 = graph.load_param @transformer.h.0.ln_1.bias : tensor<8xf32>
  %w0 = graph.load_param @transformer.h.0.mlp.c_fc.weight : tensor<8x8xf32>
  %x0 = graph.layer_norm %h0, %g0, %b0 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m0 = graph.matmul %x0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %a0 = graph.gelu tanh %m0 : tensor<2x4x8xf32>
  %h1 = graph.add %h0, %a0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %g1 = graph.load_param @transformer.h.1.ln_1.weight : tensor<8xf32>
  %b1 = graph.load_param @transformer.h.1.ln_1.bias : tensor<8xf32>
  %w1 = graph.load_param @transformer.h.1.mlp.c_fc.weight : tensor<8x8xf32>
  %x1 = graph.layer_norm %h1, %g1, %b1 {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m1 = graph.matmul %x1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %a1 = graph.gelu tanh %m1 : tensor<2x4x8xf32>
  %h2 = graph.add %h1, %a1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %gf = graph.load_param @transformer.ln_f.weight : tensor<8xf32>
  %bf = graph.load_param @transformer.ln_f.bias : tensor<8xf32>
  %f = graph.layer_norm %h2, %gf, %bf {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %wt = graph.transpose %wte {permutation = array<i64: 1, 0>} : (tensor<32x8xf32>) -> tensor<8x32xf32>
  %logits = graph.matmul %f, %wt : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %flat = graph.reshape %logits : tensor<2x4x32xf32> to tensor<8x32xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}
// The token and position embeddings make the prefix; the positions are rematerialised.
// CHECK-LABEL: func.func @prefix
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK-DAG: graph.range
// CHECK-DAG: graph.gather %{{.+}}, %[[IDS]]
// CHECK: %[[H0:.+]] = graph.add
// CHECK: return %[[H0]]
// CHECK-LABEL: func.func @block_0
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32>
// CHECK: graph.layer_norm %[[H]]
// CHECK: graph.gelu tanh
// CHECK-LABEL: func.func @block_1
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32>
// The tied LM head reads the token embedding again.
// CHECK-LABEL: func.func @tail
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %{{.+}}: tensor<8xi64>) -> tensor<f32>
// CHECK-DAG: graph.load_param @transformer.wte.weight
// CHECK-DAG: graph.load_param @transformer.ln_f.weight
// CHECK: graph.transpose
// CHECK: graph.cross_entropy mean
