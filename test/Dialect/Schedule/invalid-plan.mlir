// The verifier messages of schedule.plan: its attributes (dispatch, dtype, optimizer) and what its body holds, in which order, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// Jobs are dispatched round-robin; no other policy exists.
// expected-error @+1 {{'schedule.plan' op dispatch policy 'greedy' is not supported: expected 'round_robin'}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> attributes {dispatch = "greedy"} {
}

// -----

// The compute dtype is a float type the kernels support.
// expected-error @+1 {{'schedule.plan' op expected compute dtype f32, f16 or bf16, got 'f64'}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f64
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
}

// -----

// The learning rate is positive.
// expected-error @+1 {{'schedule.plan' op expected optimizer lr > 0, got 0.0}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
}

// -----

// beta1 is in [0, 1).
// expected-error @+1 {{'schedule.plan' op expected optimizer 0 <= beta1 < 1, got 1.0}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 1.0, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
}

// -----

// beta2 is in [0, 1).
// expected-error @+1 {{'schedule.plan' op expected optimizer 0 <= beta2 < 1, got -0.5}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = -0.5, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
}

// -----

// eps is positive.
// expected-error @+1 {{'schedule.plan' op expected optimizer eps > 0, got 0.0}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 0.0, weight_decay = 0.0, grad_clip = 0.0> {
}

// -----

// Weight decay is not negative.
// expected-error @+1 {{'schedule.plan' op expected optimizer weight_decay >= 0, got -0.01}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = -1.0e-2, grad_clip = 0.0> {
}

// -----

// The gradient clip is not negative (0 turns clipping off).
// expected-error @+1 {{'schedule.plan' op expected optimizer grad_clip >= 0, got -1.0}}
schedule.plan @p micro_batches 3 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = -1.0> {
}

// -----

// A plan body holds schedule declarations only.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  // expected-error @+1 {{'graph.constant' op is not allowed in plan @p: a plan body holds schedule.layer, schedule.host_buffer, schedule.stage and schedule.optimizer_step ops}}
  %c = graph.constant dense<0.0> : tensor<4xf32>
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Host buffers come before stages.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.host_buffer' op @loss must come before 'schedule.stage' @B0: a plan body holds layers, then host buffers, then stages, then optimizer steps}}
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Stages come before optimizer steps.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @la forward @a backward @a_vjp params [@w0]
  schedule.layer @lb forward @b backward @b_vjp params [@w1]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      schedule.prefetch_next
      %r:3 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w1 : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.download %r#2 to @dh : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  // expected-error @+1 {{'schedule.stage' op @B1 must come before 'schedule.optimizer_step' of layer @lb: a plan body holds layers, then host buffers, then stages, then optimizer steps}}
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// A plan has at least one layer.
// expected-error @+1 {{'schedule.plan' op has no schedule.layer: expected at least one layer}}
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
}
