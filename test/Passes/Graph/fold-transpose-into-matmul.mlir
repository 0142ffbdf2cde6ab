// rp-fold-transpose-into-matmul: transposes of the last two dimensions become graph.matmul's
// transpose_a / transpose_b flags.
// RUN: rp-opt %s --rp-fold-transpose-into-matmul --split-input-file | FileCheck %s

// A linear layer as exported (x @ W^T): the weight is read transposed, the copy is gone.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[W:.+]]: tensor<256x64xf32>)
// CHECK-NOT: graph.transpose
// CHECK: %[[Y:.+]] = graph.matmul %[[X]], %[[W]] {transpose_b} : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @linear(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>) -> tensor<2x8x256xf32> {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<256x64xf32>) -> tensor<64x256xf32>
  %y = graph.matmul %x, %wt : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
  return %y : tensor<2x8x256xf32>
}

// -----

// A weight gradient (x^T @ g) with batch dimensions: the lhs is flagged; the batch stays.
// CHECK-LABEL: func.func @batched_lhs
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[G:.+]]: tensor<2x8x32xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.matmul %[[X]], %[[G]] {transpose_a} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x64x32xf32>
func.func @batched_lhs(%x: tensor<2x8x64xf32>, %g: tensor<2x8x32xf32>) -> tensor<2x64x32xf32> {
  %xt = graph.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<2x8x64xf32>) -> tensor<2x64x8xf32>
  %y = graph.matmul %xt, %g : (tensor<2x64x8xf32>, tensor<2x8x32xf32>) -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}

// -----

