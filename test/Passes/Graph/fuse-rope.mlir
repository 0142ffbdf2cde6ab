// rp-fuse-rope: x * cos + rotate_half(x) * sin (slice/neg/concat/mul/add) becomes graph.rope.
// RUN: rp-opt %s --rp-fuse-rope | FileCheck %s

// HF apply_rotary_pos_emb as imported, cos/sin [B, 1, S, D]; the intermediates are removed.
// CHECK-LABEL: func.func @hf_pattern
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[COS:.+]]: tensor<2x1x8x16xf32>, %[[SIN:.+]]: tensor<2x1x8x16xf32>)
// CHECK-NOT: graph.slice
// CHECK-NOT: graph.neg
// CHECK-NOT: graph.concat
// CHECK-NOT: graph.mul
// CHECK: %[[Y:.+]] = graph.rope %[[Q]], %[[COS]], %[[SIN]] : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @hf_pattern(%q: tensor<2x4x8x16xf32>, %cos: tensor<2x1x8x16xf32>, %sin: tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %x1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %x2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 8>, ends = array<i64: 16>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %n = graph.neg %x2 : tensor<2x4x8x8xf32>
  %r = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %a = graph.mul %q, %cos : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  %b = graph.mul %r, %sin : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = graph.add %a, %b : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %y : tensor<2x4x8x16xf32>
}

// Operands in the other orders, cos/sin [S, D]; q and k share cos and sin.
// CHECK-LABEL: func.func @swapped_operands_two_heads
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[COS:.+]]: tensor<4x8xf32>, %[[SIN:.+]]: tensor<4x8xf32>)
// CHECK-DAG: %[[YQ:.+]] = graph.rope %[[Q]], %[[COS]], %[[SIN]]
// CHECK-DAG: %[[YK:.+]] = graph.rope %[[K]], %[[COS]], %[[SIN]]
// CHECK: return %[[YQ]], %[[YK]]
func.func @swapped_operands_two_heads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %q1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %q2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %qn = graph.neg %q2 : tensor<1x2x4x4xf32>
  %qr = graph.concat %qn, %q1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qa = graph.mul %cos, %q : (tensor<4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qb = graph.mul %sin, %qr : (tensor<4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %yq = graph.add %qb, %qa : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %k1 = graph.slice %k {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %k2 = graph.slice %k {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %kn = graph.neg %k2 : tensor<1x2x4x4xf32>
  %kr = graph.concat %kn, %k1 {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %ka = graph.mul %k, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %kb = graph.mul %kr, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %yk = graph.add %ka, %kb : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %yq, %yk : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// Near miss: the rotated halves come from a different tensor than the one times cos.
// CHECK-LABEL: func.func @rotates_other_value
// CHECK-NOT: graph.rope
// CHECK: return
func.func @rotates_other_value(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x1x4x8xf32> {
  %x1 = graph.slice %k {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %x2 = graph.slice %k {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %n = graph.neg %x2 : tensor<1x1x4x4xf32>
  %r = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32>
  %a = graph.mul %q, %cos : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %y : tensor<1x1x4x8xf32>
}

// Near miss: concat(x1, -x2) is not rotate_half (wrong order).
// CHECK-LABEL: func.func @wrong_concat_order
// CHECK-NOT: graph.rope
// CHECK: return
func.func @wrong_concat_order(%q: tensor<1x1x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x1x4x8xf32> {
  %x1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %x2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %n = graph.neg %x2 : tensor<1x1x4x4xf32>
  %r = graph.concat %x1, %n {axis = 3 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32>
  %a = graph.mul %q, %cos : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %y : tensor<1x1x4x8xf32>
}

// Near miss: the rotated tensor has a second user.
// CHECK-LABEL: func.func @second_user
// CHECK-NOT: graph.rope
// CHECK: return
func.func @second_user(%q: tensor<1x1x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %x1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %x2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %n = graph.neg %x2 : tensor<1x1x4x4xf32>
  %r = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32>
  %a = graph.mul %q, %cos : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %y, %r : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// Near miss: cos and sin have different shapes (graph.rope needs one type for both).
// CHECK-LABEL: func.func @cos_sin_shapes_differ
// CHECK-NOT: graph.rope
// CHECK: return
func.func @cos_sin_shapes_differ(%q: tensor<1x1x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %x1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %x2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 4>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %n = graph.neg %x2 : tensor<1x1x4x4xf32>
  %r = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x8xf32>
  %a = graph.mul %q, %cos : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %b = graph.mul %r, %sin : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %y = graph.add %a, %b : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %y : tensor<1x1x4x8xf32>
}
