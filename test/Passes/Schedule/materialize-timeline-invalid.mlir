// rp-materialize-timeline expands exactly one plan: a module without a plan, or with two,
// is an error.
// RUN: not rp-opt %s -split-input-file --rp-materialize-timeline 2>&1 | FileCheck %s

// CHECK: error: rp-materialize-timeline: the module has no schedule.plan
graph.param @w trainable : tensor<4xf32>

// -----

// CHECK: error: rp-materialize-timeline: expected one schedule.plan, found 2 (@first, @second)
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @first micro_batches 1 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @l forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}
schedule.plan @second micro_batches 1 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @l forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}
