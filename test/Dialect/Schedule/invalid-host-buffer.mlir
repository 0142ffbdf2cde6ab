// The verifier messages of schedule.host_buffer: kinds, names, types and writers, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// An input buffer names its model input.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  // expected-error @+1 {{'schedule.host_buffer' op input buffer @x needs the name of the model input it holds}}
  schedule.host_buffer @x input : tensor<4xf32>
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

// The model input's name is not empty.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  // expected-error @+1 {{'schedule.host_buffer' op input buffer @x has an empty model input name}}
  schedule.host_buffer @x input "" : tensor<4xf32>
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

// Only input buffers name a model input.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.host_buffer' op loss buffer @loss has a model input name ("loss"), but only input buffers name one}}
  schedule.host_buffer @loss loss "loss" : tensor<f32>
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

// The loss of a micro-batch is an f32 scalar.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.host_buffer' op loss buffer @loss must hold a tensor<f32>, got 'tensor<bf16>'}}
  schedule.host_buffer @loss loss : tensor<bf16>
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

// A loss seed is an f32 scalar, as the loss is.
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.host_buffer' op loss_seed buffer @seed must hold a tensor<f32>, got 'tensor<2xf32>'}}
  schedule.host_buffer @seed loss_seed : tensor<2xf32>
}

// -----

// Every non-input buffer has a writer.
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
  // expected-error @+1 {{'schedule.host_buffer' op activation buffer @unused is never downloaded: expected exactly one stage to write it}}
  schedule.host_buffer @unused activation : tensor<4xf32>
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
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// Every non-input buffer has one writer.
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
  // expected-error @+1 {{'schedule.host_buffer' op activation buffer @h is downloaded by forward stage @F0 and fused_tail stage @B0: expected exactly one stage to write it}}
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
      schedule.download %r#2 to @h : tensor<4xf32>
    }
    schedule.download_grads
  }
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
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}
