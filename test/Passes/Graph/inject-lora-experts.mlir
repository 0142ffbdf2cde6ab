// rp-inject-lora on a mixture of experts' literal import.
// RUN: rp-opt %s -split-input-file --rp-inject-lora="rank=4 alpha=8 targets=q_proj" | FileCheck %s --check-prefix=ATTN
// RUN: rp-opt %s -split-input-file --rp-inject-lora="rank=4 alpha=8 targets=proj" | FileCheck %s

// Targets naming only the attention projection adapt it and freeze the experts.
// ATTN: graph.param @q_proj : tensor<8x8xf32>
// ATTN-NEXT: graph.param @q_proj.lora_A trainable : tensor<8x4xf32>
// ATTN-NEXT: graph.param @q_proj.lora_B trainable : tensor<4x8xf32>
// ATTN-NEXT: graph.param @experts.gate_up_proj : tensor<4x8x6xf32>
// ATTN-NOT: experts.gate_up_proj.lora

// A stacked expert weight read per (token, choice) pair as x W_e (GPT-OSS: W [E, in, out] =
// [4, 8, 6], x [R, 1, in]) gets stacked adapters in PEFT's per-expert layout, A [E, r, in]
// (kaiming_uniform) and B [E, out, r] (zeros), gathered by the same routing ids; the update
// B_e (A_e x) is computed with x as a column [R, in, 1] and reshaped back to [R, 1, out],
// scaled by alpha / r = 2 and added to the product.
// CHECK-LABEL: graph.param @q_proj : tensor<8x8xf32>
// CHECK: graph.param @experts.gate_up_proj : tensor<4x8x6xf32>
// CHECK-NEXT: graph.param @experts.gate_up_proj.lora_A trainable : tensor<4x4x8xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @experts.gate_up_proj.lora_B trainable : tensor<4x6x4xf32> init zeros
// CHECK-LABEL: func.func @experts(
// CHECK-SAME: %[[X:[^:]+]]: tensor<3x8xf32>, %[[IDS:[^:]+]]: tensor<3xi64>, %[[H:[^:]+]]: tensor<3x1x8xf32>
// CHECK: %[[E:.+]] = graph.load_param @experts.gate_up_proj
// CHECK: %[[G:.+]] = graph.gather %[[E]], %[[IDS]] {axis = 0 : i64}
// CHECK: %[[Z:.+]] = graph.matmul %[[H]], %[[G]] : (tensor<3x1x8xf32>, tensor<3x8x6xf32>) -> tensor<3x1x6xf32>
// CHECK: %[[COL:.+]] = graph.reshape %[[H]] : tensor<3x1x8xf32> to tensor<3x8x1xf32>
// CHECK: %[[A:.+]] = graph.load_param @experts.gate_up_proj.lora_A : tensor<4x4x8xf32>
// CHECK: %[[B:.+]] = graph.load_param @experts.gate_up_proj.lora_B : tensor<4x6x4xf32>
// CHECK: %[[GA:.+]] = graph.gather %[[A]], %[[IDS]] {axis = 0 : i64} : (tensor<4x4x8xf32>, tensor<3xi64>) -> tensor<3x4x8xf32>
// CHECK: %[[AX:.+]] = graph.matmul %[[GA]], %[[COL]] : (tensor<3x4x8xf32>, tensor<3x8x1xf32>) -> tensor<3x4x1xf32>
// CHECK: %[[GB:.+]] = graph.gather %[[B]], %[[IDS]] {axis = 0 : i64} : (tensor<4x6x4xf32>, tensor<3xi64>) -> tensor<3x6x4xf32>
// CHECK: %[[BAX:.+]] = graph.matmul %[[GB]], %[[AX]] : (tensor<3x6x4xf32>, tensor<3x4x1xf32>) -> tensor<3x6x1xf32>
// CHECK: %[[ROW:.+]] = graph.reshape %[[BAX]] : tensor<3x6x1xf32> to tensor<3x1x6xf32>
// CHECK: %[[S:.+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[D:.+]] = graph.mul %[[ROW]], %[[S]]
// CHECK: %[[SUM:.+]] = graph.add %[[Z]], %[[D]]
// CHECK: return %{{.+}}, %[[SUM]] :
graph.param @q_proj trainable : tensor<8x8xf32>
graph.param @experts.gate_up_proj trainable : tensor<4x8x6xf32>
func.func @experts(%x: tensor<3x8xf32>, %ids: tensor<3xi64>, %h: tensor<3x1x8xf32>) -> (tensor<3x8xf32>, tensor<3x1x6xf32>) {
  %w = graph.load_param @q_proj : tensor<8x8xf32>
  %y = graph.matmul %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %e = graph.load_param @experts.gate_up_proj : tensor<4x8x6xf32>
  %g = graph.gather %e, %ids {axis = 0 : i64} : (tensor<4x8x6xf32>, tensor<3xi64>) -> tensor<3x8x6xf32>
  %z = graph.matmul %h, %g : (tensor<3x1x8xf32>, tensor<3x8x6xf32>) -> tensor<3x1x6xf32>
  return %y, %z : tensor<3x8xf32>, tensor<3x1x6xf32>
}

