// rp-autodiff of graph.linear_cross_entropy: its VJP is one graph.linear_cross_entropy_vjp
// (the loss seed as its cotangent), and the canonicalizer replaces the forward op on the
// same operands by the VJP's loss, so the train step computes the head once.
// RUN: rp-opt %s --rp-autodiff="seed-arg=1" | FileCheck %s --check-prefix=GRAD
// RUN: rp-opt %s --rp-autodiff="seed-arg=1" --canonicalize | FileCheck %s
// rp-split-gradient folds the forward loss into the one-pass VJP before it splits, so the
// saving forward computes no loss and the backward returns the VJP's (the logits once).
// RUN: rp-opt %s --rp-split-gradient="function=forward wrt-args=0 seed-arg=1" | FileCheck %s --check-prefix=SPLIT
// A loss that adds another term to the cross-entropy (a router's load-balancing loss) reads the
// cross-entropy before the VJP: the add moves after the VJP into the backward, the other term
// is saved by the forward as a residual, and the logits are still computed once.
// RUN: rp-opt %S/Inputs/linear-cross-entropy-aux.mlir --rp-split-gradient="function=forward wrt-args=0 seed-arg=1" | FileCheck %s --check-prefix=AUX
// AUX-LABEL: func.func @forward_fwd(
// AUX-NOT: graph.linear_cross_entropy
// AUX: %[[AUX:.+]] = graph.reduce_sum
// AUX-NOT: graph.add
// AUX: return %[[AUX]]
// AUX-LABEL: func.func @forward_bwd(
// AUX-SAME: %[[SAVED:[^:]+]]: tensor<f32> {graph.residual = 0 : i64}
// AUX-NOT: graph.linear_cross_entropy mean
// AUX: %[[L:.+]], %{{.+}}, %[[DW:.+]] = graph.linear_cross_entropy_vjp mean
// AUX: %[[T:.+]] = graph.add %[[L]], %[[SAVED]]
// AUX: return %[[T]], %[[DW]]
// The canonicalizer does the same in an unsplit train step: one head, the add after the VJP.
// RUN: rp-opt %S/Inputs/linear-cross-entropy-aux.mlir --rp-autodiff="seed-arg=1" --canonicalize | FileCheck %s --check-prefix=AUXCANON
// AUXCANON-LABEL: func.func @train_step
// AUXCANON-NOT: graph.linear_cross_entropy mean
// AUXCANON: %[[L:.+]], %{{.+}}, %[[DW:.+]] = graph.linear_cross_entropy_vjp mean
// AUXCANON-NOT: graph.linear_cross_entropy mean
// AUXCANON: %[[T:.+]] = graph.add %[[L]], %{{.+}}
// AUXCANON: return %[[T]], %[[DW]]
// With a head bias (Phi), the VJP takes it and returns dbias, the bias's gradient.
// RUN: rp-opt %S/Inputs/linear-cross-entropy-bias.mlir --rp-autodiff="seed-arg=1" --canonicalize | FileCheck %s --check-prefix=BIAS
// BIAS-LABEL: func.func @train_step
// BIAS-NOT: graph.linear_cross_entropy mean
// BIAS: %[[L:.+]], %{{.+}}, %[[DW:.+]], %[[DB:.+]] = graph.linear_cross_entropy_vjp mean %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {ignore_index = -100 : i64}
// BIAS: return %[[L]], %[[DW]], %[[DB]]

graph.param @w trainable : tensor<10x8xf32>
func.func @forward(%x: tensor<2x2x8xf32>, %y: tensor<4xi64> {graph.name = "labels"}) -> tensor<f32> {
  %w = graph.load_param @w : tensor<10x8xf32>
  %h = graph.reshape %x : tensor<2x2x8xf32> to tensor<4x8xf32>
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// GRAD-LABEL: func.func @train_step
// GRAD-SAME: %[[SEED:[^:]+]]: tensor<f32> {graph.name = "loss_seed"}
// GRAD: %[[FWD:.+]] = graph.linear_cross_entropy mean
// GRAD: %[[L:.+]], %[[DH:.+]], %[[DW:.+]] = graph.linear_cross_entropy_vjp mean %[[H:.+]], %[[W:.+]], %[[Y:.+]], %[[SEED]] {ignore_index = -100 : i64}
// GRAD: return %[[FWD]], %[[DW]]

// CHECK-LABEL: func.func @train_step
// CHECK-NOT: graph.linear_cross_entropy mean
// CHECK: %[[L:.+]], %{{.+}}, %[[DW:.+]] = graph.linear_cross_entropy_vjp mean
// CHECK-NOT: graph.linear_cross_entropy mean
// CHECK: return %[[L]], %[[DW]]

// SPLIT-LABEL: func.func @forward_fwd(
// SPLIT-NOT: graph.linear_cross_entropy
// SPLIT: return
// SPLIT-LABEL: func.func @forward_bwd(
// SPLIT-NOT: graph.linear_cross_entropy mean
// SPLIT: %[[L:.+]], %{{.+}}, %[[DW:.+]] = graph.linear_cross_entropy_vjp mean
// SPLIT: return %[[L]], %[[DW]]
