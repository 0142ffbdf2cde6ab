// Round trip of every graph op: text, generic form and bytecode.
// RUN: rp-opt %s | FileCheck %s
// RUN: rp-opt %s | rp-opt | FileCheck %s
// RUN: rp-opt %s --mlir-print-op-generic | rp-opt | FileCheck %s
// RUN: rp-opt %s --emit-bytecode | rp-opt | FileCheck %s

// A trainable param with an initializer, and a frozen one without.
// CHECK: graph.param @model.embed_tokens.weight trainable : tensor<256x64xf32> initializer "model.embed_tokens.weight"
graph.param @"model.embed_tokens.weight" trainable : tensor<256x64xf32> initializer "model.embed_tokens.weight"
// CHECK: graph.param @inv_freq : tensor<16xf32>{{$}}
graph.param @inv_freq : tensor<16xf32>
// CHECK: graph.param @positions : tensor<8xi64>
graph.param @positions : tensor<8xi64>
// Params without stored values say how they start.
// CHECK: graph.param @q.lora_A trainable : tensor<64x8xf32> init kaiming_uniform
graph.param @q.lora_A trainable : tensor<64x8xf32> init kaiming_uniform
// CHECK: graph.param @q.lora_B trainable : tensor<8x64xf32> init zeros
graph.param @q.lora_B trainable : tensor<8x64xf32> init zeros

