// rp-lower-to-schedule on a four-layer model partitioned into 2 forward stages, the fused tail
// and 2 backward stages: stage bodies, host buffers, events (`after`), optimizer steps.
// RUN: rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=sync" | FileCheck %s
// RUN: rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="recompute=layer dtype=bf16 lr=0.001 grad-clip=1.0" | FileCheck %s --check-prefix=LAYER
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="update=lazy" 2>&1 | FileCheck %s --check-prefix=UPDATE
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="recompute=block" 2>&1 | FileCheck %s --check-prefix=GRAIN
// RUN: not rp-opt %S/Inputs/four-layers.mlir --rp-lower-to-schedule="dtype=f8" 2>&1 | FileCheck %s --check-prefix=DTYPE

// The per-layer split gradient functions (rp-split-gradient): `_fwd` returns the layer's
// outputs and the residuals, `_bwd` takes the layer's inputs, the residuals and the cotangent
// (param and input gradients out; a block whose backward reads only its input saves
// nothing); the last layer's `_bwd` returns the loss first and takes the loss seed (f32) last.
// CHECK-LABEL: func.func @block_0_fwd
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-LABEL: func.func @block_0_bwd
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32>, %{{.+}}: tensor<2x4x8xf32>) -> (tensor<8x8xf32> {graph.grad_of = @layers.0.w}, tensor<2x4x8xf32> {graph.grad_of_arg = 0 : i64}) attributes {graph.residuals = array<i64>}
// CHECK-LABEL: func.func @tail_fwd
// CHECK-SAME: -> (tensor<8x16xf32>, tensor<f32>)
// CHECK-LABEL: func.func @tail_bwd
// CHECK-SAME: %{{.+}}: tensor<8x16xf32> {graph.residual = 0 : i64}, %{{.+}}: tensor<f32> {graph.residual = 1 : i64}, %{{.+}}: tensor<f32> {graph.name = "loss_seed"}) -> (tensor<f32>, tensor<8x16xf32> {graph.grad_of = @lm_head}, tensor<2x4x8xf32> {graph.grad_of_arg = 0 : i64})
// CHECK-NOT: graph.cross_entropy

// CHECK: schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
// CHECK-NEXT: schedule.layer @prefix forward @prefix saving @prefix_fwd backward @prefix_bwd params [@embed]
// CHECK-NEXT: schedule.layer @block_0 forward @block_0 saving @block_0_fwd backward @block_0_bwd params [@layers.0.w]
// CHECK-NEXT: schedule.layer @block_1 forward @block_1 saving @block_1_fwd backward @block_1_bwd params [@layers.1.w]
// CHECK-NEXT: schedule.layer @tail forward @tail saving @tail_fwd backward @tail_bwd params [@lm_head]
// CHECK-NEXT: schedule.host_buffer @input_ids input "input_ids" : tensor<2x4xi64>
// CHECK-NEXT: schedule.host_buffer @labels input "labels" : tensor<8xi64>
// CHECK-NEXT: schedule.host_buffer @"prefix#0" activation : tensor<2x4x8xf32>
// CHECK-NEXT: schedule.host_buffer @"block_0#0" activation : tensor<2x4x8xf32>
// CHECK-NEXT: schedule.host_buffer @"block_1#0" activation : tensor<2x4x8xf32>
// CHECK-NEXT: schedule.host_buffer @"prefix#0.cot" cotangent : tensor<2x4x8xf32>
// CHECK-NEXT: schedule.host_buffer @"block_1#0.cot" cotangent : tensor<2x4x8xf32>
// CHECK-NEXT: schedule.host_buffer @loss loss : tensor<f32>
// CHECK-NEXT: schedule.host_buffer @loss_seed loss_seed : tensor<f32>

