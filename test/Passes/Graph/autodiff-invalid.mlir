// rp-autodiff errors: a non-scalar loss, an op without a VJP on a gradient path, a bad
// wrt-args index, a missing function.
// RUN: rp-opt %s --rp-autodiff -split-input-file -verify-diagnostics
// RUN: not rp-opt %s --rp-autodiff="function=nothing" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not rp-opt %s --rp-autodiff="wrt-args=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=WRT

graph.param @w trainable : tensor<4xf32>
// expected-error @+1 {{rp-autodiff: expected the loss (result 0 of @forward) to be a scalar floating-point tensor, got 'tensor<4xf32>'}}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.load_param @w : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

graph.param @w trainable : tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
  %w = graph.load_param @w : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{rp-autodiff: 'arith.addf' has no VJP but lies on a gradient path}}
  %z = arith.addf %y, %y : tensor<4xf32>
  %l = graph.reduce_sum %z {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// NOFUNC: error: rp-autodiff: no function named 'nothing'
// WRT: error: rp-autodiff: wrt-args index 3 is out of range (@forward has 1 arguments)
