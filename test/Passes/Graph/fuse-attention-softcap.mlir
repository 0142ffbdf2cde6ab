// rp-fuse-attention: a logit soft-cap on the scaled scores, `tanh(s / c) * c` before the mask
// (Gemma-2's eager attention, as both exporters write it), becomes graph.attention's softcap;
// near misses (caps that differ, a cap after the mask, another function than tanh, a shared
// intermediate) stay as they are.
// RUN: rp-opt %s --rp-fuse-attention | FileCheck %s

// Gemma-2: matmul * scaling, / c, tanh, * c, + causal mask, softmax, matmul.
// CHECK-LABEL: func.func @gemma2
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK-NOT: graph.tanh
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @gemma2(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaling = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %s, %scaling : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %cap = graph.constant dense<50.0> : tensor<f32>
  %d = graph.div %t, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %c = graph.mul %h, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %c, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// The division written as a product by 1 / c, the cap's factor on the left, no scale and no
// mask: softcap 30 (the two constants agree within their f32 rounding).
// CHECK-LABEL: func.func @reciprocal_cap
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.000000e+00 : f64, softcap = 3.000000e+01 : f64}
func.func @reciprocal_cap(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %inv = graph.constant dense<0.0333333351> : tensor<f32>
  %d = graph.mul %inv, %s : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %cap = graph.constant dense<30.0> : tensor<f32>
  %c = graph.mul %cap, %h : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: divided by 50, multiplied by 30 (not a soft-cap): the product by 30 would be the
// scale of scores that are not a matmul, so nothing fuses.
// CHECK-LABEL: func.func @caps_differ
// CHECK-NOT: graph.attention
// CHECK: graph.tanh
// CHECK: graph.softmax
func.func @caps_differ(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c50 = graph.constant dense<50.0> : tensor<f32>
  %d = graph.div %s, %c50 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %c30 = graph.constant dense<30.0> : tensor<f32>
  %c = graph.mul %h, %c30 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: a non-positive cap (-50 / -50 is the same function, but the op takes c > 0 and
// the fusion does not rewrite the constants).
// CHECK-LABEL: func.func @negative_cap
// CHECK-NOT: graph.attention
// CHECK: graph.tanh
func.func @negative_cap(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = graph.constant dense<-50.0> : tensor<f32>
  %d = graph.div %s, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %c = graph.mul %h, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the cap after the mask (tanh of the masked scores) is not graph.attention's
// order, so nothing fuses.
// CHECK-LABEL: func.func @cap_after_mask
// CHECK-NOT: graph.attention
// CHECK: graph.tanh
func.func @cap_after_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, -1.0e9, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9, -1.0e9], [0.0, 0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %s, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = graph.constant dense<50.0> : tensor<f32>
  %d = graph.div %m, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %c = graph.mul %h, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: another squashing function (sigmoid) in the cap's place.
// CHECK-LABEL: func.func @sigmoid_not_tanh
// CHECK-NOT: graph.attention
// CHECK: graph.sigmoid
func.func @sigmoid_not_tanh(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = graph.constant dense<50.0> : tensor<f32>
  %d = graph.div %s, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.sigmoid %d : tensor<1x2x4x4xf32>
  %c = graph.mul %h, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the tanh's result has a second user (returned), so the capped scores are needed
// outside the attention and nothing fuses.
// CHECK-LABEL: func.func @tanh_shared
// CHECK-NOT: graph.attention
// CHECK: graph.tanh
func.func @tanh_shared(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %cap = graph.constant dense<50.0> : tensor<f32>
  %d = graph.div %s, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = graph.tanh %d : tensor<1x2x4x4xf32>
  %c = graph.mul %h, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %c {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %h : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}
