// rp-fuse-attention on sliding-window causal masks (passes/Analysis/CausalMask.h): a folded
// additive or boolean band j <= i, i - j < w (transformers' sliding_window_causal mask: Mistral,
// Gemma-2/3, GPT-OSS's sliding layers) becomes graph.attention with `window = w`; a window
// that covers the sequence is plain causal; a band that does not end at the diagonal, or
// whose window differs in one row or one batch row, stays unfused. The unfolded forms are in
// fuse-attention-unfolded-mask.mlir, the sinks form with a window below.
// RUN: rp-opt %s --rp-fuse-attention=sinks=true | FileCheck %s

// An additive band of 2 keys over 5 positions (finfo.min outside).
// CHECK-LABEL: func.func @additive_window_2
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64, window = 2 : i64}
func.func @additive_window_2(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// A window of 1: each position sees only itself.
// CHECK-LABEL: func.func @additive_window_1
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64, window = 1 : i64}
func.func @additive_window_1(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, -3.40282347E+38, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// A window of S - 1 = 4: only the last row misses a key (key 0).
// CHECK-LABEL: func.func @window_4_of_5
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64, window = 4 : i64}
func.func @window_4_of_5(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// A window of S = 5 is the causal mask: no window attribute.
// CHECK-LABEL: func.func @window_covers_sequence
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64}
// CHECK-NOT: window
func.func @window_covers_sequence(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// Near miss: a band of 2 keys that ends left of the diagonal (i - 3 < j < i): not a window.
// CHECK-LABEL: func.func @band_below_diagonal
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @band_below_diagonal(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[-3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0, -3.40282347E+38]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// Near miss: a window of 2 except row 2, which sees 3 keys (off by one against the values).
// CHECK-LABEL: func.func @window_off_by_one_in_a_row
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @window_off_by_one_in_a_row(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// Near miss: a window of 3 with a hole in the last row (key 3 of row 4 masked): the last
// row's count (2) is no window of the other rows.
// CHECK-LABEL: func.func @window_hole
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @window_hole(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x5x5xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, -3.40282347E+38, 0.0]]]]> : tensor<1x1x5x5xf32>
  %m = graph.add %s, %mask : (tensor<1x2x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x5x5xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %y : tensor<1x2x5x8xf32>
}

// Near miss: a [B, 1, S, S] mask whose batch rows have different windows (2 and 3).
// CHECK-LABEL: func.func @windows_differ_per_batch
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @windows_differ_per_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>) -> tensor<2x1x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x1x4x8xf32>) -> tensor<2x1x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<2x1x4x8xf32>, tensor<2x1x8x4xf32>) -> tensor<2x1x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %m = graph.add %s, %mask : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x1x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<2x1x4x4xf32>, tensor<2x1x4x8xf32>) -> tensor<2x1x4x8xf32>
  return %y : tensor<2x1x4x8xf32>
}

// GPT-OSS's sliding layers: a boolean band of 3 keys (where(keep, scores, -inf)) under the
// sink softmax: graph.attention with both the sinks and the window.
// CHECK-LABEL: func.func @boolean_window_with_sinks
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>, %[[S:[^:]+]]: tensor<4xf32>)
// CHECK-NOT: graph.softmax
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] sinks %[[S]] {causal, scale = 2.500000e-01 : f64, window = 3 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @boolean_window_with_sinks(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %sinks: tensor<4xf32>) -> tensor<1x4x4x8xf32> {
  %k1 = graph.reshape %k : tensor<1x2x4x8xf32> to tensor<1x2x1x4x8xf32>
  %k2 = graph.expand %k1 : tensor<1x2x1x4x8xf32> to tensor<1x2x2x4x8xf32>
  %k3 = graph.reshape %k2 : tensor<1x2x2x4x8xf32> to tensor<1x4x4x8xf32>
  %v1 = graph.reshape %v : tensor<1x2x4x8xf32> to tensor<1x2x1x4x8xf32>
  %v2 = graph.expand %v1 : tensor<1x2x1x4x8xf32> to tensor<1x2x2x4x8xf32>
  %v3 = graph.reshape %v2 : tensor<1x2x2x4x8xf32> to tensor<1x4x4x8xf32>
  %kt = graph.transpose %k3 {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x4x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %keep = graph.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [false, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %m = graph.where %keep, %t, %ninf : (tensor<1x1x4x4xi1>, tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %r = graph.reshape %sinks : tensor<4xf32> to tensor<1x4x1x1xf32>
  %col = graph.expand %r : tensor<1x4x1x1xf32> to tensor<1x4x4x1xf32>
  %x = graph.concat %m, %col {axis = 3 : i64} : (tensor<1x4x4x4xf32>, tensor<1x4x4x1xf32>) -> tensor<1x4x4x5xf32>
  %max = graph.reduce_max %x {axes = array<i64: 3>, keepdims} : (tensor<1x4x4x5xf32>) -> tensor<1x4x4x1xf32>
  %sh = graph.sub %x, %max : (tensor<1x4x4x5xf32>, tensor<1x4x4x1xf32>) -> tensor<1x4x4x5xf32>
  %p = graph.softmax %sh {axis = 3 : i64} : tensor<1x4x4x5xf32>
  %ps = graph.slice %p {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x4x4x5xf32>) -> tensor<1x4x4x4xf32>
  %y = graph.matmul %ps, %v3 : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %y : tensor<1x4x4x8xf32>
}
