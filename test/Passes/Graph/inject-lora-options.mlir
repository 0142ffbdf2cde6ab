// rp-inject-lora: bad options, and targets that match no matmul weight, are errors.
// RUN: not rp-opt %s --rp-inject-lora="rank=0" 2>&1 | FileCheck %s --check-prefix=RANK0
// RUN: not rp-opt %s --rp-inject-lora="rank=-2" 2>&1 | FileCheck %s --check-prefix=RANKNEG
// RUN: not rp-opt %s --rp-inject-lora="alpha=inf" 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: not rp-opt %s --rp-inject-lora="alpha=nan" 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: not rp-opt %s --rp-inject-lora="targets=" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not rp-opt %s --rp-inject-lora="targets=(q_proj" 2>&1 | FileCheck %s --check-prefix=PAREN
// RUN: not rp-opt %s --rp-inject-lora="targets=[z-a]" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not rp-opt %s --rp-inject-lora="targets=xyz" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not rp-opt %s --rp-inject-lora="targets=q_proj" 2>&1 | FileCheck %s --check-prefix=NEAR
// RUN: not rp-opt %s --rp-inject-lora="targets=embed" 2>&1 | FileCheck %s --check-prefix=NOTMATMUL
// RUN: not rp-opt %s --rp-inject-lora="targets=^proj" 2>&1 | FileCheck %s --check-prefix=ANCHOR

// RANK0: error: rp-inject-lora: 'rank' must be positive, got 0
// RANKNEG: error: rp-inject-lora: 'rank' must be positive, got -2
// ALPHA: error: rp-inject-lora: 'alpha' must be finite, got inf
// NAN: error: rp-inject-lora: 'alpha' must be finite, got nan
// EMPTY: error: rp-inject-lora: 'targets' is empty; give a regex of the weights to adapt (e.g. targets=q_proj|v_proj)
// PAREN: error: rp-inject-lora: bad targets '(q_proj': Mismatched '(' and ')' in regular expression
// RANGE: error: rp-inject-lora: bad targets '[z-a]': Invalid range in bracket expression.
// The message lists the matmul weights; the near miss k_proj is no match of q_proj.
// NOMATCH: error: rp-inject-lora: targets 'xyz' match no matmul weight; matmul weights: k_proj, o_proj
// NEAR: error: rp-inject-lora: targets 'q_proj' match no matmul weight; matmul weights: k_proj, o_proj
// A param that is no matmul weight does not count.
// NOTMATMUL: error: rp-inject-lora: targets 'embed' match no matmul weight; matmul weights: k_proj, o_proj
// ANCHOR: error: rp-inject-lora: targets '^proj' match no matmul weight

graph.param @embed trainable : tensor<16x8xf32>
graph.param @k_proj trainable : tensor<8x8xf32>
graph.param @o_proj trainable : tensor<8x8xf32>
func.func @forward(%ids: tensor<3xi64>) -> tensor<3x8xf32> {
  %e = graph.load_param @embed : tensor<16x8xf32>
  %x = graph.gather %e, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %k = graph.load_param @k_proj : tensor<8x8xf32>
  %y = graph.matmul %x, %k : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %o = graph.load_param @o_proj : tensor<8x8xf32>
  %z = graph.matmul %y, %o : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  return %z : tensor<3x8xf32>
}
