// The verifier messages of the compute of a micro-batch body: schedule.call and schedule.accumulate, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A forward stage does not call a layer's saving forward (backward-kind stages do).
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_fwd(tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @a_bwd(tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @la forward @a saving @a_fwd backward @a_bwd params [@w0]
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
      // expected-error @+1 {{'schedule.call' op calls @a_fwd, the saving or backward function of layer @la, but forward stage @F0 calls only forward functions}}
      %h:2 = schedule.call @a_fwd(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.download %h#0 to @h : tensor<4xf32>
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
      %s:2 = schedule.call @a_fwd(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      %r:2 = schedule.call @a_bwd(%x, %s#1, %dh) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// A stage calls only its own layers' functions.
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
      // expected-error @+1 {{'schedule.call' op calls @b_vjp, which is not the forward, saving or backward function of a layer of forward stage @F0 (layers [0, 1))}}
      %h:3 = schedule.call @b_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      schedule.download %h#1 to @h : tensor<4xf32>
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

// A forward stage calls only forward functions.
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
      // expected-error @+1 {{'schedule.call' op calls @a_vjp, the saving or backward function of layer @la, but forward stage @F0 calls only forward functions}}
      %h:2 = schedule.call @a_vjp(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.download %h#0 to @h : tensor<4xf32>
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

// A call has its callee's type.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf16>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      // expected-error @+1 {{'schedule.call' op has type '(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)', but callee @f_vjp has type '(tensor<4xf32>) -> (tensor<f32>, tensor<4xf16>)'}}
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Forward stages compute no gradients.
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
      // expected-error @+1 {{'schedule.accumulate' op in forward stage @F0: only fused_tail and backward stages accumulate gradients}}
      schedule.accumulate %h into @w0 : tensor<4xf32>
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

// A stage accumulates only its own layers' params.
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
      // expected-error @+1 {{'schedule.accumulate' op accumulates into @w0, which is not a param of a layer of fused_tail stage @B0 (layers [1, 2))}}
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
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

// The accumulated value has the param's shape.
graph.param @w trainable : tensor<2x2xf32>
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
      // expected-error @+1 {{'schedule.accumulate' op accumulates a 'tensor<4xf32>' into @w of type 'tensor<2x2xf32>': the shapes differ}}
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Frozen params have no gradient accumulator.
graph.param @w : tensor<4xf32>
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
      // expected-error @+1 {{'schedule.accumulate' op accumulates into frozen param @w: only trainable params have gradient accumulators}}
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// A param read by two layers of one stage needs `of`: here @w0 is read by @lb only in B0,
// so naming the wrong layer is refused.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @la forward @a backward @a_vjp params [@w0]
  schedule.layer @lb forward @b backward @b_vjp params [@w0, @w1]
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
      %r:4 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      // expected-error @+1 {{'schedule.accumulate' op accumulates into @w0 of @la, which is not a layer of fused_tail stage @B0 reading it}}
      schedule.accumulate %r#1 into @w0 of @la : tensor<4xf32>
      schedule.accumulate %r#2 into @w1 : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.download %r#3 to @dh : tensor<4xf32>
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
      schedule.accumulate %r#1 into @w0 of @la : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 shared_grads [@B0] uploads [@F0, @B0, @B1]
}

// -----

// Two layers of one stage read @w0: each has its own accumulator, so `of` must name the layer.
graph.param @w0 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @la forward @a backward @a_vjp params [@w0]
  schedule.layer @lb forward @b backward @b_vjp params [@w0]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @B0 fused_tail layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %r:3 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      // expected-error @+1 {{'schedule.accumulate' op accumulates into @w0, which 2 layers of fused_tail stage @B0 read: name the layer (`of @layer`)}}
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
      %g:2 = schedule.call @a_vjp(%x, %r#2) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %g#1 into @w0 of @la : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @la grads @B0 uploads [@B0]
}
