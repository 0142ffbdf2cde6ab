// rp-autodiff on the fused block ops: graph.rms_norm's VJP is one graph.rms_norm_vjp (dx and
// the per-row scale products) and the sum of those over the leading dimensions,
// graph.swiglu's one graph.swiglu_vjp, graph.rope's dx one graph.rope_vjp; none of them
// expands into the generic ops of the composed definitions.
// RUN: rp-opt %s --rp-autodiff="function=norm output=norm_vjp wrt-args=0,1 cotangent-args=1" | FileCheck %s --check-prefix=NORM
// RUN: rp-opt %s --rp-autodiff="function=gated output=gated_vjp wrt-args=0,1 cotangent-args=1" | FileCheck %s --check-prefix=SWIGLU
// RUN: rp-opt %s --rp-autodiff="function=rotary output=rotary_vjp wrt-args=0 cotangent-args=1" | FileCheck %s --check-prefix=ROPE
// RUN: rp-opt %s --rp-autodiff="function=pairs output=pairs_vjp wrt-args=0 cotangent-args=1" | FileCheck %s --check-prefix=PAIRS

func.func @norm(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %y = graph.rms_norm %x, %w {axis = 2 : i64, epsilon = 1.0E-6 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}
// NORM-LABEL: func.func @norm_vjp
// NORM-SAME: (%[[X:[^:]+]]: tensor<2x8x64xf32>, %[[W:[^:]+]]: tensor<64xf32>, %[[G:[^:]+]]: tensor<2x8x64xf32>)
// NORM-NOT: graph.reduce_mean
// NORM-NOT: graph.sqrt
// NORM: %[[DX:.+]], %[[DS:.+]] = graph.rms_norm_vjp %[[X]], %[[W]], %[[G]] {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
// NORM-NEXT: %[[DW:.+]] = graph.reduce_sum %[[DS]] {axes = array<i64: 0, 1>} : (tensor<2x8x64xf32>) -> tensor<64xf32>
// NORM-NEXT: return {{.*}}%[[DX]], %[[DW]]

func.func @gated(%a: tensor<2x8x96xf32>, %u: tensor<2x8x96xf32>) -> tensor<2x8x96xf32> {
  %y = graph.swiglu %a, %u : tensor<2x8x96xf32>
  return %y : tensor<2x8x96xf32>
}
// SWIGLU-LABEL: func.func @gated_vjp
// SWIGLU-SAME: (%[[A:[^:]+]]: tensor<2x8x96xf32>, %[[U:[^:]+]]: tensor<2x8x96xf32>, %[[G:[^:]+]]: tensor<2x8x96xf32>)
// SWIGLU-NOT: graph.sigmoid
// SWIGLU: %[[DA:.+]], %[[DU:.+]] = graph.swiglu_vjp %[[A]], %[[U]], %[[G]] : tensor<2x8x96xf32>
// SWIGLU-NEXT: return {{.*}}%[[DA]], %[[DU]]

func.func @rotary(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %c = graph.constant dense<0.5> : tensor<8x16xf32>
  %s = graph.constant dense<0.25> : tensor<8x16xf32>
  %y = graph.rope %x, %c, %s : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
  return %y : tensor<2x4x8x16xf32>
}
// ROPE-LABEL: func.func @rotary_vjp
// ROPE-SAME: (%{{[^:]+}}: tensor<2x4x8x16xf32>, %[[G:[^:]+]]: tensor<2x4x8x16xf32>)
// ROPE-NOT: graph.concat
// ROPE-NOT: graph.slice
// ROPE: %[[DX:.+]] = graph.rope_vjp %[[G]], %{{.+}}, %{{.+}} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>
// ROPE-NOT: graph.concat
// ROPE: return {{.*}}%[[DX]]

func.func @pairs(%x: tensor<1x2x4x8xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %y = graph.rope %x, %c, %s {interleaved} : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}
// PAIRS-LABEL: func.func @pairs_vjp
// PAIRS-SAME: (%{{[^:]+}}: tensor<1x2x4x8xf32>, %[[C:[^:]+]]: tensor<4x8xf32>, %[[S:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<1x2x4x8xf32>)
// PAIRS: %[[DX:.+]] = graph.rope_vjp %[[G]], %[[C]], %[[S]] {interleaved} : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
// PAIRS: return {{.*}}%[[DX]]
