// The verifier messages of schedule.optimizer_step: one per layer with trainable params, and what it waits for, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// An optimizer step updates a layer of the plan.
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
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.optimizer_step' op updates @B0, which is not a layer of plan @p}}
  schedule.optimizer_step @B0 grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// Layers without trainable params have no optimizer step.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 : tensor<4xf32>
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
  // expected-error @+1 {{'schedule.optimizer_step' op updates layer @lb, which owns no trainable param (a shared param is updated by its lowest reader)}}
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// One optimizer step per layer.
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
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
  // expected-error @+1 {{'schedule.optimizer_step' op is a second optimizer step of layer @la: expected exactly one}}
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B1]
}

// -----

// The step waits for the gradients of the backward stage holding the layer.
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
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  // expected-error @+1 {{'schedule.optimizer_step' op of layer @la waits for the gradients of @B0, expected @B1 (the backward stage holding layer 0)}}
  schedule.optimizer_step @la grads @B0 uploads [@F0, @B1]
}

// -----

// The step waits for every upload of the layer, in dispatch order.
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
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
  // expected-error @+1 {{'schedule.optimizer_step' op of layer @la waits for the uploads of [@B1, @F0], expected [@F0, @B1] (the stages holding layer 0 or a reader of a shared param it owns, in dispatch order)}}
  schedule.optimizer_step @la grads @B1 uploads [@B1, @F0]
}

// -----

// Every layer with trainable params has an optimizer step.
graph.param @w0 trainable : tensor<4xf32>
graph.param @w1 trainable : tensor<4xf32>
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @a_vjp(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func private @b(tensor<4xf32>) -> tensor<f32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op layer @la owns trainable params but has no schedule.optimizer_step}}
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
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @a_vjp(%x, %dh) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w0 : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @lb grads @B0 uploads [@B0]
}

// -----

// The owner of a shared param waits for the other readers' gradients.
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
      schedule.accumulate %r#1 into @w0 of @lb : tensor<4xf32>
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
  // expected-error @+1 {{'schedule.optimizer_step' op of layer @la waits for the shared gradients of [], expected [@B0] (the other backward stages holding a reader of a shared param it owns, in dispatch order)}}
  schedule.optimizer_step @la grads @B1 uploads [@F0, @B0, @B1]
}

// -----

// ... and for every stage uploading a copy before it writes the copies.
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
      schedule.accumulate %r#1 into @w0 of @lb : tensor<4xf32>
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
  // expected-error @+1 {{'schedule.optimizer_step' op of layer @la waits for the uploads of [@F0, @B1], expected [@F0, @B0, @B1] (the stages holding layer 0 or a reader of a shared param it owns, in dispatch order)}}
  schedule.optimizer_step @la grads @B1 shared_grads [@B0] uploads [@F0, @B1]
}
