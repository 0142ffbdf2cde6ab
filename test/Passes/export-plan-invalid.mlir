// rp-export-plan: what the exporter cannot express is an error at the offending op: a module
// that is not memory-planned (no arenas, workspace sizes, offsets), an intermediate or a
// constant outside its region, two constants at one offset, an op that is not a graph op, a
// param read outside its layer, a function shared by two layers.
// RUN: rp-opt %s --split-input-file --verify-diagnostics --rp-export-plan="output=- text=true" -o /dev/null

// A module without a plan.
// expected-error @+1 {{expected one schedule.plan in the module, found 0}}
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A plan before rp-plan-memory: no arenas.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  // expected-error @+1 {{'schedule.plan' has no 'device_arena'; run rp-plan-memory first}}
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A layer function without its workspace size.
module {
  graph.param @w trainable : tensor<4xf32>
  // expected-error @+1 {{layer function @f has no 'schedule.workspace_bytes'; run rp-plan-memory first}}
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// An intermediate without a workspace offset.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-error @+1 {{'graph.mul' has no 'schedule.offsets'; run rp-plan-memory first}}
    %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// An intermediate that does not fit the workspace.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-error @+1 {{result #0 (16 bytes) has workspace offset 248; expected an offset in [0, 256 - size] (the function's workspace)}}
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 248>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A constant without a constants offset.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-error @+1 {{'graph.constant' has no 'schedule.offset'; run rp-plan-memory first}}
    %c = graph.constant dense<2.0> : tensor<4xf32>
    %y = graph.mul %c, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// Two different constants at one offset.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-note @+1 {{the other constant}}
    %c = graph.constant {schedule.offset = 0 : i64} dense<2.0> : tensor<4xf32>
    // expected-error @+1 {{constant at constants offset 0 differs from the constant already placed there}}
    %d = graph.constant {schedule.offset = 0 : i64} dense<3.0> : tensor<4xf32>
    %e = graph.mul %c, %d {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %y = graph.mul %e, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A constant past the constants region.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-error @+1 {{constant of 16 bytes at offset 256 does not fit the device constants region (256 bytes)}}
    %c = graph.constant {schedule.offset = 256 : i64} dense<2.0> : tensor<4xf32>
    %y = graph.mul %c, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// An op of another dialect in a layer function.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    // expected-error @+1 {{'arith.constant' cannot be exported: a layer function holds graph ops only}}
    %c = arith.constant {schedule.offsets = array<i64: 0>} dense<2.0> : tensor<4xf32>
    %y = graph.mul %c, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A function reading a param its layer does not list.
module {
  graph.param @w trainable : tensor<4xf32>
  graph.param @v : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    // expected-error @+1 {{param @v is not a param of layer @tail, whose function @f reads it}}
    %v = graph.load_param @v : tensor<4xf32>
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A function named by two layers.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  func.func @g(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @head forward @f backward @g params [] {weight_offsets = array<i64>, grad_offsets = array<i64>, state_offsets = array<i64>}
    // expected-error @+1 {{function @f is named by layers @head and @tail; each plan function belongs to one layer}}
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @F0 forward layers [0, 1) attributes {weight_bytes = 0 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      }
    }
    schedule.stage @B0 fused_tail layers [1, 2) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.stage @B1 backward layers [0, 1) attributes {weight_bytes = 0 : i64, grad_bytes = 0 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @g(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// An upload without an offset.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        // expected-error @+1 {{'schedule.upload' has no 'offset'; run rp-plan-memory first}}
        %x = schedule.upload @x : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A call without result offsets.
module {
  graph.param @w trainable : tensor<4xf32>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {schedule.workspace_bytes = 256 : i64} {
    %w = graph.load_param @w : tensor<4xf32>
    %y = graph.mul %x, %w {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        // expected-error @+1 {{'schedule.call' has no 'offsets'; run rp-plan-memory first}}
        %r:2 = schedule.call @f(%x) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
        schedule.accumulate %r#1 into @w : tensor<4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

// A function that reads a float param in another dtype than the weight slot holds.
module {
  graph.param @w trainable : tensor<4xbf16>
  func.func @f(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xbf16>) attributes {schedule.workspace_bytes = 256 : i64} {
    // expected-error @+1 {{param @w is loaded as 'bf16', but the weight slot holds floating-point params in the compute dtype 'f32'}}
    %w = graph.load_param @w : tensor<4xbf16>
    %wf = graph.cast %w {schedule.offsets = array<i64: 0>} : tensor<4xbf16> to tensor<4xf32>
    %y = graph.mul %x, %wf {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
    return %l, %w : tensor<f32>, tensor<4xbf16>
  }
  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 512, activations = 768, workspace = 256>, host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@w] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xf32> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 256 : i64, peak_bytes = 2816 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xf32>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xf32>) -> (tensor<f32>, tensor<4xbf16>)
        schedule.accumulate %r#1 into @w : tensor<4xbf16>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}
