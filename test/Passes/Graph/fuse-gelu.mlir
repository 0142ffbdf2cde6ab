// rp-fuse-gelu: exported GELU formulas become graph.gelu exact / tanh.
// RUN: rp-opt %s --rp-fuse-gelu --split-input-file | FileCheck %s

// PyTorch's symbolic for F.gelu: (x * (erf(x / sqrt(2)) + 1)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf_div
// CHECK-SAME: (%[[X:.+]]: tensor<16x256xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu exact %[[X]] : tensor<16x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_div(%x: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a = graph.div %x, %sqrt2 : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
  %e = graph.erf %a : tensor<16x256xf32>
  %p = graph.add %e, %one : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
  %m = graph.mul %x, %p : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = graph.mul %m, %half : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

// -----

// (0.5 * x) * (1 + erf(0.7071... * x)): multiplication by 1/sqrt(2), other association and order.
// CHECK-LABEL: func.func @gelu_erf_mul
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu exact %[[X]] : tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_mul(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %c = graph.constant dense<0.707106769> : tensor<1xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %hx = graph.mul %half, %x : (tensor<f32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %a = graph.mul %c, %x : (tensor<1xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %e = graph.erf %a : tensor<2x8x64xf32>
  %p = graph.add %one, %e : (tensor<f32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %y = graph.mul %p, %hx : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// x * (0.5 * (1 + erf(x / sqrt(2)))) in bf16: the constants are the bf16 roundings.
// CHECK-LABEL: func.func @gelu_erf_bf16
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xbf16>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu exact %[[X]] : tensor<4x32xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_bf16(%x: tensor<4x32xbf16>) -> tensor<4x32xbf16> {
  %c = graph.constant dense<0.70703125> : tensor<bf16>
  %one = graph.constant dense<1.0> : tensor<bf16>
  %half = graph.constant dense<0.5> : tensor<bf16>
  %a = graph.mul %x, %c : (tensor<4x32xbf16>, tensor<bf16>) -> tensor<4x32xbf16>
  %e = graph.erf %a : tensor<4x32xbf16>
  %p = graph.add %e, %one : (tensor<4x32xbf16>, tensor<bf16>) -> tensor<4x32xbf16>
  %hp = graph.mul %half, %p : (tensor<bf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
  %y = graph.mul %x, %hp : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>
  return %y : tensor<4x32xbf16>
}

// -----

// Hugging Face NewGELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-SAME: (%[[X:.+]]: tensor<16x256xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu tanh %[[X]] : tensor<16x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_pow(%x: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %kappa = graph.constant dense<0.044715> : tensor<f32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %hx = graph.mul %half, %x : (tensor<f32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %cube = graph.pow %x, %three : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
  %kc = graph.mul %kappa, %cube : (tensor<f32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %u = graph.add %x, %kc : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %in = graph.mul %beta, %u : (tensor<f32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %t = graph.tanh %in : tensor<16x256xf32>
  %p = graph.add %one, %t : (tensor<f32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  %y = graph.mul %hx, %p : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32>
  return %y : tensor<16x256xf32>
}

// -----

// PyTorch's symbolic for gelu(approximate='tanh'): the cube as x * (x * x), operands swapped.
// CHECK-LABEL: func.func @gelu_tanh_mul_cube
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu tanh %[[X]] : tensor<4x32xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: graph.tanh
func.func @gelu_tanh_mul_cube(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %kappa = graph.constant dense<0.044715> : tensor<f32>
  %xx = graph.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %cube = graph.mul %x, %xx : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %kc = graph.mul %cube, %kappa : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %u = graph.add %kc, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %in = graph.mul %u, %beta : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %t = graph.tanh %in : tensor<4x32xf32>
  %p = graph.add %t, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %xp = graph.mul %x, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %half, %xp : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: kappa is 0.044716 (relative error 2e-5).
// CHECK-LABEL: func.func @gelu_tanh_wrong_kappa
// CHECK-NOT: graph.gelu
// CHECK: graph.tanh
func.func @gelu_tanh_wrong_kappa(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %kappa = graph.constant dense<0.044716> : tensor<f32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %hx = graph.mul %half, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %cube = graph.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %kc = graph.mul %kappa, %cube : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = graph.add %x, %kc : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %in = graph.mul %beta, %u : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.tanh %in : tensor<4x32xf32>
  %p = graph.add %one, %t : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %hx, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the cube is x^2.
// CHECK-LABEL: func.func @gelu_tanh_square
// CHECK-NOT: graph.gelu
// CHECK: graph.tanh
func.func @gelu_tanh_square(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %beta = graph.constant dense<0.797884583> : tensor<f32>
  %kappa = graph.constant dense<0.044715> : tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %hx = graph.mul %half, %x : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %cube = graph.pow %x, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %kc = graph.mul %kappa, %cube : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = graph.add %x, %kc : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %in = graph.mul %beta, %u : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.tanh %in : tensor<4x32xf32>
  %p = graph.add %one, %t : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %hx, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the divisor is 1.5, not sqrt(2).
// CHECK-LABEL: func.func @gelu_erf_wrong_constant
// CHECK-NOT: graph.gelu
// CHECK: graph.erf
func.func @gelu_erf_wrong_constant(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %c = graph.constant dense<1.5> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a = graph.div %x, %c : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %a : tensor<4x32xf32>
  %p = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the outer factor is not a splat (0.5 and 0.25).
// CHECK-LABEL: func.func @gelu_half_not_splat
// CHECK-NOT: graph.gelu
// CHECK: graph.erf
func.func @gelu_half_not_splat(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %a = graph.div %x, %sqrt2 : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %e = graph.erf %a : tensor<2x2xf32>
  %p = graph.add %e, %one : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %m = graph.mul %x, %p : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = graph.mul %m, %half : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Near miss: erf's result is also returned (an intermediate with a second user).
// CHECK-LABEL: func.func @gelu_second_user
// CHECK-NOT: graph.gelu
// CHECK: %[[E:.+]] = graph.erf
// CHECK: return %{{.+}}, %[[E]]
func.func @gelu_second_user(%x: tensor<4x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %a : tensor<4x32xf32>
  %p = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y, %e : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Near miss: erf is of another value than the outer x.
// CHECK-LABEL: func.func @gelu_other_value
// CHECK-NOT: graph.gelu
// CHECK: graph.erf
func.func @gelu_other_value(%x: tensor<4x32xf32>, %z: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a = graph.div %z, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %a : tensor<4x32xf32>
  %p = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Near miss: the 0.5 constant broadcasts x up to a larger shape.
// CHECK-LABEL: func.func @gelu_broadcast_grows
// CHECK-NOT: graph.gelu
// CHECK: graph.erf
func.func @gelu_broadcast_grows(%x: tensor<32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<4x32xf32>
  %a = graph.div %x, %sqrt2 : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %e = graph.erf %a : tensor<32xf32>
  %p = graph.add %e, %one : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
  %m = graph.mul %x, %p : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %y = graph.mul %m, %half : (tensor<32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// A GELU inside a larger product: only the GELU's three factors fuse.
// CHECK-LABEL: func.func @gelu_times_gate
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<4x32xf32>)
// CHECK-NEXT: %[[Y:.+]] = graph.gelu exact %[[X]] : tensor<4x32xf32>
// CHECK-NEXT: %[[Z:.+]] = graph.mul %[[Y]], %[[G]]
// CHECK-NEXT: return %[[Z]]
func.func @gelu_times_gate(%x: tensor<4x32xf32>, %g: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %a = graph.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = graph.erf %a : tensor<4x32xf32>
  %p = graph.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = graph.mul %x, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = graph.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %z = graph.mul %y, %g : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}
