// rp-choose-loss-chunks: chunk_rows = clamp(budget / (4 V), 1, N), rounded down to a multiple
// of 64 from 64 on when below N, budget = max(budget-floor, the largest value of the module's functions).
// RUN: rp-opt %s --rp-choose-loss-chunks --split-input-file | FileCheck %s
// RUN: rp-opt %s --rp-choose-loss-chunks="budget-floor=40000" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: not rp-opt %s --rp-choose-loss-chunks="budget-floor=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// The default floor (64 MiB) holds all 300 rows of 1000 classes (1.2 MB).
// CHECK-LABEL: func.func @small
// CHECK: graph.linear_cross_entropy mean {{.*}}{chunk_rows = 300 : i64, ignore_index = -100 : i64}
// CHECK: graph.linear_cross_entropy_vjp mean {{.*}}{chunk_rows = 300 : i64, ignore_index = -100 : i64}
// A 40000-byte floor: the largest value is the 32000-byte dweight [1000, 8] f32, so the budget
// is 40000 bytes: 10 rows of 4000 bytes.
// SMALL-LABEL: func.func @small
// SMALL: graph.linear_cross_entropy mean {{.*}}{chunk_rows = 10 : i64, ignore_index = -100 : i64}
// SMALL: graph.linear_cross_entropy_vjp mean {{.*}}{chunk_rows = 10 : i64, ignore_index = -100 : i64}
// BAD: rp-choose-loss-chunks: budget-floor must be positive, got 0
func.func @small(%h: tensor<300x8xf32>, %w: tensor<1000x8xf32>, %y: tensor<300xi64>, %s: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<300x8xf32>, tensor<1000x8xf32>) {
  %l = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<300x8xf32>, tensor<1000x8xf32>, tensor<300xi64>) -> tensor<f32>
  %l2, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -100 : i64} : (tensor<300x8xf32>, tensor<1000x8xf32>, tensor<300xi64>, tensor<f32>) -> (tensor<f32>, tensor<300x8xf32>, tensor<1000x8xf32>)
  return %l, %l2, %dh, %dw : tensor<f32>, tensor<f32>, tensor<300x8xf32>, tensor<1000x8xf32>
}

// -----

// The Qwen3-1.7B head (V = 151936, H = 2048, N = 4096 tokens) in bf16: the largest value is
// the weight gradient (622 MB), whose budget holds 1024 rows of f32 logits (rounded to 64).
// An op that already has chunk_rows keeps it.
// CHECK-LABEL: func.func @qwen3_1p7b
// CHECK: graph.linear_cross_entropy_vjp mean {{.*}}{chunk_rows = 1024 : i64, ignore_index = -100 : i64}
// CHECK: graph.linear_cross_entropy mean {{.*}}{chunk_rows = 7 : i64, ignore_index = -100 : i64}
func.func @qwen3_1p7b(%h: tensor<4096x2048xbf16>, %w: tensor<151936x2048xbf16>, %y: tensor<4096xi64>, %s: tensor<bf16>) -> (tensor<bf16>, tensor<4096x2048xbf16>, tensor<151936x2048xbf16>, tensor<bf16>) {
  %l, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %y, %s {ignore_index = -100 : i64} : (tensor<4096x2048xbf16>, tensor<151936x2048xbf16>, tensor<4096xi64>, tensor<bf16>) -> (tensor<bf16>, tensor<4096x2048xbf16>, tensor<151936x2048xbf16>)
  %l2 = graph.linear_cross_entropy mean %h, %w, %y {chunk_rows = 7 : i64, ignore_index = -100 : i64} : (tensor<4096x2048xbf16>, tensor<151936x2048xbf16>, tensor<4096xi64>) -> tensor<bf16>
  return %l, %dh, %dw, %l2 : tensor<bf16>, tensor<4096x2048xbf16>, tensor<151936x2048xbf16>, tensor<bf16>
}
