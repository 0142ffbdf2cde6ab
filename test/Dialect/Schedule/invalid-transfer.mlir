// The verifier messages of transfers: schedule.upload and schedule.download, their buffers and the stages they wait for, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A micro-batch writes a host buffer once.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
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
      // expected-error @+1 {{'schedule.download' op downloads to @loss a second time in the micro-batch body of fused_tail stage @B0}}
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Downloads write host buffers of the plan.
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
      // expected-error @+1 {{'schedule.download' op downloads to @lost, which is not a host buffer of plan @p}}
      schedule.download %r#0 to @lost : tensor<f32>
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

// No stage writes a model input.
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
      // expected-error @+1 {{'schedule.download' op downloads to input buffer @x: model inputs and loss seeds are written by the trainer, not by a stage}}
      schedule.download %h to @x : tensor<4xf32>
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

// A download has its buffer's type.
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
      // expected-error @+1 {{'schedule.download' op downloads a 'tensor<4xf32>' to @loss of type 'tensor<f32>'}}
      schedule.download %r#1 to @loss : tensor<4xf32>
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

// Uploads read host buffers of the plan.
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
      // expected-error @+1 {{'schedule.upload' op uploads @hh, which is not a host buffer of plan @p}}
      %h = schedule.upload @hh after @F0 : tensor<4xf32>
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

// An upload has its buffer's type.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf16>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
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
      // expected-error @+1 {{'schedule.upload' op yields a 'tensor<4xf16>' from @h of type 'tensor<4xf32>'}}
      %h = schedule.upload @h after @F0 : tensor<4xf16>
      schedule.prefetch_next
      %r:3 = schedule.call @b_vjp(%h) : (tensor<4xf16>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
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

// Model inputs have no producer stage to wait for.
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
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      // expected-error @+1 {{'schedule.upload' op uploads input buffer @x after @F0, but no stage writes it (the trainer does): expected no 'after'}}
      %x = schedule.upload @x after @F0 : tensor<4xf32>
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

// An upload of a written buffer names its writer.
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
      // expected-error @+1 {{'schedule.upload' op uploads @h without 'after': expected 'after @F0', the stage that downloads it}}
      %h = schedule.upload @h : tensor<4xf32>
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

// 'after' names a stage.
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
      // expected-error @+1 {{'schedule.upload' op waits for @la, which is not a stage of plan @p}}
      %h = schedule.upload @h after @la : tensor<4xf32>
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

// 'after' names the stage that writes the buffer.
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
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      // expected-error @+1 {{'schedule.upload' op waits for @F0, but @dh is downloaded by fused_tail stage @B0}}
      %dh = schedule.upload @dh after @F0 : tensor<4xf32>
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

// A buffer is read only by stages dispatched after its writer.
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
      // expected-error @+1 {{'schedule.upload' op in forward stage @F0 waits for fused_tail stage @B0, which is not dispatched before it}}
      %d = schedule.upload @dh after @B0 : tensor<4xf32>
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

// Only the fused tail reads the loss seed.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>, tensor<f32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @la forward @a backward @a_vjp params [@w0]
  schedule.layer @lb forward @b backward @b_vjp params [@w1]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @seed loss_seed : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      // expected-error @+1 {{'schedule.upload' op uploads loss_seed buffer @seed in a forward stage: only the fused tail's backward reads the loss seed}}
      %s = schedule.upload @seed : tensor<f32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      %s = schedule.upload @seed : tensor<f32>
      schedule.prefetch_next
      %r:3 = schedule.call @b_vjp(%h, %s) : (tensor<4xf32>, tensor<f32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
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
