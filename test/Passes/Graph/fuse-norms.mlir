// rp-fuse-norms: exported RMSNorm and LayerNorm chains become graph.rms_norm / graph.layer_norm.
// RUN: rp-opt %s --rp-fuse-norms --split-input-file | FileCheck %s

// RMSNorm as PyTorch exports it: pow 2, mean over the last axis, + eps, sqrt, div; weight on the left.
// CHECK-LABEL: func.func @rms_pow_div
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[W:.+]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.rms_norm %[[X]], %[[W]] {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_pow_div(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = graph.sqrt %ve : tensor<2x8x1xf32>
  %n = graph.div %x, %s : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %y = graph.mul %w, %n : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// x * x, eps on the left of the add, reciprocal then mul (reciprocal first); weight on the right.
// CHECK-LABEL: func.func @rms_mul_reciprocal
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[W:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.rms_norm %[[X]], %[[W]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @rms_mul_reciprocal(%x: tensor<4x32xf32>, %w: tensor<32xf32>) -> tensor<4x32xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<1xf32>
  %sq = graph.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %eps, %ms : (tensor<1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %r = graph.reciprocal %s : tensor<4x1xf32>
  %n = graph.mul %r, %x : (tensor<4x1xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %n, %w : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// torch.rsqrt exported as Div(1, Sqrt(.)), then x * rsqrt.
// CHECK-LABEL: func.func @rms_rsqrt_div_one
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[W:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.rms_norm %[[X]], %[[W]] {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64}
// CHECK-NEXT: return %[[Y]]
func.func @rms_rsqrt_div_one(%x: tensor<4x32xf32>, %w: tensor<32xf32>) -> tensor<4x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<1xf32>
  %sq = graph.pow %x, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %r = graph.div %one, %s : (tensor<1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.mul %x, %r : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Hugging Face computes the norm in f32: cast up, chain, cast back, times the bf16 weight.
// CHECK-LABEL: func.func @rms_cast_f32
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xbf16>, %[[W:.+]]: tensor<64xbf16>)
// CHECK-NEXT: %[[Y:.+]] = graph.rms_norm %[[X]], %[[W]] {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<2x8x64xbf16>, tensor<64xbf16>) -> tensor<2x8x64xbf16>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: graph.cast
func.func @rms_cast_f32(%x: tensor<2x8x64xbf16>, %w: tensor<64xbf16>) -> tensor<2x8x64xbf16> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %xf = graph.cast %x : tensor<2x8x64xbf16> to tensor<2x8x64xf32>
  %sq = graph.pow %xf, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = graph.sqrt %ve : tensor<2x8x1xf32>
  %r = graph.reciprocal %s : tensor<2x8x1xf32>
  %n = graph.mul %xf, %r : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %nb = graph.cast %n : tensor<2x8x64xf32> to tensor<2x8x64xbf16>
  %y = graph.mul %w, %nb : (tensor<64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x64xbf16>
  return %y : tensor<2x8x64xbf16>
}

// -----

// Near miss: the cast back goes to f16, not to x's bf16.
// CHECK-LABEL: func.func @rms_cast_mismatch
// CHECK-NOT: graph.rms_norm
// CHECK: graph.cast %{{.+}} : tensor<4x32xf32> to tensor<4x32xf16>
func.func @rms_cast_mismatch(%x: tensor<4x32xbf16>, %w: tensor<32xf16>) -> tensor<4x32xf16> {
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %xf = graph.cast %x : tensor<4x32xbf16> to tensor<4x32xf32>
  %sq = graph.mul %xf, %xf : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %xf, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %nh = graph.cast %n : tensor<4x32xf32> to tensor<4x32xf16>
  %y = graph.mul %nh, %w : (tensor<4x32xf16>, tensor<32xf16>) -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

// Near miss: the mean is over axis 1, not the last axis.
// CHECK-LABEL: func.func @rms_axis_not_last
// CHECK-NOT: graph.rms_norm
// CHECK: graph.reduce_mean %{{.+}} {axes = array<i64: 1>, keepdims}
func.func @rms_axis_not_last(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x1x64xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1x64xf32>, tensor<f32>) -> tensor<2x1x64xf32>
  %s = graph.sqrt %ve : tensor<2x1x64xf32>
  %n = graph.div %x, %s : (tensor<2x8x64xf32>, tensor<2x1x64xf32>) -> tensor<2x8x64xf32>
  %y = graph.mul %w, %n : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// Near miss: eps is not a splat.
// CHECK-LABEL: func.func @rms_eps_not_splat
// CHECK-NOT: graph.rms_norm
// CHECK: graph.sqrt
func.func @rms_eps_not_splat(%x: tensor<2x32xf32>, %w: tensor<32xf32>) -> tensor<2x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<[[1.0e-06], [2.0e-06]]> : tensor<2x1xf32>
  %sq = graph.pow %x, %two : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// Near miss: the mean square is also returned (an intermediate with a second user).
// CHECK-LABEL: func.func @rms_second_user
// CHECK-NOT: graph.rms_norm
// CHECK: %[[MS:.+]] = graph.reduce_mean
// CHECK: return %{{.+}}, %[[MS]]
func.func @rms_second_user(%x: tensor<2x32xf32>, %w: tensor<32xf32>) -> (tensor<2x32xf32>, tensor<2x1xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y, %ms : tensor<2x32xf32>, tensor<2x1xf32>
}

// -----

// Near miss: the exponent is 3, not 2.
// CHECK-LABEL: func.func @rms_wrong_exponent
// CHECK-NOT: graph.rms_norm
// CHECK: graph.pow
func.func @rms_wrong_exponent(%x: tensor<2x32xf32>, %w: tensor<32xf32>) -> tensor<2x32xf32> {
  %three = graph.constant dense<3.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %x, %three : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// Near miss: eps is zero (graph.rms_norm needs a positive epsilon).
// CHECK-LABEL: func.func @rms_eps_zero
// CHECK-NOT: graph.rms_norm
// CHECK: graph.sqrt
func.func @rms_eps_zero(%x: tensor<2x32xf32>, %w: tensor<32xf32>) -> tensor<2x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<0.0> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// Near miss: the weight is [1, 32], not x.shape[-1:].
// CHECK-LABEL: func.func @rms_weight_shape
// CHECK-NOT: graph.rms_norm
// CHECK: graph.div
func.func @rms_weight_shape(%x: tensor<2x32xf32>, %w: tensor<1x32xf32>) -> tensor<2x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %x, %two : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<1x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// Near miss: the square is of another value than the numerator.
// CHECK-LABEL: func.func @rms_other_value
// CHECK-NOT: graph.rms_norm
// CHECK: graph.div
func.func @rms_other_value(%x: tensor<2x32xf32>, %z: tensor<2x32xf32>, %w: tensor<32xf32>) -> tensor<2x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %sq = graph.pow %z, %two : (tensor<2x32xf32>, tensor<f32>) -> tensor<2x32xf32>
  %ms = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<2x32xf32>) -> tensor<2x1xf32>
  %ve = graph.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = graph.sqrt %ve : tensor<2x1xf32>
  %n = graph.div %x, %s : (tensor<2x32xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  %y = graph.mul %w, %n : (tensor<32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// LayerNorm as opsets < 17 export it: mean, sub, pow 2, mean, + eps, sqrt, div, * gamma, + beta.
// CHECK-LABEL: func.func @layer_norm_bias
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[G:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_bias(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %d = graph.sub %x, %mu : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %sq = graph.pow %d, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %ve = graph.add %var, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = graph.sqrt %ve : tensor<2x8x1xf32>
  %n = graph.div %d, %s : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %m = graph.mul %n, %g : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %y = graph.add %b, %m : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// LayerNorm without bias; d * d and reciprocal; gamma on the left.
// CHECK-LABEL: func.func @layer_norm_no_bias
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.layer_norm %[[X]], %[[G]] {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_no_bias(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.mul %d, %d : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %r = graph.reciprocal %s : tensor<4x1xf32>
  %n = graph.mul %d, %r : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %g, %n : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// LayerNorm written by hand (GPT-NeoX or Cohere style modules, no LayerNormalization node):
// x - mean computed twice, once squared for the variance and once for the numerator.
// CHECK-LABEL: func.func @layer_norm_by_hand
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>, %[[G:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_by_hand(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %d1 = graph.sub %x, %mu : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %sq = graph.pow %d1, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %d2 = graph.sub %x, %mu : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %ve = graph.add %var, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = graph.sqrt %ve : tensor<2x8x1xf32>
  %n = graph.div %d2, %s : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
  %m = graph.mul %n, %g : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %y = graph.add %m, %b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// Cohere's form by hand: rsqrt as reciprocal(sqrt), the square as d * d, no bias, the weight
// on the left.
// CHECK-LABEL: func.func @layer_norm_by_hand_rsqrt
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.layer_norm %[[X]], %[[G]] {axis = 1 : i64
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_by_hand_rsqrt(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d1 = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.mul %d1, %d1 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %r = graph.reciprocal %s : tensor<4x1xf32>
  %d2 = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %n = graph.mul %d2, %r : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %g, %n : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the variance is of x minus another statistic (the max), not of the numerator's
// x - mean: no norm fuses.
// CHECK-LABEL: func.func @layer_norm_by_hand_other_center
// CHECK-NOT: graph.layer_norm
// CHECK-NOT: graph.rms_norm
// CHECK: graph.sqrt
func.func @layer_norm_by_hand_other_center(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %mx = graph.reduce_max %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d1 = graph.sub %x, %mx : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d1, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %d2 = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %n = graph.div %d2, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the squared copy of x - mean is also returned (it must survive): no norm fuses.
// CHECK-LABEL: func.func @layer_norm_by_hand_copy_used
// CHECK-NOT: graph.layer_norm
// CHECK-NOT: graph.rms_norm
// CHECK: graph.sqrt
func.func @layer_norm_by_hand_copy_used(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d1 = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d1, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %d2 = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %n = graph.div %d2, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y, %d1 : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Two LayerNorms of one input whose chains TorchScript merged (GPT-NeoX's parallel attention
// and MLP norms written by hand): one normalised value, two scales and biases; both fuse.
// CHECK-LABEL: func.func @layer_norms_sharing_statistics
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G1:.+]]: tensor<32xf32>, %[[B1:.+]]: tensor<32xf32>, %[[G2:.+]]: tensor<32xf32>, %[[B2:.+]]: tensor<32xf32>)
// CHECK-DAG: %[[Y1:.+]] = graph.layer_norm %[[X]], %[[G1]], %[[B1]] {axis = 1 : i64
// CHECK-DAG: %[[Y2:.+]] = graph.layer_norm %[[X]], %[[G2]], %[[B2]] {axis = 1 : i64
// CHECK-NOT: graph.reduce_mean
// CHECK: return %[[Y1]], %[[Y2]]
func.func @layer_norms_sharing_statistics(%x: tensor<4x32xf32>, %g1: tensor<32xf32>, %b1: tensor<32xf32>, %g2: tensor<32xf32>, %b2: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %m1 = graph.mul %n, %g1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y1 = graph.add %m1, %b1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %m2 = graph.mul %n, %g2 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y2 = graph.add %m2, %b2 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y1, %y2 : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Near miss: the shared normalised value is also returned: neither norm fuses.
// CHECK-LABEL: func.func @layer_norms_sharing_returned
// CHECK-NOT: graph.layer_norm
// CHECK: graph.sqrt
func.func @layer_norms_sharing_returned(%x: tensor<4x32xf32>, %g1: tensor<32xf32>, %g2: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %m1 = graph.mul %n, %g1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %m2 = graph.mul %n, %g2 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %m1, %m2, %n : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Near miss: the mean is also returned; the layer norm is not fused (an RMSNorm of x - mean is).
// CHECK-LABEL: func.func @layer_norm_mean_second_user
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<32xf32>)
// CHECK-NOT: graph.layer_norm
// CHECK: %[[MU:.+]] = graph.reduce_mean %[[X]]
// CHECK: %[[D:.+]] = graph.sub %[[X]], %[[MU]]
// CHECK: graph.rms_norm %[[D]], %[[G]] {axis = 1 : i64
// CHECK-NOT: graph.layer_norm
func.func @layer_norm_mean_second_user(%x: tensor<4x32xf32>, %g: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x1xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = graph.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %y, %mu : tensor<4x32xf32>, tensor<4x1xf32>
}

// -----

// Near miss for the bias only: beta has another shape, so the add stays after a bias-free norm.
// CHECK-LABEL: func.func @layer_norm_bias_shape
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<4x32xf32>)
// CHECK-NEXT: %[[N:.+]] = graph.layer_norm %[[X]], %[[G]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: %[[Y:.+]] = graph.add %[[N]], %[[B]]
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm_bias_shape(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %mu = graph.reduce_mean %x {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %mu : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %sq = graph.pow %d, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %var = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = graph.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = graph.sqrt %ve : tensor<4x1xf32>
  %n = graph.div %d, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %m = graph.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y = graph.add %m, %b : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
