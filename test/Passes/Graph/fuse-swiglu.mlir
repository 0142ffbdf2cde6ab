// rp-fuse-swiglu: silu(x @ Wg) * (x @ Wu) becomes graph.swiglu; near misses stay.
// RUN: rp-opt %s --rp-fuse-swiglu | FileCheck %s

// SiLU written as x * sigmoid(x); the SiLU's intermediates are removed.
// CHECK-LABEL: func.func @sigmoid_form
// CHECK-SAME: (%[[X:.+]]: tensor<8x64xf32>, %[[WG:.+]]: tensor<64x172xf32>, %[[WU:.+]]: tensor<64x172xf32>)
// CHECK: %[[G:.+]] = graph.matmul %[[X]], %[[WG]]
// CHECK: %[[U:.+]] = graph.matmul %[[X]], %[[WU]]
// CHECK-NOT: graph.sigmoid
// CHECK-NOT: graph.mul
// CHECK: %[[H:.+]] = graph.swiglu %[[G]], %[[U]] : tensor<8x172xf32>
// CHECK: return %[[H]]
func.func @sigmoid_form(%x: tensor<8x64xf32>, %wg: tensor<64x172xf32>, %wu: tensor<64x172xf32>) -> tensor<8x172xf32> {
  %g = graph.matmul %x, %wg : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
  %u = graph.matmul %x, %wu : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
  %s = graph.sigmoid %g : tensor<8x172xf32>
  %a = graph.mul %g, %s : (tensor<8x172xf32>, tensor<8x172xf32>) -> tensor<8x172xf32>
  %h = graph.mul %a, %u : (tensor<8x172xf32>, tensor<8x172xf32>) -> tensor<8x172xf32>
  return %h : tensor<8x172xf32>
}

// The other operand orders: sigmoid(g) * g, and up * act.
// CHECK-LABEL: func.func @swapped_operands
// CHECK: %[[G:.+]] = graph.matmul
// CHECK: %[[U:.+]] = graph.matmul
// CHECK-NOT: graph.mul
// CHECK: graph.swiglu %[[G]], %[[U]] : tensor<2x8x32xf32>
func.func @swapped_operands(%x: tensor<2x8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %g = graph.matmul %x, %wg : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %u = graph.matmul %x, %wu : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %s = graph.sigmoid %g : tensor<2x8x32xf32>
  %a = graph.mul %s, %g : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %h = graph.mul %u, %a : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %h : tensor<2x8x32xf32>
}

// SiLU written as graph.silu, in bf16.
// CHECK-LABEL: func.func @silu_form
// CHECK-NOT: graph.silu
// CHECK: graph.swiglu %{{.+}}, %{{.+}} : tensor<8x32xbf16>
func.func @silu_form(%x: tensor<8x16xbf16>, %wg: tensor<16x32xbf16>, %wu: tensor<16x32xbf16>) -> tensor<8x32xbf16> {
  %g = graph.matmul %x, %wg : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %u = graph.matmul %x, %wu : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %a = graph.silu %g : tensor<8x32xbf16>
  %h = graph.mul %a, %u : (tensor<8x32xbf16>, tensor<8x32xbf16>) -> tensor<8x32xbf16>
  return %h : tensor<8x32xbf16>
}

