// rp-quantize-base-weights: the frozen weights only GEMMs read become quantized storage read
// through graph.dequantize; trainable params, norms and gathered tables stay.
// RUN: rp-opt %s --rp-quantize-base-weights="format=nf4" | FileCheck %s
// RUN: rp-opt %s --rp-quantize-base-weights="format=int8" | FileCheck %s --check-prefix=INT8

// CHECK:      graph.param @embed trainable : tensor<16x128xf32>
// CHECK-NEXT: graph.param @w : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<64x128xf32>}
// CHECK-NEXT: graph.param @u : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<128x64xf32>}
// CHECK-NEXT: graph.param @norm : tensor<128xf32>
// CHECK-NEXT: graph.param @experts : tensor<16908xui8> {quant = 0 : i32, stored_type = tensor<4x64x128xf32>}
// CHECK-NEXT: graph.param @train trainable : tensor<128x128xf32>
// CHECK-LABEL: func.func @forward
// CHECK:      %[[Q:.*]] = graph.load_param @w : tensor<4232xui8>
// CHECK-NEXT: %[[W:.*]] = graph.dequantize nf4 %[[Q]] : (tensor<4232xui8>) -> tensor<64x128xf32>
// CHECK-NEXT: graph.transpose %[[W]]
// CHECK:      graph.dequantize nf4 %{{.*}} : (tensor<16908xui8>) -> tensor<4x64x128xf32>
// CHECK:      graph.load_param @train : tensor<128x128xf32>

// int8 and fp8 keep the input axis the GEMM contracts: the last for x W^T and a transposed
// grouped GEMM, the first for x W.
// INT8: graph.param @w : tensor<8448xui8> {quant = 2 : i32, quant_axis = 1 : i64, stored_type = tensor<64x128xf32>}
// INT8: graph.param @u : tensor<8448xui8> {quant = 2 : i32, quant_axis = 0 : i64, stored_type = tensor<128x64xf32>}
// INT8: graph.param @experts : tensor<33792xui8> {quant = 2 : i32, quant_axis = 2 : i64, stored_type = tensor<4x64x128xf32>}
// INT8: graph.dequantize int8 %{{.*}} {axis = 1 : i64} : (tensor<8448xui8>) -> tensor<64x128xf32>

graph.param @embed trainable : tensor<16x128xf32>
graph.param @w : tensor<64x128xf32>
graph.param @u : tensor<128x64xf32>
graph.param @norm : tensor<128xf32>
graph.param @experts : tensor<4x64x128xf32>
graph.param @train trainable : tensor<128x128xf32>
func.func @forward(%x: tensor<8x128xf32>, %rows: tensor<8x128xf32>, %off: tensor<5xi64>) -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x128xf32>) {
  %w = graph.load_param @w : tensor<64x128xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
  %y = graph.matmul %x, %wt : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
  %u = graph.load_param @u : tensor<128x64xf32>
  %z = graph.matmul %x, %u : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
  %e = graph.load_param @experts : tensor<4x64x128xf32>
  %g = graph.grouped_matmul %rows, %e, %off {transpose_b} : (tensor<8x128xf32>, tensor<4x64x128xf32>, tensor<5xi64>) -> tensor<8x64xf32>
  %t = graph.load_param @train : tensor<128x128xf32>
  %v = graph.matmul %x, %t : (tensor<8x128xf32>, tensor<128x128xf32>) -> tensor<8x128xf32>
  return %y, %z, %g, %v : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x128xf32>
}

// A weight loaded at the top is dequantized just before its first reader, so that a layer
// holds one full-precision copy at a time (the load stays where it was).
// CHECK-LABEL: func.func @loads_first
// CHECK:      %[[QW:.*]] = graph.load_param @w : tensor<4232xui8>
// CHECK-NEXT: %[[QU:.*]] = graph.load_param @u : tensor<4232xui8>
// CHECK-NEXT: %[[A:.*]] = graph.matmul %arg0, %arg1
// CHECK-NEXT: %[[DW:.*]] = graph.dequantize nf4 %[[QW]]
// CHECK-NEXT: graph.matmul %[[A]], %[[DW]] {transpose_b}
// CHECK-NEXT: %[[DU:.*]] = graph.dequantize nf4 %[[QU]]
// CHECK-NEXT: graph.matmul %[[A]], %[[DU]]
func.func @loads_first(%x: tensor<8x128xf32>, %s: tensor<128x128xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %w = graph.load_param @w : tensor<64x128xf32>
  %u = graph.load_param @u : tensor<128x64xf32>
  %a = graph.matmul %x, %s : (tensor<8x128xf32>, tensor<128x128xf32>) -> tensor<8x128xf32>
  %b = graph.matmul %a, %w {transpose_b} : (tensor<8x128xf32>, tensor<64x128xf32>) -> tensor<8x64xf32>
  %c = graph.matmul %a, %u : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
  return %b, %c : tensor<8x64xf32>, tensor<8x64xf32>
}
