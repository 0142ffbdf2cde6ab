// Round trip of the routed-experts ops (graph.moe_sort, moe_dispatch, moe_combine,
// grouped_matmul, grouped_matmul_wgrad): text, generic form and bytecode.
// RUN: rp-opt %s | FileCheck %s
// RUN: rp-opt %s --mlir-print-op-generic | rp-opt | FileCheck %s
// RUN: rp-opt %s --emit-bytecode | rp-opt | FileCheck %s

// CHECK-LABEL: func.func @routed_block
func.func @routed_block(%x: tensor<32x64xf32>, %idx: tensor<32x2xi64>, %p: tensor<32x2xf32>,
                        %wgu: tensor<8x64x256xf32>, %wd: tensor<8x64x128xf32>) -> tensor<32x64xf32> {
  // CHECK: %[[POS:.+]], %[[OFF:.+]] = graph.moe_sort %{{.+}} {num_experts = 8 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<9xi64>)
  %pos, %off = graph.moe_sort %idx {num_experts = 8 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<9xi64>)
  // CHECK: graph.moe_dispatch %{{.+}}, %[[POS]] : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<64x64xf32>
  %rows = graph.moe_dispatch %x, %pos : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<64x64xf32>
  // CHECK: graph.grouped_matmul %{{.+}}, %{{.+}}, %[[OFF]] : (tensor<64x64xf32>, tensor<8x64x256xf32>, tensor<9xi64>) -> tensor<64x256xf32>
  %gu = graph.grouped_matmul %rows, %wgu, %off : (tensor<64x64xf32>, tensor<8x64x256xf32>, tensor<9xi64>) -> tensor<64x256xf32>
  %g, %u = graph.split %gu {axis = 1 : i64, sizes = array<i64: 128, 128>} : (tensor<64x256xf32>) -> (tensor<64x128xf32>, tensor<64x128xf32>)
  %h = graph.swiglu %g, %u : tensor<64x128xf32>
  // The down projection stored [E, H, I] (nn.Linear's layout): read transposed.
  // CHECK: graph.grouped_matmul %{{.+}}, %{{.+}}, %[[OFF]] {transpose_b} : (tensor<64x128xf32>, tensor<8x64x128xf32>, tensor<9xi64>) -> tensor<64x64xf32>
  %o = graph.grouped_matmul %h, %wd, %off {transpose_b} : (tensor<64x128xf32>, tensor<8x64x128xf32>, tensor<9xi64>) -> tensor<64x64xf32>
  // CHECK: graph.moe_combine %{{.+}}, %{{.+}}, %[[POS]] : (tensor<64x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>) -> tensor<32x64xf32>
  %y = graph.moe_combine %o, %p, %pos : (tensor<64x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>) -> tensor<32x64xf32>
  // CHECK: graph.grouped_matmul_wgrad %{{.+}}, %{{.+}}, %[[OFF]] : (tensor<64x128xf32>, tensor<64x64xf32>, tensor<9xi64>) -> tensor<8x128x64xf32>
  %dw = graph.grouped_matmul_wgrad %h, %o, %off : (tensor<64x128xf32>, tensor<64x64xf32>, tensor<9xi64>) -> tensor<8x128x64xf32>
  return %y : tensor<32x64xf32>
}

// bf16 rows and weights: the float ops take any graph float type.
// CHECK-LABEL: func.func @bf16
func.func @bf16(%r: tensor<6x4xbf16>, %w: tensor<3x4x5xbf16>, %off: tensor<4xi64>) -> tensor<6x5xbf16> {
  // CHECK: graph.grouped_matmul {{.+}} -> tensor<6x5xbf16>
  %y = graph.grouped_matmul %r, %w, %off : (tensor<6x4xbf16>, tensor<3x4x5xbf16>, tensor<4xi64>) -> tensor<6x5xbf16>
  return %y : tensor<6x5xbf16>
}
