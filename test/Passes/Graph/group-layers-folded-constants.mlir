// rp-group-layers on a Llama-style graph as the TorchScript exporter writes it: the rotary
// tables are folded once and named after the first block, and the canonicalizer hoists the
// constants above the embedding lookup. Values computed only from constants (a constant, an
// op of constants) are no evidence of a layer: the gather of the embedding stays in the
// prefix, each block gets its own copy of the tables, and a block index found only on a
// constant (`layers.7`) adds no block.
// RUN: rp-opt %s --rp-group-layers | FileCheck %s

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.layers.0.mlp.weight trainable : tensor<8x8xf32>
graph.param @model.layers.1.mlp.weight trainable : tensor<8x8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64> {graph.name = "input_ids"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> (tensor<f32> {graph.name = "loss"}) {
  %cos = graph.constant dense<0.5> : tensor<4x8xf32> loc("/model/layers.0/self_attn/Unsqueeze_12")
  %sin = graph.constant dense<0.25> : tensor<4x8xf32> loc("/model/layers.0/self_attn/Unsqueeze_13")
  %nsin = graph.neg %sin : tensor<4x8xf32> loc("/model/layers.0/self_attn/Neg")
  %eps = graph.constant dense<1.0> : tensor<f32> loc("/model/layers.7/Constant")
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %w0 = graph.load_param @model.layers.0.mlp.weight : tensor<8x8xf32>
  %w1 = graph.load_param @model.layers.1.mlp.weight : tensor<8x8xf32>
  %head = graph.load_param @lm_head.weight : tensor<8x16xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("/model/embed_tokens/Gather")
  %c0 = graph.mul %h0, %cos : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/self_attn/Mul")
  %s0 = graph.mul %h0, %nsin : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/self_attn/Mul_1")
  %r0 = graph.add %c0, %s0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/self_attn/Add")
  %m0 = graph.matmul %r0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/mlp/MatMul")
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.0/Add")
  %c1 = graph.mul %h1, %cos : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/self_attn/Mul")
  %s1 = graph.mul %h1, %nsin : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/self_attn/Mul_1")
  %r1 = graph.add %c1, %s1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/self_attn/Add")
  %m1 = graph.matmul %r1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/mlp/MatMul")
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/model/layers.1/Add")
  %f = graph.mul %h2, %eps : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32> loc("/model/norm/Mul")
  %logits = graph.matmul %f, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/lm_head/MatMul")
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}
// CHECK-LABEL: func.func @prefix
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x4xi64> {graph.name = "input_ids"}) -> tensor<2x4x8xf32>
// CHECK-NOT: graph.constant
// CHECK: %[[E:.+]] = graph.load_param @model.embed_tokens.weight
// CHECK: %[[H0:.+]] = graph.gather %[[E]], %[[IDS]]
// CHECK-NEXT: return %[[H0]]
// CHECK-LABEL: func.func @block_0
// CHECK-SAME: (%[[X0:.+]]: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32>
// CHECK-DAG: graph.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-DAG: %[[SIN0:.+]] = graph.constant dense<2.500000e-01> : tensor<4x8xf32>
// CHECK-DAG: graph.neg %[[SIN0]]
// CHECK-NOT: graph.gather
// CHECK: graph.add %[[X0]], %{{.+}}
// CHECK-LABEL: func.func @block_1
// CHECK-SAME: (%[[X1:.+]]: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32>
// CHECK-DAG: graph.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-DAG: %[[SIN1:.+]] = graph.constant dense<2.500000e-01> : tensor<4x8xf32>
// CHECK-DAG: graph.neg %[[SIN1]]
// CHECK-NOT: graph.gather
// CHECK: graph.add %[[X1]], %{{.+}}
// CHECK-LABEL: func.func @tail
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %{{.+}}: tensor<8xi64> {graph.name = "labels"})
// CHECK: graph.constant dense<1.000000e+00> : tensor<f32>
