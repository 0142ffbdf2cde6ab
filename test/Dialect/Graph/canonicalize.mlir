// Every folder of the graph dialect, with the near misses that must not fold.
// RUN: rp-opt %s -canonicalize -split-input-file | FileCheck %s

// x + 0, 0 + x, x - 0, x * 1, x / 1, x ^ 1 fold to x.
// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[I:.+]]: tensor<4xi64>)
func.func @arith_identities(%x: tensor<2x4xf32>, %i: tensor<4xi64>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xi64>) {
  %zero = graph.constant dense<0.0> : tensor<4xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %ione = graph.constant dense<1> : tensor<4xi64>
  %0 = graph.add %x, %zero : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = graph.add %zero, %x : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = graph.sub %x, %zero : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = graph.mul %x, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %4 = graph.div %x, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %5 = graph.pow %x, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %6 = graph.mul %i, %ione : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK-NOT: graph.add
  // CHECK-NOT: graph.sub
  // CHECK-NOT: graph.mul
  // CHECK-NOT: graph.div
  // CHECK-NOT: graph.pow
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]]
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xi64>
}

// -----

// An identity that broadcasts x to a larger shape does not fold, nor does a non-identity
// constant, nor 0 - x, nor 1 / x.
// CHECK-LABEL: func.func @arith_near_misses
func.func @arith_near_misses(%x: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = graph.constant dense<0.0> : tensor<2x4xf32>
  %two = graph.constant dense<2.0> : tensor<4xf32>
  %one = graph.constant dense<1.0> : tensor<4xf32>
  // CHECK: graph.add %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %0 = graph.add %x, %zero : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK: graph.mul %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul %x, %two : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %z = graph.constant dense<0.0> : tensor<4xf32>
  // CHECK: graph.sub %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.sub %z, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: graph.div %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.div %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// neg(neg(x)) and logical_not(logical_not(m)) fold; a single one stays.
// CHECK-LABEL: func.func @involutions
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[M:.+]]: tensor<4xi1>)
func.func @involutions(%x: tensor<4xf32>, %m: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = graph.neg %x : tensor<4xf32>
  %1 = graph.neg %0 : tensor<4xf32>
  %2 = graph.logical_not %m : tensor<4xi1>
  %3 = graph.logical_not %2 : tensor<4xi1>
  // CHECK: %[[N:.+]] = graph.neg %[[X]] : tensor<4xf32>
  // CHECK-NOT: graph.neg
  // CHECK-NOT: graph.logical_not
  // CHECK: return %[[X]], %[[M]], %[[N]]
  return %1, %3, %0 : tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// -----

// A splat condition selects a branch of the result's type; one that broadcasts does not fold.
// CHECK-LABEL: func.func @where_splat
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<f32>)
func.func @where_splat(%a: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = graph.constant dense<true> : tensor<4xi1>
  %f = graph.constant dense<false> : tensor<4xi1>
  %0 = graph.where %t, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.where %f, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: %[[W:.+]] = graph.where %{{.+}}, %[[S]], %[[B]]
  %2 = graph.where %t, %s, %b : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: return %[[A]], %[[B]], %[[W]]
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A cast to the same type folds; a real conversion stays.
// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
func.func @cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %0 = graph.cast %x : tensor<4xf32> to tensor<4xf32>
  // CHECK: %[[C:.+]] = graph.cast %[[X]] : tensor<4xf32> to tensor<4xbf16>
  %1 = graph.cast %x : tensor<4xf32> to tensor<4xbf16>
  // CHECK: return %[[X]], %[[C]]
  return %0, %1 : tensor<4xf32>, tensor<4xbf16>
}

// -----

// Reductions over size-1 dimensions with keepdims fold; real reductions stay.
// CHECK-LABEL: func.func @trivial_reductions
// CHECK-SAME: (%[[X:.+]]: tensor<2x1x4xf32>)
func.func @trivial_reductions(%x: tensor<2x1x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x4xf32>, tensor<2x1x1xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims} : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  %2 = graph.reduce_max %x {axes = array<i64: 1>, keepdims} : (tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  // CHECK: %[[R:.+]] = graph.reduce_sum %[[X]] {axes = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %3 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  // CHECK: %[[M:.+]] = graph.reduce_mean %[[X]] {axes = array<i64: 2>, keepdims}
  %4 = graph.reduce_mean %x {axes = array<i64: 2>, keepdims} : (tensor<2x1x4xf32>) -> tensor<2x1x1xf32>
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[R]], %[[M]]
  return %0, %1, %2, %3, %4 : tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x4xf32>, tensor<2x1x1xf32>
}

// -----