// CHECK-LABEL: func.func @params_and_constants
func.func @params_and_constants() -> (tensor<256x64xf32>, tensor<16xf32>, tensor<2xf32>, tensor<4xi1>) {
  // CHECK: %[[E:.+]] = graph.load_param @model.embed_tokens.weight : tensor<256x64xf32>
  %e = graph.load_param @"model.embed_tokens.weight" : tensor<256x64xf32>
  // CHECK: %[[F:.+]] = graph.load_param @inv_freq : tensor<16xf32>
  %f = graph.load_param @inv_freq : tensor<16xf32>
  // CHECK: %[[C:.+]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: %[[B:.+]] = graph.constant dense<true> : tensor<4xi1>
  %b = graph.constant dense<true> : tensor<4xi1>
  // CHECK: return %[[E]], %[[F]], %[[C]], %[[B]]
  return %e, %f, %c, %b : tensor<256x64xf32>, tensor<16xf32>, tensor<2xf32>, tensor<4xi1>
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>, %[[I:.+]]: tensor<4xi64>, %[[M:.+]]: tensor<8x8xi1>, %[[H:.+]]: tensor<2x8xbf16>)
func.func @unary(%x: tensor<2x8xf32>, %i: tensor<4xi64>, %m: tensor<8x8xi1>, %h: tensor<2x8xbf16>) {
  // CHECK: graph.sqrt %[[X]] : tensor<2x8xf32>
  %0 = graph.sqrt %x : tensor<2x8xf32>
  // CHECK: graph.reciprocal %[[X]] : tensor<2x8xf32>
  %1 = graph.reciprocal %x : tensor<2x8xf32>
  // CHECK: graph.exp %[[X]] : tensor<2x8xf32>
  %2 = graph.exp %x : tensor<2x8xf32>
  // CHECK: graph.log %[[X]] : tensor<2x8xf32>
  %3 = graph.log %x : tensor<2x8xf32>
  // CHECK: graph.tanh %[[H]] : tensor<2x8xbf16>
  %4 = graph.tanh %h : tensor<2x8xbf16>
  // CHECK: graph.sigmoid %[[X]] : tensor<2x8xf32>
  %5 = graph.sigmoid %x : tensor<2x8xf32>
  // CHECK: graph.erf %[[X]] : tensor<2x8xf32>
  %6 = graph.erf %x : tensor<2x8xf32>
  // CHECK: graph.silu %[[X]] : tensor<2x8xf32>
  %7 = graph.silu %x : tensor<2x8xf32>
  // CHECK: graph.neg %[[I]] : tensor<4xi64>
  %8 = graph.neg %i : tensor<4xi64>
  // CHECK: graph.relu %[[X]] : tensor<2x8xf32>
  %9 = graph.relu %x : tensor<2x8xf32>
  // CHECK: graph.logical_not %[[M]] : tensor<8x8xi1>
  %10 = graph.logical_not %m : tensor<8x8xi1>
  // CHECK: graph.gelu exact %[[X]] : tensor<2x8xf32>
  %11 = graph.gelu exact %x : tensor<2x8xf32>
  // CHECK: graph.gelu tanh %[[H]] : tensor<2x8xbf16>
  %12 = graph.gelu tanh %h : tensor<2x8xbf16>
  // CHECK: graph.softplus %[[X]] : tensor<2x8xf32>
  %13 = graph.softplus %x : tensor<2x8xf32>
  // CHECK: graph.floor %[[H]] : tensor<2x8xbf16>
  %14 = graph.floor %h : tensor<2x8xbf16>
  // CHECK: graph.cos %[[X]] : tensor<2x8xf32>
  %15 = graph.cos %x : tensor<2x8xf32>
  // CHECK: graph.sin %[[H]] : tensor<2x8xbf16>
  %16 = graph.sin %h : tensor<2x8xbf16>
  return
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<2x8x64xf32>, %[[B:.+]]: tensor<64xf32>, %[[I:.+]]: tensor<8x1xi64>, %[[J:.+]]: tensor<8xi64>, %[[M:.+]]: tensor<8x8xi1>, %[[N:.+]]: tensor<8xi1>)
func.func @binary(%a: tensor<2x8x64xf32>, %b: tensor<64xf32>, %i: tensor<8x1xi64>, %j: tensor<8xi64>,
                  %m: tensor<8x8xi1>, %n: tensor<8xi1>) {
  // CHECK: graph.add %[[A]], %[[B]] : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %0 = graph.add %a, %b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: graph.sub %[[B]], %[[A]] : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %1 = graph.sub %b, %a : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: graph.mul %[[A]], %[[A]] : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %2 = graph.mul %a, %a : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: graph.div %[[I]], %[[J]] : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi64>
  %3 = graph.div %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi64>
  // CHECK: graph.pow %[[A]], %[[B]] : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %4 = graph.pow %a, %b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: graph.logical_and %[[M]], %[[N]] : (tensor<8x8xi1>, tensor<8xi1>) -> tensor<8x8xi1>
  %5 = graph.logical_and %m, %n : (tensor<8x8xi1>, tensor<8xi1>) -> tensor<8x8xi1>
  // CHECK: graph.logical_or %[[N]], %[[M]] : (tensor<8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  %6 = graph.logical_or %n, %m : (tensor<8xi1>, tensor<8x8xi1>) -> tensor<8x8xi1>
  // CHECK: graph.compare eq, %[[I]], %[[J]] : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %7 = graph.compare eq, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: graph.compare lt, %[[I]], %[[J]]
  %8 = graph.compare lt, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: graph.compare le, %[[I]], %[[J]]
  %9 = graph.compare le, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: graph.compare gt, %[[B]], %[[B]] : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xi1>
  %10 = graph.compare gt, %b, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xi1>
  // CHECK: graph.compare ge, %[[I]], %[[J]]
  %11 = graph.compare ge, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: graph.mod %[[I]], %[[J]] : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi64>
  %12 = graph.mod %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi64>
  // CHECK: graph.mod %[[A]], %[[B]] {fmod} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %13 = graph.mod %a, %b {fmod} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return
}

