// rp-fuse-attention: a value head size Dv other than the query/key head size D (multi-head
// latent attention: DeepSeek-V2/V3) fuses with its own Dv; the result is [B, Hq, S, Dv].
// Near misses (a value of another sequence length or batch, a key head size other than the
// query's) stay as they are.
// RUN: rp-opt %s --rp-fuse-attention | FileCheck %s

// D = 12, Dv = 8, 2 kv heads for 4 query heads (HF repeat_kv on k and v), causal.
// CHECK-LABEL: func.func @latent
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x4x12xf32>, %[[K:.+]]: tensor<1x2x4x12xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK-NOT: graph.softmax
// CHECK: %[[Y:.+]] = graph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : (tensor<1x4x4x12xf32>, tensor<1x2x4x12xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @latent(%q: tensor<1x4x4x12xf32>, %k: tensor<1x2x4x12xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %k1 = graph.reshape %k : tensor<1x2x4x12xf32> to tensor<1x2x1x4x12xf32>
  %k2 = graph.expand %k1 : tensor<1x2x1x4x12xf32> to tensor<1x2x2x4x12xf32>
  %k3 = graph.reshape %k2 : tensor<1x2x2x4x12xf32> to tensor<1x4x4x12xf32>
  %v1 = graph.reshape %v : tensor<1x2x4x8xf32> to tensor<1x2x1x4x8xf32>
  %v2 = graph.expand %v1 : tensor<1x2x1x4x8xf32> to tensor<1x2x2x4x8xf32>
  %v3 = graph.reshape %v2 : tensor<1x2x2x4x8xf32> to tensor<1x4x4x8xf32>
  %kt = graph.transpose %k3 {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x4x4x12xf32>) -> tensor<1x4x12x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x4x12xf32>, tensor<1x4x12x4xf32>) -> tensor<1x4x4x4xf32>
  %c = graph.constant dense<0.25> : tensor<f32>
  %t = graph.mul %s, %c : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %t, %mask : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x4x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %y = graph.matmul %p, %v3 : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %y : tensor<1x4x4x8xf32>
}

// torch.onnx's SDPA decomposition (both exporters, DeepSeek-V3's sdpa attention): q and k^T
// each scaled by sqrt(scale), k^T flattened through [B * H, D, S], the NaN guard; Dv = 8 > D
// = 4.
// CHECK-LABEL: func.func @sdpa_decomposition
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
func.func @sdpa_decomposition(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kf = graph.reshape %k : tensor<1x2x4x4xf32> to tensor<2x4x4xf32>
  %kft = graph.transpose %kf {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %kt = graph.reshape %kft : tensor<2x4x4xf32> to tensor<1x2x4x4xf32>
  %c = graph.constant dense<0.5> : tensor<f32>
  %qs = graph.mul %q, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %ks = graph.mul %kt, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %s = graph.matmul %qs, %ks : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %mask = graph.constant dense<[[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %m = graph.add %s, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %eq = graph.compare eq, %p, %p : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %nan = graph.logical_not %eq : tensor<1x2x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %g = graph.where %nan, %zero, %p : (tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = graph.matmul %g, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the value has 2 positions for 4 keys (a cross-sequence product, not attention).
// CHECK-LABEL: func.func @value_positions_differ
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @value_positions_differ(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x2x8xf32>, %v: tensor<1x2x2x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x2x8xf32>) -> tensor<1x2x8x2xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x4x2xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x2x4x2xf32>
  %y = graph.matmul %p, %v : (tensor<1x2x4x2xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the value's heads are not the key's (4 against 2, no repeat_kv to undo).
// CHECK-LABEL: func.func @value_heads_differ
// CHECK-NOT: graph.attention
// CHECK: graph.softmax
func.func @value_heads_differ(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32> {
  %k1 = graph.reshape %k : tensor<1x2x4x8xf32> to tensor<1x2x1x4x8xf32>
  %k2 = graph.expand %k1 : tensor<1x2x1x4x8xf32> to tensor<1x2x2x4x8xf32>
  %k3 = graph.reshape %k2 : tensor<1x2x2x4x8xf32> to tensor<1x4x4x8xf32>
  %kt = graph.transpose %k3 {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x4x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x4x4xf32>
  %p = graph.softmax %s {axis = 3 : i64} : tensor<1x4x4x4xf32>
  %y = graph.matmul %p, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %y : tensor<1x4x4x6xf32>
}
