// The verifier messages of schedule.stage: layer ranges and dispatch order, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A stage holds at least one layer.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 has layers [1, 1): expected begin < end}}
  schedule.stage @B0 fused_tail layers [1, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// A stage's layers exist.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 has layers [0, 2), but plan @p has 1 layers}}
  schedule.stage @B0 fused_tail layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Forward stages are dispatched before the fused tail.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.stage' op forward stage @F0 comes after fused_tail stage @B0: stages are dispatched forward, then the fused tail, then backward}}
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// A plan has one fused tail.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B1 is a second fused tail (the first is @B0): expected exactly one}}
  schedule.stage @B1 fused_tail layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// A plan has a fused tail.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
// expected-error @+1 {{'schedule.plan' op has no fused_tail stage: expected exactly one}}
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 backward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Forward stages start at layer 0.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.stage' op forward stage @F0 starts at layer 1, expected 0 (the first forward stage starts at layer 0)}}
  schedule.stage @F0 forward layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 fused_tail layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Forward stages are contiguous.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.layer @l3 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  // expected-error @+1 {{'schedule.stage' op forward stage @F1 starts at layer 2, expected 1 (where the previous forward stage ended)}}
  schedule.stage @F1 forward layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 fused_tail layers [3, 4) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// The fused tail follows the last forward stage.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 starts at layer 1, expected 2 (where the last forward stage ended)}}
  schedule.stage @B0 fused_tail layers [1, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Without forward stages the fused tail starts at layer 0.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 starts at layer 1, expected 0 (there is no forward stage)}}
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// The fused tail holds the last layer.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 ends at layer 2, expected 3 (the number of layers)}}
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// The first backward stage ends where the fused tail begins.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 fused_tail layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.stage' op backward stage @B1 ends at layer 1, expected 2 (where the fused tail begins)}}
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Backward stages are contiguous.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.layer @l3 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 fused_tail layers [3, 4) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.stage' op backward stage @B2 ends at layer 1, expected 2 (where the previous backward stage begins)}}
  schedule.stage @B2 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Backward stages cover the layers before the fused tail.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  // expected-error @+1 {{'schedule.stage' op fused_tail stage @B0 begins at layer 1, but no backward stage covers layers [0, 1)}}
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Backward stages descend to layer 0.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
schedule.plan @p micro_batches 2 gpus 1 update sync recompute stage dtype f32 optimizer #opt {
  schedule.layer @l0 forward @f backward @f params []
  schedule.layer @l1 forward @f backward @f params []
  schedule.layer @l2 forward @f backward @f params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
  }
  schedule.stage @B0 fused_tail layers [2, 3) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
  // expected-error @+1 {{'schedule.stage' op the last backward stage @B1 begins at layer 1, expected 0 (backward stages descend to layer 0)}}
  schedule.stage @B1 backward layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}
