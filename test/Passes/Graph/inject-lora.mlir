// rp-inject-lora: adapters on the matmuls of matching weights, everything else frozen.
// RUN: rp-opt %s -split-input-file --rp-inject-lora="rank=4 alpha=8 targets=q_proj|v_proj" | FileCheck %s

// q_proj gets A [in, rank] (kaiming_uniform) and B [rank, out] (zeros) right after it; the
// matmul's users read x @ W + ((x @ A) @ B) * (alpha / rank = 2.0). The near miss k_proj and
// the embedding are not adapted; every non-adapter param is frozen.
// CHECK:      graph.param @embed : tensor<16x8xf32> initializer "embed"
// CHECK-NEXT: graph.param @q_proj : tensor<8x6xf32> initializer "q_proj"
// CHECK-NEXT: graph.param @q_proj.lora_A trainable : tensor<8x4xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @q_proj.lora_B trainable : tensor<4x6xf32> init zeros
// CHECK-NEXT: graph.param @k_proj : tensor<8x6xf32> initializer "k_proj"
// CHECK-NEXT: graph.param @norm : tensor<8xf32>
// CHECK-NOT:  k_proj.lora
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>)
// CHECK:      %[[W:.+]] = graph.load_param @q_proj : tensor<8x6xf32>
// CHECK-NEXT: %[[Y:.+]] = graph.matmul %[[X]], %[[W]] : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[A:.+]] = graph.load_param @q_proj.lora_A : tensor<8x4xf32>
// CHECK-NEXT: %[[B:.+]] = graph.load_param @q_proj.lora_B : tensor<4x6xf32>
// CHECK-NEXT: %[[XA:.+]] = graph.matmul %[[X]], %[[A]] : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[XAB:.+]] = graph.matmul %[[XA]], %[[B]] : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[S:.+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[D:.+]] = graph.mul %[[XAB]], %[[S]] : (tensor<2x3x6xf32>, tensor<f32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[Q:.+]] = graph.add %[[Y]], %[[D]] : (tensor<2x3x6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[KW:.+]] = graph.load_param @k_proj : tensor<8x6xf32>
// CHECK-NEXT: %[[K:.+]] = graph.matmul %[[X]], %[[KW]] : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[R:.+]] = graph.add %[[Q]], %[[K]]
// CHECK-NEXT: return %[[R]], %[[Q]]
graph.param @embed trainable : tensor<16x8xf32> initializer "embed"
graph.param @q_proj trainable : tensor<8x6xf32> initializer "q_proj"
graph.param @k_proj trainable : tensor<8x6xf32> initializer "k_proj"
graph.param @norm : tensor<8xf32>
func.func @attention(%x: tensor<2x3x8xf32>) -> (tensor<2x3x6xf32>, tensor<2x3x6xf32>) {
  %wq = graph.load_param @q_proj : tensor<8x6xf32>
  %q = graph.matmul %x, %wq : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
  %wk = graph.load_param @k_proj : tensor<8x6xf32>
  %k = graph.matmul %x, %wk : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
  %r = graph.add %q, %k : (tensor<2x3x6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
  // Returning %q as well checks that every use of the matmul reads the adapted sum.
  return %r, %q : tensor<2x3x6xf32>, tensor<2x3x6xf32>
}

// -----

// Two matmuls (in two functions, one of them twice in a chain) share one weight: one A/B
// pair, three adapted matmuls, each loading the adapters where it is.
// CHECK:     graph.param @v_proj : tensor<4x4xf32>
// CHECK-NEXT: graph.param @v_proj.lora_A trainable : tensor<4x4xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @v_proj.lora_B trainable : tensor<4x4xf32> init zeros
// CHECK-NOT: graph.param
// CHECK-LABEL: func.func @first
// CHECK:      %[[Y1:.+]] = graph.matmul %{{.+}}, %[[W1:.+]] : (tensor<3x4xf32>, tensor<4x4xf32>)
// CHECK:      graph.load_param @v_proj.lora_A
// CHECK:      %[[S1:.+]] = graph.add %[[Y1]], %{{.+}}
// CHECK-NEXT: %[[Y2:.+]] = graph.matmul %[[S1]], %[[W1]]
// CHECK:      graph.load_param @v_proj.lora_A
// CHECK:      %[[XA2:.+]] = graph.matmul %[[S1]], %{{.+}} : (tensor<3x4xf32>, tensor<4x4xf32>)
// CHECK:      %[[S2:.+]] = graph.add %[[Y2]], %{{.+}}
// CHECK-NEXT: return %[[S2]]
// CHECK-LABEL: func.func @second
// CHECK:      graph.load_param @v_proj.lora_A
// CHECK:      graph.load_param @v_proj.lora_B
// CHECK:      graph.add
// CHECK-NEXT: return
graph.param @v_proj trainable : tensor<4x4xf32>
func.func @first(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w = graph.load_param @v_proj : tensor<4x4xf32>
  %y1 = graph.matmul %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %y2 = graph.matmul %y1, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y2 : tensor<3x4xf32>
}
func.func @second(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %w = graph.load_param @v_proj : tensor<4x4xf32>
  %y = graph.matmul %x, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Adapters and the scale take the weight's element type; a 1-D x works (x @ A is [rank]).
// Names are searched, not matched whole: "layers.0.self_attn.q_proj.weight" matches q_proj.
// CHECK:      graph.param @layers.0.self_attn.q_proj.weight : tensor<8x2xbf16>
// CHECK-NEXT: graph.param @layers.0.self_attn.q_proj.weight.lora_A trainable : tensor<8x4xbf16> init kaiming_uniform
// CHECK-NEXT: graph.param @layers.0.self_attn.q_proj.weight.lora_B trainable : tensor<4x2xbf16> init zeros
// CHECK-LABEL: func.func @bf16
// CHECK:      graph.matmul %{{.+}}, %{{.+}} : (tensor<8xbf16>, tensor<8x4xbf16>) -> tensor<4xbf16>
// CHECK-NEXT: graph.matmul %{{.+}}, %{{.+}} : (tensor<4xbf16>, tensor<4x2xbf16>) -> tensor<2xbf16>
// CHECK-NEXT: graph.constant dense<2.000000e+00> : tensor<bf16>
// CHECK-NEXT: graph.mul %{{.+}}, %{{.+}} : (tensor<2xbf16>, tensor<bf16>) -> tensor<2xbf16>
// CHECK-NEXT: graph.add %{{.+}}, %{{.+}} : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
graph.param @layers.0.self_attn.q_proj.weight trainable : tensor<8x2xbf16>
func.func @bf16(%x: tensor<8xbf16>) -> tensor<2xbf16> {
  %w = graph.load_param @layers.0.self_attn.q_proj.weight : tensor<8x2xbf16>
  %y = graph.matmul %x, %w : (tensor<8xbf16>, tensor<8x2xbf16>) -> tensor<2xbf16>
  return %y : tensor<2xbf16>
}

// -----

// Only a param that is the rhs of a matmul (through graph.load_param, or a transpose of one)
// is adapted: v_proj as the lhs gets no adapter of its own, but v_proj read through the
// transpose does (named `<W>.lora_A.weight`: x @ W^T). Existing adapters (names containing
// ".lora_") are never adapted and keep their trainable flag.
// CHECK:      graph.param @q_proj : tensor<4x4xf32>
// CHECK-NEXT: graph.param @q_proj.lora_A trainable : tensor<4x4xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @q_proj.lora_B trainable : tensor<4x4xf32> init zeros
// CHECK-NEXT: graph.param @v_proj : tensor<4x4xf32>
// CHECK-NEXT: graph.param @v_proj.lora_A.weight trainable : tensor<4x4xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @v_proj.lora_B.weight trainable : tensor<4x4xf32> init zeros
// CHECK-NEXT: graph.param @o_proj.lora_A.v_proj trainable : tensor<4x4xf32>
// CHECK-NEXT: graph.param @o_proj.lora_B.v_proj : tensor<4x4xf32>
// CHECK-NOT:  graph.param
// CHECK-LABEL: func.func @indirect
// CHECK-COUNT-2: graph.constant
// CHECK-NOT:  graph.constant
graph.param @q_proj trainable : tensor<4x4xf32>
graph.param @v_proj trainable : tensor<4x4xf32>
graph.param @o_proj.lora_A.v_proj trainable : tensor<4x4xf32>
graph.param @o_proj.lora_B.v_proj : tensor<4x4xf32>
func.func @indirect(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %q = graph.load_param @q_proj : tensor<4x4xf32>
  %v = graph.load_param @v_proj : tensor<4x4xf32>
  %a = graph.load_param @o_proj.lora_A.v_proj : tensor<4x4xf32>
  %vt = graph.transpose %v {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %0 = graph.matmul %x, %vt : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = graph.matmul %v, %0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = graph.matmul %1, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = graph.matmul %2, %q : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// nn.Linear's layout, as the Hugging Face exports compute every projection: W [out 6, in 8]
// read as x @ transpose(W). A is [in, rank] and B [rank, out] as for x @ W, named as PEFT
// names the module's adapters (W's name without ".weight", then ".lora_A.weight"); the
// matmul's users read x @ W^T + ((x @ A) @ B) * 2.
// CHECK:      graph.param @model.layers.0.self_attn.q_proj.weight : tensor<6x8xf32>
// CHECK-NEXT: graph.param @model.layers.0.self_attn.q_proj.lora_A.weight trainable : tensor<8x4xf32> init kaiming_uniform
// CHECK-NEXT: graph.param @model.layers.0.self_attn.q_proj.lora_B.weight trainable : tensor<4x6xf32> init zeros
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>)
// CHECK:      %[[WT:.+]] = graph.transpose
// CHECK-NEXT: %[[Y:.+]] = graph.matmul %[[X]], %[[WT]] : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[A:.+]] = graph.load_param @model.layers.0.self_attn.q_proj.lora_A.weight : tensor<8x4xf32>
// CHECK-NEXT: %[[B:.+]] = graph.load_param @model.layers.0.self_attn.q_proj.lora_B.weight : tensor<4x6xf32>
// CHECK-NEXT: %[[XA:.+]] = graph.matmul %[[X]], %[[A]] : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[XAB:.+]] = graph.matmul %[[XA]], %[[B]] : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[S:.+]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[D:.+]] = graph.mul %[[XAB]], %[[S]]
// CHECK-NEXT: %[[R:.+]] = graph.add %[[Y]], %[[D]]
// CHECK-NEXT: return %[[R]]
graph.param @model.layers.0.self_attn.q_proj.weight trainable : tensor<6x8xf32>
func.func @linear(%x: tensor<2x3x8xf32>) -> tensor<2x3x6xf32> {
  %w = graph.load_param @model.layers.0.self_attn.q_proj.weight : tensor<6x8xf32>
  %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = graph.matmul %x, %wt : (tensor<2x3x8xf32>, tensor<8x6xf32>) -> tensor<2x3x6xf32>
  return %y : tensor<2x3x6xf32>
}
