// rp-split-gradient errors: an op without a VJP (from rp-autodiff), a taken name, a missing
// function, cotangent-args with seed-arg, a non-scalar loss; nothing is half-built.
// RUN: rp-opt %s --rp-split-gradient="function=layer cotangent-args=1" -split-input-file -verify-diagnostics
// RUN: not rp-opt %s --rp-split-gradient="function=nothing" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not rp-opt %s --rp-split-gradient="function=layer cotangent-args=1 seed-arg=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not rp-opt %s --rp-split-gradient="function=layer seed-arg=1" -split-input-file 2>&1 | FileCheck %s --check-prefix=LOSS

graph.param @w trainable : tensor<4xf32>
func.func @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.load_param @w : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{rp-autodiff: 'arith.addf' has no VJP but lies on a gradient path}}
  %z = arith.addf %y, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

graph.param @w trainable : tensor<4xf32>
// expected-error @+1 {{rp-split-gradient: a symbol named 'layer_bwd' already exists}}
func.func @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = graph.load_param @w : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @layer_bwd(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// NOFUNC: error: rp-split-gradient: no function named 'nothing'
// BOTH: error: rp-split-gradient: cotangent-args and seed-arg exclude each other
// LOSS: error: rp-autodiff: expected the loss (result 0 of @layer) to be a scalar floating-point tensor, got 'tensor<4xf32>'
