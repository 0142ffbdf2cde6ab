// rp-fuse-routed-experts: batched_mm experts (gathered expert weights, one matmul per
// (token, choice)) become graph.moe_sort / moe_dispatch / grouped_matmul / moe_combine; near
// misses stay as imported. 4 tokens pick 2 of 3 experts (8 pairs), hidden 4, intermediate 2.
// RUN: rp-opt %s --rp-fuse-routed-experts | FileCheck %s

// Qwen3-MoE as the dynamo exporter writes it: softmax then top-k, renormalised weights,
// W[e] x against gate_up [E, 2I, H] and down [E, H, I] (read transposed), the tokens
// repeated k times by reshape/expand.
// CHECK-LABEL: func.func @qwen3_moe_dynamo
// CHECK-SAME: (%{{[^:]+}}: tensor<4x4xf32>, %{{[^:]+}}: tensor<4x3xf32>, %[[WGU:[^:]+]]: tensor<3x4x4xf32>, %[[WD:[^:]+]]: tensor<3x4x2xf32>)
// CHECK: %[[I:.+]] = graph.top_k
// CHECK-NEXT: %[[POS:.+]], %[[OFF:.+]] = graph.moe_sort %[[I]] {num_experts = 3 : i64} : (tensor<4x2xi64>) -> (tensor<4x2xi64>, tensor<4xi64>)
// CHECK-NOT: graph.gather %
// CHECK: %[[XS:.+]] = graph.moe_dispatch %{{.+}}, %[[POS]] : (tensor<4x4xf32>, tensor<4x2xi64>) -> tensor<8x4xf32>
// CHECK: %[[HS:.+]] = graph.grouped_matmul %[[XS]], %[[WGU]], %[[OFF]] {transpose_b} : (tensor<8x4xf32>, tensor<3x4x4xf32>, tensor<4xi64>) -> tensor<8x4xf32>
// The activation stays in expert order: no permutation back and forth between the products.
// CHECK-NOT: graph.moe_
// CHECK: %[[GU:.+]]:2 = graph.split %[[HS]]
// CHECK-NOT: graph.moe_
// CHECK: %[[OS:.+]] = graph.grouped_matmul %{{.+}}, %[[WD]], %[[OFF]] {transpose_b} : (tensor<8x2xf32>, tensor<3x4x2xf32>, tensor<4xi64>) -> tensor<8x4xf32>
// CHECK: %[[Y:.+]] = graph.moe_combine %[[OS]], %{{.+}}, %[[POS]] : (tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x2xi64>) -> tensor<4x4xf32>
// CHECK-NOT: graph.gather %
// CHECK-NOT: graph.reduce_sum %{{.+}} : (tensor<4x2x4xf32>)
// CHECK: return %[[Y]]
func.func @qwen3_moe_dynamo(%x: tensor<4x4xf32>, %l: tensor<4x3xf32>, %wgu: tensor<3x4x4xf32>, %wd: tensor<3x4x2xf32>) -> tensor<4x4xf32> {
  %p = graph.softmax %l {axis = 1 : i64} : tensor<4x3xf32>
  %i = graph.top_k %p {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %v = graph.gather_elements %p, %i {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %s = graph.reduce_sum %v {axes = array<i64: 1>, keepdims} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  %w = graph.div %v, %s : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %x1 = graph.reshape %x : tensor<4x4xf32> to tensor<4x1x4xf32>
  %xe = graph.expand %x1 : tensor<4x1x4xf32> to tensor<4x2x4xf32>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %xc = graph.reshape %xe : tensor<4x2x4xf32> to tensor<8x4x1xf32>
  %m1 = graph.matmul %g1, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %h = graph.reshape %m1 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %gu:2 = graph.split %h {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<8x4xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>)
  %a = graph.swiglu %gu#0, %gu#1 : tensor<8x2xf32>
  %g2 = graph.gather %wd, %f {axis = 0 : i64} : (tensor<3x4x2xf32>, tensor<8xi64>) -> tensor<8x4x2xf32>
  %ac = graph.reshape %a : tensor<8x2xf32> to tensor<8x2x1xf32>
  %m2 = graph.matmul %g2, %ac : (tensor<8x4x2xf32>, tensor<8x2x1xf32>) -> tensor<8x4x1xf32>
  %o = graph.reshape %m2 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %wr = graph.reshape %w : tensor<4x2xf32> to tensor<8x1xf32>
  %ow = graph.mul %o, %wr : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %o3 = graph.reshape %ow : tensor<8x4xf32> to tensor<4x2x4xf32>
  %y = graph.reduce_sum %o3 {axes = array<i64: 1>} : (tensor<4x2x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// The TorchScript exporter's Tile: the tokens repeated through a rank-6 expand; the weights
// multiply on the other side of the product (w * rows).
// CHECK-LABEL: func.func @qwen3_moe_torchscript
// CHECK: %[[POS:.+]], %[[OFF:.+]] = graph.moe_sort
// CHECK: graph.moe_dispatch %{{.+}}, %[[POS]] : (tensor<4x4xf32>, tensor<4x2xi64>) -> tensor<8x4xf32>
// CHECK: graph.grouped_matmul {{.+}} {transpose_b}
// CHECK: graph.moe_combine %{{.+}}, %{{.+}}, %[[POS]] : (tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x2xi64>) -> tensor<4x4xf32>
// CHECK-NOT: graph.gather %
// CHECK: return
func.func @qwen3_moe_torchscript(%x: tensor<2x2x4xf32>, %p: tensor<4x3xf32>, %wgu: tensor<3x4x4xf32>, %w: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %i = graph.top_k %p {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %x1 = graph.reshape %x : tensor<2x2x4xf32> to tensor<1x4x1x1x1x4xf32>
  %xe = graph.expand %x1 : tensor<1x4x1x1x1x4xf32> to tensor<1x4x2x1x1x4xf32>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %xc = graph.reshape %xe : tensor<1x4x2x1x1x4xf32> to tensor<8x4x1xf32>
  %m1 = graph.matmul %g1, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %o = graph.reshape %m1 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %wr = graph.reshape %w : tensor<4x2xf32> to tensor<8x1xf32>
  %ow = graph.mul %wr, %o : (tensor<8x1xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %o3 = graph.reshape %ow : tensor<8x4xf32> to tensor<4x2x4xf32>
  %y = graph.reduce_sum %o3 {axes = array<i64: 1>} : (tensor<4x2x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// GPT-OSS: router bias, softmax over the top-k logits, x W[e] against gate_up [E, H, 2I]
// (interleaved gate/up, sliced with step 2) and down [E, I, H], a bias [E, N] gathered per pair
// after each product.
// CHECK-LABEL: func.func @gpt_oss
// CHECK-SAME: (%{{[^:]+}}: tensor<4x4xf32>, %{{[^:]+}}: tensor<4x3xf32>, %[[WGU:[^:]+]]: tensor<3x4x4xf32>, %[[BGU:[^:]+]]: tensor<3x4xf32>, %[[WD:[^:]+]]: tensor<3x2x4xf32>, %[[BD:[^:]+]]: tensor<3x4xf32>)
// CHECK: %[[POS:.+]], %[[OFF:.+]] = graph.moe_sort %{{.+}} {num_experts = 3 : i64}
// CHECK-NOT: graph.gather %
// CHECK: %[[XS:.+]] = graph.moe_dispatch %{{.+}}, %[[POS]] : (tensor<4x4xf32>, tensor<4x2xi64>)
// CHECK: %[[HS:.+]] = graph.grouped_matmul %[[XS]], %[[WGU]], %[[OFF]] : (tensor<8x4xf32>, tensor<3x4x4xf32>, tensor<4xi64>) -> tensor<8x4xf32>
// CHECK: %[[B1:.+]] = graph.reshape %[[BGU]] : tensor<3x4xf32> to tensor<3x1x4xf32>
// CHECK: %[[BR:.+]] = graph.grouped_matmul %{{.+}}, %[[B1]], %[[OFF]] : (tensor<8x1xf32>, tensor<3x1x4xf32>, tensor<4xi64>) -> tensor<8x4xf32>
// CHECK: %[[H:.+]] = graph.add %[[HS]], %[[BR]]
// CHECK-NOT: graph.moe_
// CHECK: graph.slice %[[H]]
// CHECK-NOT: graph.moe_
// CHECK: graph.grouped_matmul %{{.+}}, %[[WD]], %[[OFF]] : (tensor<8x2xf32>, tensor<3x2x4xf32>, tensor<4xi64>) -> tensor<8x4xf32>
// CHECK: graph.reshape %[[BD]] : tensor<3x4xf32> to tensor<3x1x4xf32>
// CHECK: %[[Y:.+]] = graph.moe_combine %{{.+}}, %{{.+}}, %[[POS]] : (tensor<8x4xf32>, tensor<4x2xf32>, tensor<4x2xi64>) -> tensor<4x4xf32>
// CHECK-NOT: graph.gather %
// CHECK: return %[[Y]]
func.func @gpt_oss(%x: tensor<4x4xf32>, %l: tensor<4x3xf32>, %wgu: tensor<3x4x4xf32>, %bgu: tensor<3x4xf32>, %wd: tensor<3x2x4xf32>, %bd: tensor<3x4xf32>) -> tensor<4x4xf32> {
  %i = graph.top_k %l {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %v = graph.gather_elements %l, %i {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %w = graph.softmax %v {axis = 1 : i64} : tensor<4x2xf32>
  %x1 = graph.reshape %x : tensor<4x4xf32> to tensor<4x1x4xf32>
  %xe = graph.expand %x1 : tensor<4x1x4xf32> to tensor<4x2x4xf32>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %b1 = graph.gather %bgu, %f {axis = 0 : i64} : (tensor<3x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %xr = graph.reshape %xe : tensor<4x2x4xf32> to tensor<8x1x4xf32>
  %m1 = graph.matmul %xr, %g1 : (tensor<8x1x4xf32>, tensor<8x4x4xf32>) -> tensor<8x1x4xf32>
  %h0 = graph.reshape %m1 : tensor<8x1x4xf32> to tensor<8x4xf32>
  %h = graph.add %h0, %b1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %gate = graph.slice %h {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 2>} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %up = graph.slice %h {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  %a = graph.mul %gate, %up : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %g2 = graph.gather %wd, %f {axis = 0 : i64} : (tensor<3x2x4xf32>, tensor<8xi64>) -> tensor<8x2x4xf32>
  %b2 = graph.gather %bd, %f {axis = 0 : i64} : (tensor<3x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %ar = graph.reshape %a : tensor<8x2xf32> to tensor<8x1x2xf32>
  %m2 = graph.matmul %ar, %g2 : (tensor<8x1x2xf32>, tensor<8x2x4xf32>) -> tensor<8x1x4xf32>
  %o0 = graph.reshape %m2 : tensor<8x1x4xf32> to tensor<8x4xf32>
  %o = graph.add %b2, %o0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %wr = graph.reshape %w : tensor<4x2xf32> to tensor<8x1xf32>
  %ow = graph.mul %o, %wr : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %o3 = graph.reshape %ow : tensor<8x4xf32> to tensor<4x2x4xf32>
  %y = graph.reduce_sum %o3 {axes = array<i64: 1>} : (tensor<4x2x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// Near misses: indices that are not a router's top-k, the smallest k, a top-k on axis 0,
// and a rows operand with two columns per pair stay as imported.
// CHECK-LABEL: func.func @not_routed
// CHECK-NOT: graph.moe_sort
// CHECK-NOT: graph.grouped_matmul
// CHECK-COUNT-4: graph.gather %
// CHECK-NOT: graph.moe_
// CHECK: return
func.func @not_routed(%ids: tensor<8xi64>, %p: tensor<4x3xf32>, %pt: tensor<3x4xf32>, %wgu: tensor<3x4x4xf32>, %xc: tensor<8x4x1xf32>, %x2: tensor<8x4x2xf32>) -> (tensor<8x4x1xf32>, tensor<8x4x1xf32>, tensor<2x4x4x1xf32>, tensor<8x4x2xf32>) {
  %g0 = graph.gather %wgu, %ids {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %m0 = graph.matmul %g0, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %is = graph.top_k %p {axis = 1 : i64, k = 2 : i64, smallest} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %fs = graph.reshape %is : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %fs {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %m1 = graph.matmul %g1, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %ia = graph.top_k %pt {axis = 0 : i64, k = 2 : i64} : (tensor<3x4xf32>) -> tensor<2x4xi64>
  %g2 = graph.gather %wgu, %ia {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4x4xf32>
  %xc4 = graph.reshape %xc : tensor<8x4x1xf32> to tensor<2x4x4x1xf32>
  %m2 = graph.matmul %g2, %xc4 : (tensor<2x4x4x4xf32>, tensor<2x4x4x1xf32>) -> tensor<2x4x4x1xf32>
  %i = graph.top_k %p {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %g3 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %m3 = graph.matmul %g3, %x2 : (tensor<8x4x4xf32>, tensor<8x4x2xf32>) -> tensor<8x4x2xf32>
  return %m0, %m1, %m2, %m3 : tensor<8x4x1xf32>, tensor<8x4x1xf32>, tensor<2x4x4x1xf32>, tensor<8x4x2xf32>
}

// Rows that are not each token repeated k times in a row (the expand repeats the whole
// batch): the matmul still groups, its rows dispatched one per pair; weights that are not the
// routing weights [T, k] leave the sum over the choices as it is.
// CHECK-LABEL: func.func @not_repeated_tokens
// CHECK: %[[POS:.+]], %{{.+}} = graph.moe_sort
// CHECK: %[[P1:.+]] = graph.reshape %[[POS]] : tensor<4x2xi64> to tensor<8x1xi64>
// CHECK: graph.moe_dispatch %{{.+}}, %[[P1]] : (tensor<8x4xf32>, tensor<8x1xi64>) -> tensor<8x4xf32>
// CHECK: graph.grouped_matmul
// CHECK: graph.moe_combine %{{.+}}, %{{.+}}, %[[P1]] : (tensor<8x4xf32>, tensor<8x1xf32>, tensor<8x1xi64>) -> tensor<8x4xf32>
// CHECK: graph.mul
// CHECK: graph.reduce_sum
// CHECK-NOT: graph.moe_combine
// CHECK: return
func.func @not_repeated_tokens(%x: tensor<4x4xf32>, %p: tensor<4x3xf32>, %wgu: tensor<3x4x4xf32>, %wr: tensor<8x1xf32>) -> tensor<4x4xf32> {
  %i = graph.top_k %p {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %x1 = graph.reshape %x : tensor<4x4xf32> to tensor<1x4x4xf32>
  %xe = graph.expand %x1 : tensor<1x4x4xf32> to tensor<2x4x4xf32>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %xc = graph.reshape %xe : tensor<2x4x4xf32> to tensor<8x4x1xf32>
  %m1 = graph.matmul %g1, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %o = graph.reshape %m1 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %ow = graph.mul %o, %wr : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %o3 = graph.reshape %ow : tensor<8x4xf32> to tensor<4x2x4xf32>
  %y = graph.reduce_sum %o3 {axes = array<i64: 1>} : (tensor<4x2x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// A bias gathered by another router's indices is not the experts' bias (the add stays, its
// gather too); a sum over the hidden axis instead of the k choices is no combine.
// CHECK-LABEL: func.func @other_router_bias
// CHECK-NOT: tensor<3x1x4xf32>
// CHECK: %[[B:.+]] = graph.gather %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<3x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
// CHECK-NOT: tensor<3x1x4xf32>
// CHECK: graph.grouped_matmul %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<3x4x4xf32>, tensor<4xi64>)
// CHECK-NOT: tensor<3x1x4xf32>
// CHECK: graph.add %{{.+}}, %[[B]]
// CHECK: graph.reduce_sum %{{.+}} {axes = array<i64: 2>}
// CHECK-NOT: graph.moe_combine %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<4x2xf32>
// CHECK: return
func.func @other_router_bias(%x: tensor<4x4xf32>, %l: tensor<4x3xf32>, %l2: tensor<4x3xf32>, %wgu: tensor<3x4x4xf32>, %bgu: tensor<3x4xf32>, %w: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %i = graph.top_k %l {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %i2 = graph.top_k %l2 {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %x1 = graph.reshape %x : tensor<4x4xf32> to tensor<4x1x4xf32>
  %xe = graph.expand %x1 : tensor<4x1x4xf32> to tensor<4x2x4xf32>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %f2 = graph.reshape %i2 : tensor<4x2xi64> to tensor<8xi64>
  %g1 = graph.gather %wgu, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %b1 = graph.gather %bgu, %f2 {axis = 0 : i64} : (tensor<3x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
  %xr = graph.reshape %xe : tensor<4x2x4xf32> to tensor<8x1x4xf32>
  %m1 = graph.matmul %xr, %g1 : (tensor<8x1x4xf32>, tensor<8x4x4xf32>) -> tensor<8x1x4xf32>
  %h0 = graph.reshape %m1 : tensor<8x1x4xf32> to tensor<8x4xf32>
  %h = graph.add %h0, %b1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %wr = graph.reshape %w : tensor<4x2xf32> to tensor<8x1xf32>
  %ow = graph.mul %h, %wr : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %o3 = graph.reshape %ow : tensor<8x4xf32> to tensor<4x2x4xf32>
  %y = graph.reduce_sum %o3 {axes = array<i64: 2>} : (tensor<4x2x4xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// Between the products, an op that mixes rows (a transpose) or an operand with its own data per
// pair row (%scale [8, 1]) keeps the permutation back and the dispatch; a [1, 2] row operand
// broadcasts to every row and moves into expert order.
// CHECK-LABEL: func.func @rows_not_rowwise
// CHECK: graph.grouped_matmul
// CHECK: graph.moe_combine %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<8x1xf32>, tensor<8x1xi64>)
// CHECK: graph.transpose
// CHECK: graph.moe_dispatch %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<8x1xi64>)
// CHECK: graph.moe_combine %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<8x1xf32>, tensor<8x1xi64>)
// CHECK: graph.mul %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<8x1xf32>)
// CHECK: graph.moe_dispatch %{{.+}}, %{{.+}} : (tensor<8x4xf32>, tensor<8x1xi64>)
// CHECK: %[[S:.+]] = graph.grouped_matmul
// CHECK-NOT: graph.moe_combine
// CHECK: graph.mul %[[S]], %{{.+}} : (tensor<8x4xf32>, tensor<1x4xf32>)
// CHECK-NOT: graph.moe_dispatch
// CHECK: graph.grouped_matmul
// CHECK: return
func.func @rows_not_rowwise(%x: tensor<4x4xf32>, %p: tensor<4x3xf32>, %w: tensor<3x4x4xf32>, %scale: tensor<8x1xf32>, %row: tensor<1x4xf32>) -> tensor<8x4x1xf32> {
  %i = graph.top_k %p {axis = 1 : i64, k = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x2xi64>
  %f = graph.reshape %i : tensor<4x2xi64> to tensor<8xi64>
  %x1 = graph.reshape %x : tensor<4x4xf32> to tensor<4x1x4xf32>
  %xe = graph.expand %x1 : tensor<4x1x4xf32> to tensor<4x2x4xf32>
  %xc = graph.reshape %xe : tensor<4x2x4xf32> to tensor<8x4x1xf32>
  %g = graph.gather %w, %f {axis = 0 : i64} : (tensor<3x4x4xf32>, tensor<8xi64>) -> tensor<8x4x4xf32>
  %m1 = graph.matmul %g, %xc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %h1 = graph.reshape %m1 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %t = graph.transpose %h1 {permutation = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %tt = graph.reshape %t : tensor<4x8xf32> to tensor<8x4x1xf32>
  %m2 = graph.matmul %g, %tt : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %h2 = graph.reshape %m2 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %s = graph.mul %h2, %scale : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  %sc = graph.reshape %s : tensor<8x4xf32> to tensor<8x4x1xf32>
  %m3 = graph.matmul %g, %sc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  %h3 = graph.reshape %m3 : tensor<8x4x1xf32> to tensor<8x4xf32>
  %r = graph.mul %h3, %row : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %rc = graph.reshape %r : tensor<8x4xf32> to tensor<8x4x1xf32>
  %m4 = graph.matmul %g, %rc : (tensor<8x4x4xf32>, tensor<8x4x1xf32>) -> tensor<8x4x1xf32>
  return %m4 : tensor<8x4x1xf32>
}
