// rp-inject-lora: weights that match `targets` but cannot be adapted.
// RUN: rp-opt %s -split-input-file -verify-diagnostics --rp-inject-lora="rank=4 alpha=8 targets=q_proj|v_proj"

// A matching batched (3-D) weight is refused: LoRA adapts [in, out] matrices.
// expected-error @+1 {{rp-inject-lora: param 'q_proj' matches targets 'q_proj|v_proj' but has type 'tensor<2x8x8xf32>'; LoRA adapts a rank-2 floating-point [in, out] weight}}
graph.param @q_proj trainable : tensor<2x8x8xf32>
func.func @batched(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %w = graph.load_param @q_proj : tensor<2x8x8xf32>
  // expected-note @+1 {{used as a matmul weight here}}
  %y = graph.matmul %x, %w : (tensor<2x3x8xf32>, tensor<2x8x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// A matching 1-D weight is refused.
// expected-error @+1 {{rp-inject-lora: param 'v_proj' matches targets 'q_proj|v_proj' but has type 'tensor<8xf32>'; LoRA adapts a rank-2 floating-point [in, out] weight}}
graph.param @v_proj trainable : tensor<8xf32>
func.func @vector(%x: tensor<3x8xf32>) -> tensor<3xf32> {
  %w = graph.load_param @v_proj : tensor<8xf32>
  // expected-note @+1 {{used as a matmul weight here}}
  %y = graph.matmul %x, %w : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// A matching integer weight is refused (adapters are trainable, hence floating point).
// expected-error @+1 {{rp-inject-lora: param 'q_proj' matches targets 'q_proj|v_proj' but has type 'tensor<8x4xi64>'; LoRA adapts a rank-2 floating-point [in, out] weight}}
graph.param @q_proj : tensor<8x4xi64>
func.func @integer(%x: tensor<3x8xi64>) -> tensor<3x4xi64> {
  %w = graph.load_param @q_proj : tensor<8x4xi64>
  // expected-note @+1 {{used as a matmul weight here}}
  %y = graph.matmul %x, %w : (tensor<3x8xi64>, tensor<8x4xi64>) -> tensor<3x4xi64>
  return %y : tensor<3x4xi64>
}

// -----

// The adapter names are taken (LoRA was injected already, or a param is named so).
// expected-error @+1 {{rp-inject-lora: cannot add 'q_proj.lora_A' for param 'q_proj': the symbol exists (was LoRA injected already?)}}
graph.param @q_proj trainable : tensor<8x4xf32>
// expected-note @+1 {{existing symbol here}}
graph.param @q_proj.lora_A trainable : tensor<8x2xf32> init kaiming_uniform
func.func @taken(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  %w = graph.load_param @q_proj : tensor<8x4xf32>
  %y = graph.matmul %x, %w : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// One weight read both as x @ W and as x @ transpose(W): its adapters cannot serve both.
// expected-error @+1 {{rp-inject-lora: param 'q_proj' is read both as x @ W and as x @ transpose(W); LoRA adapts one of the two}}
graph.param @q_proj trainable : tensor<4x4xf32>
func.func @both(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w = graph.load_param @q_proj : tensor<4x4xf32>
  %y = graph.matmul %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-note @+1 {{used as a matmul weight here}}
  %z = graph.matmul %y, %wt : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %z : tensor<3x4xf32>
}

// -----

// A transposed weight whose adapter names are taken.
// expected-error @+1 {{rp-inject-lora: cannot add 'q_proj.lora_B.weight' for param 'q_proj.weight': the symbol exists (was LoRA injected already?)}}
graph.param @q_proj.weight trainable : tensor<4x8xf32>
// expected-note @+1 {{existing symbol here}}
graph.param @q_proj.lora_B.weight trainable : tensor<2x4xf32> init zeros
func.func @taken_transposed(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  %w = graph.load_param @q_proj.weight : tensor<4x8xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = graph.matmul %x, %wt : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
