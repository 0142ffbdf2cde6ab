// rp-materialize-timeline expands a plan's round-robin dispatch: job j = i * S + k (iteration
// i, stage k of S = 5) runs on device (ptr + j) mod N, each device alternating weight slots.
// RUN: rp-opt %s --rp-materialize-timeline | FileCheck %s --check-prefix=N1
// RUN: rp-opt %s --rp-materialize-timeline="gpus=2" | FileCheck %s --check-prefix=N2
// RUN: rp-opt %s --rp-materialize-timeline="gpus=3 iterations=2" | FileCheck %s --check-prefix=N3
// RUN: rp-opt %s --rp-materialize-timeline="gpus=2 ptr=1" | FileCheck %s --check-prefix=PTR
// RUN: rp-opt %s --rp-materialize-timeline="gpus=2" --rp-materialize-timeline="gpus=3" | FileCheck %s --check-prefix=REPLACE
// RUN: not rp-opt %s --rp-materialize-timeline="gpus=0" 2>&1 | FileCheck %s --check-prefix=GPUS
// RUN: not rp-opt %s --rp-materialize-timeline="iterations=0" 2>&1 | FileCheck %s --check-prefix=ITERATIONS
// RUN: not rp-opt %s --rp-materialize-timeline="ptr=-1" 2>&1 | FileCheck %s --check-prefix=NEGPTR
// RUN: echo "module {}" | not rp-opt --rp-materialize-timeline 2>&1 | FileCheck %s --check-prefix=NOPLAN

// One device runs every job, alternating slots.
// N1-LABEL: schedule.timeline @train gpus 1 iterations 1 ptr 0 {
// N1-NEXT:    schedule.device 0 {
// N1-NEXT:      schedule.run @F0 iteration 0 job 0 slot 0
// N1-NEXT:      schedule.run @F1 iteration 0 job 1 slot 1
// N1-NEXT:      schedule.run @B0 iteration 0 job 2 slot 0
// N1-NEXT:      schedule.run @B1 iteration 0 job 3 slot 1
// N1-NEXT:      schedule.run @B2 iteration 0 job 4 slot 0
// N1-NEXT:    }
// N1-NEXT:  }

// Two devices: even jobs on device 0, odd jobs on device 1.
// N2-LABEL: schedule.timeline @train gpus 2 iterations 1 ptr 0 {
// N2-NEXT:    schedule.device 0 {
// N2-NEXT:      schedule.run @F0 iteration 0 job 0 slot 0
// N2-NEXT:      schedule.run @B0 iteration 0 job 2 slot 1
// N2-NEXT:      schedule.run @B2 iteration 0 job 4 slot 0
// N2-NEXT:    }
// N2-NEXT:    schedule.device 1 {
// N2-NEXT:      schedule.run @F1 iteration 0 job 1 slot 0
// N2-NEXT:      schedule.run @B1 iteration 0 job 3 slot 1
// N2-NEXT:    }
// N2-NEXT:  }

// Three devices, two iterations: the counter carries over, so iteration 1 starts (@F0, job
// 5) on device 2, not device 0, and no device waits for a flush.
// N3-LABEL: schedule.timeline @train gpus 3 iterations 2 ptr 0 {
// N3-NEXT:    schedule.device 0 {
// N3-NEXT:      schedule.run @F0 iteration 0 job 0 slot 0
// N3-NEXT:      schedule.run @B1 iteration 0 job 3 slot 1
// N3-NEXT:      schedule.run @F1 iteration 1 job 6 slot 0
// N3-NEXT:      schedule.run @B2 iteration 1 job 9 slot 1
// N3-NEXT:    }
// N3-NEXT:    schedule.device 1 {
// N3-NEXT:      schedule.run @F1 iteration 0 job 1 slot 0
// N3-NEXT:      schedule.run @B2 iteration 0 job 4 slot 1
// N3-NEXT:      schedule.run @B0 iteration 1 job 7 slot 0
// N3-NEXT:    }
// N3-NEXT:    schedule.device 2 {
// N3-NEXT:      schedule.run @B0 iteration 0 job 2 slot 0
// N3-NEXT:      schedule.run @F0 iteration 1 job 5 slot 1
// N3-NEXT:      schedule.run @B1 iteration 1 job 8 slot 0
// N3-NEXT:    }
// N3-NEXT:  }

