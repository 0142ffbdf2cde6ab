// rp-quantize-base-weights refuses an unknown format, a module with no frozen GEMM weight and
// a weight the format cannot hold.
// RUN: rp-opt %s -split-input-file -verify-diagnostics --rp-quantize-base-weights="format=nf4"
// RUN: not rp-opt %s --rp-quantize-base-weights="format=q3" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: rp-quantize-base-weights: unknown format 'q3'; expected nf4, nf4-fp32-absmax, int8 or fp8

// expected-error @+1 {{no frozen weight of rank 2 or more is read only by GEMMs}}
module {
  graph.param @w trainable : tensor<64x64xf32>
  func.func @forward(%x: tensor<2x64xf32>) -> tensor<2x64xf32> {
    %w = graph.load_param @w : tensor<64x64xf32>
    %y = graph.matmul %x, %w : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
    return %y : tensor<2x64xf32>
  }
}

// -----

module {
  // expected-error @+1 {{frozen weight @w [64, 100] cannot be held as nf4: its last dimension 100 is not a multiple of the nf4 block size 64}}
  graph.param @w : tensor<64x100xf32>
  func.func @forward(%x: tensor<2x64xf32>) -> tensor<2x100xf32> {
    %w = graph.load_param @w : tensor<64x100xf32>
    %y = graph.matmul %x, %w : (tensor<2x64xf32>, tensor<64x100xf32>) -> tensor<2x100xf32>
    return %y : tensor<2x100xf32>
  }
}
