// The verifier messages of a stage's job body: await_weights, one micro_batch with one prefetch_next, download_grads, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A job first waits for its weights.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 must begin with 'schedule.await_weights', found 'schedule.micro_batch'}}
  schedule.stage @B0 fused_tail layers [0, 1) {
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

// A job has one micro_batch body.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 must have one 'schedule.micro_batch' after 'schedule.await_weights', found 'schedule.download_grads'}}
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.download_grads
  }
}

// -----

// A stage with a backward downloads its gradients at the end.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 must end with 'schedule.download_grads' after its 'schedule.micro_batch', found the end of the body}}
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// A forward stage has no gradients to download.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    // expected-error @+1 {{'schedule.download_grads' op in forward stage @F0: a forward stage has no gradients to download}}
    schedule.download_grads
  }
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

// Nothing follows the job's last op.
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
    }
    schedule.download_grads
    // expected-error @+1 {{'schedule.await_weights' op is not allowed in fused_tail stage @B0: a stage body is 'schedule.await_weights', 'schedule.micro_batch' and, with a backward, 'schedule.download_grads'}}
    schedule.await_weights
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// One prefetch chunk per micro-batch.
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
      // expected-error @+1 {{'schedule.prefetch_next' op is a second 'schedule.prefetch_next' in the micro-batch body of fused_tail stage @B0: expected exactly one}}
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

// The prefetch chunk is issued behind an activation upload.
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
      // expected-error @+1 {{'schedule.prefetch_next' op in fused_tail stage @B0 must follow a 'schedule.upload' (the weight chunk is issued behind a pending activation upload)}}
      schedule.prefetch_next
      %x = schedule.upload @x : tensor<4xf32>
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// Every micro-batch issues a prefetch chunk.
graph.param @w trainable : tensor<4xf32>
func.func private @f(tensor<4xf32>) -> tensor<f32>
func.func private @f_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l forward @f backward @f_vjp params [@w]
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @B0 fused_tail layers [0, 1) {
    schedule.await_weights
    // expected-error @+1 {{'schedule.micro_batch' op of fused_tail stage @B0 has no 'schedule.prefetch_next': expected exactly one}}
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}

// -----

// A micro-batch body holds transfers and calls only.
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
      // expected-error @+1 {{'graph.constant' op is not allowed in the micro-batch body of fused_tail stage @B0: expected schedule.upload, call, accumulate, download and prefetch_next ops}}
      %c = graph.constant dense<0.0> : tensor<4xf32>
      %r:2 = schedule.call @f_vjp(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.accumulate %r#1 into @w : tensor<4xf32>
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.optimizer_step @l grads @B0 uploads [@B0]
}