// -----

// W_e x (Qwen3-MoE: W [E, out, in] = [4, 6, 8], read through the import's identity
// transposes, x [R, in, 1]): the same adapter layout, named `<W>.lora_X.weight` (as for a
// dense x @ W^T), no reshape of x or of the update.
// CHECK: graph.param @experts.down_proj : tensor<4x6x8xf32>
// CHECK-NEXT: graph.param @experts.down_proj.lora_A.weight trainable : tensor<4x4x8xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @experts.down_proj.lora_B.weight trainable : tensor<4x6x4xf32> init zeros
// CHECK-LABEL: func.func @left(
// CHECK: %[[Z2:.+]] = graph.matmul %{{.+}}, %[[XC:[^ ]+]] : (tensor<3x6x8xf32>, tensor<3x8x1xf32>) -> tensor<3x6x1xf32>
// CHECK: %[[GA2:.+]] = graph.gather
// CHECK: %[[AX2:.+]] = graph.matmul %[[GA2]], %[[XC]] : (tensor<3x4x8xf32>, tensor<3x8x1xf32>) -> tensor<3x4x1xf32>
// CHECK: %[[GB2:.+]] = graph.gather
// CHECK: %[[BAX2:.+]] = graph.matmul %[[GB2]], %[[AX2]] : (tensor<3x6x4xf32>, tensor<3x4x1xf32>) -> tensor<3x6x1xf32>
// CHECK-NOT: graph.reshape
// CHECK: graph.mul %[[BAX2]]
graph.param @q_proj trainable : tensor<8x8xf32>
graph.param @experts.down_proj trainable : tensor<4x6x8xf32>
func.func @left(%ids: tensor<3xi64>, %h: tensor<3x8x1xf32>, %x: tensor<3x8xf32>) -> (tensor<3x6x1xf32>, tensor<3x8xf32>) {
  %w = graph.load_param @q_proj : tensor<8x8xf32>
  %y = graph.matmul %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %e = graph.load_param @experts.down_proj : tensor<4x6x8xf32>
  %t = graph.transpose %e {permutation = array<i64: 0, 1, 2>} : (tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %g = graph.gather %t, %ids {axis = 0 : i64} : (tensor<4x6x8xf32>, tensor<3xi64>) -> tensor<3x6x8xf32>
  %u = graph.transpose %g {permutation = array<i64: 0, 1, 2>} : (tensor<3x6x8xf32>) -> tensor<3x6x8xf32>
  %z = graph.matmul %u, %h : (tensor<3x6x8xf32>, tensor<3x8x1xf32>) -> tensor<3x6x1xf32>
  return %z, %y : tensor<3x6x1xf32>, tensor<3x8xf32>
}
