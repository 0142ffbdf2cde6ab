// rp-fuse-attention on causal masks that the ONNX importer left as runtime ops (its fold
// limit stops at 65536 elements, so every [S, S] mask past S = 256 stays unfolded): the mask
// is evaluated element by element from its small constant leaves (passes/Analysis/
// LazyElements.h) and fuses when it is exactly j <= i, or a sliding-window band j <= i,
// i - j < w (passes/Analysis/CausalMask.h); anything else stays unfused.
// RUN: rp-opt %s --rp-fuse-attention | FileCheck %s

// The TorchScript exporter's form: keep = (j <= i) from index constants, and'ed with an
// all-true padding mask of the batch, turned additive by where(keep, 0, -inf).
// CHECK-LABEL: func.func @torchscript_additive
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.compare
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @torchscript_additive(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %t = graph.constant dense<true> : tensor<i1>
  %jc = graph.constant dense<[[[[0, 1, 2, 3]]]]> : tensor<1x1x1x4xi64>
  %ic = graph.constant dense<[[[[0], [1], [2], [3]]]]> : tensor<1x1x4x1xi64>
  %le = graph.compare le, %jc, %ic : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %a = graph.logical_and %t, %le : (tensor<i1>, tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %pad = graph.constant dense<true> : tensor<1x1x1x4xi1>
  %keep = graph.logical_and %a, %pad : (tensor<1x1x4x4xi1>, tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<1xf32>
  %am = graph.where %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// The dynamo exporter's form: batch-sized index constants ([B, 1, S, 1] and [B, 1, 1, S], here
// B = 2), a batch-index comparison that is always true, finfo.min as the masked value; two
// layers read one boolean mask.
// CHECK-LABEL: func.func @dynamo_additive_two_layers
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x2x4x8xf32>
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x2x4x8xf32>
// CHECK-NOT: graph.softmax
func.func @dynamo_additive_two_layers(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) {
  %b0 = graph.constant dense<0> : tensor<2x1x4x1xi64>
  %b1 = graph.constant dense<0> : tensor<2x1x1x4xi64>
  %same = graph.compare eq, %b0, %b1 : (tensor<2x1x4x1xi64>, tensor<2x1x1x4xi64>) -> tensor<2x1x4x4xi1>
  %ic = graph.constant dense<[[[[0], [1], [2], [3]]], [[[0], [1], [2], [3]]]]> : tensor<2x1x4x1xi64>
  %jc = graph.constant dense<[[[[0, 1, 2, 3]]], [[[0, 1, 2, 3]]]]> : tensor<2x1x1x4xi64>
  %le = graph.compare le, %jc, %ic : (tensor<2x1x1x4xi64>, tensor<2x1x4x1xi64>) -> tensor<2x1x4x4xi1>
  %keep = graph.logical_and %same, %le : (tensor<2x1x4x4xi1>, tensor<2x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %kt0 = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %qs0 = graph.mul %q, %c : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %ks0 = graph.mul %kt0, %c : (tensor<2x2x8x4xf32>, tensor<f32>) -> tensor<2x2x8x4xf32>
  %s0 = graph.matmul %qs0, %ks0 : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %am0 = graph.where %keep, %zero, %min : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %m0 = graph.add %s0, %am0 : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p0 = graph.softmax %m0 {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %y0 = graph.matmul %p0, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %kt1 = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %qs1 = graph.mul %y0, %c : (tensor<2x2x4x8xf32>, tensor<f32>) -> tensor<2x2x4x8xf32>
  %ks1 = graph.mul %kt1, %c : (tensor<2x2x8x4xf32>, tensor<f32>) -> tensor<2x2x8x4xf32>
  %s1 = graph.matmul %qs1, %ks1 : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %am1 = graph.where %keep, %zero, %min : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %m1 = graph.add %s1, %am1 : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p1 = graph.softmax %m1 {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %y1 = graph.matmul %p1, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y0, %y1 : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
}

// The boolean form where(keep, scores, -1e9), keep from graph.range through reshapes.
// CHECK-LABEL: func.func @boolean_from_ranges
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64}
func.func @boolean_from_ranges(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %keep = graph.compare ge, %i, %j : (tensor<1x1x4x1xi64>, tensor<1x1x1x4xi64>) -> tensor<1x1x4x4xi1>
  %fill = graph.constant dense<-1.0e9> : tensor<f32>
  %m = graph.where %keep, %s, %fill : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// An additive mask computed arithmetically, (1 - float(keep)) * finfo.min, expanded to the
// heads: evaluated element by element (0 * finfo.min is -0, which counts as 0).
// CHECK-LABEL: func.func @additive_arithmetic_expanded
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64}
func.func @additive_arithmetic_expanded(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %keep = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %kf = graph.cast %keep : tensor<1x1x4x4xi1> to tensor<1x1x4x4xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %inv = graph.sub %one, %kf : (tensor<f32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %am = graph.mul %inv, %min : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %ame = graph.expand %am : tensor<1x1x4x4xf32> to tensor<1x2x4x4xf32>
  %m = graph.add %ame, %s : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// The same in bf16: the evaluation rounds each op's result to bf16.
// CHECK-LABEL: func.func @additive_arithmetic_bf16
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64} : (tensor<1x2x4x8xbf16>
func.func @additive_arithmetic_bf16(%q: tensor<1x2x4x8xbf16>, %k: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xbf16>) -> tensor<1x2x8x4xbf16>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xbf16>, tensor<1x2x8x4xbf16>) -> tensor<1x2x4x4xbf16>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %keep = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %kf = graph.cast %keep : tensor<1x1x4x4xi1> to tensor<1x1x4x4xbf16>
  %one = graph.constant dense<1.0> : tensor<bf16>
  %inv = graph.sub %one, %kf : (tensor<bf16>, tensor<1x1x4x4xbf16>) -> tensor<1x1x4x4xbf16>
  %min = graph.constant dense<-1.0e30> : tensor<bf16>
  %am = graph.mul %inv, %min : (tensor<1x1x4x4xbf16>, tensor<bf16>) -> tensor<1x1x4x4xbf16>
  %m = graph.add %s, %am : (tensor<1x2x4x4xbf16>, tensor<1x1x4x4xbf16>) -> tensor<1x2x4x4xbf16>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xbf16>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  return %y : tensor<1x2x4x8xbf16>
}

// Older Hugging Face masks: triu(full(finfo.min), 1) as an additive mask, transposed twice.
// CHECK-LABEL: func.func @additive_triu
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64}
func.func @additive_triu(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %full = graph.expand %min : tensor<f32> to tensor<4x4xf32>
  %up = graph.trilu %full {k = 1 : i64, upper} : tensor<4x4xf32>
  %t1 = graph.transpose %up {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %t2 = graph.transpose %t1 {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = graph.add %s, %t2 : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: j < i - 1 hides the diagonal and its left neighbour too.
// CHECK-LABEL: func.func @off_by_one_window
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @off_by_one_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %one = graph.constant dense<1> : tensor<i64>
  %im1 = graph.sub %i, %one : (tensor<1x1x4x1xi64>, tensor<i64>) -> tensor<1x1x4x1xi64>
  %keep = graph.compare lt, %j, %im1 : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<1xf32>
  %am = graph.where %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// A sliding window of 2 keys (j <= i and j > i - 2, transformers' sliding_window_overlay),
// narrower than the sequence: graph.attention with window 2.
// CHECK-LABEL: func.func @banded_window
// CHECK-NOT: graph.softmax
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.000000e+00 : f64, window = 2 : i64}
func.func @banded_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %two = graph.constant dense<2> : tensor<i64>
  %le = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %im2 = graph.sub %i, %two : (tensor<1x1x4x1xi64>, tensor<i64>) -> tensor<1x1x4x1xi64>
  %gt = graph.compare gt, %j, %im2 : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %keep = graph.logical_and %le, %gt : (tensor<1x1x4x4xi1>, tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<1xf32>
  %am = graph.where %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the causal mask and'ed with a padding mask that is a graph input: unknown at compile time.
// CHECK-LABEL: func.func @padding_mask_input
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @padding_mask_input(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %le = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %keep = graph.logical_and %le, %pad : (tensor<1x1x4x4xi1>, tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<1xf32>
  %am = graph.where %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the anti-causal mask j >= i.
// CHECK-LABEL: func.func @upper_triangle
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @upper_triangle(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %keep = graph.compare ge, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<1xf32>
  %am = graph.where %keep, %zero, %ninf : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: where(keep, 0, -1): the hidden scores are lowered by 1, not masked.
// CHECK-LABEL: func.func @keep_zero_not_masked
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @keep_zero_not_masked(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %keep = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %low = graph.constant dense<-1.0> : tensor<f32>
  %am = graph.where %keep, %zero, %low : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: causal for the first sequence of the batch only (the second one's last key has position 4): the leading dims the mask varies along are checked too.
// CHECK-LABEL: func.func @batch_dependent
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @batch_dependent(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %ic = graph.constant dense<[[[[0], [1], [2], [3]]], [[[0], [1], [2], [3]]]]> : tensor<2x1x4x1xi64>
  %jc = graph.constant dense<[[[[0, 1, 2, 3]]], [[[0, 1, 2, 4]]]]> : tensor<2x1x1x4xi64>
  %keep = graph.compare le, %jc, %ic : (tensor<2x1x1x4xi64>, tensor<2x1x4x1xi64>) -> tensor<2x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %am = graph.where %keep, %zero, %ninf : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %m = graph.add %s, %am : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}
