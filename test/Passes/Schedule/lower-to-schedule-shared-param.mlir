// A trainable param read by several layers (tied input embedding and LM head) is one
// parameter: each reader accumulates its own gradient (`of` names the layer), only the owner
// (the lowest reader) has an optimizer step, which waits for the other readers' gradients
// (`shared_grads`) and for every stage that uploads a copy. The plan verifier checks the
// result (rp-opt verifies after the pass).
// RUN: rp-opt %s -split-input-file --rp-lower-to-schedule | FileCheck %s
// rp-plan-memory keeps the fp32 state once (at the owner's entry) and gives every reader's
// entry its own weights and gradient slot, each stage's range contiguous.
// RUN: rp-opt %s -split-input-file --rp-lower-to-schedule --rp-plan-memory | FileCheck %s --check-prefix=MEM

// The readers in different stages: F0 [0, 1), the fused tail B0 [1, 2), B1 [0, 1).
// CHECK-LABEL: schedule.plan @train
// CHECK: schedule.layer @prefix forward @prefix saving @prefix_fwd backward @prefix_bwd params [@embed]
// CHECK: schedule.layer @tail forward @tail saving @tail_fwd backward @tail_bwd params [@embed, @norm]
// CHECK: schedule.stage @B0 fused_tail
// CHECK: schedule.accumulate %{{.*}} into @embed of @tail : tensor<2xf32>
// CHECK: schedule.accumulate %{{.*}} into @norm : tensor<2xf32>
// CHECK: schedule.stage @B1 backward
// CHECK: schedule.accumulate %{{.*}} into @embed of @prefix : tensor<2xf32>
// CHECK: schedule.optimizer_step @tail grads @B0 uploads [@B0]
// CHECK-NEXT: schedule.optimizer_step @prefix grads @B1 shared_grads [@B0] uploads [@F0, @B0, @B1]
// MEM-LABEL: schedule.plan @train
// MEM-SAME: host_arena = #schedule.host_arena<weights = 768, state = 512, grads = 768,
// MEM: schedule.layer @prefix {{.*}} {grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>, weight_offsets = array<i64: 0>}
// MEM: schedule.layer @tail {{.*}} {grad_offsets = array<i64: 256, 512>, state_offsets = array<i64: 0, 256>, weight_offsets = array<i64: 256, 512>}
// MEM: schedule.stage @B0 fused_tail layers [1, 2) attributes {{{.*}}grad_bytes = 512 : i64
module attributes {graph.layers = [@prefix, @tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [array<i64: 0, 1>], backward = [array<i64: 1, 2>, array<i64: 0, 1>]}} {
  graph.param @embed trainable : tensor<2xf32>
  graph.param @norm trainable : tensor<2xf32>
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<2xf32> {
    %w = graph.load_param @embed : tensor<2xf32>
    %0 = graph.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func @tail(%h: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<f32> {
    %w = graph.load_param @embed : tensor<2xf32>
    %g = graph.load_param @norm : tensor<2xf32>
    %0 = graph.mul %h, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.mul %0, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.reduce_sum %1 {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Both readers in the fused tail B0 [0, 2): two accumulators in one stage, no shared wait;
// the tail owns nothing and has no step.
// CHECK-LABEL: schedule.plan @train
// CHECK: schedule.stage @B0 fused_tail layers [0, 2)
// CHECK: schedule.accumulate %{{.*}} into @embed of @tail : tensor<2xf32>
// CHECK: schedule.accumulate %{{.*}} into @embed of @prefix : tensor<2xf32>
// CHECK-NOT: schedule.optimizer_step @tail
// CHECK: schedule.optimizer_step @prefix grads @B0 uploads [@B0]
// CHECK-NOT: schedule.optimizer_step
// MEM-LABEL: schedule.plan @train
// MEM-SAME: host_arena = #schedule.host_arena<weights = 512, state = 256, grads = 512,
module attributes {graph.layers = [@prefix, @tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [], backward = [array<i64: 0, 2>]}} {
  graph.param @embed trainable : tensor<2xf32>
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<2xf32> {
    %w = graph.load_param @embed : tensor<2xf32>
    %0 = graph.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func @tail(%h: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<f32> {
    %w = graph.load_param @embed : tensor<2xf32>
    %0 = graph.mul %h, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.reduce_sum %0 {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
