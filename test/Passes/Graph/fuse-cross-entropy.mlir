// rp-fuse-cross-entropy: log-softmax + gather + masked mean/sum becomes graph.cross_entropy.
// RUN: rp-opt %s --rp-fuse-cross-entropy --split-input-file | FileCheck %s

// The importer's NegativeLogLikelihoodLoss(LogSoftmax(z, 1), t, ignore_index=-100, mean).
// CHECK-LABEL: func.func @nll_ignore_mean
// CHECK-SAME: (%[[Z:.+]]: tensor<16x256xf32>, %[[T:.+]]: tensor<16xi64>)
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy mean %[[Z]], %[[T]] {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
// CHECK-NOT: graph.gather_elements
func.func @nll_ignore_mean(%z: tensor<16x256xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %ign_c = graph.constant dense<-100> : tensor<i64>
  %izero = graph.constant dense<0> : tensor<i64>
  %fzero = graph.constant dense<0.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<16x256xf32>
  %ign = graph.compare eq, %t, %ign_c : (tensor<16xi64>, tensor<i64>) -> tensor<16xi1>
  %keep = graph.logical_not %ign : tensor<16xi1>
  %safe = graph.where %keep, %t, %izero : (tensor<16xi1>, tensor<16xi64>, tensor<i64>) -> tensor<16xi64>
  %idx = graph.reshape %safe : tensor<16xi64> to tensor<16x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
  %nl = graph.neg %g1 : tensor<16xf32>
  %l = graph.where %keep, %nl, %fzero : (tensor<16xi1>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %sum = graph.reduce_sum %l {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  %k = graph.cast %keep : tensor<16xi1> to tensor<16xf32>
  %cnt = graph.reduce_sum %k {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  %loss = graph.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The same with extra dimensions ([N, C, d1] logits) and reduction='sum'.
// CHECK-LABEL: func.func @nll_ignore_sum_3d
// CHECK-SAME: (%[[Z:.+]]: tensor<2x16x8xf32>, %[[T:.+]]: tensor<2x8xi32>)
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy sum %[[Z]], %[[T]] {ignore_index = 3 : i64} : (tensor<2x16x8xf32>, tensor<2x8xi32>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @nll_ignore_sum_3d(%z: tensor<2x16x8xf32>, %t: tensor<2x8xi32>) -> tensor<f32> {
  %ign_c = graph.constant dense<3> : tensor<i32>
  %izero = graph.constant dense<0> : tensor<i32>
  %fzero = graph.constant dense<0.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<2x16x8xf32>
  %ign = graph.compare eq, %t, %ign_c : (tensor<2x8xi32>, tensor<i32>) -> tensor<2x8xi1>
  %keep = graph.logical_not %ign : tensor<2x8xi1>
  %safe = graph.where %keep, %t, %izero : (tensor<2x8xi1>, tensor<2x8xi32>, tensor<i32>) -> tensor<2x8xi32>
  %idx = graph.reshape %safe : tensor<2x8xi32> to tensor<2x1x8xi32>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<2x16x8xf32>, tensor<2x1x8xi32>) -> tensor<2x1x8xf32>
  %g1 = graph.reshape %g : tensor<2x1x8xf32> to tensor<2x8xf32>
  %nl = graph.neg %g1 : tensor<2x8xf32>
  %l = graph.where %keep, %nl, %fzero : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %sum = graph.reduce_sum %l {axes = array<i64: 0, 1>} : (tensor<2x8xf32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// The mask as `where ign, 0, x` (no logical_not on the selects); the count still casts keep.
// CHECK-LABEL: func.func @nll_where_ignored
// CHECK-SAME: (%[[Z:.+]]: tensor<4x10xf32>, %[[T:.+]]: tensor<4xi64>)
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy mean %[[Z]], %[[T]] {ignore_index = -1 : i64}
// CHECK-NEXT: return %[[L]]
func.func @nll_where_ignored(%z: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %ign_c = graph.constant dense<-1> : tensor<i64>
  %izero = graph.constant dense<0> : tensor<i64>
  %fzero = graph.constant dense<0.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<4x10xf32>
  %ign = graph.compare eq, %ign_c, %t : (tensor<i64>, tensor<4xi64>) -> tensor<4xi1>
  %safe = graph.where %ign, %izero, %t : (tensor<4xi1>, tensor<i64>, tensor<4xi64>) -> tensor<4xi64>
  %idx = graph.reshape %safe : tensor<4xi64> to tensor<4x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  %g1 = graph.reshape %g : tensor<4x1xf32> to tensor<4xf32>
  %l = graph.where %ign, %fzero, %g1 : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %sum = graph.reduce_sum %l {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  %nsum = graph.neg %sum : tensor<f32>
  %keep = graph.logical_not %ign : tensor<4xi1>
  %k = graph.cast %keep : tensor<4xi1> to tensor<4xf32>
  %cnt = graph.reduce_sum %k {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  %loss = graph.div %nsum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The importer's NLL without ignore_index: the sum divided by the number of labels.
// CHECK-LABEL: func.func @nll_mean_no_ignore
// CHECK-SAME: (%[[Z:.+]]: tensor<16x256xf32>, %[[T:.+]]: tensor<16xi64>)
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy mean %[[Z]], %[[T]] {ignore_index = -9223372036854775808 : i64}
// CHECK-NEXT: return %[[L]]
func.func @nll_mean_no_ignore(%z: tensor<16x256xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %n = graph.constant dense<16.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<16x256xf32>
  %idx = graph.reshape %t : tensor<16xi64> to tensor<16x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
  %nl = graph.neg %g1 : tensor<16xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  %loss = graph.div %sum, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// -log(softmax(z, 1)).gather(1, t[:, None]).mean(), the negation after the mean.
// CHECK-LABEL: func.func @softmax_log_reduce_mean
// CHECK-SAME: (%[[Z:.+]]: tensor<8x32xf32>, %[[T:.+]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy mean %[[Z]], %[[T]] {ignore_index = -9223372036854775808 : i64}
// CHECK-NEXT: return %[[L]]
func.func @softmax_log_reduce_mean(%z: tensor<8x32xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %p = graph.softmax %z {axis = 1 : i64} : tensor<8x32xf32>
  %lp = graph.log %p : tensor<8x32xf32>
  %idx = graph.reshape %t : tensor<8xi64> to tensor<8x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %g1 = graph.reshape %g : tensor<8x1xf32> to tensor<8xf32>
  %m = graph.reduce_mean %g1 {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  %loss = graph.neg %m : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Labels given as [N, 1] and the gathered [N, 1] summed directly: the labels are reshaped.
// CHECK-LABEL: func.func @labels_with_class_dim
// CHECK-SAME: (%[[Z:.+]]: tensor<8x32xf32>, %[[T:.+]]: tensor<8x1xi64>)
// CHECK-NEXT: %[[T1:.+]] = graph.reshape %[[T]] : tensor<8x1xi64> to tensor<8xi64>
// CHECK-NEXT: %[[L:.+]] = graph.cross_entropy sum %[[Z]], %[[T1]] {ignore_index = -9223372036854775808 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @labels_with_class_dim(%z: tensor<8x32xf32>, %t: tensor<8x1xi64>) -> tensor<f32> {
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<8x32xf32>
  %g = graph.gather_elements %lp, %t {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %nl = graph.neg %g : tensor<8x1xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0, 1>} : (tensor<8x1xf32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// Near miss: the class axis is the last of [N, T, C] (graph.cross_entropy takes axis 1).
// CHECK-LABEL: func.func @class_axis_last
// CHECK-NOT: graph.cross_entropy
// CHECK: graph.log_softmax %{{.+}} {axis = 2 : i64}
func.func @class_axis_last(%z: tensor<2x8x32xf32>, %t: tensor<2x8xi64>) -> tensor<f32> {
  %n = graph.constant dense<16.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 2 : i64} : tensor<2x8x32xf32>
  %idx = graph.reshape %t : tensor<2x8xi64> to tensor<2x8x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x1xi64>) -> tensor<2x8x1xf32>
  %g1 = graph.reshape %g : tensor<2x8x1xf32> to tensor<2x8xf32>
  %nl = graph.neg %g1 : tensor<2x8xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0, 1>} : (tensor<2x8xf32>) -> tensor<f32>
  %loss = graph.div %sum, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: the log-probabilities are also returned (an intermediate with a second user).
// CHECK-LABEL: func.func @log_softmax_second_user
// CHECK-NOT: graph.cross_entropy
// CHECK: %[[LP:.+]] = graph.log_softmax
// CHECK: return %{{.+}}, %[[LP]]
func.func @log_softmax_second_user(%z: tensor<8x32xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x32xf32>) {
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<8x32xf32>
  %idx = graph.reshape %t : tensor<8xi64> to tensor<8x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %g1 = graph.reshape %g : tensor<8x1xf32> to tensor<8xf32>
  %nl = graph.neg %g1 : tensor<8xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %sum, %lp : tensor<f32>, tensor<8x32xf32>
}

// -----

// Near miss for the mean: it divides by 15, not by the 16 labels; only the sum fuses.
// CHECK-LABEL: func.func @wrong_count
// CHECK-SAME: (%[[Z:.+]]: tensor<16x256xf32>, %[[T:.+]]: tensor<16xi64>)
// CHECK: %[[N:.+]] = graph.constant dense<1.500000e+01>
// CHECK-NEXT: %[[S:.+]] = graph.cross_entropy sum %[[Z]], %[[T]] {ignore_index = -9223372036854775808 : i64}
// CHECK-NEXT: %[[L:.+]] = graph.div %[[S]], %[[N]]
// CHECK-NEXT: return %[[L]]
func.func @wrong_count(%z: tensor<16x256xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %n = graph.constant dense<15.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<16x256xf32>
  %idx = graph.reshape %t : tensor<16xi64> to tensor<16x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
  %nl = graph.neg %g1 : tensor<16xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  %loss = graph.div %sum, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: masked losses averaged with reduce_mean (divides by all labels, not the kept).
// CHECK-LABEL: func.func @masked_reduce_mean
// CHECK-NOT: graph.cross_entropy
// CHECK: graph.reduce_mean
func.func @masked_reduce_mean(%z: tensor<16x256xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %ign_c = graph.constant dense<-100> : tensor<i64>
  %izero = graph.constant dense<0> : tensor<i64>
  %fzero = graph.constant dense<0.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<16x256xf32>
  %ign = graph.compare eq, %t, %ign_c : (tensor<16xi64>, tensor<i64>) -> tensor<16xi1>
  %keep = graph.logical_not %ign : tensor<16xi1>
  %safe = graph.where %keep, %t, %izero : (tensor<16xi1>, tensor<16xi64>, tensor<i64>) -> tensor<16xi64>
  %idx = graph.reshape %safe : tensor<16xi64> to tensor<16x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
  %nl = graph.neg %g1 : tensor<16xf32>
  %l = graph.where %keep, %nl, %fzero : (tensor<16xi1>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %loss = graph.reduce_mean %l {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Near miss: the losses are masked but the labels are gathered unmasked.
// CHECK-LABEL: func.func @mask_on_loss_only
// CHECK-NOT: graph.cross_entropy
// CHECK: graph.gather_elements
func.func @mask_on_loss_only(%z: tensor<16x256xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %ign_c = graph.constant dense<-100> : tensor<i64>
  %fzero = graph.constant dense<0.0> : tensor<f32>
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<16x256xf32>
  %ign = graph.compare eq, %t, %ign_c : (tensor<16xi64>, tensor<i64>) -> tensor<16xi1>
  %keep = graph.logical_not %ign : tensor<16xi1>
  %idx = graph.reshape %t : tensor<16xi64> to tensor<16x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
  %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
  %nl = graph.neg %g1 : tensor<16xf32>
  %l = graph.where %keep, %nl, %fzero : (tensor<16xi1>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %sum = graph.reduce_sum %l {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// Near miss: no negation (the log-likelihood, not its negative).
// CHECK-LABEL: func.func @no_negation
// CHECK-NOT: graph.cross_entropy
// CHECK: graph.reduce_sum
func.func @no_negation(%z: tensor<8x32xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<8x32xf32>
  %idx = graph.reshape %t : tensor<8xi64> to tensor<8x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %g1 = graph.reshape %g : tensor<8x1xf32> to tensor<8xf32>
  %sum = graph.reduce_sum %g1 {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// Near miss: the sum keeps its dimension (the result is [1], not a scalar).
// CHECK-LABEL: func.func @keepdims_sum
// CHECK-NOT: graph.cross_entropy
// CHECK: graph.reduce_sum %{{.+}} {axes = array<i64: 0>, keepdims}
func.func @keepdims_sum(%z: tensor<8x32xf32>, %t: tensor<8xi64>) -> tensor<1xf32> {
  %lp = graph.log_softmax %z {axis = 1 : i64} : tensor<8x32xf32>
  %idx = graph.reshape %t : tensor<8xi64> to tensor<8x1xi64>
  %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %g1 = graph.reshape %g : tensor<8x1xf32> to tensor<8xf32>
  %nl = graph.neg %g1 : tensor<8xf32>
  %sum = graph.reduce_sum %nl {axes = array<i64: 0>, keepdims} : (tensor<8xf32>) -> tensor<1xf32>
  return %sum : tensor<1xf32>
}
