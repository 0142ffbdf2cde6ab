// rp-check-device-memory compares the planned device arena (rp-plan-memory) with the target
// GPU's memory: `memory-bytes`, else graph.partition's `memory_bytes` (rp-partition-stages
// records the target's), else nothing is checked. The four-layer plan's arena is 9984 bytes
// (constants 512 + 2 x slot 1024 + 2 x activations 2560 + workspace 2304); its largest stage
// is the fused tail B0 (peak 9984).
// Fits: the module passes unchanged.
// RUN: rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory="memory-bytes=9984" | FileCheck %s
// No target memory known (four-layers.mlir records none): no check.
// RUN: rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory | FileCheck %s
// One byte short: the error names the arena, its parts, the target's memory and the stage.
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory="memory-bytes=9983" 2>&1 | FileCheck %s --check-prefix=SHORT
// The memory recorded in graph.partition (this file: 8 KiB) is checked, and the option overrides it.
// RUN: not rp-opt %s --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory 2>&1 | FileCheck %s --check-prefix=RECORDED
// RUN: rp-opt %s --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory="memory-bytes=16384" | FileCheck %s
// Bad input: a negative memory, a plan without an arena.
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-plan-memory --rp-check-device-memory="memory-bytes=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-check-device-memory="memory-bytes=4096" 2>&1 | FileCheck %s --check-prefix=NOARENA

// CHECK: schedule.plan @train {{.*}}device_arena = #schedule.device_arena<constants = 512, slot = 1024, activations = 2560, workspace = 2304>
// SHORT: error: rp-check-device-memory: the plan needs 9984 (9.8 KiB) of device memory per worker (constants 512 + 2 x slot 1024 + 2 x activations 2560 + workspace 2304), more than the target GPU's 9983 (9.7 KiB); the largest stage, B0 (fused_tail, layers tail) peaks at 9984 (9.8 KiB). Try more GPUs (--gpus), fewer tokens per micro-batch (a smaller batch or sequence: --dim, --input-shape), --recompute layer, or a GPU with more memory (--gpu-memory, --target)
// RECORDED: error: rp-check-device-memory: the plan needs 9984 (9.8 KiB) of device memory per worker {{.*}} more than the target GPU's 8192 (8.0 KiB); the largest stage, B0 (fused_tail, layers tail)
// NEGATIVE: error: rp-check-device-memory: memory-bytes must be non-negative, got -1
// NOARENA: error: rp-check-device-memory: the plan has no device arena: run rp-plan-memory first

// The four-layer model of Inputs/four-layers.mlir with a recorded target memory of 8 KiB.
module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail],
                   graph.partition = {algorithm = "exact", gpus = 2 : i64, micro_batches = 3 : i64, memory_bytes = 8192 : i64,
                                      objective_ms = 1.0 : f64, stage_time_ms = 0.25 : f64,
                                      forward = [array<i64: 0, 2>, array<i64: 2, 3>],
                                      backward = [array<i64: 3, 4>, array<i64: 1, 3>, array<i64: 0, 1>]}} {
  graph.param @embed trainable : tensor<16x8xf32>
  graph.param @layers.0.w trainable : tensor<8x8xf32>
  graph.param @layers.1.w trainable : tensor<8x8xf32>
  graph.param @lm_head trainable : tensor<8x16xf32>
  func.func @prefix(%ids: tensor<2x4xi64> {graph.name = "input_ids"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @embed : tensor<16x8xf32>
    %1 = graph.gather %0, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    return %1 : tensor<2x4x8xf32>
  }
  func.func @block_0(%h: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @layers.0.w : tensor<8x8xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %2 = graph.add %h, %1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %2 : tensor<2x4x8xf32>
  }
  func.func @block_1(%h: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<2x4x8xf32> {
    %0 = graph.load_param @layers.1.w : tensor<8x8xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %2 = graph.add %h, %1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %2 : tensor<2x4x8xf32>
  }
  func.func @tail(%h: tensor<2x4x8xf32> {graph.boundary = "block_1#0"}, %labels: tensor<8xi64> {graph.name = "labels"}) -> tensor<f32> {
    %0 = graph.load_param @lm_head : tensor<8x16xf32>
    %1 = graph.matmul %h, %0 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %2 = graph.reshape %1 : tensor<2x4x16xf32> to tensor<8x16xf32>
    %3 = graph.cross_entropy mean %2, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
