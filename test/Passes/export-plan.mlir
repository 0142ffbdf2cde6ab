// rp-export-plan: a planned two-layer module (F0 forward [0,1), B0 fused_tail [1,2), B1
// backward [0,1)) becomes the plan: params per layer, functions as kernel instructions with
// buffer references, constants, host buffers, stage bodies and optimizer steps.
// RUN: rp-opt %s --rp-export-plan="output=- text=true producer=rpc-test model=m.onnx weights-file=m.safetensors" -o /dev/null | FileCheck %s
// The binary plan file is written too (and the module is unchanged).
// RUN: rp-opt %s --rp-export-plan="output=%t.rpplan" | FileCheck %s --check-prefix=MODULE
// RUN: test -s %t.rpplan

// MODULE: schedule.plan @train

// Config and arenas; record = activations / micro_batches.
// CHECK:      producer: "rpc-test"
// CHECK-NEXT: model: "m.onnx"
// CHECK-NEXT: weights_file: "m.safetensors"
// CHECK-NEXT: config {
// CHECK-NEXT:   micro_batches: 2
// CHECK-NEXT:   gpus: 2
// CHECK-NEXT:   update: ASYNC
// CHECK-NEXT:   recompute: LAYER
// CHECK-NEXT:   compute_dtype: F32
// CHECK-NEXT:   optimizer {
// CHECK-NEXT:     lr: 0.001
// CHECK-NEXT:     beta1: 0.9
// CHECK-NEXT:     beta2: 0.999
// CHECK-NEXT:     eps: 1e-08
// CHECK-NEXT:     weight_decay: 0.01
// CHECK-NEXT:     grad_clip: 1
// CHECK-NEXT:   }
// CHECK-NEXT:   dispatch: "round_robin"
// CHECK-NEXT: }
// CHECK-NEXT: host_arena {
// CHECK-NEXT:   weights: 1024
// CHECK-NEXT:   state: 512
// CHECK-NEXT:   activations: 2560
// CHECK-NEXT:   record: 1280
// CHECK-NEXT:   grads: 512
// CHECK-NEXT: }
// CHECK-NEXT: device_arena {
// CHECK-NEXT:   constants: 256
// CHECK-NEXT:   slot: 768
// CHECK-NEXT:   activations: 1280
// CHECK-NEXT:   workspace: 768
// CHECK-NEXT: }

// Params layer by layer; the frozen @freq is named by both layers: two entries, state -1.
// (Text format omits zero values: params 0 is in layer 0 at weight and state offset 0.)
// CHECK-NEXT: params {
// CHECK-NEXT:   name: "b"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 2
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   trainable: true
// CHECK-NEXT: }
// CHECK-NEXT: params {
// CHECK-NEXT:   name: "freq"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   weight_offset: 256
// CHECK-NEXT:   state_offset: -1
// CHECK-NEXT:   grad_offset: -1
// CHECK-NEXT: }
// CHECK-NEXT: params {
// CHECK-NEXT:   name: "w1"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   trainable: true
// CHECK-NEXT:   layer: 1
// CHECK-NEXT:   weight_offset: 512
// CHECK-NEXT:   state_offset: 256
// CHECK-NEXT:   grad_offset: 256
// CHECK-NEXT: }
// CHECK-NEXT: params {
// CHECK-NEXT:   name: "freq"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   layer: 1
// CHECK-NEXT:   weight_offset: 768
// CHECK-NEXT:   state_offset: -1
// CHECK-NEXT:   grad_offset: -1
// CHECK-NEXT: }

// Layers: functions numbered in first-reference order (forward 0 of layer 0 is omitted).
// CHECK-NEXT: layers {
// CHECK-NEXT:   name: "block_0"
// CHECK-NEXT:   backward: 1
// CHECK-NEXT:   params: 0
// CHECK-NEXT:   params: 1
// CHECK-NEXT: }
// CHECK-NEXT: layers {
// CHECK-NEXT:   name: "tail"
// CHECK-NEXT:   forward: 2
// CHECK-NEXT:   backward: 3
// CHECK-NEXT:   params: 2
// CHECK-NEXT:   params: 3
// CHECK-NEXT: }