// Near miss: the sigmoid is of a different value (g * sigmoid(u) * u is not a SiLU).
// CHECK-LABEL: func.func @sigmoid_of_other_value
// CHECK-NOT: graph.swiglu
// CHECK: graph.sigmoid
// CHECK: return
func.func @sigmoid_of_other_value(%x: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %g = graph.matmul %x, %wg : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %u = graph.matmul %x, %wu : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %s = graph.sigmoid %u : tensor<8x32xf32>
  %a = graph.mul %g, %s : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// Near miss: the SiLU result has a second user, so it would be computed anyway.
// CHECK-LABEL: func.func @second_user
// CHECK-NOT: graph.swiglu
// CHECK: graph.silu
// CHECK: return
func.func @second_user(%x: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %g = graph.matmul %x, %wg : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %u = graph.matmul %x, %wu : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = graph.silu %g : tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h, %a : tensor<8x32xf32>, tensor<8x32xf32>
}

// Near miss: the sigmoid has a second user.
// CHECK-LABEL: func.func @sigmoid_second_user
// CHECK-NOT: graph.swiglu
// CHECK: return
func.func @sigmoid_second_user(%x: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %g = graph.matmul %x, %wg : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %u = graph.matmul %x, %wu : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %s = graph.sigmoid %g : tensor<8x32xf32>
  %a = graph.mul %g, %s : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h, %s : tensor<8x32xf32>, tensor<8x32xf32>
}

// Near miss: the projections read different inputs.
// CHECK-LABEL: func.func @different_inputs
// CHECK-NOT: graph.swiglu
// CHECK: return
func.func @different_inputs(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %g = graph.matmul %x, %wg : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %u = graph.matmul %y, %wu : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = graph.silu %g : tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// A fused gate_up projection (Phi-3) split into gate and up along the last axis.
// CHECK-LABEL: func.func @fused_projection_split
// CHECK: %[[GU:.+]] = graph.matmul
// CHECK: %[[P:.+]]:2 = graph.split %[[GU]]
// CHECK-NOT: graph.sigmoid
// CHECK-NOT: graph.mul
// CHECK: graph.swiglu %[[P]]#0, %[[P]]#1 : tensor<2x8x32xf32>
func.func @fused_projection_split(%x: tensor<2x8x16xf32>, %w: tensor<16x64xf32>) -> tensor<2x8x32xf32> {
  %gu = graph.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %p:2 = graph.split %gu {axis = 2 : i64, sizes = array<i64: 32, 32>} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %s = graph.sigmoid %p#0 : tensor<2x8x32xf32>
  %a = graph.mul %p#0, %s : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %h = graph.mul %p#1, %a : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %h : tensor<2x8x32xf32>
}

// The same, sliced (the TorchScript export of Phi-3); the gate may be the upper half.
// CHECK-LABEL: func.func @fused_projection_slices
// CHECK: %[[GU:.+]] = graph.matmul
// CHECK: %[[U:.+]] = graph.slice %[[GU]] {{.*}}ends = array<i64: 32>
// CHECK: %[[G:.+]] = graph.slice %[[GU]] {{.*}}ends = array<i64: 64>
// CHECK-NOT: graph.silu
// CHECK: graph.swiglu %[[G]], %[[U]] : tensor<8x32xf32>
func.func @fused_projection_slices(%x: tensor<8x16xf32>, %w: tensor<16x64xf32>) -> tensor<8x32xf32> {
  %gu = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %u = graph.slice %gu {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 32>, steps = array<i64: 1>} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %g = graph.slice %gu {axes = array<i64: 1>, starts = array<i64: 32>, ends = array<i64: 64>, steps = array<i64: 1>} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %a = graph.silu %g : tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// Near miss: the two slices overlap (gate and up share columns), not two projections.
// CHECK-LABEL: func.func @fused_projection_overlap
// CHECK-NOT: graph.swiglu
// CHECK: return
func.func @fused_projection_overlap(%x: tensor<8x16xf32>, %w: tensor<16x64xf32>) -> tensor<8x32xf32> {
  %gu = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %g = graph.slice %gu {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 32>, steps = array<i64: 1>} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %u = graph.slice %gu {axes = array<i64: 1>, starts = array<i64: 16>, ends = array<i64: 48>, steps = array<i64: 1>} : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %a = graph.silu %g : tensor<8x32xf32>
  %h = graph.mul %a, %u : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// Near miss: the split is along a leading axis (rows of the batch), not the projection's.
// CHECK-LABEL: func.func @split_not_last_axis
// CHECK-NOT: graph.swiglu
// CHECK: return
func.func @split_not_last_axis(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %gu = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %p:2 = graph.split %gu {axis = 0 : i64, sizes = array<i64: 4, 4>} : (tensor<8x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>)
  %a = graph.silu %p#0 : tensor<4x32xf32>
  %h = graph.mul %a, %p#1 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// Near miss: the halves are of an input, not of a projection.
// CHECK-LABEL: func.func @split_of_non_matmul
// CHECK-NOT: graph.swiglu
// CHECK: return
func.func @split_of_non_matmul(%gu: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %p:2 = graph.split %gu {axis = 1 : i64, sizes = array<i64: 32, 32>} : (tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  %a = graph.silu %p#0 : tensor<8x32xf32>
  %h = graph.mul %a, %p#1 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}
