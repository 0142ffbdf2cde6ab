// rp-fuse-linear-cross-entropy: an LM head's matmul and its cross-entropy become one
// graph.linear_cross_entropy (positive: both exporters' untied and tied heads, the
// transpose_b form, a 2-D hidden state, sum and i32 labels, a [V] head bias either side of
// the add; logits scaled by a one-element constant (Cohere's logit_scale, Granite's
// logits_scaling; the scale moves onto the head's input and bias); negative: a non-[V]
// addend, biased logits used elsewhere, a per-vocabulary scale, scaled logits used elsewhere,
// soft-capped logits, a weight in [H, V] layout, logits used elsewhere, transpose_a, a
// batched weight, rank-3 logits).
// RUN: rp-opt %s --rp-fuse-linear-cross-entropy --split-input-file | FileCheck %s

// The exporters' untied head (lm_head.weight [V, H]) after the importer.
// CHECK-LABEL: func.func @untied
// CHECK-SAME: (%[[H:.+]]: tensor<2x16x32xf32>, %[[Y:.+]]: tensor<2x16xi64>)
// CHECK: %[[W:.+]] = graph.load_param @lm_head.weight
// CHECK: %[[Y2:.+]] = graph.reshape %[[Y]] : tensor<2x16xi64> to tensor<32xi64>
// CHECK-NEXT: %[[H2:.+]] = graph.reshape %[[H]] : tensor<2x16x32xf32> to tensor<32x32xf32>
// CHECK-NEXT: %[[L:.+]] = graph.linear_cross_entropy mean %[[H2]], %[[W]], %[[Y2]] {ignore_index = -100 : i64} : (tensor<32x32xf32>, tensor<264x32xf32>, tensor<32xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
// CHECK-NOT: graph.matmul
// CHECK-NOT: graph.transpose
graph.param @lm_head.weight trainable : tensor<264x32xf32>
func.func @untied(%h: tensor<2x16x32xf32>, %y: tensor<2x16xi64>) -> tensor<f32> {
  %w = graph.load_param @lm_head.weight : tensor<264x32xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<264x32xf32>) -> tensor<32x264xf32>
  %z = graph.matmul %h, %wt : (tensor<2x16x32xf32>, tensor<32x264xf32>) -> tensor<2x16x264xf32>
  %z2 = graph.reshape %z : tensor<2x16x264xf32> to tensor<32x264xf32>
  %y2 = graph.reshape %y : tensor<2x16xi64> to tensor<32xi64>
  %l = graph.cross_entropy mean %z2, %y2 {ignore_index = -100 : i64} : (tensor<32x264xf32>, tensor<32xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A tied head reads the embedding, which the gather reads too: the transpose goes, the
// embedding stays.
// CHECK-LABEL: func.func @tied
// CHECK: %[[E:.+]] = graph.load_param @model.embed_tokens.weight
// CHECK: graph.gather %[[E]]
// CHECK: graph.linear_cross_entropy mean %{{.+}}, %[[E]], %{{.+}} {ignore_index = -100 : i64} : (tensor<32x32xf32>, tensor<264x32xf32>, tensor<32xi64>) -> tensor<f32>
// CHECK-NOT: graph.transpose
graph.param @model.embed_tokens.weight trainable : tensor<264x32xf32>
func.func @tied(%ids: tensor<2x16xi64>, %y: tensor<32xi64>) -> tensor<f32> {
  %e = graph.load_param @model.embed_tokens.weight : tensor<264x32xf32>
  %h = graph.gather %e, %ids {axis = 0 : i64} : (tensor<264x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
  %et = graph.transpose %e {permutation = array<i64: 1, 0>} : (tensor<264x32xf32>) -> tensor<32x264xf32>
  %z = graph.matmul %h, %et : (tensor<2x16x32xf32>, tensor<32x264xf32>) -> tensor<2x16x264xf32>
  %z2 = graph.reshape %z : tensor<2x16x264xf32> to tensor<32x264xf32>
  %l = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<32x264xf32>, tensor<32xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// transpose_b, a 2-D hidden state (no reshape), sum, i32 labels, bf16.
// CHECK-LABEL: func.func @transpose_b_sum
// CHECK-SAME: (%[[H:.+]]: tensor<8x16xbf16>, %[[W:.+]]: tensor<100x16xbf16>, %[[Y:.+]]: tensor<8xi32>)
// CHECK-NEXT: %[[L:.+]] = graph.linear_cross_entropy sum %[[H]], %[[W]], %[[Y]] {ignore_index = 3 : i64} : (tensor<8x16xbf16>, tensor<100x16xbf16>, tensor<8xi32>) -> tensor<bf16>
// CHECK-NEXT: return %[[L]]
func.func @transpose_b_sum(%h: tensor<8x16xbf16>, %w: tensor<100x16xbf16>, %y: tensor<8xi32>) -> tensor<bf16> {
  %z = graph.matmul %h, %w {transpose_b} : (tensor<8x16xbf16>, tensor<100x16xbf16>) -> tensor<8x100xbf16>
  %l = graph.cross_entropy sum %z, %y {ignore_index = 3 : i64} : (tensor<8x100xbf16>, tensor<8xi32>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// A transposed weight read elsewhere keeps its transpose.
// CHECK-LABEL: func.func @transpose_shared
// CHECK: %[[T:.+]] = graph.transpose
// CHECK: graph.linear_cross_entropy
// CHECK: return %{{.+}}, %[[T]]
func.func @transpose_shared(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<16x100xf32>) {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<8x16xf32>, tensor<16x100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %z, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %wt : tensor<f32>, tensor<16x100xf32>
}

// -----

// A head with a bias (Phi's lm_head), as the dynamo exporter adds it (logits + bias) and as
// TorchScript does (bias + logits), 3-D with the reshape after the add: the bias becomes the
// fused op's bias operand.
// CHECK-LABEL: func.func @bias
// CHECK-SAME: (%[[H:.+]]: tensor<8x16xf32>, %[[W:.+]]: tensor<100x16xf32>, %[[B:.+]]: tensor<100xf32>, %[[Y:.+]]: tensor<8xi64>)
// CHECK-NEXT: %[[L:.+]] = graph.linear_cross_entropy mean %[[H]], %[[W]], %[[Y]] bias %[[B]] {ignore_index = -100 : i64} : (tensor<8x16xf32>, tensor<100x16xf32>, tensor<8xi64>, tensor<100xf32>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @bias(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %b: tensor<100xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<8x16xf32>, tensor<16x100xf32>) -> tensor<8x100xf32>
  %zb = graph.add %z, %b : (tensor<8x100xf32>, tensor<100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zb, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @bias_first
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x16xf32>, %[[W:.+]]: tensor<100x16xf32>, %[[B:.+]]: tensor<100xf32>, %[[Y:.+]]: tensor<8xi64>)
// CHECK: %[[H2:.+]] = graph.reshape %[[H]] : tensor<2x4x16xf32> to tensor<8x16xf32>
// CHECK-NEXT: %[[L:.+]] = graph.linear_cross_entropy mean %[[H2]], %[[W]], %[[Y]] bias %[[B]]
// CHECK-NOT: graph.add
// CHECK-NOT: graph.matmul
func.func @bias_first(%h: tensor<2x4x16xf32>, %w: tensor<100x16xf32>, %b: tensor<100xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<2x4x16xf32>, tensor<16x100xf32>) -> tensor<2x4x100xf32>
  %zb = graph.add %b, %z : (tensor<100xf32>, tensor<2x4x100xf32>) -> tensor<2x4x100xf32>
  %z2 = graph.reshape %zb : tensor<2x4x100xf32> to tensor<8x100xf32>
  %l = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: an addend that is not a [V] bias (a per-row [8, 100] term) stays unfused.
// CHECK-LABEL: func.func @full_addend
// CHECK: graph.matmul
// CHECK: graph.add
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @full_addend(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %b: tensor<8x100xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<8x16xf32>, tensor<16x100xf32>) -> tensor<8x100xf32>
  %zb = graph.add %z, %b : (tensor<8x100xf32>, tensor<8x100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zb, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: the biased logits are also used elsewhere.
// CHECK-LABEL: func.func @bias_logits_used
// CHECK: graph.add
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @bias_logits_used(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %b: tensor<100xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<8x100xf32>) {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<8x16xf32>, tensor<16x100xf32>) -> tensor<8x100xf32>
  %zb = graph.add %z, %b : (tensor<8x100xf32>, tensor<100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zb, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %zb : tensor<f32>, tensor<8x100xf32>
}

// -----

// Cohere's `lm_head(h) * logit_scale` as imported (the scale before the reshape, either
// operand order): the scale multiplies the [N, H] hidden state, no [N, V] value remains.
// CHECK-LABEL: func.func @scaled
// CHECK-SAME: (%[[H:.+]]: tensor<2x4x16xf32>, %[[W:.+]]: tensor<100x16xf32>, %[[Y:.+]]: tensor<8xi64>)
// CHECK: %[[S:.+]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[H2:.+]] = graph.reshape %[[H]] : tensor<2x4x16xf32> to tensor<8x16xf32>
// CHECK-NEXT: %[[HS:.+]] = graph.mul %[[H2]], %[[S]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[L:.+]] = graph.linear_cross_entropy mean %[[HS]], %[[W]], %[[Y]] {ignore_index = -100 : i64}
// CHECK-NEXT: return %[[L]]
// CHECK-NOT: x100xf32>
func.func @scaled(%h: tensor<2x4x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %s = graph.constant dense<0.5> : tensor<f32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<2x4x16xf32>, tensor<16x100xf32>) -> tensor<2x4x100xf32>
  %zs = graph.mul %s, %z : (tensor<f32>, tensor<2x4x100xf32>) -> tensor<2x4x100xf32>
  %z2 = graph.reshape %zs : tensor<2x4x100xf32> to tensor<8x100xf32>
  %l = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Granite's `logits / logits_scaling` after the reshape, a biased head and a [1, 1] divisor:
// the hidden state and the bias are divided (the divisor as a rank-0 tensor).
// CHECK-LABEL: func.func @divided_biased
// CHECK-SAME: (%[[H:.+]]: tensor<8x16xf32>, %[[W:.+]]: tensor<100x16xf32>, %[[B:.+]]: tensor<100xf32>, %[[Y:.+]]: tensor<8xi64>)
// CHECK: %[[C:.+]] = graph.constant dense<4.000000e+00> : tensor<1x1xf32>
// CHECK: %[[C0:.+]] = graph.reshape %[[C]] : tensor<1x1xf32> to tensor<f32>
// CHECK-NEXT: %[[HS:.+]] = graph.div %[[H]], %[[C0]] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
// CHECK: %[[BS:.+]] = graph.div %[[B]], %{{.+}} : (tensor<100xf32>, tensor<f32>) -> tensor<100xf32>
// CHECK-NEXT: graph.linear_cross_entropy mean %[[HS]], %[[W]], %[[Y]] bias %[[BS]] {ignore_index = -100 : i64}
// CHECK-NOT: x100xf32>
func.func @divided_biased(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %b: tensor<100xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %c = graph.constant dense<4.0> : tensor<1x1xf32>
  %z = graph.matmul %h, %w {transpose_b} : (tensor<8x16xf32>, tensor<100x16xf32>) -> tensor<8x100xf32>
  %zb = graph.add %b, %z : (tensor<100xf32>, tensor<8x100xf32>) -> tensor<8x100xf32>
  %zs = graph.div %zb, %c : (tensor<8x100xf32>, tensor<1x1xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zs, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: a scale per vocabulary entry ([V]: not a scale of the hidden state).
// CHECK-LABEL: func.func @vocab_scale
// CHECK: graph.mul
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @vocab_scale(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %s = graph.constant dense<0.5> : tensor<100xf32>
  %z = graph.matmul %h, %w {transpose_b} : (tensor<8x16xf32>, tensor<100x16xf32>) -> tensor<8x100xf32>
  %zs = graph.mul %z, %s : (tensor<8x100xf32>, tensor<100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zs, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: the unscaled logits are also returned (they must be computed anyway).
// CHECK-LABEL: func.func @scaled_logits_used
// CHECK: graph.mul
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @scaled_logits_used(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<8x100xf32>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.matmul %h, %w {transpose_b} : (tensor<8x16xf32>, tensor<100x16xf32>) -> tensor<8x100xf32>
  %zs = graph.mul %z, %s : (tensor<8x100xf32>, tensor<f32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zs, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %z : tensor<f32>, tensor<8x100xf32>
}

// -----

// Negative: soft-capped logits (Gemma 2's cap * tanh(z / cap)).
// CHECK-LABEL: func.func @soft_capped
// CHECK: graph.tanh
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @soft_capped(%h: tensor<8x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %cap = graph.constant dense<30.0> : tensor<f32>
  %z = graph.matmul %h, %w {transpose_b} : (tensor<8x16xf32>, tensor<100x16xf32>) -> tensor<8x100xf32>
  %zd = graph.div %z, %cap : (tensor<8x100xf32>, tensor<f32>) -> tensor<8x100xf32>
  %zt = graph.tanh %zd : tensor<8x100xf32>
  %zc = graph.mul %zt, %cap : (tensor<8x100xf32>, tensor<f32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %zc, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: a weight in [H, V] layout (no transpose).
// CHECK-LABEL: func.func @hv_layout
// CHECK: graph.matmul
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @hv_layout(%h: tensor<8x16xf32>, %w: tensor<16x100xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %z = graph.matmul %h, %w : (tensor<8x16xf32>, tensor<16x100xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %z, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: the logits are also a result (used elsewhere).
// CHECK-LABEL: func.func @logits_used
// CHECK: graph.matmul
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @logits_used(%h: tensor<2x4x16xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> (tensor<f32>, tensor<2x4x100xf32>) {
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %z = graph.matmul %h, %wt : (tensor<2x4x16xf32>, tensor<16x100xf32>) -> tensor<2x4x100xf32>
  %z2 = graph.reshape %z : tensor<2x4x100xf32> to tensor<8x100xf32>
  %l = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l, %z : tensor<f32>, tensor<2x4x100xf32>
}

// -----

// Negative: transpose_a (the hidden state read as [H, N]).
// CHECK-LABEL: func.func @transpose_a
// CHECK: graph.matmul
// CHECK-NOT: graph.linear_cross_entropy
func.func @transpose_a(%h: tensor<16x8xf32>, %w: tensor<100x16xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %z = graph.matmul %h, %w {transpose_a, transpose_b} : (tensor<16x8xf32>, tensor<100x16xf32>) -> tensor<8x100xf32>
  %l = graph.cross_entropy mean %z, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: a batched weight [B, V, H] (one head per batch element).
// CHECK-LABEL: func.func @batched_weight
// CHECK: graph.matmul
// CHECK-NOT: graph.linear_cross_entropy
func.func @batched_weight(%h: tensor<2x4x16xf32>, %w: tensor<2x100x16xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  %z = graph.matmul %h, %w {transpose_b} : (tensor<2x4x16xf32>, tensor<2x100x16xf32>) -> tensor<2x4x100xf32>
  %z2 = graph.reshape %z : tensor<2x4x100xf32> to tensor<8x100xf32>
  %l = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<8x100xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative: rank-3 logits [N, C, d] (the class axis 1 is not the head's output axis).
// CHECK-LABEL: func.func @rank3_logits
// CHECK: graph.matmul
// CHECK: graph.cross_entropy
// CHECK-NOT: graph.linear_cross_entropy
func.func @rank3_logits(%h: tensor<2x4x16xf32>, %w: tensor<100x16xf32>, %y: tensor<2x100xi64>) -> tensor<f32> {
  %z = graph.matmul %h, %w {transpose_b} : (tensor<2x4x16xf32>, tensor<100x16xf32>) -> tensor<2x4x100xf32>
  %l = graph.cross_entropy mean %z, %y {ignore_index = -100 : i64} : (tensor<2x4x100xf32>, tensor<2x100xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
