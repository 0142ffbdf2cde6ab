// Round trip of every schedule op on a complete plan: text, generic form and bytecode.
// RUN: rp-opt %s | FileCheck %s
// RUN: rp-opt %s | rp-opt | FileCheck %s
// RUN: rp-opt %s --mlir-print-op-generic | rp-opt | FileCheck %s
// RUN: rp-opt %s --emit-bytecode | rp-opt | FileCheck %s

// A four-layer model: @prefix (embedding), @block_0 and @block_1 (residual matmuls; @w1 is
// frozen, so @block_1 has no optimizer step) and @tail (LM head + loss). Forward stages
// [0, 2) and [2, 3), the fused tail [3, 4), backward stages [1, 3) and [0, 1). The bodies
// of the backward functions are placeholders: the schedule verifier reads signatures only.

graph.param @embed trainable : tensor<16x8xf32>
graph.param @w0 trainable : tensor<8x8xf32>
graph.param @w1 : tensor<8x8xf32>
graph.param @head trainable : tensor<8x16xf32>

func.func @prefix(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %e = graph.load_param @embed : tensor<16x8xf32>
  %h = graph.gather %e, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  return %h : tensor<2x4x8xf32>
}
func.func @prefix_vjp(%ids: tensor<2x4xi64>, %dh: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>) {
  %h = call @prefix(%ids) : (tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %de = graph.scatter_add %dh, %ids {axis = 0 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<16x8xf32>
  return %h, %de : tensor<2x4x8xf32>, tensor<16x8xf32>
}
func.func @block_0(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %w = graph.load_param @w0 : tensor<8x8xf32>
  %m = graph.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %h, %m : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
func.func @block_0_vjp(%h: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>) {
  %y = call @block_0(%h) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dw = graph.constant dense<0.0> : tensor<8x8xf32>
  return %y, %dw, %dy : tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>
}
func.func @block_1(%h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %w = graph.load_param @w1 : tensor<8x8xf32>
  %m = graph.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = graph.add %h, %m : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
func.func @block_1_vjp(%h: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %y = call @block_1(%h) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y, %dy : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
func.func @tail(%h: tensor<2x4x8xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %w = graph.load_param @head : tensor<8x16xf32>
  %logits = graph.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %flat = graph.reshape %logits : tensor<2x4x16xf32> to tensor<8x16xf32>
  %loss = graph.cross_entropy mean %flat, %labels {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @tail_vjp(%h: tensor<2x4x8xf32>, %labels: tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>) {
  %loss = call @tail(%h, %labels) : (tensor<2x4x8xf32>, tensor<8xi64>) -> tensor<f32>
  %dw = graph.constant dense<0.0> : tensor<8x16xf32>
  %dh = graph.constant dense<0.0> : tensor<2x4x8xf32>
  return %loss, %dw, %dh : tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>
}
// A saving forward (rp-split-gradient's `_fwd`): the layer's output, then a residual.
func.func @block_1_fwd(%h: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  return %h, %h : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// The plan, with the attributes rp-plan-memory adds.
// CHECK-LABEL: schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
// CHECK-SAME: optimizer #schedule.adamw<lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-08, weight_decay = 0.01, grad_clip = 1.0>
// CHECK-SAME: attributes {device_arena = #schedule.device_arena<constants = 0, slot = 1024, activations = 1024, workspace = 2048>, host_arena = #schedule.host_arena<weights = 1536, state = 1280, grads = 1280, activations = 4608>}
schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, grad_clip = 1.0>
    attributes {device_arena = #schedule.device_arena<constants = 0, slot = 1024, activations = 1024, workspace = 2048>,
                host_arena = #schedule.host_arena<weights = 1536, state = 1280, grads = 1280, activations = 4608>} {
  // Layers in model order; a frozen param has state offset -1.
  // CHECK-NEXT: schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed] {grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>, weight_offsets = array<i64: 0>}
  // CHECK-NEXT: schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@w0] {grad_offsets = array<i64: 512>, state_offsets = array<i64: 512>, weight_offsets = array<i64: 512>}
  // CHECK-NEXT: schedule.layer @block_1 forward @block_1 saving @block_1_fwd backward @block_1_vjp params [@w1] {grad_offsets = array<i64: -1>, state_offsets = array<i64: -1>, weight_offsets = array<i64: 768>}
  // CHECK-NEXT: schedule.layer @tail forward @tail backward @tail_vjp params [@head] {grad_offsets = array<i64: 768>, state_offsets = array<i64: 768>, weight_offsets = array<i64: 1024>}
  schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
  schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@w0] {weight_offsets = array<i64: 512>, grad_offsets = array<i64: 512>, state_offsets = array<i64: 512>}
  schedule.layer @block_1 forward @block_1 saving @block_1_fwd backward @block_1_vjp params [@w1] {weight_offsets = array<i64: 768>, grad_offsets = array<i64: -1>, state_offsets = array<i64: -1>}
  schedule.layer @tail forward @tail backward @tail_vjp params [@head] {weight_offsets = array<i64: 1024>, grad_offsets = array<i64: 768>, state_offsets = array<i64: 768>}

  // Host buffers: model inputs, boundary activations, the loss, cotangents.
  // CHECK-NEXT: schedule.host_buffer @input_ids input "input_ids" : tensor<2x4xi64> {offset = 0 : i64}
  // CHECK-NEXT: schedule.host_buffer @labels input "labels" : tensor<8xi64> {offset = 64 : i64}
  // CHECK-NEXT: schedule.host_buffer @"prefix#0" activation : tensor<2x4x8xf32> {offset = 128 : i64}
  // CHECK-NEXT: schedule.host_buffer @"block_0#0" activation : tensor<2x4x8xf32> {offset = 384 : i64}
  // CHECK-NEXT: schedule.host_buffer @"block_1#0" activation : tensor<2x4x8xf32> {offset = 640 : i64}
  // CHECK-NEXT: schedule.host_buffer @loss loss : tensor<f32> {offset = 896 : i64}
  // CHECK-NEXT: schedule.host_buffer @"block_1#0.grad" cotangent : tensor<2x4x8xf32> {offset = 1024 : i64}
  // CHECK-NEXT: schedule.host_buffer @"prefix#0.grad" cotangent : tensor<2x4x8xf32> {offset = 1280 : i64}
  schedule.host_buffer @input_ids input "input_ids" : tensor<2x4xi64> {offset = 0 : i64}
  schedule.host_buffer @labels input "labels" : tensor<8xi64> {offset = 64 : i64}
  schedule.host_buffer @"prefix#0" activation : tensor<2x4x8xf32> {offset = 128 : i64}
  schedule.host_buffer @"block_0#0" activation : tensor<2x4x8xf32> {offset = 384 : i64}
  schedule.host_buffer @"block_1#0" activation : tensor<2x4x8xf32> {offset = 640 : i64}
  schedule.host_buffer @loss loss : tensor<f32> {offset = 896 : i64}
  schedule.host_buffer @"block_1#0.grad" cotangent : tensor<2x4x8xf32> {offset = 1024 : i64}
  schedule.host_buffer @"prefix#0.grad" cotangent : tensor<2x4x8xf32> {offset = 1280 : i64}

  // Forward stage 0: the prefix and block 0; saves the prefix output for @B1's recomputation.
  // CHECK-NEXT: schedule.stage @F0 forward layers [0, 2) attributes {activation_bytes = 1024 : i64, peak_bytes = 6144 : i64, weight_bytes = 768 : i64, workspace_bytes = 512 : i64} {
  // CHECK-NEXT:   schedule.await_weights
  // CHECK-NEXT:   schedule.micro_batch {
  // CHECK-NEXT:     %[[IDS:.+]] = schedule.upload @input_ids {offset = 0 : i64} : tensor<2x4xi64>
  // CHECK-NEXT:     schedule.prefetch_next
  // CHECK-NEXT:     %[[H0:.+]] = schedule.call @prefix(%[[IDS]]) {offsets = array<i64: 256>} : (tensor<2x4xi64>) -> tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.download %[[H0]] to @"prefix#0" : tensor<2x4x8xf32>
  // CHECK-NEXT:     %[[H1:.+]] = schedule.call @block_0(%[[H0]]) {offsets = array<i64: 512>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.download %[[H1]] to @"block_0#0" : tensor<2x4x8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT: }
  schedule.stage @F0 forward layers [0, 2) attributes {weight_bytes = 768 : i64, activation_bytes = 1024 : i64, workspace_bytes = 512 : i64, peak_bytes = 6144 : i64} {
    schedule.await_weights
    schedule.micro_batch {
      %ids = schedule.upload @input_ids {offset = 0 : i64} : tensor<2x4xi64>
      schedule.prefetch_next
      %h0 = schedule.call @prefix(%ids) {offsets = array<i64: 256>} : (tensor<2x4xi64>) -> tensor<2x4x8xf32>
      schedule.download %h0 to @"prefix#0" : tensor<2x4x8xf32>
      %h1 = schedule.call @block_0(%h0) {offsets = array<i64: 512>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      schedule.download %h1 to @"block_0#0" : tensor<2x4x8xf32>
    }
  }

  // Forward stage 1: block 1, reading block 0's output after @F0 wrote it.
  // CHECK-NEXT: schedule.stage @F1 forward layers [2, 3) {
  // CHECK-NEXT:   schedule.await_weights
  // CHECK-NEXT:   schedule.micro_batch {
  // CHECK-NEXT:     %[[H1:.+]] = schedule.upload @"block_0#0" after @F0 : tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.prefetch_next
  // CHECK-NEXT:     %[[H2:.+]] = schedule.call @block_1(%[[H1]]) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.download %[[H2]] to @"block_1#0" : tensor<2x4x8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT: }
  schedule.stage @F1 forward layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %h1 = schedule.upload @"block_0#0" after @F0 : tensor<2x4x8xf32>
      schedule.prefetch_next
      %h2 = schedule.call @block_1(%h1) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      schedule.download %h2 to @"block_1#0" : tensor<2x4x8xf32>
    }
  }

  // The fused tail: LM head forward, loss and backward in one job.
  // CHECK-NEXT: schedule.stage @B0 fused_tail layers [3, 4) attributes {grad_bytes = 512 : i64, weight_bytes = 512 : i64} {
  // CHECK-NEXT:   schedule.await_weights
  // CHECK-NEXT:   schedule.micro_batch {
  // CHECK-NEXT:     %[[H2:.+]] = schedule.upload @"block_1#0" after @F1 : tensor<2x4x8xf32>
  // CHECK-NEXT:     %[[Y:.+]] = schedule.upload @labels : tensor<8xi64>
  // CHECK-NEXT:     schedule.prefetch_next
  // CHECK-NEXT:     %[[R:.+]]:3 = schedule.call @tail_vjp(%[[H2]], %[[Y]]) : (tensor<2x4x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>)
  // CHECK-NEXT:     schedule.download %[[R]]#0 to @loss : tensor<f32>
  // CHECK-NEXT:     schedule.accumulate %[[R]]#1 into @head : tensor<8x16xf32>
  // CHECK-NEXT:     schedule.download %[[R]]#2 to @"block_1#0.grad" : tensor<2x4x8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT:   schedule.download_grads
  // CHECK-NEXT: }
  schedule.stage @B0 fused_tail layers [3, 4) attributes {weight_bytes = 512 : i64, grad_bytes = 512 : i64} {
    schedule.await_weights
    schedule.micro_batch {
      %h2 = schedule.upload @"block_1#0" after @F1 : tensor<2x4x8xf32>
      %labels = schedule.upload @labels : tensor<8xi64>
      schedule.prefetch_next
      %r:3 = schedule.call @tail_vjp(%h2, %labels) : (tensor<2x4x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.accumulate %r#1 into @head : tensor<8x16xf32>
      schedule.download %r#2 to @"block_1#0.grad" : tensor<2x4x8xf32>
    }
    schedule.download_grads
  }

  // Backward stage [1, 3): recomputes block 0 from the saved prefix output; block 1's
  // param is frozen, so only @w0 accumulates.
  // CHECK-NEXT: schedule.stage @B1 backward layers [1, 3) {
  // CHECK-NEXT:   schedule.await_weights
  // CHECK-NEXT:   schedule.micro_batch {
  // CHECK-NEXT:     %[[H0:.+]] = schedule.upload @"prefix#0" after @F0 : tensor<2x4x8xf32>
  // CHECK-NEXT:     %[[DH2:.+]] = schedule.upload @"block_1#0.grad" after @B0 : tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.prefetch_next
  // CHECK-NEXT:     %[[H1:.+]] = schedule.call @block_0(%[[H0]]) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT:     %[[S:.+]]:2 = schedule.call @block_1_vjp(%[[H1]], %[[DH2]]) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  // CHECK-NEXT:     %[[T:.+]]:3 = schedule.call @block_0_vjp(%[[H0]], %[[S]]#1) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>)
  // CHECK-NEXT:     schedule.accumulate %[[T]]#1 into @w0 : tensor<8x8xf32>
  // CHECK-NEXT:     schedule.download %[[T]]#2 to @"prefix#0.grad" : tensor<2x4x8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT:   schedule.download_grads
  // CHECK-NEXT: }
  schedule.stage @B1 backward layers [1, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %h0 = schedule.upload @"prefix#0" after @F0 : tensor<2x4x8xf32>
      %dh2 = schedule.upload @"block_1#0.grad" after @B0 : tensor<2x4x8xf32>
      schedule.prefetch_next
      %h1 = schedule.call @block_0(%h0) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      %s:2 = schedule.call @block_1_vjp(%h1, %dh2) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
      %t:3 = schedule.call @block_0_vjp(%h0, %s#1) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>)
      schedule.accumulate %t#1 into @w0 : tensor<8x8xf32>
      schedule.download %t#2 to @"prefix#0.grad" : tensor<2x4x8xf32>
    }
    schedule.download_grads
  }

  // Backward stage [0, 1): the prefix, recomputed from the model input.
  // CHECK-NEXT: schedule.stage @B2 backward layers [0, 1) {
  // CHECK-NEXT:   schedule.await_weights
  // CHECK-NEXT:   schedule.micro_batch {
  // CHECK-NEXT:     %[[IDS:.+]] = schedule.upload @input_ids : tensor<2x4xi64>
  // CHECK-NEXT:     %[[DH0:.+]] = schedule.upload @"prefix#0.grad" after @B1 : tensor<2x4x8xf32>
  // CHECK-NEXT:     schedule.prefetch_next
  // CHECK-NEXT:     %[[P:.+]]:2 = schedule.call @prefix_vjp(%[[IDS]], %[[DH0]]) : (tensor<2x4xi64>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>)
  // CHECK-NEXT:     schedule.accumulate %[[P]]#1 into @embed : tensor<16x8xf32>
  // CHECK-NEXT:   }
  // CHECK-NEXT:   schedule.download_grads
  // CHECK-NEXT: }
  schedule.stage @B2 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %ids = schedule.upload @input_ids : tensor<2x4xi64>
      %dh0 = schedule.upload @"prefix#0.grad" after @B1 : tensor<2x4x8xf32>
      schedule.prefetch_next
      %p:2 = schedule.call @prefix_vjp(%ids, %dh0) : (tensor<2x4xi64>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>)
      schedule.accumulate %p#1 into @embed : tensor<16x8xf32>
    }
    schedule.download_grads
  }

  // Optimizer steps in gradient order; each waits for every stage that uploads its layer.
  // CHECK-NEXT: schedule.optimizer_step @tail grads @B0 uploads [@B0]
  // CHECK-NEXT: schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
  // CHECK-NEXT: schedule.optimizer_step @prefix grads @B2 uploads [@F0, @B2]
  // CHECK-NEXT: }
  schedule.optimizer_step @tail grads @B0 uploads [@B0]
  schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
  schedule.optimizer_step @prefix grads @B2 uploads [@F0, @B2]
}

// The plan's five jobs on two devices.
// CHECK-LABEL: schedule.timeline @train gpus 2 iterations 1 ptr 0 {
// CHECK-NEXT:   schedule.device 0 {
// CHECK-NEXT:     schedule.run @F0 iteration 0 job 0 slot 0
// CHECK-NEXT:     schedule.run @B0 iteration 0 job 2 slot 1
// CHECK-NEXT:     schedule.run @B2 iteration 0 job 4 slot 0
// CHECK-NEXT:   }
// CHECK-NEXT:   schedule.device 1 {
// CHECK-NEXT:     schedule.run @F1 iteration 0 job 1 slot 0
// CHECK-NEXT:     schedule.run @B1 iteration 0 job 3 slot 1
// CHECK-NEXT:   }
// CHECK-NEXT: }
schedule.timeline @train gpus 2 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 2 slot 1
    schedule.run @B2 iteration 0 job 4 slot 0
  }
  schedule.device 1 {
    schedule.run @F1 iteration 0 job 1 slot 0
    schedule.run @B1 iteration 0 job 3 slot 1
  }
}

// A bf16 plan in the async mode with layer-grain recomputation (attributes only).
// CHECK-LABEL: schedule.plan @async_bf16 micro_batches 1 gpus 1 update async recompute layer dtype bf16
// CHECK-SAME: optimizer #schedule.adamw<lr = 0.0003, beta1 = 0.0, beta2 = 0.95, eps = 1.0e-06, weight_decay = 0.0, grad_clip = 0.0>
schedule.plan @async_bf16 micro_batches 1 gpus 1 update async recompute layer dtype bf16
    optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.0, beta2 = 0.95, eps = 1.0e-6, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @only forward @tail backward @tail_vjp params [@head]
  schedule.host_buffer @h input "h" : tensor<2x4x8xf32>
  schedule.host_buffer @labels input "labels" : tensor<8xi64>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<2x4x8xf32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h : tensor<2x4x8xf32>
      %labels = schedule.upload @labels : tensor<8xi64>
      schedule.prefetch_next
      %r:3 = schedule.call @tail_vjp(%h, %labels) : (tensor<2x4x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.accumulate %r#1 into @head : tensor<8x16xf32>
      schedule.download %r#2 to @dh : tensor<2x4x8xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @only grads @B0 uploads [@B0]
}