// @block_0: load_param and constant give PARAM / CONSTANT references, no instruction;
// intermediates live in the workspace at their schedule.offsets; the returned value is
// written straight into RESULT 0 (an ARG 0 reference prints without space and index).
// CHECK-NEXT: functions {
// CHECK-NEXT:   name: "block_0"
// CHECK-NEXT:   args {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 2
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   results {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 2
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   workspace_bytes: 512
// CHECK-NEXT:   body {
// CHECK-NEXT:     kernel: "mul"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       index: 1
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: CONSTANT
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     location: "export-plan.mlir:{{[0-9]+}}:10"
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     kernel: "add"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 2
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 2
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 256
// CHECK:          location:
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     kernel: "add"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 256
// CHECK:          operands {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       type {
// CHECK:          location:
// CHECK-NEXT:   }
// CHECK-NEXT: }

// @block_0_vjp returns its argument %dy twice: two copies from ARG 1, after the body.
// CHECK-NEXT: functions {
// CHECK-NEXT:   name: "block_0_vjp"
// CHECK:          kernel: "add"
// CHECK:          kernel: "add"
// CHECK:          space: RESULT
// CHECK:        body {
// CHECK-NEXT:     kernel: "copy"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       index: 1
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: F32
// CHECK-NEXT:         shape: 2
// CHECK-NEXT:         shape: 4
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       index: 1
// CHECK:        body {
// CHECK-NEXT:     kernel: "copy"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       index: 1
// CHECK:          results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       index: 2
// CHECK:          location: "export-plan.mlir:{{[0-9]+}}:5"
// CHECK-NEXT:   }
// CHECK-NEXT: }

// @tail reads layer 1's params: @w1 is params 2, its @freq is params 3 (not 1). An I64 array
// attribute becomes `ints`.
// CHECK-NEXT: functions {
// CHECK-NEXT:   name: "tail"
// CHECK:          kernel: "matmul"
// CHECK:            space: PARAM
// CHECK-NEXT:       index: 2
// CHECK:          kernel: "add"
// CHECK:            space: PARAM
// CHECK-NEXT:       index: 3
// CHECK:          kernel: "reduce_sum"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "axes"
// CHECK-NEXT:       value {
// CHECK-NEXT:         ints {
// CHECK-NEXT:           values: 0
// CHECK-NEXT:           values: 1
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }

// @tail_train: the gradient matmuls write RESULT 1 and 2; a transpose of a param.
// CHECK:      functions {
// CHECK-NEXT:   name: "tail_train"
// CHECK:          kernel: "transpose"
// CHECK:          kernel: "matmul"
// CHECK:            space: RESULT
// CHECK-NEXT:       index: 1
// CHECK:          kernel: "transpose"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "permutation"
// CHECK-NEXT:       value {
// CHECK-NEXT:         ints {
// CHECK-NEXT:           values: 1
// CHECK-NEXT:           values: 0
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       index: 2
// CHECK:          results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 256
// CHECK:          kernel: "matmul"
// CHECK:          results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       index: 2
// CHECK:          location: "export-plan.mlir:{{[0-9]+}}:11"
// CHECK-NEXT:   }
// CHECK-NEXT: }

// One constant for the two graph.constant ops at offset 0 (the splat expanded: 4 x 0.5f).
// CHECK-NEXT: constants {
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   data: "\000\000\000?\000\000\000?\000\000\000?\000\000\000?"
// CHECK-NEXT: }
// CHECK-NEXT: host_buffers {
// CHECK-NEXT:   name: "x"
// CHECK-NEXT:   input_name: "x"
// CHECK:      host_buffers {
// CHECK-NEXT:   name: "t"
// CHECK-NEXT:   input_name: "target"
// CHECK:          offset: 256
// CHECK:      host_buffers {
// CHECK-NEXT:   name: "block_0#0"
// CHECK-NEXT:   kind: ACTIVATION
// CHECK:        offset: 512
// CHECK:      host_buffers {
// CHECK-NEXT:   name: "block_0#0.grad"
// CHECK-NEXT:   kind: COTANGENT
// CHECK:        offset: 768
// CHECK:      host_buffers {
// CHECK-NEXT:   name: "loss"
// CHECK-NEXT:   kind: LOSS
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:   }
// CHECK-NEXT:   offset: 1024
// CHECK-NEXT: }

