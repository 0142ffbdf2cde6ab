// rp-lower-to-schedule refuses what the schedule cannot express, with a message.
// RUN: rp-opt %s -split-input-file -verify-diagnostics --rp-lower-to-schedule

// Not grouped into layers.
// expected-error @below {{rp-lower-to-schedule: no 'graph.layers' attribute: run rp-group-layers first}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// Grouped but not partitioned.
// expected-error @below {{rp-lower-to-schedule: no 'graph.partition' attribute: run rp-partition-stages first}}
module attributes {graph.layers = [@prefix]} {
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<f32> {
    %0 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// The forward stages and the fused tail leave a layer out.
// expected-error @below {{rp-lower-to-schedule: the forward stages and the fused tail end at layer 1, expected 2}}
module attributes {graph.layers = [@prefix, @tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [], backward = [array<i64: 0, 1>]}} {
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @tail(%h: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<f32> {
    %0 = graph.reduce_sum %h {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// An argument that is neither a model input nor a boundary value.
// expected-error @below {{rp-lower-to-schedule: @prefix argument 0 has neither 'graph.boundary' nor 'graph.name'}}
module attributes {graph.layers = [@prefix],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [], backward = [array<i64: 0, 1>]}} {
  func.func @prefix(%x: tensor<2xf32>) -> tensor<f32> {
    %0 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A boundary value read by two layers (a skip connection across layers).
// expected-error @below {{rp-lower-to-schedule: boundary value 'prefix#0' is used by @block_0 and @tail; a value used by two layers is not supported by the schedule yet}}
module attributes {graph.layers = [@prefix, @block_0, @tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [array<i64: 0, 2>], backward = [array<i64: 2, 3>, array<i64: 0, 2>]}} {
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @block_0(%h: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<2xf32> {
    return %h : tensor<2xf32>
  }
  func.func @tail(%h: tensor<2xf32> {graph.boundary = "block_0#0"}, %s: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<f32> {
    %0 = graph.add %h, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.reduce_sum %0 {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A float output of a non-last layer that no layer reads has no cotangent.
// expected-error @below {{rp-lower-to-schedule: result 1 of @prefix is used by no later layer}}
module attributes {graph.layers = [@prefix, @tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [array<i64: 0, 1>], backward = [array<i64: 1, 2>, array<i64: 0, 1>]}} {
  func.func @prefix(%x: tensor<2xf32> {graph.name = "x"}) -> (tensor<2xf32>, tensor<2xf32>) {
    return %x, %x : tensor<2xf32>, tensor<2xf32>
  }
  func.func @tail(%h: tensor<2xf32> {graph.boundary = "prefix#0"}) -> tensor<f32> {
    %0 = graph.reduce_sum %h {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Split functions found from an earlier run must name their residuals.
// expected-error @below {{rp-lower-to-schedule: @tail_bwd has no 'graph.residuals' attribute}}
module attributes {graph.layers = [@tail],
                   graph.partition = {gpus = 1 : i64, micro_batches = 2 : i64,
                                      forward = [], backward = [array<i64: 0, 1>]}} {
  graph.param @w trainable : tensor<2xf32>
  func.func @tail(%x: tensor<2xf32> {graph.name = "x"}) -> tensor<f32> {
    %w = graph.load_param @w : tensor<2xf32>
    %y = graph.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %0 = graph.reduce_sum %y {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @tail_fwd(%x: tensor<2xf32>) -> tensor<f32> {
    %0 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
  func.func @tail_bwd(%x: tensor<2xf32>, %seed: tensor<f32>) -> (tensor<f32>, tensor<2xf32>) {
    return %seed, %x : tensor<f32>, tensor<2xf32>
  }
}
