// The verifier and type-inference messages of the routed-experts ops.
// RUN: rp-opt %s -split-input-file -verify-diagnostics

func.func @sort_rank(%idx: tensor<64xi64>) {
  // expected-error @+2 {{'graph.moe_sort' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_sort' op expected indices of rank 2 [T, k], got [64]}}
  %p, %o = graph.moe_sort %idx {num_experts = 8 : i64} : (tensor<64xi64>) -> (tensor<64xi64>, tensor<9xi64>)
  return
}

// -----

func.func @sort_experts(%idx: tensor<32x2xi64>) {
  // expected-error @+2 {{'graph.moe_sort' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_sort' op expected num_experts >= 1, got 0}}
  %p, %o = graph.moe_sort %idx {num_experts = 0 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<1xi64>)
  return
}

// -----

// The offsets have num_experts + 1 entries.
func.func @sort_offsets(%idx: tensor<32x2xi64>) {
  // expected-error @+2 {{'graph.moe_sort' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_sort' op inferred type(s) 'tensor<32x2xi64>', 'tensor<9xi64>' are incompatible with return type(s) of operation 'tensor<32x2xi64>', 'tensor<8xi64>'}}
  %p, %o = graph.moe_sort %idx {num_experts = 8 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<8xi64>)
  return
}

// -----

func.func @sort_i32(%idx: tensor<32x2xi32>) {
  // expected-error @+1 {{'graph.moe_sort' op operand #0 must be tensor of 64-bit signless integer values, but got 'tensor<32x2xi32>'}}
  %p, %o = graph.moe_sort %idx {num_experts = 8 : i64} : (tensor<32x2xi32>) -> (tensor<32x2xi64>, tensor<9xi64>)
  return
}

// -----

func.func @dispatch_tokens(%x: tensor<32x64xf32>, %pos: tensor<16x2xi64>) {
  // expected-error @+2 {{'graph.moe_dispatch' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_dispatch' op expected positions of shape [32, k], got [16, 2]}}
  %r = graph.moe_dispatch %x, %pos : (tensor<32x64xf32>, tensor<16x2xi64>) -> tensor<32x64xf32>
  return
}

// -----

func.func @dispatch_rank(%x: tensor<2x16x64xf32>, %pos: tensor<2x2xi64>) {
  // expected-error @+2 {{'graph.moe_dispatch' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_dispatch' op expected input of rank 2 [T, H], got [2, 16, 64]}}
  %r = graph.moe_dispatch %x, %pos : (tensor<2x16x64xf32>, tensor<2x2xi64>) -> tensor<4x64xf32>
  return
}

// -----

func.func @combine_rows(%r: tensor<60x64xf32>, %w: tensor<32x2xf32>, %pos: tensor<32x2xi64>) {
  // expected-error @+2 {{'graph.moe_combine' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_combine' op expected positions [T, k] with T * k = 60 (rows), got [32, 2]}}
  %y = graph.moe_combine %r, %w, %pos : (tensor<60x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>) -> tensor<32x64xf32>
  return
}

// -----

func.func @combine_weights(%r: tensor<64x64xf32>, %w: tensor<32x1xf32>, %pos: tensor<32x2xi64>) {
  // expected-error @+2 {{'graph.moe_combine' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_combine' op expected weights of shape [32, 2] (positions), got [32, 1]}}
  %y = graph.moe_combine %r, %w, %pos : (tensor<64x64xf32>, tensor<32x1xf32>, tensor<32x2xi64>) -> tensor<32x64xf32>
  return
}

// -----

func.func @combine_dtype(%r: tensor<64x64xf32>, %w: tensor<32x2xbf16>, %pos: tensor<32x2xi64>) {
  // expected-error @+2 {{'graph.moe_combine' op failed to infer returned types}}
  // expected-error @+1 {{'graph.moe_combine' op expected weights to have the element type f32, got bf16}}
  %y = graph.moe_combine %r, %w, %pos : (tensor<64x64xf32>, tensor<32x2xbf16>, tensor<32x2xi64>) -> tensor<32x64xf32>
  return
}

// -----

func.func @grouped_weights(%r: tensor<64x64xf32>, %w: tensor<8x32x128xf32>, %off: tensor<9xi64>) {
  // expected-error @+2 {{'graph.grouped_matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.grouped_matmul' op expected weights of shape [8, 64, N], got [8, 32, 128]}}
  %y = graph.grouped_matmul %r, %w, %off : (tensor<64x64xf32>, tensor<8x32x128xf32>, tensor<9xi64>) -> tensor<64x128xf32>
  return
}

// -----

func.func @grouped_transposed(%r: tensor<64x64xf32>, %w: tensor<8x64x128xf32>, %off: tensor<9xi64>) {
  // expected-error @+2 {{'graph.grouped_matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.grouped_matmul' op expected weights of shape [8, N, 64], got [8, 64, 128]}}
  %y = graph.grouped_matmul %r, %w, %off {transpose_b} : (tensor<64x64xf32>, tensor<8x64x128xf32>, tensor<9xi64>) -> tensor<64x128xf32>
  return
}

// -----

// The offsets are [E + 1]: one more than the weights' experts.
func.func @grouped_offsets(%r: tensor<64x64xf32>, %w: tensor<8x64x128xf32>, %off: tensor<8xi64>) {
  // expected-error @+2 {{'graph.grouped_matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.grouped_matmul' op expected weights of shape [7, 64, N], got [8, 64, 128]}}
  %y = graph.grouped_matmul %r, %w, %off : (tensor<64x64xf32>, tensor<8x64x128xf32>, tensor<8xi64>) -> tensor<64x128xf32>
  return
}

// -----

func.func @grouped_offsets_rank(%r: tensor<64x64xf32>, %w: tensor<1x64x128xf32>, %off: tensor<1xi64>) {
  // expected-error @+2 {{'graph.grouped_matmul' op failed to infer returned types}}
  // expected-error @+1 {{'graph.grouped_matmul' op expected offsets of shape [E + 1] with E >= 1, got [1]}}
  %y = graph.grouped_matmul %r, %w, %off : (tensor<64x64xf32>, tensor<1x64x128xf32>, tensor<1xi64>) -> tensor<64x128xf32>
  return
}

// -----

func.func @wgrad_rows(%a: tensor<64x64xf32>, %b: tensor<60x128xf32>, %off: tensor<9xi64>) {
  // expected-error @+2 {{'graph.grouped_matmul_wgrad' op failed to infer returned types}}
  // expected-error @+1 {{'graph.grouped_matmul_wgrad' op expected lhs [R, K] and rhs [R, N], got [64, 64] and [60, 128]}}
  %y = graph.grouped_matmul_wgrad %a, %b, %off : (tensor<64x64xf32>, tensor<60x128xf32>, tensor<9xi64>) -> tensor<8x64x128xf32>
  return
}
