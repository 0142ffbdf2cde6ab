// The verifier messages of schedule.layer: its params and its functions, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A layer's params are flat symbol references.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op param #0 is @w::@v, expected a flat symbol reference to a graph.param}}
  schedule.layer @l forward @f backward @f_vjp params [@w::@v]
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

// A layer lists each param once.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op lists param @w twice (#0 and #1)}}
  schedule.layer @l forward @f backward @f_vjp params [@w, @w]
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

// The saving forward is a func.func of the module.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_bwd(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op saving function @f_fwd of layer @l is not a func.func in the module}}
  schedule.layer @l forward @f saving @f_fwd backward @f_bwd params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @f_bwd(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// The forward function is a func.func of the module.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op forward function @g of layer @l is not a func.func in the module}}
  schedule.layer @l forward @g backward @f_vjp params [@w]
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

// The backward function is a func.func of the module, not another symbol.
graph.param @w : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op backward function @w of layer @l0 is not a func.func in the module}}
  schedule.layer @l0 forward @f backward @w params []
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

// -----

// A layer's params are graph.params.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  // expected-error @+1 {{'schedule.layer' op param @f of layer @l0 is not a graph.param in the module}}
  schedule.layer @l0 forward @f backward @f params [@f]
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
