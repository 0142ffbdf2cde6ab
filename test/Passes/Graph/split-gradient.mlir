// rp-split-gradient: a layer's gradient as a forward saving residuals and a backward using
// them. Every op lands in one function unchanged; param loads, a transposed weight and a
// broadcast are re-emitted in the backward instead of saved; a reshape is re-emitted when its
// operand is in the backward anyway, else saved itself.
// RUN: rp-opt %s --rp-split-gradient="function=layer wrt-args=0 cotangent-args=1" | FileCheck %s
// RUN: rp-opt %s --rp-split-gradient="function=tail wrt-args=0 seed-arg=1" | FileCheck %s --check-prefix=TAIL
// RUN: rp-opt %s --rp-split-gradient="function=layer wrt-args=0 cotangent-args=1" | FileCheck %s --check-prefix=GONE
// RUN: rp-opt %s --rp-split-gradient="function=view wrt-args=0,1 cotangent-args=1" | FileCheck %s --check-prefix=VIEW

// A layer: the forward results first, then the residuals (only tanh's result: the weight,
// its transpose and the broadcast frozen scale are rematerialised).
graph.param @w trainable : tensor<4x4xf32>
graph.param @frozen : tensor<4xf32>
func.func @layer(%h: tensor<2x4xf32>, %ids: tensor<2xi64>) -> tensor<2x4xf32> {
  %w = graph.load_param @w : tensor<4x4xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.matmul %h, %wt : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %t = graph.tanh %y : tensor<2x4xf32>
  %f = graph.load_param @frozen : tensor<4xf32>
  %fb = graph.expand %f : tensor<4xf32> to tensor<2x4xf32>
  %m = graph.mul %t, %fb : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @layer(
// CHECK-LABEL: func.func @layer_fwd
// CHECK-SAME: (%[[H:.+]]: tensor<2x4xf32>, %{{.+}}: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK: graph.matmul %[[H]]
// CHECK: %[[T:.+]] = graph.tanh
// CHECK: %[[M:.+]] = graph.mul %[[T]]
// CHECK-NEXT: return %[[M]], %[[T]]
// CHECK-LABEL: func.func @layer_bwd
// CHECK-SAME: (%[[BH:.+]]: tensor<2x4xf32>, %{{.+}}: tensor<2xi64>, %[[RT:.+]]: tensor<2x4xf32> {graph.residual = 1 : i64}, %[[DM:.+]]: tensor<2x4xf32>) -> (tensor<4x4xf32> {graph.grad_of = @w}, tensor<2x4xf32> {graph.grad_of_arg = 0 : i64}) attributes {graph.residuals = array<i64: 1>}
// No forward contraction and no tanh run again: only rematerialised views of params.
// CHECK-NOT: graph.tanh
// CHECK: graph.load_param @w
// CHECK: graph.transpose
// CHECK: graph.load_param @frozen
// CHECK: graph.expand
// CHECK: graph.mul %[[DM]]
// CHECK: graph.mul %[[RT]], %[[RT]]
// CHECK: graph.matmul %{{.+}}, %{{.+}} {transpose_b}
// CHECK: graph.matmul %[[BH]], %{{.+}} {transpose_a}
// CHECK-NOT: graph.tanh
// CHECK: return
// The unsplit function is not kept.
// GONE-NOT: _unsplit

// The last layer (seed-arg): `_fwd` has no forward results, only residuals (the reshaped
// logits, saved themselves: the matmul's result is not needed otherwise, and the loss);
// `_bwd` returns the loss first.
graph.param @v trainable : tensor<4x3xf32>
func.func @tail(%x: tensor<2x4xf32>, %y: tensor<2xi64> {graph.name = "labels"}) -> tensor<f32> {
  %w = graph.load_param @v : tensor<4x3xf32>
  %z = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %r = graph.reshape %z : tensor<2x3xf32> to tensor<6xf32>
  %r2 = graph.reshape %r : tensor<6xf32> to tensor<2x3xf32>
  %l = graph.cross_entropy mean %r2, %y {ignore_index = -100 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
// TAIL-LABEL: func.func @tail_fwd
// TAIL-SAME: -> (tensor<2x3xf32>, tensor<f32>)
// TAIL: graph.matmul
// TAIL: graph.reshape
// TAIL: %[[Z:.+]] = graph.reshape
// TAIL: %[[L:.+]] = graph.cross_entropy
// TAIL-NEXT: return %[[Z]], %[[L]]
// TAIL-LABEL: func.func @tail_bwd
// TAIL-SAME: %[[Z2:[^:]+]]: tensor<2x3xf32> {graph.residual = 0 : i64}, %[[L2:[^:]+]]: tensor<f32> {graph.residual = 1 : i64}, %[[SEED:[^:]+]]: tensor<f32> {graph.name = "loss_seed"}) -> (tensor<f32>, tensor<4x3xf32> {graph.grad_of = @v}, tensor<2x4xf32> {graph.grad_of_arg = 0 : i64}) attributes {graph.residuals = array<i64: 0, 1>}
// TAIL-NOT: graph.cross_entropy
// TAIL-NOT: graph.reshape %[[Z2]]
// TAIL: graph.softmax %[[Z2]]
// TAIL: graph.div %[[SEED]]
// TAIL-NOT: graph.cross_entropy
// TAIL: return %[[L2]],

// Reshapes: a chain of reshapes of an argument (%b) and of a saved value (%d, of tanh's
// result) is re-emitted; a reshape of a value the backward does not otherwise need (%y, of
// neg's result) is saved itself, not its operand.
func.func @view(%h: tensor<2x4xf32>, %g: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xf32>) {
  %t = graph.tanh %g : tensor<2x4xf32>
  %a = graph.reshape %h : tensor<2x4xf32> to tensor<8xf32>
  %b = graph.reshape %a : tensor<8xf32> to tensor<2x4xf32>
  %m = graph.mul %t, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = graph.reshape %t : tensor<2x4xf32> to tensor<8xf32>
  %d = graph.reshape %c : tensor<8xf32> to tensor<2x4xf32>
  %n = graph.mul %d, %d : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %x = graph.neg %g : tensor<2x4xf32>
  %y = graph.reshape %x : tensor<2x4xf32> to tensor<8xf32>
  %z = graph.mul %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %m, %n, %z : tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xf32>
}
// VIEW-LABEL: func.func @view_fwd
// VIEW: %[[T:.+]] = graph.tanh
// VIEW: %[[M:.+]] = graph.mul
// VIEW: %[[N:.+]] = graph.mul
// VIEW: %[[Y:.+]] = graph.reshape
// VIEW: %[[Z:.+]] = graph.mul %[[Y]], %[[Y]]
// VIEW-NEXT: return %[[M]], %[[N]], %[[Z]], %[[T]], %[[Y]]
// VIEW-LABEL: func.func @view_bwd
// VIEW-SAME: (%[[H:[^:]+]]: tensor<2x4xf32>, %{{[^:]+}}: tensor<2x4xf32>, %[[RT:[^:]+]]: tensor<2x4xf32> {graph.residual = 3 : i64}, %[[RY:[^:]+]]: tensor<8xf32> {graph.residual = 4 : i64},
// VIEW-SAME: attributes {graph.residuals = array<i64: 3, 4>}
// VIEW-NEXT: %[[A2:.+]] = graph.reshape %[[H]]
// VIEW-NEXT: graph.reshape %[[A2]]
// VIEW-NEXT: %[[C2:.+]] = graph.reshape %[[RT]]
// VIEW-NEXT: graph.reshape %[[C2]]
// VIEW-NOT: graph.tanh
// VIEW-NOT: graph.neg %arg
// VIEW: graph.mul %{{.+}}, %[[RY]]