// Both operands; a flag already set is cleared (two transposes cancel).
// CHECK-LABEL: func.func @both_and_cancel
// CHECK-SAME: (%[[A:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<5x4xf32>, %[[C:.+]]: tensor<3x5xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.matmul %[[A]], %[[B]] {transpose_a, transpose_b} : (tensor<4x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
// CHECK: graph.matmul %[[A]], %[[C]] : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
func.func @both_and_cancel(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<3x5xf32>)
    -> (tensor<3x5xf32>, tensor<4x5xf32>) {
  %at = graph.transpose %a {permutation = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %bt = graph.transpose %b {permutation = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = graph.matmul %at, %bt : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %z = graph.matmul %at, %c {transpose_a} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %y, %z : tensor<3x5xf32>, tensor<4x5xf32>
}

// -----

// A transpose with another user stays for that user; the matmul still reads its input.
// CHECK-LABEL: func.func @shared_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<8x64xf32>, %[[W:.+]]: tensor<256x64xf32>)
// CHECK: %[[WT:.+]] = graph.transpose %[[W]]
// CHECK: graph.matmul %[[X]], %[[W]] {transpose_b}
// CHECK: return %{{.+}}, %[[WT]]
func.func @shared_transpose(%x: tensor<8x64xf32>, %w: tensor<256x64xf32>)
    -> (tensor<8x256xf32>, tensor<64x256xf32>) {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<256x64xf32>) -> tensor<64x256xf32>
  %y = graph.matmul %x, %wt : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  return %y, %wt : tensor<8x256xf32>, tensor<64x256xf32>
}

// -----

// Negative: a permutation that moves a batch dimension (attention's head split) is not a
// transpose of the last two dimensions; nothing changes.
// CHECK-LABEL: func.func @other_permutation
// CHECK: %[[T:.+]] = graph.transpose %{{.+}} {permutation = array<i64: 1, 0, 2>}
// CHECK: graph.matmul %[[T]], %{{.+}} : (tensor<4x2x8xf32>, tensor<8x3xf32>)
// CHECK-NOT: transpose_
func.func @other_permutation(%x: tensor<2x4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x2x3xf32> {
  %t = graph.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %y = graph.matmul %t, %w : (tensor<4x2x8xf32>, tensor<8x3xf32>) -> tensor<4x2x3xf32>
  return %y : tensor<4x2x3xf32>
}

// -----

// Negative: a 4-D transpose swapping dimensions 1 and 3 is not one of the last two either.
// CHECK-LABEL: func.func @swap_not_last
// CHECK: graph.transpose %{{.+}} {permutation = array<i64: 0, 3, 2, 1>}
// CHECK-NOT: transpose_
func.func @swap_not_last(%x: tensor<2x4x4x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4x4x4xf32> {
  %t = graph.transpose %x {permutation = array<i64: 0, 3, 2, 1>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %y = graph.matmul %t, %w : (tensor<2x4x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// -----

// A weight gradient as the VJP of x @ W^T writes it, (x^T g)^T summed over the batch: it
// becomes g^T x in W's layout, with no transpose left.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[G:.+]]: tensor<2x8x32xf32>)
// CHECK-NOT: graph.transpose
// CHECK: %[[P:.+]] = graph.matmul %[[G]], %[[X]] {transpose_a} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>) -> tensor<2x32x64xf32>
// CHECK-NEXT: %[[S:.+]] = graph.reduce_sum %[[P]] {axes = array<i64: 0>, keepdims} : (tensor<2x32x64xf32>) -> tensor<1x32x64xf32>
// CHECK-NEXT: %[[R:.+]] = graph.reshape %[[S]] : tensor<1x32x64xf32> to tensor<32x64xf32>
// CHECK-NEXT: return %[[R]]
func.func @weight_gradient(%x: tensor<2x8x64xf32>, %g: tensor<2x8x32xf32>) -> tensor<32x64xf32> {
  %p = graph.matmul %x, %g {transpose_a} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x64x32xf32>
  %s = graph.reduce_sum %p {axes = array<i64: 0>, keepdims} : (tensor<2x64x32xf32>) -> tensor<1x64x32xf32>
  %r = graph.reshape %s : tensor<1x64x32xf32> to tensor<64x32xf32>
  %t = graph.transpose %r {permutation = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}

// -----

// A product transposed directly, both flags toggled and the operands swapped.
// CHECK-LABEL: func.func @transposed_product
// CHECK-SAME: (%[[A:.+]]: tensor<3x4xf32>, %[[B:.+]]: tensor<5x4xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.matmul %[[B]], %[[A]] {transpose_b} : (tensor<5x4xf32>, tensor<3x4xf32>) -> tensor<5x3xf32>
func.func @transposed_product(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>) -> tensor<5x3xf32> {
  %p = graph.matmul %a, %b {transpose_b} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  %t = graph.transpose %p {permutation = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  return %t : tensor<5x3xf32>
}

// -----

// Not folded: the product has another user.
// CHECK-LABEL: func.func @shared_product
// CHECK: graph.matmul
// CHECK: graph.transpose
func.func @shared_product(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> (tensor<5x3xf32>, tensor<3x5xf32>) {
  %p = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %t = graph.transpose %p {permutation = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  return %t, %p : tensor<5x3xf32>, tensor<3x5xf32>
}

// -----

// Not folded: the sum runs over a transposed dimension.
// CHECK-LABEL: func.func @sum_over_transposed
// CHECK: graph.reduce_sum
// CHECK: graph.transpose
func.func @sum_over_transposed(%c: tensor<2x3x4xf32>, %d: tensor<4x6xf32>) -> tensor<2x6x1xf32> {
  %q = graph.matmul %c, %d : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  %s = graph.reduce_sum %q {axes = array<i64: 1>, keepdims} : (tensor<2x3x6xf32>) -> tensor<2x1x6xf32>
  %t = graph.transpose %s {permutation = array<i64: 0, 2, 1>} : (tensor<2x1x6xf32>) -> tensor<2x6x1xf32>
  return %t : tensor<2x6x1xf32>
}

// -----

// Not folded: the reshape changes the last two dimensions.
// CHECK-LABEL: func.func @reshape_of_transposed
// CHECK: graph.reshape
// CHECK: graph.transpose
func.func @reshape_of_transposed(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %p = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %r = graph.reshape %p : tensor<3x5xf32> to tensor<5x3xf32>
  %t = graph.transpose %r {permutation = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  return %t : tensor<3x5xf32>
}

// -----

// Not folded: a transpose that moves a batch dimension.
// CHECK-LABEL: func.func @batch_transpose
// CHECK: graph.matmul
// CHECK: graph.transpose
func.func @batch_transpose(%c: tensor<2x3x4xf32>, %d: tensor<4x6xf32>) -> tensor<3x2x6xf32> {
  %q = graph.matmul %c, %d : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  %t = graph.transpose %q {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x6xf32>) -> tensor<3x2x6xf32>
  return %t : tensor<3x2x6xf32>
}
