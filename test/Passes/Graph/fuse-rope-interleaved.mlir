// rp-fuse-rope: the interleaved rotary form (GPT-J, CodeGen, Cohere: HF rotate_every_two,
// x * cos + flatten(stack(-x[..., 1::2], x[..., 0::2])) * sin) becomes graph.rope
// {interleaved}. Near misses (other slice starts or steps, the pairs stacked in the other
// order, the halves of the strided elements, another tensor's partners, a shared
// intermediate) stay as they are.
// RUN: rp-opt %s --rp-fuse-rope | FileCheck %s

// As both exporters write GPT-J's partial rotary part ([B, S, H, Dr], cos/sin [1, S, 1, Dr]):
// the negation before the unsqueeze; the intermediates are removed.
// CHECK-LABEL: func.func @gptj
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x4x4xf32>, %[[COS:.+]]: tensor<1x16x1x4xf32>, %[[SIN:.+]]: tensor<1x16x1x4xf32>)
// CHECK-NOT: graph.slice
// CHECK-NOT: graph.concat
// CHECK: %[[Y:.+]] = graph.rope %[[X]], %[[COS]], %[[SIN]] {interleaved} : (tensor<2x16x4x4xf32>, tensor<1x16x1x4xf32>, tensor<1x16x1x4xf32>) -> tensor<2x16x4x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gptj(%x: tensor<2x16x4x4xf32>, %cos: tensor<1x16x1x4xf32>, %sin: tensor<1x16x1x4xf32>) -> tensor<2x16x4x4xf32> {
  %a = graph.mul %x, %cos : (tensor<2x16x4x4xf32>, tensor<1x16x1x4xf32>) -> tensor<2x16x4x4xf32>
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<2x16x4x4xf32>) -> tensor<2x16x4x2xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<2x16x4x4xf32>) -> tensor<2x16x4x2xf32>
  %n = graph.neg %o : tensor<2x16x4x2xf32>
  %nu = graph.reshape %n : tensor<2x16x4x2xf32> to tensor<2x16x4x2x1xf32>
  %eu = graph.reshape %e : tensor<2x16x4x2xf32> to tensor<2x16x4x2x1xf32>
  %s = graph.concat %nu, %eu {axis = 4 : i64} : (tensor<2x16x4x2x1xf32>, tensor<2x16x4x2x1xf32>) -> tensor<2x16x4x2x2xf32>
  %r = graph.reshape %s : tensor<2x16x4x2x2xf32> to tensor<2x16x4x4xf32>
  %b = graph.mul %r, %sin : (tensor<2x16x4x4xf32>, tensor<1x16x1x4xf32>) -> tensor<2x16x4x4xf32>
  %y = graph.add %a, %b : (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32>
  return %y : tensor<2x16x4x4xf32>
}

// The negation after the unsqueeze, the operands of the products and the sum swapped,
// [B, H, S, D] with cos/sin [S, D] (Cohere's layout).
// CHECK-LABEL: func.func @neg_after_unsqueeze
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x8xf32>, %[[COS:.+]]: tensor<4x8xf32>, %[[SIN:.+]]: tensor<4x8xf32>)
// CHECK: %[[Y:.+]] = graph.rope %[[X]], %[[COS]], %[[SIN]] {interleaved}
// CHECK-NEXT: return %[[Y]]
func.func @neg_after_unsqueeze(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %ou = graph.reshape %o : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %n = graph.neg %ou : tensor<1x2x4x4x1xf32>
  %eu = graph.reshape %e : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %s = graph.concat %n, %eu {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = graph.reshape %s : tensor<1x2x4x4x2xf32> to tensor<1x2x4x8xf32>
  %a = graph.mul %cos, %x : (tensor<4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %sin, %r : (tensor<4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %b, %a : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the pairs stacked as (x_even, -x_odd) (the rotation by -90 degrees).
// CHECK-LABEL: func.func @pairs_swapped
// CHECK-NOT: graph.rope
// CHECK: graph.concat
func.func @pairs_swapped(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.neg %o : tensor<1x2x4x4xf32>
  %nu = graph.reshape %n : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %eu = graph.reshape %e : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %s = graph.concat %eu, %nu {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = graph.reshape %s : tensor<1x2x4x4x2xf32> to tensor<1x2x4x8xf32>
  %a = graph.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the halves concatenated on the last axis instead of stacked pairs (a
// rotate_half of the even and odd elements: another permutation).
// CHECK-LABEL: func.func @halves_of_strided
// CHECK-NOT: graph.rope
// CHECK: graph.concat
func.func @halves_of_strided(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.neg %o : tensor<1x2x4x4xf32>
  %r = graph.concat %n, %e {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %a = graph.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: both slices start at 0 (the even elements twice: not a rotation).
// CHECK-LABEL: func.func @same_start
// CHECK-NOT: graph.rope
// CHECK: graph.concat
func.func @same_start(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.neg %o : tensor<1x2x4x4xf32>
  %nu = graph.reshape %n : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %eu = graph.reshape %e : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %s = graph.concat %nu, %eu {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = graph.reshape %s : tensor<1x2x4x4x2xf32> to tensor<1x2x4x8xf32>
  %a = graph.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the odd elements are another tensor's (x2's partners rotate x's pairs).
// CHECK-LABEL: func.func @other_tensor
// CHECK-NOT: graph.rope
// CHECK: graph.concat
func.func @other_tensor(%x: tensor<1x2x4x8xf32>, %x2: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x2 {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.neg %o : tensor<1x2x4x4xf32>
  %nu = graph.reshape %n : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %eu = graph.reshape %e : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %s = graph.concat %nu, %eu {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = graph.reshape %s : tensor<1x2x4x4x2xf32> to tensor<1x2x4x8xf32>
  %a = graph.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// Near miss: the stacked pairs are also returned (a shared intermediate must survive).
// CHECK-LABEL: func.func @shared_stack
// CHECK-NOT: graph.rope
// CHECK: graph.concat
func.func @shared_stack(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4x2xf32>) {
  %e = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %n = graph.neg %o : tensor<1x2x4x4xf32>
  %nu = graph.reshape %n : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %eu = graph.reshape %e : tensor<1x2x4x4xf32> to tensor<1x2x4x4x1xf32>
  %s = graph.concat %nu, %eu {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = graph.reshape %s : tensor<1x2x4x4x2xf32> to tensor<1x2x4x8xf32>
  %a = graph.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x4x2xf32>
}