// F0 saves prefix#0 (the input B1 recomputes from) and hands block_0#0 to F1.
// CHECK: schedule.stage @F0 forward layers [0, 2) {
// CHECK-NEXT: schedule.await_weights
// CHECK-NEXT: schedule.micro_batch {
// CHECK-NEXT: %[[IDS:.+]] = schedule.upload @input_ids : tensor<2x4xi64>
// CHECK-NEXT: schedule.prefetch_next
// CHECK-NEXT: %[[H0:.+]] = schedule.call @prefix(%[[IDS]])
// CHECK-NEXT: schedule.download %[[H0]] to @"prefix#0"
// CHECK-NEXT: %[[H1:.+]] = schedule.call @block_0(%[[H0]])
// CHECK-NEXT: schedule.download %[[H1]] to @"block_0#0"
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: schedule.stage @F1 forward layers [2, 3) {
// CHECK: schedule.upload @"block_0#0" after @F0
// CHECK: schedule.call @block_1
// CHECK: schedule.download %{{.+}} to @"block_1#0"

// The fused tail: forward, loss, backward, no recomputation.
// CHECK: schedule.stage @B0 fused_tail layers [3, 4) {
// CHECK-NEXT: schedule.await_weights
// CHECK-NEXT: schedule.micro_batch {
// CHECK-NEXT: %[[X:.+]] = schedule.upload @"block_1#0" after @F1
// CHECK-NEXT: %[[L:.+]] = schedule.upload @labels
// CHECK-NEXT: %[[SEED:.+]] = schedule.upload @loss_seed : tensor<f32>
// CHECK-NEXT: schedule.prefetch_next
// CHECK-NEXT: %[[R:.+]]:2 = schedule.call @tail_fwd(%[[X]], %[[L]])
// CHECK-NEXT: %[[T:.+]]:3 = schedule.call @tail_bwd(%[[X]], %[[L]], %[[R]]#0, %[[R]]#1, %[[SEED]])
// CHECK-NEXT: schedule.download %[[T]]#0 to @loss
// CHECK-NEXT: schedule.accumulate %[[T]]#1 into @lm_head
// CHECK-NEXT: schedule.download %[[T]]#2 to @"block_1#0.cot"
// CHECK-NEXT: }
// CHECK-NEXT: schedule.download_grads

// Stage grain: B1 recomputes block_0 from the saved prefix#0, then descends.
// CHECK: schedule.stage @B1 backward layers [1, 3) {
// CHECK: %[[S:.+]] = schedule.upload @"prefix#0" after @F0
// CHECK-NEXT: %[[DY:.+]] = schedule.upload @"block_1#0.cot" after @B0
// CHECK-NEXT: schedule.prefetch_next
// Each layer's forward once, bottom-up (block_1's is not run: its backward saves nothing and
// its output is the stage's top), then each backward once, top-down.
// CHECK-NEXT: %[[R:.+]] = schedule.call @block_0_fwd(%[[S]])
// CHECK-NEXT: %[[G1:.+]]:2 = schedule.call @block_1_bwd(%[[R]], %[[DY]])
// CHECK-NEXT: schedule.accumulate %[[G1]]#0 into @layers.1.w
// CHECK-NEXT: %[[G0:.+]]:2 = schedule.call @block_0_bwd(%[[S]], %[[G1]]#1)
// CHECK-NEXT: schedule.accumulate %[[G0]]#0 into @layers.0.w
// CHECK-NEXT: schedule.download %[[G0]]#1 to @"prefix#0.cot"
// CHECK: schedule.stage @B2 backward layers [0, 1) {
// CHECK: schedule.upload @"prefix#0.cot" after @B1
// CHECK-NOT: schedule.call @prefix_fwd
// CHECK: schedule.call @prefix_bwd
// CHECK: schedule.accumulate %{{.+}} into @embed

// Optimizer steps in the order gradients arrive, each waiting for every upload of its layer.
// CHECK: schedule.optimizer_step @tail grads @B0 uploads [@B0]
// CHECK-NEXT: schedule.optimizer_step @block_1 grads @B1 uploads [@F1, @B1]
// CHECK-NEXT: schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
// CHECK-NEXT: schedule.optimizer_step @prefix grads @B2 uploads [@F0, @B2]

// Layer grain: every layer's input is saved in the forward pass and uploaded, nothing is
// recomputed outside the backward functions; bf16 weights and activations, an f32 loss.
// LAYER-LABEL: func.func @tail_bwd
// LAYER-SAME: , %[[SEEDARG:[a-z0-9]+]]: tensor<f32> {graph.name = "loss_seed"}) -> (tensor<f32>, tensor<8x16xbf16>
// LAYER-NEXT: graph.cast %[[SEEDARG]] : tensor<f32> to tensor<bf16>
// LAYER: schedule.plan @train micro_batches 3 gpus 2 update async recompute layer dtype bf16 optimizer #schedule.adamw<lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-08, weight_decay = 0.0, grad_clip = 1.0>
// LAYER: schedule.host_buffer @"block_0#0" activation : tensor<2x4x8xbf16>
// LAYER: schedule.host_buffer @loss loss : tensor<f32>
// LAYER-NEXT: schedule.host_buffer @loss_seed loss_seed : tensor<f32>
// LAYER: schedule.stage @B1 backward layers [1, 3) {
// LAYER: %[[S0:.+]] = schedule.upload @"prefix#0" after @F0 : tensor<2x4x8xbf16>
// LAYER-NEXT: %[[S1:.+]] = schedule.upload @"block_0#0" after @F0 : tensor<2x4x8xbf16>
// LAYER-NEXT: %[[DY:.+]] = schedule.upload @"block_1#0.cot" after @B0
// LAYER-NEXT: schedule.prefetch_next
// LAYER-NEXT: schedule.call @block_1_bwd(%[[S1]], %[[DY]])
// LAYER-NOT: schedule.call @block_0_fwd(
// LAYER: schedule.call @block_0_bwd(%[[S0]],

// UPDATE: rp-lower-to-schedule: unknown update mode 'lazy': expected sync or async
// GRAIN: rp-lower-to-schedule: unknown recomputation grain 'block': expected stage or layer
// DTYPE: rp-lower-to-schedule: unknown compute dtype 'f8': expected f32, f16 or bf16
