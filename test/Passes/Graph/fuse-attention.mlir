// rp-fuse-attention: eager attention (matmul/transpose/scale/mask/softmax/matmul) becomes
// graph.attention; near misses stay.
// RUN: rp-opt %s --rp-fuse-attention | FileCheck %s

// Scale by mul, additive -inf causal mask; the intermediates are removed.
// CHECK-LABEL: func.func @additive_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.matmul
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @additive_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %t, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Scale by div, where(tril, scores, -1e9) mask, and HF repeat_kv on k and v (2 kv heads
// for 4 query heads): grouped-query attention on the unrepeated tensors.
// CHECK-LABEL: func.func @where_mask_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x3x2xf32>, %[[K:.+]]: tensor<1x2x3x2xf32>, %[[V:.+]]: tensor<1x2x3x2xf32>)
// CHECK-NOT: graph.expand
// CHECK: graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 5.000000e-01 : f64} : (tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32>
func.func @where_mask_gqa(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %k1 = graph.reshape %k : tensor<1x2x3x2xf32> to tensor<1x2x1x3x2xf32>
  %k2 = graph.expand %k1 : tensor<1x2x1x3x2xf32> to tensor<1x2x2x3x2xf32>
  %k3 = graph.reshape %k2 : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %v1 = graph.reshape %v : tensor<1x2x3x2xf32> to tensor<1x2x1x3x2xf32>
  %v2 = graph.expand %v1 : tensor<1x2x1x3x2xf32> to tensor<1x2x2x3x2xf32>
  %v3 = graph.reshape %v2 : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %kt = graph.transpose %k3 {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x2xf32>) -> tensor<1x4x2x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x3x3xf32>
  %c = graph.constant dense<2.0> : tensor<f32>
  %t = graph.div %s, %c : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %tril = graph.constant dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
  %fill = graph.constant dense<-1.0e9> : tensor<f32>
  %m = graph.where %tril, %t, %fill : (tensor<3x3xi1>, tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %y = graph.matmul %p, %v3 : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %y : tensor<1x4x3x2xf32>
}

// No mask (bidirectional attention), scale on the left of the mul.
// CHECK-LABEL: func.func @no_mask
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f64}
func.func @no_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %c, %s : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %t {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// The diagonal alone is a sliding window of 1 (each position sees itself).
// CHECK-LABEL: func.func @diagonal_mask
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64, window = 1 : i64}
func.func @diagonal_mask(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %mask = graph.constant dense<[[0.0, -1.0e9], [-1.0e9, 0.0]]> : tensor<2x2xf32>
  %m = graph.add %s, %mask : (tensor<1x1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// Near miss: the mask is not causal (it hides row 0's diagonal, and row 0 sees key 1), so it
// stays as it is.
// CHECK-LABEL: func.func @not_causal_mask
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @not_causal_mask(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %mask = graph.constant dense<[[-1.0e9, 0.0], [0.0, 0.0]]> : tensor<2x2xf32>
  %m = graph.add %s, %mask : (tensor<1x1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// Near miss: the probabilities have a second user (returned for inspection).
// CHECK-LABEL: func.func @probabilities_second_user
// CHECK-NOT: graph.attention
// CHECK: return
func.func @probabilities_second_user(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y, %p : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// Near miss: the scale is not a constant.
// CHECK-LABEL: func.func @scale_not_constant
// CHECK-NOT: graph.attention
// CHECK: return
func.func @scale_not_constant(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>, %c: tensor<f32>) -> tensor<1x1x2x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %t = graph.mul %s, %c : (tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %t {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

// After canonicalization the key's head split and transpose compose into one transpose
// [0, 2, 3, 1] of the [B, S, H, D] projection; the fusion restores k = transpose [0, 2, 1, 3].
// CHECK-LABEL: func.func @composed_key_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[X:.+]]: tensor<1x4x2x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK: %[[K:.+]] = graph.transpose %[[X]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: graph.attention %[[Q]], %[[K]], %[[V]]
// CHECK-NOT: graph.softmax
func.func @composed_key_transpose(%q: tensor<1x2x4x8xf32>, %x: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %t {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// torch.onnx's SDPA decomposition (both exporters): q and k^T each scaled by sqrt(scale), k^T
// flattened to [B * H, D, S] from repeat_kv's expanded [B, Hkv, G, S, D], a batch-sized
// [B, 1, S, S] causal mask, and the NaN guard after the softmax.
// CHECK-LABEL: func.func @sdpa_decomposition_gqa
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x3x2xf32>, %[[K:.+]]: tensor<2x2x3x2xf32>, %[[V:.+]]: tensor<2x2x3x2xf32>)
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.where
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x3x2xf32>, tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>) -> tensor<2x4x3x2xf32>
// CHECK-NEXT: return %[[Y]]
func.func @sdpa_decomposition_gqa(%q: tensor<2x4x3x2xf32>, %k: tensor<2x2x3x2xf32>, %v: tensor<2x2x3x2xf32>) -> tensor<2x4x3x2xf32> {
  %k1 = graph.reshape %k : tensor<2x2x3x2xf32> to tensor<2x2x1x3x2xf32>
  %k2 = graph.expand %k1 : tensor<2x2x1x3x2xf32> to tensor<2x2x2x3x2xf32>
  %v1 = graph.reshape %v : tensor<2x2x3x2xf32> to tensor<2x2x1x3x2xf32>
  %v2 = graph.expand %v1 : tensor<2x2x1x3x2xf32> to tensor<2x2x2x3x2xf32>
  %v3 = graph.reshape %v2 : tensor<2x2x2x3x2xf32> to tensor<2x4x3x2xf32>
  %kf = graph.reshape %k2 : tensor<2x2x2x3x2xf32> to tensor<8x3x2xf32>
  %kft = graph.transpose %kf {permutation = array<i64: 0, 2, 1>} : (tensor<8x3x2xf32>) -> tensor<8x2x3xf32>
  %kt = graph.reshape %kft : tensor<8x2x3xf32> to tensor<2x4x2x3xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %qs = graph.mul %q, %c : (tensor<2x4x3x2xf32>, tensor<f32>) -> tensor<2x4x3x2xf32>
  %ks = graph.mul %c, %kt : (tensor<f32>, tensor<2x4x2x3xf32>) -> tensor<2x4x2x3xf32>
  %s = graph.matmul %qs, %ks : (tensor<2x4x3x2xf32>, tensor<2x4x2x3xf32>) -> tensor<2x4x3x3xf32>
  %mask = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]], [[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %m = graph.add %s, %mask : (tensor<2x4x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x4x3x3xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x4x3x3xf32>
  %eq = graph.compare eq, %p, %p : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xi1>
  %nan = graph.logical_not %eq : tensor<2x4x3x3xi1>
  %zero = graph.constant dense<0.0> : tensor<1xf32>
  %g = graph.where %nan, %zero, %p : (tensor<2x4x3x3xi1>, tensor<1xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %y = graph.matmul %g, %v3 : (tensor<2x4x3x3xf32>, tensor<2x4x3x2xf32>) -> tensor<2x4x3x2xf32>
  return %y : tensor<2x4x3x2xf32>
}

// The same without grouped heads: the flattened k^T of a [B, H, S, D] key.
// CHECK-LABEL: func.func @sdpa_decomposition_mha
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x3x2xf32>, %[[K:.+]]: tensor<1x2x3x2xf32>, %[[V:.+]]: tensor<1x2x3x2xf32>)
// CHECK: graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64}
func.func @sdpa_decomposition_mha(%q: tensor<1x2x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32> {
  %kf = graph.reshape %k : tensor<1x2x3x2xf32> to tensor<2x3x2xf32>
  %kft = graph.transpose %kf {permutation = array<i64: 0, 2, 1>} : (tensor<2x3x2xf32>) -> tensor<2x2x3xf32>
  %kt = graph.reshape %kft : tensor<2x2x3xf32> to tensor<1x2x2x3xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %qs = graph.mul %q, %c : (tensor<1x2x3x2xf32>, tensor<f32>) -> tensor<1x2x3x2xf32>
  %ks = graph.mul %kt, %c : (tensor<1x2x2x3xf32>, tensor<f32>) -> tensor<1x2x2x3xf32>
  %s = graph.matmul %qs, %ks : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
  %mask = graph.constant dense<[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %m = graph.add %s, %mask : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// Near miss: one batch's slice of the [B, 1, S, S] mask is not causal (a padding mask).
// CHECK-LABEL: func.func @batch_mask_one_slice_not_causal
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @batch_mask_one_slice_not_causal(%q: tensor<2x1x2x2xf32>, %k: tensor<2x1x2x2xf32>, %v: tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %mask = graph.constant dense<[[[[0.0, -1.0e9], [0.0, 0.0]]], [[[0.0, -1.0e9], [-1.0e9, 0.0]]]]> : tensor<2x1x2x2xf32>
  %m = graph.add %s, %mask : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x1x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  return %y : tensor<2x1x2x2xf32>
}

// Near miss: the guard replaces NaN by 1, not 0: it changes the result, so it stays.
// CHECK-LABEL: func.func @guard_nonzero_fill
// CHECK-NOT: graph.attention
// CHECK: graph.where
func.func @guard_nonzero_fill(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %eq = graph.compare eq, %p, %p : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xi1>
  %nan = graph.logical_not %eq : tensor<1x1x2x2xi1>
  %one = graph.constant dense<1.0> : tensor<f32>
  %g = graph.where %nan, %one, %p : (tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = graph.matmul %g, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// Near miss: the guarded probabilities have a third user (returned), so they stay.
// CHECK-LABEL: func.func @guarded_probabilities_second_user
// CHECK-NOT: graph.attention
// CHECK: return
func.func @guarded_probabilities_second_user(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %eq = graph.compare eq, %p, %p : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xi1>
  %nan = graph.logical_not %eq : tensor<1x1x2x2xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %g = graph.where %nan, %zero, %p : (tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = graph.matmul %g, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y, %p : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// Near miss: the flattened transpose swaps the batch-head and sequence dims, not S and D.
// CHECK-LABEL: func.func @flat_transpose_wrong_dims
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @flat_transpose_wrong_dims(%q: tensor<1x2x2x2xf32>, %k: tensor<1x2x2x2xf32>, %v: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %kf = graph.reshape %k : tensor<1x2x2x2xf32> to tensor<2x2x2xf32>
  %kft = graph.transpose %kf {permutation = array<i64: 1, 0, 2>} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %kt = graph.reshape %kft : tensor<2x2x2xf32> to tensor<1x2x2x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x2x2x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// Multi-query attention (Falcon): a key and value of one head, broadcast over the query's four
// heads by the matmuls, become grouped-query attention with one kv head.
// CHECK-LABEL: func.func @multi_query
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x3x2xf32>, %[[K:.+]]: tensor<1x1x3x2xf32>, %[[V:.+]]: tensor<1x1x3x2xf32>)
// CHECK: graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 5.000000e-01 : f64} : (tensor<1x4x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x4x3x2xf32>
func.func @multi_query(%q: tensor<1x4x3x2xf32>, %k: tensor<1x1x3x2xf32>, %v: tensor<1x1x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x3x2xf32>) -> tensor<1x1x2x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x3x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x4x3x3xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %mask = graph.constant dense<[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %m = graph.add %t, %mask : (tensor<1x4x3x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %y = graph.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x1x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %y : tensor<1x4x3x2xf32>
}

// Near miss: a one-head key with a four-head value (the heads do not pair up).
// CHECK-LABEL: func.func @multi_query_key_only
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @multi_query_key_only(%q: tensor<1x4x3x2xf32>, %k: tensor<1x1x3x2xf32>, %v: tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x3x2xf32>) -> tensor<1x1x2x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x3x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x4x3x3xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %y = graph.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %y : tensor<1x4x3x2xf32>
}
