// rp-partition-stages records the plan of a grouped module as graph.partition: the
// partitioner, N, M, the stage time and objective, and [begin, end) layer ranges of the
// forward stages and of the backward stages (fused tail first, descending).
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 partitioner=roundpipe profile=%S/../Tools/Inputs/tiny-profile.json" | FileCheck %s
// RUN: not rp-opt %s --rp-partition-stages 2>&1 | FileCheck %s --check-prefix=UNGROUPED
// RUN: not rp-opt %s --rp-group-layers --rp-partition-stages="gpus=0" 2>&1 | FileCheck %s --check-prefix=GPUS

graph.param @model.embed_tokens.weight trainable : tensor<16x8xf32>
graph.param @model.layers.0.w trainable : tensor<8x8xf32>
graph.param @model.layers.1.w trainable : tensor<8x8xf32>
graph.param @lm_head.weight trainable : tensor<8x16xf32>
func.func @forward(%ids: tensor<2x4xi64>, %labels: tensor<8xi64>) -> tensor<f32> {
  %emb = graph.load_param @model.embed_tokens.weight : tensor<16x8xf32>
  %w0 = graph.load_param @model.layers.0.w : tensor<8x8xf32>
  %w1 = graph.load_param @model.layers.1.w : tensor<8x8xf32>
  %head = graph.load_param @lm_head.weight : tensor<8x16xf32>
  %h0 = graph.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %m0 = graph.matmul %h0, %w0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = graph.add %h0, %m0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m1 = graph.matmul %h1, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h2 = graph.add %h1, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = graph.matmul %h2, %head : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
// CHECK: graph.partition = {algorithm = "roundpipe", backward = [array<i64: 3, 4>{{.*}}], forward = [array<i64: 0, {{[0-9]}}>{{.*}}], gpus = 2 : i64, micro_batches = 3 : i64, objective_ms = {{.+}}, stage_time_ms = {{.+}}}
// UNGROUPED: error: no 'graph.layers' attribute: run rp-group-layers first
// GPUS: error: the GPU count must be at least 1, got 0
