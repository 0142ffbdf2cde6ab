// rp-partition-stages records the plan of a grouped module as graph.partition: the
// partitioner, N, M, the stage time and objective, and [begin, end) layer ranges of the
// forward stages and of the backward stages (fused tail first, descending).
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 partitioner=roundpipe profile=%S/../../Tools/Inputs/tiny-profile.json" | FileCheck %s
// Residuals (saved_bytes) bound backward stages and the fused tail, not forward ones: 1 MB of
// GPU memory gives a 300,000-byte stage budget; a layer of 2,000 bytes of weights and
// gradients holding 100,000 bytes of residuals for two micro-batches needs 202,000, so every
// backward-kind stage takes one layer; without residuals (or with recompute=layer: one
// layer's residuals at a time) the backward stage takes all three.
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=1MB profile=%S/Inputs/residual-profile.json" | FileCheck %s --check-prefix=RESIDUALS
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=1MB profile=%S/Inputs/no-residual-profile.json" | FileCheck %s --check-prefix=NORESIDUALS
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=1MB recompute=layer profile=%S/Inputs/residual-profile.json" | FileCheck %s --check-prefix=NORESIDUALS
// A profile without saved_bytes gets the compiler's estimate, rp-split-gradient's residuals:
// prefix 64 (the ids), each block 256 (its input, for dW), the tail 836 (its input, the labels,
// the logits and an f32 scalar). At 22 KB (budget 6,600) the backward stage [0, 3) needs
// 6,000 + 2 x 576 and splits; measured zeros keep it whole. The bounds are exact: [0, 2) needs
// 4,000 + 2 x 320 = 4,640, a budget of 15,467 bytes of memory (floor(0.6 x 15,467) / 2), one
// byte less splits it; the tail alone needs 2,000 + 2 x 836 = 3,672 (12,240 bytes).
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=15467 profile=%S/Inputs/unmeasured-residual-profile.json" | FileCheck %s --check-prefix=ESTIMATED
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=15466 profile=%S/Inputs/unmeasured-residual-profile.json" | FileCheck %s --check-prefix=SPLIT
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=12240 profile=%S/Inputs/unmeasured-residual-profile.json" | FileCheck %s --check-prefix=SPLIT
// RUN: not rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=12239 profile=%S/Inputs/unmeasured-residual-profile.json" 2>&1 | FileCheck %s --check-prefix=TAIL
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=22KB profile=%S/Inputs/unmeasured-residual-profile.json" | FileCheck %s --check-prefix=ESTIMATED
// RUN: rp-opt %s --rp-group-layers --rp-partition-stages="gpus=2 gpu-memory=22KB profile=%S/Inputs/no-residual-profile.json" | FileCheck %s --check-prefix=NORESIDUALS
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
// The target's memory is recorded (the default target, an RTX 4090: 24 GiB).
// CHECK: graph.partition = {algorithm = "roundpipe", backward = [array<i64: 3, 4>{{.*}}], forward = [array<i64: 0, {{[0-9]}}>{{.*}}], gpus = 2 : i64, memory_bytes = 25769803776 : i64, micro_batches = 3 : i64, objective_ms = {{.+}}, stage_time_ms = {{.+}}}
// RESIDUALS: backward = [array<i64: 3, 4>, array<i64: 2, 3>, array<i64: 1, 2>, array<i64: 0, 1>], forward = [array<i64: 0, 3>], gpus = 2 : i64, memory_bytes = 1000000 : i64
// ESTIMATED: backward = [array<i64: 3, 4>, array<i64: 2, 3>, array<i64: 0, 2>], forward = [array<i64: 0, 3>]
// SPLIT: backward = [array<i64: 3, 4>, array<i64: 2, 3>, array<i64: 1, 2>, array<i64: 0, 1>]
// TAIL: error: layer 3 ('tail') needs 3.6 KiB, more than the per-stage budget
// NORESIDUALS: backward = [array<i64: 3, 4>, array<i64: 0, 3>], forward = [array<i64: 0, 3>]
// UNGROUPED: error: no 'graph.layers' attribute: run rp-group-layers first
// GPUS: error: the GPU count must be at least 1, got 0