// CHECK-LABEL: func.func @where_and_cast
func.func @where_and_cast(%m: tensor<8x8xi1>, %s: tensor<2x4x8x8xf32>, %ninf: tensor<f32>) -> tensor<2x4x8x8xbf16> {
  // CHECK: %[[W:.+]] = graph.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %0 = graph.where %m, %s, %ninf : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  // CHECK: graph.cast %[[W]] : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
  %1 = graph.cast %0 : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
  return %1 : tensor<2x4x8x8xbf16>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<2x8x64xf32>, %w: tensor<64x256xf32>, %v: tensor<64xf32>,
                  %p: tensor<2x1x8x16xf32>, %q: tensor<4x16x8xf32>) {
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
  %0 = graph.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
  // A 1-D rhs is a column vector whose unit dimension is dropped.
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8xf32>
  %1 = graph.matmul %x, %v : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8xf32>
  // A 1-D lhs is a row vector whose unit dimension is dropped.
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<64xf32>, tensor<64x256xf32>) -> tensor<256xf32>
  %2 = graph.matmul %v, %w : (tensor<64xf32>, tensor<64x256xf32>) -> tensor<256xf32>
  // Batch dimensions broadcast.
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<2x1x8x16xf32>, tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %3 = graph.matmul %p, %q : (tensor<2x1x8x16xf32>, tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32>
  return
}

// The operand flags swap the last two dimensions of the operand they name.
// CHECK-LABEL: func.func @matmul_transposed
func.func @matmul_transposed(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>,
                             %a: tensor<2x64x8xf32>, %b: tensor<4x16x8xf32>) {
  // CHECK: graph.matmul %{{.+}}, %{{.+}} {transpose_b} : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  %0 = graph.matmul %x, %w {transpose_b} : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  // CHECK: graph.matmul %{{.+}}, %{{.+}} {transpose_a} : (tensor<2x64x8xf32>, tensor<2x64x8xf32>) -> tensor<2x8x8xf32>
  %1 = graph.matmul %a, %a {transpose_a} : (tensor<2x64x8xf32>, tensor<2x64x8xf32>) -> tensor<2x8x8xf32>
  // CHECK: graph.matmul %{{.+}}, %{{.+}} {transpose_a, transpose_b} : (tensor<2x64x8xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  %2 = graph.matmul %a, %w {transpose_a, transpose_b} : (tensor<2x64x8xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x8x64xf32>, %i: tensor<4x5xi64>) {
  // CHECK: graph.reduce_sum %{{.+}} {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %0 = graph.reduce_sum %x {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  // CHECK: graph.reduce_mean %{{.+}} {axes = array<i64: 0, 2>} : (tensor<2x8x64xf32>) -> tensor<8xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x8x64xf32>) -> tensor<8xf32>
  // CHECK: graph.reduce_max %{{.+}} {axes = array<i64: 0, 1>} : (tensor<4x5xi64>) -> tensor<i64>
  %2 = graph.reduce_max %i {axes = array<i64: 0, 1>} : (tensor<4x5xi64>) -> tensor<i64>
  return
}

// CHECK-LABEL: func.func @normalisations
func.func @normalisations(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                          %g2: tensor<8x64xf32>, %s: tensor<2x4x8x8xf32>) {
  // CHECK: graph.softmax %{{.+}} {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %0 = graph.softmax %s {axis = 3 : i64} : tensor<2x4x8x8xf32>
  // CHECK: graph.log_softmax %{{.+}} {axis = 1 : i64} : tensor<2x4x8x8xf32>
  %1 = graph.log_softmax %s {axis = 1 : i64} : tensor<2x4x8x8xf32>
  // CHECK: graph.layer_norm %{{.+}}, %{{.+}}, %{{.+}} {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %2 = graph.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // Layer norm without a bias, over the last two dimensions.
  // CHECK: graph.layer_norm %{{.+}}, %{{.+}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  %3 = graph.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: graph.rms_norm %{{.+}}, %{{.+}} {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %4 = graph.rms_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // The fused VJP of rms_norm: dx and the per-row scale products.
  // CHECK: graph.rms_norm_vjp %{{.+}}, %{{.+}}, %{{.+}} {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %5:2 = graph.rms_norm_vjp %x, %g, %x {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return
}

// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%logits: tensor<16x256xf32>, %labels: tensor<16xi64>,
                         %l3: tensor<2x256x8xbf16>, %y3: tensor<2x8xi32>) {
  // CHECK: graph.cross_entropy mean %{{.+}}, %{{.+}} {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
  %0 = graph.cross_entropy mean %logits, %labels {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
  // Class axis 1 with a trailing spatial dimension, as ONNX SoftmaxCrossEntropyLoss.
  // CHECK: graph.cross_entropy sum %{{.+}}, %{{.+}} {ignore_index = 0 : i64} : (tensor<2x256x8xbf16>, tensor<2x8xi32>) -> tensor<bf16>
  %1 = graph.cross_entropy sum %l3, %y3 {ignore_index = 0 : i64} : (tensor<2x256x8xbf16>, tensor<2x8xi32>) -> tensor<bf16>
  return
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x8x64xf32>, %m: tensor<1x1x8x8xi1>, %a: tensor<2x4x8x8xf32>) {
  // CHECK: graph.reshape %{{.+}} : tensor<2x8x64xf32> to tensor<2x8x4x16xf32>
  %0 = graph.reshape %x : tensor<2x8x64xf32> to tensor<2x8x4x16xf32>
  // CHECK: graph.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = graph.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.expand %{{.+}} : tensor<1x1x8x8xi1> to tensor<2x4x8x8xi1>
  %2 = graph.expand %m : tensor<1x1x8x8xi1> to tensor<2x4x8x8xi1>
  // CHECK: graph.concat %{{.+}}, %{{.+}} {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %3 = graph.concat %a, %a {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.slice %{{.+}} {axes = array<i64: 3>, ends = array<i64: 16>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %4 = graph.slice %3 {axes = array<i64: 3>, starts = array<i64: 8>, ends = array<i64: 16>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  // A strided slice and a reversing one (end -1 runs to index 0).
  // CHECK: graph.slice %{{.+}} {axes = array<i64: 1, 2>, ends = array<i64: 8, -1>, starts = array<i64: 1, 7>, steps = array<i64: 2, -1>} : (tensor<2x8x64xf32>) -> tensor<2x4x8xf32>
  %5 = graph.slice %x {axes = array<i64: 1, 2>, starts = array<i64: 1, 7>, ends = array<i64: 8, -1>, steps = array<i64: 2, -1>} : (tensor<2x8x64xf32>) -> tensor<2x4x8xf32>
  // CHECK: %{{.+}}:3 = graph.split %{{.+}} {axis = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %6:3 = graph.split %x {axis = 2 : i64, sizes = array<i64: 32, 16, 16>} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return
}

// CHECK-LABEL: func.func @gathers
func.func @gathers(%table: tensor<256x64xf32>, %ids: tensor<2x8xi64>, %logp: tensor<16x256xf32>,
                   %labels: tensor<16x1xi32>, %cos: tensor<32x16xf32>, %pos: tensor<8xi64>) {
  // Embedding lookup: a gather on axis 0.
  // CHECK: graph.gather %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<256x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
  %0 = graph.gather %table, %ids {axis = 0 : i64} : (tensor<256x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
  // A gather on an inner axis.
  // CHECK: graph.gather %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<32x16xf32>, tensor<8xi64>) -> tensor<32x8xf32>
  %1 = graph.gather %cos, %pos {axis = 1 : i64} : (tensor<32x16xf32>, tensor<8xi64>) -> tensor<32x8xf32>
  // CHECK: graph.gather_elements %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi32>) -> tensor<16x1xf32>
  %2 = graph.gather_elements %logp, %labels {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi32>) -> tensor<16x1xf32>
  return
}

// CHECK-LABEL: func.func @top_k
func.func @top_k(%logits: tensor<32x4xf32>, %x: tensor<2x6x3xbf16>) {
  // A router's top-2 experts: the largest by default.
  // CHECK: graph.top_k %{{.+}} {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x2xi64>
  %0 = graph.top_k %logits {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x2xi64>
  // The smallest along an inner axis, k = the whole axis.
  // CHECK: graph.top_k %{{.+}} {axis = 1 : i64, k = 6 : i64, smallest} : (tensor<2x6x3xbf16>) -> tensor<2x6x3xi64>
  %1 = graph.top_k %x {axis = 1 : i64, k = 6 : i64, smallest} : (tensor<2x6x3xbf16>) -> tensor<2x6x3xi64>
  return
}

// CHECK-LABEL: func.func @generators
func.func @generators(%x: tensor<8x8xf32>, %m: tensor<2x8x8xi1>) {
  // CHECK: graph.range {delta = 1 : i64, limit = 8 : i64, start = 0 : i64} : tensor<8xi64>
  %0 = graph.range {start = 0 : i64, limit = 8 : i64, delta = 1 : i64} : tensor<8xi64>
  // A float range, as rotary embeddings build their inverse frequencies.
  // CHECK: graph.range {delta = 2 : i64, limit = 32 : i64, start = 0 : i64} : tensor<16xf32>
  %1 = graph.range {start = 0 : i64, limit = 32 : i64, delta = 2 : i64} : tensor<16xf32>
  // CHECK: graph.range {delta = -5.000000e-01 : f64, limit = 0.000000e+00 : f64, start = 1.000000e+00 : f64} : tensor<2xf32>
  %2 = graph.range {start = 1.0 : f64, limit = 0.0 : f64, delta = -0.5 : f64} : tensor<2xf32>
  // CHECK: graph.trilu %{{.+}} {k = 0 : i64} : tensor<2x8x8xi1>
  %3 = graph.trilu %m {k = 0 : i64} : tensor<2x8x8xi1>
  // CHECK: graph.trilu %{{.+}} {k = -1 : i64, upper} : tensor<8x8xf32>
  %4 = graph.trilu %x {k = -1 : i64, upper} : tensor<8x8xf32>
  return
}

// CHECK-LABEL: func.func @scatters
func.func @scatters(%dh: tensor<2x8x64xf32>, %ids: tensor<2x8xi64>, %dp: tensor<16x1xf32>,
                    %labels: tensor<16x1xi64>, %dy: tensor<2x4x8x8xf32>) {
  // CHECK: graph.scatter_add %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<256x64xf32>
  %0 = graph.scatter_add %dh, %ids {axis = 0 : i64} : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<256x64xf32>
  // CHECK: graph.scatter_elements_add %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<16x1xf32>, tensor<16x1xi64>) -> tensor<16x256xf32>
  %1 = graph.scatter_elements_add %dp, %labels {axis = 1 : i64} : (tensor<16x1xf32>, tensor<16x1xi64>) -> tensor<16x256xf32>
  // CHECK: graph.slice_scatter %{{.+}} {axes = array<i64: 3>, ends = array<i64: 16>, starts = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %2 = graph.slice_scatter %dy {axes = array<i64: 3>, starts = array<i64: 8>, ends = array<i64: 16>, steps = array<i64: 1>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  return
}

// CHECK-LABEL: func.func @overwriting_scatters
func.func @overwriting_scatters(%k: tensor<64x128xf32>, %rows: tensor<16xi64>, %rot: tensor<16x128xf32>,
                                %mask: tensor<32x8xi1>, %top: tensor<32x2xi32>, %on: tensor<32x2xi1>) {
  // CHECK: graph.scatter %{{.+}}, %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<16x128xf32>) -> tensor<64x128xf32>
  %0 = graph.scatter %k, %rows, %rot {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<16x128xf32>) -> tensor<64x128xf32>
  // CHECK: graph.scatter_elements %{{.+}}, %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<32x8xi1>, tensor<32x2xi32>, tensor<32x2xi1>) -> tensor<32x8xi1>
  %1 = graph.scatter_elements %mask, %top, %on {axis = 1 : i64} : (tensor<32x8xi1>, tensor<32x2xi32>, tensor<32x2xi1>) -> tensor<32x8xi1>
  return
}

// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%mask: tensor<2x8xi64>, %x: tensor<16x4xf32>) {
  // CHECK: graph.cumsum %{{.+}} {axis = 1 : i64} : tensor<2x8xi64>
  %0 = graph.cumsum %mask {axis = 1 : i64} : tensor<2x8xi64>
  // CHECK: graph.cumsum %{{.+}} {axis = 0 : i64, exclusive, reverse} : tensor<16x4xf32>
  %1 = graph.cumsum %x {axis = 0 : i64, exclusive, reverse} : tensor<16x4xf32>
  return
}

// CHECK-LABEL: func.func @fused
func.func @fused(%g: tensor<2x8x172xf32>, %u: tensor<2x8x172xf32>, %q: tensor<2x4x8x16xf32>,
                 %c: tensor<8x16xf32>, %s: tensor<8x16xf32>, %cb: tensor<2x1x8x16xbf16>,
                 %qb: tensor<2x4x8x16xbf16>) {
  // CHECK: graph.swiglu %{{.+}}, %{{.+}} : tensor<2x8x172xf32>
  %0 = graph.swiglu %g, %u : tensor<2x8x172xf32>
  // CHECK: graph.rope %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = graph.rope %q, %c, %s : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.rope %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %2 = graph.rope %qb, %cb, %cb : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  // CHECK: graph.rope %{{.+}}, %{{.+}}, %{{.+}} {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  %3 = graph.rope %q, %c, %s {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  // The fused VJPs.
  // CHECK: graph.swiglu_vjp %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x172xf32>
  %4:2 = graph.swiglu_vjp %g, %u, %0 : tensor<2x8x172xf32>
  // CHECK: graph.rope_vjp %{{.+}}, %{{.+}}, %{{.+}} {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  %5 = graph.rope_vjp %q, %c, %s {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.rope_vjp %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %6 = graph.rope_vjp %qb, %cb, %cb : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %k4: tensor<2x4x8x16xf32>) {
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %0 = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = graph.attention %q, %k4, %k4 {scale = 0.125 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// CHECK-LABEL: func.func @attention_vjp
func.func @attention_vjp(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  // CHECK: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = graph.attention_vjp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %dq, %dk, %dv = graph.attention_vjp %q, %kv, %kv, %q, %q {causal, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  // CHECK: return %[[DQ]], %[[DK]], %[[DV]]
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// Attention sinks (one per query head): a fourth operand, and attention_vjp's dsinks.
// CHECK-LABEL: func.func @attention_sinks
func.func @attention_sinks(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} sinks %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>) -> tensor<2x4x8x16xf32>
  %y = graph.attention %q, %kv, %kv sinks %s {causal, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} = graph.attention_vjp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} sinks %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>)
  %g:4 = graph.attention_vjp %q, %kv, %kv, %y, %q sinks %s {causal, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>)
  return %g#3 : tensor<4xf32>
}

// A sliding window (with causal), alone and with sinks; the VJP carries the forward's.
// CHECK-LABEL: func.func @attention_window
func.func @attention_window(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %s: tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<4xf32>) {
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64, window = 3 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64, window = 3 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} sinks %{{.+}} {causal, scale = 2.500000e-01 : f64, window = 1 : i64}
  %z = graph.attention %q, %kv, %kv sinks %s {causal, scale = 0.25 : f64, window = 1 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.attention_vjp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} sinks %{{.+}} {causal, scale = 2.500000e-01 : f64, window = 1 : i64}
  %g:4 = graph.attention_vjp %q, %kv, %kv, %z, %y sinks %s {causal, scale = 0.25 : f64, window = 1 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>)
  return %g#0, %g#3 : tensor<2x4x8x16xf32>, tensor<4xf32>
}