// F0: weights from layer 0's first param (offset 0), no gradients.
// CHECK-NEXT: stages {
// CHECK-NEXT:   name: "F0"
// CHECK-NEXT:   end: 1
// CHECK-NEXT:   weight_bytes: 512
// CHECK-NEXT:   activation_bytes: 512
// CHECK-NEXT:   workspace_bytes: 512
// CHECK-NEXT:   peak_bytes: 5376
// CHECK-NEXT:   body {
// CHECK-NEXT:     upload {
// CHECK-NEXT:       after_stage: -1
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     prefetch_next {
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     call {
// CHECK-NEXT:       arg_offsets: 0
// CHECK-NEXT:       result_offsets: 256
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     download {
// CHECK-NEXT:       buffer: 2
// CHECK-NEXT:       offset: 256
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// B0: weights and state from @w1; the hop is uploaded after F0 (stage 0); accumulate names
// params 2; the downloads carry the offsets of the call's results.
// CHECK-NEXT: stages {
// CHECK-NEXT:   name: "B0"
// CHECK-NEXT:   kind: FUSED_TAIL
// CHECK-NEXT:   begin: 1
// CHECK-NEXT:   end: 2
// CHECK-NEXT:   weight_offset: 512
// CHECK-NEXT:   weight_bytes: 512
// CHECK-NEXT:   state_offset: 256
// CHECK-NEXT:   grad_bytes: 256
// CHECK-NEXT:   activation_bytes: 1280
// CHECK-NEXT:   workspace_bytes: 768
// CHECK-NEXT:   peak_bytes: 5376
// CHECK-NEXT:   body {
// CHECK-NEXT:     upload {
// CHECK-NEXT:       buffer: 2
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     upload {
// CHECK-NEXT:       buffer: 1
// CHECK-NEXT:       after_stage: -1
// CHECK-NEXT:       offset: 256
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     prefetch_next {
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     call {
// CHECK-NEXT:       function: 3
// CHECK-NEXT:       arg_offsets: 0
// CHECK-NEXT:       arg_offsets: 256
// CHECK-NEXT:       result_offsets: 512
// CHECK-NEXT:       result_offsets: 768
// CHECK-NEXT:       result_offsets: 1024
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     accumulate {
// CHECK-NEXT:       param: 2
// CHECK-NEXT:       offset: 768
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     download {
// CHECK-NEXT:       buffer: 3
// CHECK-NEXT:       offset: 1024
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     download {
// CHECK-NEXT:       buffer: 4
// CHECK-NEXT:       offset: 512
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// B1: the cotangent comes after B0 (stage 1); accumulate into @b, params 0.
// CHECK-NEXT: stages {
// CHECK-NEXT:   name: "B1"
// CHECK-NEXT:   kind: BACKWARD
// CHECK-NEXT:   end: 1
// CHECK-NEXT:   weight_bytes: 512
// CHECK-NEXT:   grad_bytes: 256
// CHECK-NEXT:   activation_bytes: 1280
// CHECK-NEXT:   workspace_bytes: 512
// CHECK-NEXT:   peak_bytes: 5376
// CHECK-NEXT:   body {
// CHECK-NEXT:     upload {
// CHECK-NEXT:       after_stage: -1
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     upload {
// CHECK-NEXT:       buffer: 3
// CHECK-NEXT:       after_stage: 1
// CHECK-NEXT:       offset: 256
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     prefetch_next {
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     call {
// CHECK-NEXT:       function: 1
// CHECK-NEXT:       arg_offsets: 0
// CHECK-NEXT:       arg_offsets: 256
// CHECK-NEXT:       result_offsets: 512
// CHECK-NEXT:       result_offsets: 768
// CHECK-NEXT:       result_offsets: 1024
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   body {
// CHECK-NEXT:     accumulate {
// CHECK-NEXT:       offset: 768
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// Optimizer steps in IR order: layer 1 after B0, layer 0 after B1 (uploaded by F0 and B1).
// CHECK-NEXT: optimizer_steps {
// CHECK-NEXT:   layer: 1
// CHECK-NEXT:   grads_stage: 1
// CHECK-NEXT:   upload_stages: 1
// CHECK-NEXT: }
// CHECK-NEXT: optimizer_steps {
// CHECK-NEXT:   grads_stage: 2
// CHECK-NEXT:   upload_stages: 0
// CHECK-NEXT:   upload_stages: 2
// CHECK-NEXT: }
// CHECK-NOT: {{.}}

module {
  graph.param @b trainable : tensor<2x4xf32>
  graph.param @freq : tensor<4xf32>
  graph.param @w1 trainable : tensor<4x4xf32>

  func.func @block_0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {schedule.workspace_bytes = 512 : i64} {
    %b = graph.load_param @b : tensor<2x4xf32>
    %f = graph.load_param @freq : tensor<4xf32>
    %c = graph.constant {schedule.offset = 0 : i64} dense<0.5> : tensor<4xf32>
    %s = graph.mul %f, %c {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %h = graph.add %x, %b {schedule.offsets = array<i64: 256>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = graph.add %h, %s {schedule.offsets = array<i64: -1>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }

  func.func @block_0_vjp(%x: tensor<2x4xf32>, %dy: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) attributes {schedule.workspace_bytes = 512 : i64} {
    %b = graph.load_param @b : tensor<2x4xf32>
    %f = graph.load_param @freq : tensor<4xf32>
    %c = graph.constant {schedule.offset = 0 : i64} dense<0.5> : tensor<4xf32>
    %s = graph.mul %f, %c {schedule.offsets = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %h = graph.add %x, %b {schedule.offsets = array<i64: 256>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = graph.add %h, %s {schedule.offsets = array<i64: -1>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %y, %dy, %dy : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }

  func.func @tail(%h: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> attributes {schedule.workspace_bytes = 768 : i64} {
    %w = graph.load_param @w1 : tensor<4x4xf32>
    %f = graph.load_param @freq : tensor<4xf32>
    %p = graph.matmul %h, %w {schedule.offsets = array<i64: 0>} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %q = graph.mul %p, %t {schedule.offsets = array<i64: 256>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %u = graph.add %q, %f {schedule.offsets = array<i64: 512>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %l = graph.reduce_sum %u {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  func.func @tail_train(%h: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> (tensor<f32>, tensor<4x4xf32>, tensor<2x4xf32>) attributes {schedule.workspace_bytes = 768 : i64} {
    %w = graph.load_param @w1 : tensor<4x4xf32>
    %f = graph.load_param @freq : tensor<4xf32>
    %p = graph.matmul %h, %w {schedule.offsets = array<i64: 0>} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %q = graph.mul %p, %t {schedule.offsets = array<i64: 256>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %u = graph.add %q, %f {schedule.offsets = array<i64: 512>} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %l = graph.reduce_sum %u {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
    %ht = graph.transpose %h {permutation = array<i64: 1, 0>, schedule.offsets = array<i64: 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %dw = graph.matmul %ht, %t : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %wt = graph.transpose %w {permutation = array<i64: 1, 0>, schedule.offsets = array<i64: 256>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %dh = graph.matmul %t, %wt : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %l, %dw, %dh : tensor<f32>, tensor<4x4xf32>, tensor<2x4xf32>
  }

  schedule.plan @train micro_batches 2 gpus 2 update async recompute layer dtype f32
      optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, grad_clip = 1.0>
      attributes {device_arena = #schedule.device_arena<constants = 256, slot = 768, activations = 1280, workspace = 768>,
                  host_arena = #schedule.host_arena<weights = 1024, state = 512, grads = 512, activations = 2560>} {
    schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@b, @freq] {weight_offsets = array<i64: 0, 256>, grad_offsets = array<i64: 0, -1>, state_offsets = array<i64: 0, -1>}
    schedule.layer @tail forward @tail backward @tail_train params [@w1, @freq] {weight_offsets = array<i64: 512, 768>, grad_offsets = array<i64: 256, -1>, state_offsets = array<i64: 256, -1>}
    schedule.host_buffer @x input "x" : tensor<2x4xf32> {offset = 0 : i64}
    schedule.host_buffer @t input "target" : tensor<2x4xf32> {offset = 256 : i64}
    schedule.host_buffer @"block_0#0" activation : tensor<2x4xf32> {offset = 512 : i64}
    schedule.host_buffer @"block_0#0.grad" cotangent : tensor<2x4xf32> {offset = 768 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 1024 : i64}
    schedule.stage @F0 forward layers [0, 1) attributes {weight_bytes = 512 : i64, activation_bytes = 512 : i64, workspace_bytes = 512 : i64, peak_bytes = 5376 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<2x4xf32>
        schedule.prefetch_next
        %y = schedule.call @block_0(%x) {offsets = array<i64: 256>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
        schedule.download %y to @"block_0#0" : tensor<2x4xf32>
      }
    }
    schedule.stage @B0 fused_tail layers [1, 2) attributes {weight_bytes = 512 : i64, grad_bytes = 256 : i64, activation_bytes = 1280 : i64, workspace_bytes = 768 : i64, peak_bytes = 5376 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %h = schedule.upload @"block_0#0" after @F0 {offset = 0 : i64} : tensor<2x4xf32>
        %t = schedule.upload @t {offset = 256 : i64} : tensor<2x4xf32>
        schedule.prefetch_next
        %r:3 = schedule.call @tail_train(%h, %t) {offsets = array<i64: 512, 768, 1024>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<f32>, tensor<4x4xf32>, tensor<2x4xf32>)
        schedule.accumulate %r#1 into @w1 : tensor<4x4xf32>
        schedule.download %r#2 to @"block_0#0.grad" : tensor<2x4xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.stage @B1 backward layers [0, 1) attributes {weight_bytes = 512 : i64, grad_bytes = 256 : i64, activation_bytes = 1280 : i64, workspace_bytes = 512 : i64, peak_bytes = 5376 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<2x4xf32>
        %dy = schedule.upload @"block_0#0.grad" after @B0 {offset = 256 : i64} : tensor<2x4xf32>
        schedule.prefetch_next
        %r:3 = schedule.call @block_0_vjp(%x, %dy) {offsets = array<i64: 512, 768, 1024>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
        schedule.accumulate %r#1 into @b : tensor<2x4xf32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
    schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
  }
}
