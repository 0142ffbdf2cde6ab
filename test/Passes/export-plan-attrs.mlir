// rp-export-plan: every attribute kind of the kernel registry (enum keywords as strings, i64,
// f64, unit -> bool, i64 arrays, range bounds as int or float), a layer_norm with its optional
// bias, multi-result split, i1 and i64 constants, an integer param (kept in its dtype), a
// returned param (a copy from PARAM); then a bf16 plan, whose bf16 param is f32 in the weights
// file, bf16 as the kernels read it, and has no stored value (init zeros).
// RUN: rp-opt %s --split-input-file --rp-export-plan="output=- text=true" -o /dev/null | FileCheck %s

// CHECK:      compute_dtype: F32
// The integer param keeps its dtype (params 0, layer 0, frozen).
// CHECK:      params {
// CHECK-NEXT:   name: "w"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: I64
// CHECK-NEXT:     shape: 8
// CHECK-NEXT:   }
// CHECK-NEXT:   state_offset: -1
// CHECK-NEXT:   grad_offset: -1
// CHECK-NEXT: }

// CHECK:        body {
// CHECK-NEXT:     kernel: "cast"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: I64
// CHECK-NEXT:         shape: 8

// CHECK:          kernel: "layer_norm"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "axis"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: 1
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "epsilon"
// CHECK-NEXT:       value {
// CHECK-NEXT:         f: 1e-05
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     operands {
// CHECK:          operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       index: 1
// CHECK:          operands {
// CHECK-NEXT:       space: WORKSPACE
// CHECK:          results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 256

// CHECK:          kernel: "gelu"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "approximate"
// CHECK-NEXT:       value {
// CHECK-NEXT:         s: "tanh"

// CHECK:          kernel: "trilu"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "k"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: 1
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "upper"
// CHECK-NEXT:       value {
// CHECK-NEXT:         b: true
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: CONSTANT
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: I1

// Float bounds stay floats, integer bounds integers.
// CHECK:          kernel: "range"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "delta"
// CHECK-NEXT:       value {
// CHECK-NEXT:         f: 0.5
// CHECK:            key: "limit"
// CHECK-NEXT:       value {
// CHECK-NEXT:         f: 4
// CHECK:          kernel: "range"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "delta"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: 1
// CHECK:            key: "limit"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: 2

// CHECK:          kernel: "compare"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "predicate"
// CHECK-NEXT:       value {
// CHECK-NEXT:         s: "gt"
// CHECK:            space: CONSTANT
// CHECK-NEXT:       index: 1

// CHECK:          kernel: "cross_entropy"
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "ignore_index"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: -100
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "reduction"
// CHECK-NEXT:       value {
// CHECK-NEXT:         s: "mean"

// Two results, two workspace offsets.
// CHECK:          kernel: "split"
// CHECK:            key: "sizes"
// CHECK-NEXT:       value {
// CHECK-NEXT:         ints {
// CHECK-NEXT:           values: 4
// CHECK-NEXT:           values: 4
// CHECK:          results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 1792
// CHECK:          results {
// CHECK-NEXT:       space: WORKSPACE
// CHECK-NEXT:       offset: 2048

// CHECK:          kernel: "concat"
// CHECK:          results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       index: 2

// The returned param is copied into its result.
// CHECK:          kernel: "copy"
// CHECK-NEXT:     operands {
// CHECK-NEXT:       space: PARAM
// CHECK-NEXT:       index: 1
// CHECK:          results {
// CHECK-NEXT:       space: RESULT
// CHECK-NEXT:       index: 1

// i1 as one byte per element (the splat expanded), i64 little-endian.
// CHECK:      constants {
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: I1
// CHECK-NEXT:     shape: 8
// CHECK-NEXT:     shape: 8
// CHECK-NEXT:   }
// CHECK-NEXT:   data: "{{(\\001){64}"$}}
// CHECK-NEXT: }
// CHECK-NEXT: constants {
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: I64
// CHECK-NEXT:     shape: 2
// CHECK-NEXT:   }
// CHECK-NEXT:   offset: 256
// CHECK-NEXT:   data: "\001\000\000\000\000\000\000\000\376\377\377\377\377\377\377\377"
// CHECK-NEXT: }

// Accumulate into the trainable @g: params 1.
// CHECK:          accumulate {
// CHECK-NEXT:       param: 1
// CHECK-NEXT:       offset: 768

// The bf16 plan: the param is f32 in the weights file, bf16 in the weight slot; it starts as
// zeros (a LoRA B).
// CHECK:      compute_dtype: BF16
// CHECK:      params {
// CHECK-NEXT:   name: "v"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: 4
// CHECK-NEXT:   }
// CHECK-NEXT:   trainable: true
// CHECK-NEXT:   init: PARAM_INIT_ZEROS
// CHECK-NEXT: }
// CHECK:          kernel: "mul"
// CHECK:            space: PARAM
// CHECK-NEXT:       type {
// CHECK-NEXT:         dtype: BF16
// CHECK-NEXT:         shape: 4

module {
  graph.param @w : tensor<8xi64> initializer "w"
  graph.param @g trainable : tensor<8xf32> initializer "g"

  func.func @f(%x: tensor<2x8xf32>, %labels: tensor<2xi64>) -> (tensor<f32>, tensor<8xf32>, tensor<2x8xf32>) attributes {schedule.workspace_bytes = 2304 : i64} {
    %w = graph.load_param @w : tensor<8xi64>
    %g = graph.load_param @g : tensor<8xf32>
    %wf = graph.cast %w {schedule.offsets = array<i64: 0>} : tensor<8xi64> to tensor<8xf32>
    %ln = graph.layer_norm %x, %g, %wf {axis = 1 : i64, epsilon = 1.0e-05 : f64, schedule.offsets = array<i64: 256>} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %a = graph.gelu tanh %ln {schedule.offsets = array<i64: 512>} : tensor<2x8xf32>
    %ones = graph.constant {schedule.offset = 0 : i64} dense<true> : tensor<8x8xi1>
    %tri = graph.trilu %ones {k = 1 : i64, upper, schedule.offsets = array<i64: 768>} : tensor<8x8xi1>
    %r = graph.range {start = 0.0 : f64, limit = 4.0 : f64, delta = 0.5 : f64, schedule.offsets = array<i64: 1024>} : tensor<8xf32>
    %idx = graph.range {start = 0 : i64, limit = 2 : i64, delta = 1 : i64, schedule.offsets = array<i64: 1280>} : tensor<2xi64>
    %k = graph.constant {schedule.offset = 256 : i64} dense<[1, -2]> : tensor<2xi64>
    %c = graph.compare gt, %idx, %k {schedule.offsets = array<i64: 1536>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
    %loss = graph.cross_entropy mean %a, %labels {ignore_index = -100 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
    %s:2 = graph.split %a {axis = 1 : i64, sizes = array<i64: 4, 4>, schedule.offsets = array<i64: 1792, 2048>} : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
    %cat = graph.concat %s#1, %s#0 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
    return %loss, %g, %cat : tensor<f32>, tensor<8xf32>, tensor<2x8xf32>
  }

  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype f32
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 512, slot = 768, activations = 1280, workspace = 2304>,
                  host_arena = #schedule.host_arena<weights = 512, state = 256, grads = 256, activations = 768>} {
    schedule.layer @tail forward @f backward @f params [@w, @g] {weight_offsets = array<i64: 0, 256>, grad_offsets = array<i64: -1, 0>, state_offsets = array<i64: -1, 0>}
    schedule.host_buffer @x input "x" : tensor<2x8xf32> {offset = 0 : i64}
    schedule.host_buffer @labels input "labels" : tensor<2xi64> {offset = 256 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 512 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 512 : i64, grad_bytes = 256 : i64, activation_bytes = 1280 : i64, workspace_bytes = 2304 : i64, peak_bytes = 6912 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<2x8xf32>
        %l = schedule.upload @labels {offset = 256 : i64} : tensor<2xi64>
        schedule.prefetch_next
        %r:3 = schedule.call @f(%x, %l) {offsets = array<i64: 512, 768, 1024>} : (tensor<2x8xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<8xf32>, tensor<2x8xf32>)
        schedule.accumulate %r#1 into @g : tensor<8xf32>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}

// -----

module {
  graph.param @v trainable : tensor<4xbf16> init zeros

  func.func @f(%x: tensor<4xbf16>) -> (tensor<f32>, tensor<4xbf16>) attributes {schedule.workspace_bytes = 512 : i64} {
    %v = graph.load_param @v : tensor<4xbf16>
    %y = graph.mul %x, %v {schedule.offsets = array<i64: 0>} : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %l = graph.reduce_sum %y {axes = array<i64: 0>, schedule.offsets = array<i64: 256>} : (tensor<4xbf16>) -> tensor<bf16>
    %lf = graph.cast %l : tensor<bf16> to tensor<f32>
    return %lf, %x : tensor<f32>, tensor<4xbf16>
  }

  schedule.plan @train micro_batches 1 gpus 1 update sync recompute stage dtype bf16
      optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0>
      attributes {device_arena = #schedule.device_arena<constants = 0, slot = 512, activations = 768, workspace = 512>,
                  host_arena = #schedule.host_arena<weights = 256, state = 256, grads = 256, activations = 512>} {
    schedule.layer @tail forward @f backward @f params [@v] {weight_offsets = array<i64: 0>, grad_offsets = array<i64: 0>, state_offsets = array<i64: 0>}
    schedule.host_buffer @x input "x" : tensor<4xbf16> {offset = 0 : i64}
    schedule.host_buffer @loss loss : tensor<f32> {offset = 256 : i64}
    schedule.stage @B0 fused_tail layers [0, 1) attributes {weight_bytes = 256 : i64, grad_bytes = 256 : i64, activation_bytes = 768 : i64, workspace_bytes = 512 : i64, peak_bytes = 3072 : i64} {
      schedule.await_weights
      schedule.micro_batch {
        %x = schedule.upload @x {offset = 0 : i64} : tensor<4xbf16>
        schedule.prefetch_next
        %r:2 = schedule.call @f(%x) {offsets = array<i64: 256, 512>} : (tensor<4xbf16>) -> (tensor<f32>, tensor<4xbf16>)
        schedule.accumulate %r#1 into @v : tensor<4xbf16>
        schedule.download %r#0 to @loss : tensor<f32>
      }
      schedule.download_grads
    }
    schedule.optimizer_step @tail grads @B0 uploads [@B0]
  }
}
