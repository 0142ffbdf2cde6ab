// The verifier messages of schedule.timeline: devices, runs, the round-robin order and the weight slots, one case each.
// Each case's plan names #opt, the optimizer of Inputs/optimizer.mlir, which the RUN
// line puts at the top of every case.
// RUN: sed '/^\/\/ -----$/r %S/Inputs/optimizer.mlir' %S/Inputs/optimizer.mlir %s \
// RUN:   | rp-opt -split-input-file -verify-diagnostics

// A timeline names a plan of the module.
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
// expected-error @+1 {{'schedule.timeline' op names @l0, which is not a schedule.plan in the module}}
schedule.timeline @l0 gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
  }
}

// -----

// A timeline holds devices.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  // expected-error @+1 {{'graph.constant' op is not allowed in a timeline: expected schedule.device ops}}
  %c = graph.constant dense<0.0> : tensor<4xf32>
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
  }
}

// -----

// Device indices are below gpus.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
  }
  // expected-error @+1 {{'schedule.device' op has index 1, but the timeline has gpus = 1}}
  schedule.device 1 {
  }
}

// -----

// Devices are listed in order.
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
schedule.timeline @p gpus 2 iterations 1 ptr 0 {
  // expected-error @+1 {{'schedule.device' op has index 1, expected 0 (devices are listed 0 .. gpus-1 in order, each once)}}
  schedule.device 1 {
    schedule.run @B0 iteration 0 job 1 slot 0
  }
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
  }
}

// -----

// A device holds runs.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    // expected-error @+1 {{'graph.constant' op is not allowed in device 0: expected schedule.run ops}}
    %c = graph.constant dense<0.0> : tensor<4xf32>
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
  }
}

// -----

// A run names a stage of the plan.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    // expected-error @+1 {{'schedule.run' op names @l1, which is not a stage of plan @p}}
    schedule.run @l1 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
  }
}

// -----

// Jobs are numbered below iterations * stages.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
    // expected-error @+1 {{'schedule.run' op has job 3, but 1 iterations of 3 stages run jobs 0 .. 2}}
    schedule.run @F0 iteration 1 job 3 slot 1
  }
}

// -----

// Job j is stage j mod S of iteration j / S.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    // expected-error @+1 {{'schedule.run' op job 1 is stage @B0 of iteration 0, got @B1 of iteration 0}}
    schedule.run @B1 iteration 0 job 1 slot 1
    schedule.run @B0 iteration 0 job 2 slot 0
  }
}

// -----

// The iteration of a job follows from its number.
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
schedule.timeline @p gpus 1 iterations 2 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B0 iteration 0 job 1 slot 1
    schedule.run @B1 iteration 0 job 2 slot 0
    // expected-error @+1 {{'schedule.run' op job 3 is stage @F0 of iteration 1, got @F0 of iteration 0}}
    schedule.run @F0 iteration 0 job 3 slot 1
    schedule.run @B0 iteration 1 job 4 slot 0
    schedule.run @B1 iteration 1 job 5 slot 1
  }
}

// -----

// Job j runs on device (ptr + j) mod gpus.
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
schedule.timeline @p gpus 2 iterations 1 ptr 1 {
  schedule.device 0 {
    // expected-error @+1 {{'schedule.run' op job 0 runs on device (ptr + job) mod gpus = 1, not on device 0}}
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
  }
  schedule.device 1 {
    schedule.run @B0 iteration 0 job 1 slot 0
  }
}

// -----

// Each job runs once.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    // expected-error @+1 {{'schedule.run' op job 0 appears twice}}
    schedule.run @F0 iteration 0 job 0 slot 1
    schedule.run @B0 iteration 0 job 1 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
  }
}

// -----

// A device runs its jobs in ascending order.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
    // expected-error @+1 {{'schedule.run' op job 1 follows job 2 on device 0: jobs ascend on each device}}
    schedule.run @B0 iteration 0 job 1 slot 0
  }
}

// -----

// A device alternates its two weight slots.
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
schedule.timeline @p gpus 1 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    // expected-error @+1 {{'schedule.run' op job 1 is job #1 of device 0 and uses slot 0, expected slot 1 (a device alternates its two weight slots)}}
    schedule.run @B0 iteration 0 job 1 slot 0
    schedule.run @B1 iteration 0 job 2 slot 0
  }
}

// -----

// Every device of the pool is listed.
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
// expected-error @+1 {{'schedule.timeline' op lists 1 devices, expected gpus = 2}}
schedule.timeline @p gpus 2 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
  }
}

// -----

// Every job is listed.
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
// expected-error @+1 {{'schedule.timeline' op is missing job 1 (stage @B0 of iteration 0) on device 1}}
schedule.timeline @p gpus 2 iterations 1 ptr 0 {
  schedule.device 0 {
    schedule.run @F0 iteration 0 job 0 slot 0
    schedule.run @B1 iteration 0 job 2 slot 1
  }
  schedule.device 1 {
  }
}
