// rp-plan-memory on the four-layer plan: host arena (params in layer order, 256-byte aligned;
// one record of host buffers per micro-batch), device arena (two slots sized by the largest
// stage's weights + fp32 gradients, activation sets by liveness, workspace per function).
// RUN: rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" --rp-plan-memory | FileCheck %s
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-plan-memory 2>&1 | FileCheck %s --check-prefix=NOPLAN

// Inside a function: intermediates share the workspace by liveness; results go straight to the
// caller's buffers (-1).
// CHECK-LABEL: func.func @block_0(
// CHECK-SAME: attributes {schedule.workspace_bytes = 256 : i64}
// CHECK: graph.matmul {{.*}}schedule.offsets = array<i64: 0>
// CHECK: graph.add {{.*}}schedule.offsets = array<i64: -1>
// CHECK-LABEL: func.func @block_0_bwd(
// CHECK-SAME: attributes {graph.residuals = array<i64>, schedule.workspace_bytes = 1024 : i64}
// The transposed operands are matmul flags (no transpose copies): dX = dY W^T, dW = X^T dY.
// CHECK: graph.matmul {{.*}}schedule.offsets = array<i64: 0>, transpose_b}
// CHECK-NEXT: graph.matmul {{.*}}schedule.offsets = array<i64: 256>, transpose_a}
// CHECK-NEXT: graph.reduce_sum {{.*}}schedule.offsets = array<i64: 768>
// In @tail_bwd the labels' reshape (offset 0) is dead after the first compares: the
// logical_not reuses its bytes. A reshape of a value of the function is an alias: the range's
// reshape and the logits gradient's take their operands' offsets (256, 1024); a reshape of an
// argument (the labels) or into a result (-1) copies.
// CHECK-LABEL: func.func @tail_bwd(
// Constants get one offset each in the constants region.
// CHECK: graph.reshape %arg1 {{.*}}schedule.offsets = array<i64: 0>
// CHECK-NEXT: graph.range {{.*}}schedule.offsets = array<i64: 256>
// CHECK-NEXT: graph.reshape {{.*}}schedule.offsets = array<i64: 256>
// CHECK: graph.constant {schedule.offset = 0 : i64} dense<-100> : tensor<i64>
// CHECK: graph.logical_not {{.*}}schedule.offsets = array<i64: 0>
// CHECK: graph.constant {schedule.offset = 256 : i64} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DZ:.+]] = graph.mul {{.*}}schedule.offsets = array<i64: 1024>
// CHECK-NEXT: graph.reshape %[[DZ]] {schedule.offsets = array<i64: 1024>}
// CHECK: graph.reshape {{.*}}schedule.offsets = array<i64: -1>

// 4 params of 512, 256, 256 and 512 bytes: weights and fp32 state 1536 bytes each; 9 host
// buffers of at most 256 bytes (the last the loss seed): a record of 2304, 3 micro-batches.
// Two constants; the largest stage holds 512 + 512 bytes; B0's values peak at 2560 (the
// residuals of @tail_fwd, the logits and the loss, live until @tail_bwd); @tail_bwd needs 2304 (its reshapes are aliases that keep their
// operands' blocks longer, and first fit places the logits' gradient one block higher).
// CHECK: schedule.plan @train {{.*}} attributes {device_arena = #schedule.device_arena<constants = 512, slot = 1024, activations = 2560, workspace = 2304>, host_arena = #schedule.host_arena<weights = 1536, state = 1536, grads = 1536, activations = 6912>}
// CHECK-NEXT: schedule.layer @prefix {{.*}} {grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>, weight_offsets = array<i64: 0>}
// CHECK-NEXT: schedule.layer @block_0 {{.*}} {grad_offsets = array<i64: 512>, state_offsets = array<i64: 512>, weight_offsets = array<i64: 512>}
// CHECK-NEXT: schedule.layer @block_1 {{.*}} {grad_offsets = array<i64: 768>, state_offsets = array<i64: 768>, weight_offsets = array<i64: 768>}
// CHECK-NEXT: schedule.layer @tail {{.*}} {grad_offsets = array<i64: 1024>, state_offsets = array<i64: 1024>, weight_offsets = array<i64: 1024>}
// CHECK-NEXT: schedule.host_buffer @input_ids {{.*}} {offset = 0 : i64}
// CHECK-NEXT: schedule.host_buffer @labels {{.*}} {offset = 256 : i64}
// CHECK-NEXT: schedule.host_buffer @"prefix#0" {{.*}} {offset = 512 : i64}
// CHECK: schedule.host_buffer @loss {{.*}} {offset = 1792 : i64}
// CHECK-NEXT: schedule.host_buffer @loss_seed {{.*}} {offset = 2048 : i64}

// Stage sizes; peak = constants + own slot use + a full prefetch slot + 2 activation sets +
// workspace (F0: 512 + 768 + 1024 + 2 * 512 + 256 = 3584).
// CHECK: schedule.stage @F0 forward layers [0, 2) attributes {activation_bytes = 512 : i64, grad_bytes = 0 : i64, peak_bytes = 3584 : i64, weight_bytes = 768 : i64, workspace_bytes = 256 : i64}
// The prefix's output is downloaded, so it keeps its offset to the end of the body; the
// upload's memory (dead after the prefix) is reused by block_0's output.
// CHECK: schedule.upload @input_ids {offset = 0 : i64}
// CHECK: schedule.call @prefix(%{{.+}}) {offsets = array<i64: 256>}
// CHECK: schedule.call @block_0(%{{.+}}) {offsets = array<i64: 0>}
// CHECK: schedule.stage @B0 fused_tail layers [3, 4) attributes {activation_bytes = 2560 : i64, grad_bytes = 512 : i64, peak_bytes = 9984 : i64, weight_bytes = 512 : i64, workspace_bytes = 2304 : i64}
// CHECK: schedule.upload @loss_seed {offset = 512 : i64} : tensor<f32>
// The residuals' lifetimes run from @tail_fwd to @tail_bwd: its results do not reuse them.
// CHECK: schedule.call @tail_fwd(%{{.+}}, %{{.+}}) {offsets = array<i64: 768, 1280>}
// CHECK: schedule.call @tail_bwd(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {offsets = array<i64: 1536, 1792, 2304>}
// CHECK: schedule.stage @B1 backward layers [1, 3) attributes {activation_bytes = 1280 : i64, grad_bytes = 512 : i64, peak_bytes = 6144 : i64, weight_bytes = 512 : i64, workspace_bytes = 1024 : i64}
// CHECK: schedule.call @block_0_fwd(%{{.+}}) {offsets = array<i64: 512>}
// CHECK: schedule.call @block_1_bwd(%{{.+}}, %{{.+}}) {offsets = array<i64: 768, 1024>}
// CHECK: schedule.call @block_0_bwd(%{{.+}}, %{{.+}}) {offsets = array<i64: 256, 512>}

// NOPLAN: rp-plan-memory: expected one schedule.plan, found 0
