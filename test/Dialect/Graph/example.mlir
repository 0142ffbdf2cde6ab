// The example IR in examples/graph stays valid, and canonicalization removes what an exporter
// leaves behind there (the reshape round trip, the multiplication by 1, the transpose pair).
// RUN: rp-opt %S/../../../examples/graph/attention-scores.mlir --canonicalize | FileCheck %s
// CHECK-LABEL: func.func @scores
// CHECK: %[[Q:.+]] = graph.matmul
// CHECK: %[[H:.+]] = graph.reshape %[[Q]] : tensor<2x8x64xf32> to tensor<2x8x4x16xf32>
// CHECK-NOT: graph.reshape
// CHECK: graph.transpose %[[H]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: graph.transpose %[[H]] {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NOT: graph.constant dense<1.000000e+00>
// CHECK: graph.softmax