// reshape(reshape(x)) becomes one reshape, or x when the shapes round-trip.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>)
func.func @reshapes(%x: tensor<2x8x64xf32>) -> (tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %0 = graph.reshape %x : tensor<2x8x64xf32> to tensor<2x8x4x16xf32>
  // CHECK: %[[R:.+]] = graph.reshape %[[X]] : tensor<2x8x64xf32> to tensor<16x64xf32>
  %1 = graph.reshape %0 : tensor<2x8x4x16xf32> to tensor<16x64xf32>
  %2 = graph.reshape %0 : tensor<2x8x4x16xf32> to tensor<2x8x64xf32>
  %3 = graph.reshape %x : tensor<2x8x64xf32> to tensor<2x8x64xf32>
  // CHECK-NOT: graph.reshape
  // CHECK: return %[[R]], %[[X]], %[[X]]
  return %1, %2, %3 : tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// -----

// Identity transposes fold; two transposes compose into one or cancel.
// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>) {
  %0 = graph.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = graph.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %2 = graph.transpose %1 {permutation = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  // CHECK: %[[T:.+]] = graph.transpose %[[X]] {permutation = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %3 = graph.transpose %1 {permutation = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  // CHECK-NOT: graph.transpose
  // CHECK: return %[[X]], %[[X]], %[[T]]
  return %0, %2, %3 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>
}

// -----

// expand to the same type, concat of one operand and a full unit-step slice fold away; a
// reversing slice of the same type does not.
// CHECK-LABEL: func.func @shape_identities
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
func.func @shape_identities(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = graph.expand %x : tensor<2x8xf32> to tensor<2x8xf32>
  %1 = graph.concat %x {axis = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = graph.slice %x {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: %[[REV:.+]] = graph.slice %[[X]] {axes = array<i64: 1>, ends = array<i64: -1>, starts = array<i64: 7>, steps = array<i64: -1>}
  %3 = graph.slice %x {axes = array<i64: 1>, starts = array<i64: 7>, ends = array<i64: -1>, steps = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NOT: graph.expand
  // CHECK-NOT: graph.concat
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[REV]]
  return %0, %1, %2, %3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Constants are deduplicated through the dialect's constant materializer.
// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xf32>, tensor<2xf32>) {
  // CHECK: %[[C:.+]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  // CHECK-NOT: graph.constant
  %0 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: return %[[C]], %[[C]]
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// graph.linear_cross_entropy with a graph.linear_cross_entropy_vjp on the same operands later
// in the block: the forward's loss is the VJP's (chunk_rows may differ; it does not change
// the result).
// CHECK-LABEL: func.func @linear_loss_into_vjp
// CHECK-NOT: graph.linear_cross_entropy mean
// CHECK: %[[L:.+]], %[[DH:.+]], %[[DW:.+]] = graph.linear_cross_entropy_vjp mean
// CHECK: return %[[L]], %[[DH]], %[[DW]]
func.func @linear_loss_into_vjp(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>) {
  %l = graph.linear_cross_entropy mean %h, %w, %y {chunk_rows = 2 : i64, ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %l2, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  return %l, %dh, %dw : tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>
}

// -----

// Near misses: another weight, another ignore_index, another reduction, and a use of the
// forward's loss before the VJP (the seed computed from it) keep the forward op.
// CHECK-LABEL: func.func @linear_loss_near_misses
// CHECK-COUNT-4: graph.linear_cross_entropy mean
func.func @linear_loss_near_misses(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %w2: tensor<10x8xf32>, %y: tensor<4xi64>, %s: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>) {
  %a = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %la, %dha, %dwa = graph.linear_cross_entropy_vjp mean %h, %w2, %y, %s {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  %b = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = 0 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %lb, %dhb, %dwb = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -1 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  %c = graph.linear_cross_entropy mean %h, %w2, %y {ignore_index = 5 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %lc, %dhc, %dwc = graph.linear_cross_entropy_vjp sum %h, %w2, %y, %s {ignore_index = 5 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  %d = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = 7 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  %sd = graph.mul %d, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %ld, %dhd, %dwd = graph.linear_cross_entropy_vjp mean %h, %w, %y, %sd {ignore_index = 7 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>)
  return %a, %b, %c, %d, %dwa, %dwb, %dwc, %dwd : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>, tensor<10x8xf32>
}

// -----

// floor(floor(x)) folds to floor(x); an inclusive cumsum over a dimension of size 1 to its
// input, but not an exclusive one, nor one over a longer dimension.
// CHECK-LABEL: func.func @floor_and_cumsum
// CHECK-SAME: (%[[X:.+]]: tensor<4x1xf32>)
func.func @floor_and_cumsum(%x: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = graph.floor %x : tensor<4x1xf32>
  %1 = graph.floor %0 : tensor<4x1xf32>
  %2 = graph.cumsum %x {axis = 1 : i64} : tensor<4x1xf32>
  %3 = graph.cumsum %x {axis = 1 : i64, exclusive} : tensor<4x1xf32>
  %4 = graph.cumsum %x {axis = 0 : i64} : tensor<4x1xf32>
  // CHECK: %[[F:.+]] = graph.floor %[[X]]
  // CHECK-NOT: graph.floor
  // CHECK: %[[E:.+]] = graph.cumsum %[[X]] {axis = 1 : i64, exclusive}
  // CHECK: %[[C:.+]] = graph.cumsum %[[X]] {axis = 0 : i64}
  // CHECK: return %[[F]], %[[X]], %[[E]], %[[C]]
  return %1, %2, %3, %4 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}