// A counter carried in from an earlier run (ptr = 1) starts on device 1.
// PTR-LABEL: schedule.timeline @train gpus 2 iterations 1 ptr 1 {
// PTR-NEXT:    schedule.device 0 {
// PTR-NEXT:      schedule.run @F1 iteration 0 job 1 slot 0
// PTR-NEXT:      schedule.run @B1 iteration 0 job 3 slot 1
// PTR-NEXT:    }
// PTR-NEXT:    schedule.device 1 {
// PTR-NEXT:      schedule.run @F0 iteration 0 job 0 slot 0
// PTR-NEXT:      schedule.run @B0 iteration 0 job 2 slot 1
// PTR-NEXT:      schedule.run @B2 iteration 0 job 4 slot 0
// PTR-NEXT:    }
// PTR-NEXT:  }

// A second run replaces the plan's timeline.
// REPLACE-NOT: schedule.timeline @train gpus 2
// REPLACE:     schedule.timeline @train gpus 3 iterations 1 ptr 0 {
// REPLACE-NOT: schedule.timeline

// GPUS: error: rp-materialize-timeline: gpus must be at least 1, got 0
// ITERATIONS: error: rp-materialize-timeline: iterations must be at least 1, got 0
// NEGPTR: error: rp-materialize-timeline: ptr must be at least 0, got -1
// NOPLAN: error: rp-materialize-timeline: the module has no schedule.plan

// The plan of test/Dialect/Schedule/ops.mlir: forward [0, 2) [2, 3), the fused tail [3, 4),
// backward [1, 3) [0, 1).
graph.param @embed trainable : tensor<16x8xf32>
graph.param @w0 trainable : tensor<8x8xf32>
graph.param @w1 : tensor<8x8xf32>
graph.param @head trainable : tensor<8x16xf32>
func.func private @prefix(tensor<2x4xi64>) -> tensor<2x4x8xf32>
func.func private @prefix_vjp(tensor<2x4xi64>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>)
func.func private @block_0(tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
func.func private @block_0_vjp(tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>)
func.func private @block_1(tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
func.func private @block_1_vjp(tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
func.func private @tail(tensor<2x4x8xf32>, tensor<8xi64>) -> tensor<f32>
func.func private @tail_vjp(tensor<2x4x8xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>, tensor<2x4x8xf32>)
schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed]
  schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@w0]
  schedule.layer @block_1 forward @block_1 backward @block_1_vjp params [@w1]
  schedule.layer @tail forward @tail backward @tail_vjp params [@head]
  schedule.host_buffer @input_ids input "input_ids" : tensor<2x4xi64>
  schedule.host_buffer @labels input "labels" : tensor<8xi64>
  schedule.host_buffer @"prefix#0" activation : tensor<2x4x8xf32>
  schedule.host_buffer @"block_0#0" activation : tensor<2x4x8xf32>
  schedule.host_buffer @"block_1#0" activation : tensor<2x4x8xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @"block_1#0.grad" cotangent : tensor<2x4x8xf32>
  schedule.host_buffer @"prefix#0.grad" cotangent : tensor<2x4x8xf32>
  schedule.stage @F0 forward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %ids = schedule.upload @input_ids : tensor<2x4xi64>
      schedule.prefetch_next
      %h0 = schedule.call @prefix(%ids) : (tensor<2x4xi64>) -> tensor<2x4x8xf32>
      schedule.download %h0 to @"prefix#0" : tensor<2x4x8xf32>
      %h1 = schedule.call @block_0(%h0) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      schedule.download %h1 to @"block_0#0" : tensor<2x4x8xf32>
    }
  }
  schedule.stage @F1 forward layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %h1 = schedule.upload @"block_0#0" after @F0 : tensor<2x4x8xf32>
      schedule.prefetch_next
      %h2 = schedule.call @block_1(%h1) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
      schedule.download %h2 to @"block_1#0" : tensor<2x4x8xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [3, 4) {
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
  schedule.optimizer_step @tail grads @B0 uploads [@B0]
  schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
  schedule.optimizer_step @prefix grads @B2 uploads [@F0, @B2]
}