// A value head size other than the query/key head size (multi-head latent attention): the
// result and dout have it, dvalue is the value's type.
// CHECK-LABEL: func.func @attention_value_dim
func.func @attention_value_dim(%q: tensor<2x4x8x12xf32>, %k: tensor<2x2x8x12xf32>, %v: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x12xf32>, tensor<2x2x8x12xf32>, tensor<2x2x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = graph.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x4x8x12xf32>, tensor<2x2x8x12xf32>, tensor<2x2x8x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: graph.attention_vjp
  %g:3 = graph.attention_vjp %q, %k, %v, %y, %y {causal, scale = 0.25 : f64} : (tensor<2x4x8x12xf32>, tensor<2x2x8x12xf32>, tensor<2x2x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> (tensor<2x4x8x12xf32>, tensor<2x2x8x12xf32>, tensor<2x2x8x8xf32>)
  return %g#2 : tensor<2x2x8x8xf32>
}

// A logit soft-cap (Gemma-2); the VJP carries the forward's.
// CHECK-LABEL: func.func @attention_softcap
func.func @attention_softcap(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = graph.attention %q, %kv, %kv {causal, scale = 0.25 : f64, softcap = 50.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: graph.attention_vjp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64}
  %g:3 = graph.attention_vjp %q, %kv, %kv, %y, %y {causal, scale = 0.25 : f64, softcap = 50.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return %g#0 : tensor<2x4x8x16xf32>
}

// CHECK-LABEL: func.func @linear_cross_entropy
func.func @linear_cross_entropy(%h: tensor<4x8xbf16>, %w: tensor<10x8xbf16>, %y: tensor<4xi32>, %s: tensor<bf16>) -> (tensor<bf16>, tensor<bf16>, tensor<4x8xbf16>, tensor<10x8xbf16>) {
  // CHECK: graph.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} {chunk_rows = 2 : i64, ignore_index = -100 : i64} : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi32>) -> tensor<bf16>
  %l = graph.linear_cross_entropy mean %h, %w, %y {chunk_rows = 2 : i64, ignore_index = -100 : i64} : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi32>) -> tensor<bf16>
  // CHECK: graph.linear_cross_entropy_vjp sum %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {ignore_index = 0 : i64} : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi32>, tensor<bf16>) -> (tensor<bf16>, tensor<4x8xbf16>, tensor<10x8xbf16>)
  %l2, %dh, %dw = graph.linear_cross_entropy_vjp sum %h, %w, %y, %s {ignore_index = 0 : i64} : (tensor<4x8xbf16>, tensor<10x8xbf16>, tensor<4xi32>, tensor<bf16>) -> (tensor<bf16>, tensor<4x8xbf16>, tensor<10x8xbf16>)
  return %l, %l2, %dh, %dw : tensor<bf16>, tensor<bf16>, tensor<4x8xbf16>, tensor<10x8xbf16>
}

// A biased head (Phi): the bias operand and the VJP's dbias result.
// CHECK-LABEL: func.func @linear_cross_entropy_bias
func.func @linear_cross_entropy_bias(%h: tensor<4x8xf32>, %w: tensor<10x8xf32>, %y: tensor<4xi64>, %b: tensor<10xf32>, %s: tensor<f32>) -> (tensor<f32>, tensor<10xf32>) {
  // CHECK: graph.linear_cross_entropy mean %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  %l = graph.linear_cross_entropy mean %h, %w, %y bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  // CHECK: graph.linear_cross_entropy_vjp mean %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bias %{{.+}} {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>, tensor<10xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>, tensor<10xf32>)
  %l2, %dh, %dw, %db = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s bias %b {ignore_index = -100 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<4xi64>, tensor<f32>, tensor<10xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<10x8xf32>, tensor<10xf32>)
  return %l, %db : tensor<f32>, tensor<10xf32>
}

// A quantized frozen weight and its dequantization (rpc-compile --base-weights).
// CHECK: graph.param @qw : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<64x128xf32>}
graph.param @qw : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<64x128xf32>}
// CHECK-LABEL: func.func @dequantize
func.func @dequantize(%i8: tensor<8704xui8>) -> (tensor<64x128xf32>, tensor<64x128xbf16>) {
  // CHECK: graph.load_param @qw : tensor<4232xui8>
  %q = graph.load_param @qw : tensor<4232xui8>
  // CHECK: graph.dequantize nf4 %{{.+}} : (tensor<4232xui8>) -> tensor<64x128xf32>
  %w = graph.dequantize nf4 %q : (tensor<4232xui8>) -> tensor<64x128xf32>
  // CHECK: graph.dequantize int8 %{{.+}} {axis = 0 : i64} : (tensor<8704xui8>) -> tensor<64x128xbf16>
  %v = graph.dequantize int8 %i8 {axis = 0 : i64} : (tensor<8704xui8>) -> tensor<64x128xbf16>
  return %w, %v : tensor<64x128xf32>, tensor<64x128xbf16>
}
