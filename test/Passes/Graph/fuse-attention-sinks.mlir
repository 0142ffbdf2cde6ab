// rp-fuse-attention with sinks: transformers' eager GPT-OSS attention (the sink column
// concatenated after the masked, scaled scores, the row max subtracted, softmax over S + 1,
// the sink column sliced off) becomes graph.attention with a sinks operand; near misses stay,
// and with the option off (it is on by default) nothing with a sink column is fused.
// RUN: rp-opt %s --rp-fuse-attention | FileCheck %s
// RUN: rp-opt %s --rp-fuse-attention=sinks=true | FileCheck %s
// RUN: rp-opt %s --rp-fuse-attention=sinks=false | FileCheck %s --check-prefix=OFF

// The form both exporters import to (GPT-OSS's full-attention layers; grouped-query, 4 query
// heads on 2 key/value heads), with an additive causal mask.
// CHECK-LABEL: func.func @gpt_oss
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>, %[[S:[^:]+]]: tensor<4xf32>)
// CHECK-NOT: graph.softmax
// CHECK-NOT: graph.concat
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] sinks %[[S]] {causal, scale = 2.500000e-01 : f64} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @gpt_oss
// OFF: graph.softmax
// OFF-NOT: graph.attention
func.func @gpt_oss(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %sinks: tensor<4xf32>) -> tensor<1x4x4x8xf32> {
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
  %mask = graph.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %t, %mask : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x4x4x4xf32>
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

// Without the row-max subtraction and without a mask: also fused (not causal).
// CHECK-LABEL: func.func @no_shift
// CHECK: graph.attention %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} sinks %{{[^ ]+}} {scale = 1.000000e+00 : f64}
func.func @no_shift(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %sinks: tensor<2xf32>) -> tensor<1x2x3x4xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.reshape %sinks : tensor<2xf32> to tensor<1x2x1x1xf32>
  %col = graph.expand %r : tensor<1x2x1x1xf32> to tensor<1x2x3x1xf32>
  %x = graph.concat %s, %col {axis = 3 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  %p = graph.softmax %x {axis = 3 : i64} : tensor<1x2x3x4xf32>
  %ps = graph.slice %p {axes = array<i64: 3>, ends = array<i64: 3>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.matmul %ps, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// Near miss: the slice keeps the sink column and drops the first key (starts 1): not a sink.
// CHECK-LABEL: func.func @slice_drops_first_key
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @slice_drops_first_key(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %sinks: tensor<2xf32>) -> tensor<1x2x3x4xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.reshape %sinks : tensor<2xf32> to tensor<1x2x1x1xf32>
  %col = graph.expand %r : tensor<1x2x1x1xf32> to tensor<1x2x3x1xf32>
  %x = graph.concat %s, %col {axis = 3 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  %p = graph.softmax %x {axis = 3 : i64} : tensor<1x2x3x4xf32>
  %ps = graph.slice %p {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.matmul %ps, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// Near miss: the extra column is not one value per head (a per-row tensor): not a sink.
// CHECK-LABEL: func.func @column_per_row
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @column_per_row(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %col: tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %x = graph.concat %s, %col {axis = 3 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  %p = graph.softmax %x {axis = 3 : i64} : tensor<1x2x3x4xf32>
  %ps = graph.slice %p {axes = array<i64: 3>, ends = array<i64: 3>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.matmul %ps, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// Near miss: the subtracted max is over the wrong axis (not a per-row shift): not fused.
// CHECK-LABEL: func.func @max_wrong_axis
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @max_wrong_axis(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %sinks: tensor<2xf32>) -> tensor<1x2x3x4xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %r = graph.reshape %sinks : tensor<2xf32> to tensor<1x2x1x1xf32>
  %col = graph.expand %r : tensor<1x2x1x1xf32> to tensor<1x2x3x1xf32>
  %x = graph.concat %s, %col {axis = 3 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  %max = graph.reduce_max %x {axes = array<i64: 2>, keepdims} : (tensor<1x2x3x4xf32>) -> tensor<1x2x1x4xf32>
  %sh = graph.sub %x, %max : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x3x4xf32>
  %p = graph.softmax %sh {axis = 3 : i64} : tensor<1x2x3x4xf32>
  %ps = graph.slice %p {axes = array<i64: 3>, ends = array<i64: 3>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.matmul %ps, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}
