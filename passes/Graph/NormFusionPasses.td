//===- NormFusionPasses.td - norm, gelu and loss fusion ---------*- tablegen -*-===//
//
// Passes that turn the decomposed forms exporters write (PyTorch's ONNX export of Llama/Qwen
// RMSNorm, LayerNorm at opsets < 17, GELU, cross-entropy) back into the fused `graph` ops,
// whose VJPs and kernels exist. Every pattern fuses only when each intermediate value is used
// by the pattern alone, element types and axes match exactly and constants are splats of the
// expected value; anything else is left as it is.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_NORMFUSIONPASSES_TD
#define RP_PASSES_GRAPH_NORMFUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseNorms : Pass<"rp-fuse-norms", "::mlir::ModuleOp"> {
  let summary = "Fuses exported RMSNorm and LayerNorm chains into graph.rms_norm / graph.layer_norm";
  let description = [{
    **RMSNorm** (Llama, Qwen): `x * rsqrt(mean(x^2, -1) + eps) * w` as exported:
    the square is `graph.pow %x, 2` or `graph.mul %x, %x`; `graph.reduce_mean` over the last
    axis with `keepdims`; `graph.add` of a splat `eps`; `graph.sqrt`; then `graph.div %x, %s`,
    or `graph.mul %x, %r` with `%r` = `graph.reciprocal %s` or `graph.div 1, %s` (PyTorch's
    `rsqrt`); then `graph.mul` by the weight, on either side. The Hugging Face form that
    computes the norm in f32 (`graph.cast` of `x` to f32 before the chain, `graph.cast` back
    to `x`'s type before the weight) fuses to one `graph.rms_norm` on the uncast `x`.

    **LayerNorm** (opsets < 17): `mu = reduce_mean(x, -1)`, `d = x - mu`, `d^2` (pow or mul),
    `reduce_mean`, `+ eps`, `sqrt`, `d / s` (or `d * reciprocal(s)`), `* gamma`, and
    `+ beta` when present. LayerNorm written by hand (no `LayerNormalization` node: Cohere,
    custom modules) computes `x - mu` twice, once squared and once normalised; two
    `graph.sub`s of the same operands count as one `d`. Two LayerNorms of one input whose
    chains an exporter merged (TorchScript: one normalised value scaled by two weights)
    each fuse; the shared ops go with the last.

    `epsilon` is the splat constant's value (positive and finite); `axis` is the last
    dimension; the weight (and bias) must have shape `x.shape[-1:]` and `x`'s element type.
    A reduction over another axis, without `keepdims`, a non-splat or non-positive `eps`, an
    exponent other than 2, a weight of another shape, a mismatched cast pair or an
    intermediate value with a user outside the chain leaves the chain unfused.

    Before:
    ```mlir
    %two = graph.constant dense<2.0> : tensor<f32>
    %eps = graph.constant dense<1.0e-06> : tensor<f32>
    %sq = graph.pow %x, %two : (tensor<2x8x64xf32>, tensor<f32>) -> tensor<2x8x64xf32>
    %ms = graph.reduce_mean %sq {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
    %ve = graph.add %ms, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
    %s = graph.sqrt %ve : tensor<2x8x1xf32>
    %n = graph.div %x, %s : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32>
    %y = graph.mul %w, %n : (tensor<64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    ```
    After:
    ```mlir
    %y = graph.rms_norm %x, %w {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseGelu : Pass<"rp-fuse-gelu", "::mlir::ModuleOp"> {
  let summary = "Fuses exported GELU formulas into graph.gelu exact / tanh";
  let description = [{
    **exact**: `0.5 * x * (1 + erf(x / sqrt(2)))`, the argument of `erf` written as
    `graph.div %x, 1.4142...` or `graph.mul %x, 0.7071...`; **tanh**:
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`, the cube written as
    `graph.pow %x, 3` or as two multiplications (`x * (x * x)`, PyTorch's export). The three
    factors `0.5`, `x` and `1 + ...` may be multiplied in any association and order, and
    every commutative op may have its operands in either order.

    Constants are splats; each matches when it is within a relative `1e-6` of the exact value
    rounded to the constant's element type (so a bf16 model's `0.70703125` is `1/sqrt(2)`).
    Every intermediate result has `x`'s type (no broadcast grows it) and no user outside the
    formula; otherwise nothing is fused.

    Before:
    ```mlir
    %a = graph.div %x, %sqrt2 : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
    %e = graph.erf %a : tensor<16x256xf32>
    %p = graph.add %e, %one : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
    %m = graph.mul %x, %p : (tensor<16x256xf32>, tensor<16x256xf32>) -> tensor<16x256xf32>
    %y = graph.mul %m, %half : (tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
    ```
    After:
    ```mlir
    %y = graph.gelu exact %x : tensor<16x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseCrossEntropy : Pass<"rp-fuse-cross-entropy", "::mlir::ModuleOp"> {
  let summary = "Fuses log-softmax + gather + masked mean/sum into graph.cross_entropy";
  let description = [{
    Matches the negative log-likelihood of class-axis-1 log-probabilities, as the ONNX importer
    writes NegativeLogLikelihoodLoss and as exporters write `F.nll_loss(F.log_softmax(z, 1), t)`:

    - log-probabilities: `graph.log_softmax {axis = 1}` or `graph.log` of `graph.softmax
      {axis = 1}`;
    - `graph.gather_elements {axis = 1}` with the labels reshaped to `[N, 1, d1..dk]`;
    - the reshape back to `[N, d1..dk]` (optional), one `graph.neg` anywhere on the path;
    - with `ignore_index`: `ign = graph.compare eq, labels, c` (splat `c`), `keep =
      graph.logical_not ign`, labels replaced by `graph.where keep, labels, 0` before the
      gather and the loss by `graph.where keep, loss, 0.0` after it (or the `where ign`
      forms with swapped operands);
    - reduction: `graph.reduce_sum` over all axes (`sum`), divided by
      `reduce_sum(cast(keep))` (`mean` with ignore_index) or by a splat equal to the number of
      labels, or `graph.reduce_mean` over all axes (`mean` without ignore_index).

    The fused op's `ignore_index` is `c`, or INT64_MIN (no label equals it) without masking.
    A class axis other than 1, a reduction that keeps or skips dimensions, a mean without the
    matching count, a mask on only one side, an intermediate with another user, or a second
    `neg` leaves the graph unfused.

    Before:
    ```mlir
    %lp = graph.log_softmax %logits {axis = 1 : i64} : tensor<16x256xf32>
    %ign = graph.compare eq, %labels, %c : (tensor<16xi64>, tensor<i64>) -> tensor<16xi1>
    %keep = graph.logical_not %ign : tensor<16xi1>
    %safe = graph.where %keep, %labels, %zero : (tensor<16xi1>, tensor<16xi64>, tensor<i64>) -> tensor<16xi64>
    %idx = graph.reshape %safe : tensor<16xi64> to tensor<16x1xi64>
    %g = graph.gather_elements %lp, %idx {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
    %g1 = graph.reshape %g : tensor<16x1xf32> to tensor<16xf32>
    %nl = graph.neg %g1 : tensor<16xf32>
    %l = graph.where %keep, %nl, %fzero : (tensor<16xi1>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
    %sum = graph.reduce_sum %l {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
    %k = graph.cast %keep : tensor<16xi1> to tensor<16xf32>
    %cnt = graph.reduce_sum %k {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
    %loss = graph.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
    ```
    After:
    ```mlir
    %loss = graph.cross_entropy mean %logits, %labels {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseLinearCrossEntropy : Pass<"rp-fuse-linear-cross-entropy", "::mlir::ModuleOp"> {
  let summary = "Fuses an LM head's matmul and its cross-entropy into graph.linear_cross_entropy";
  let description = [{
    Rewrites `graph.cross_entropy(reshape(matmul(h, transpose(W))), labels)` with `h`
    `[..., H]`, `W` `[V, H]` (a head's `nn.Linear` weight or a tied embedding), the transpose
    swapping `W`'s two dimensions (or `W` read with the matmul's `transpose_b`), the logits
    `[N, V]` (`N` = the product of `h`'s leading dimensions) and `labels` `[N]`, into
    `graph.linear_cross_entropy %h2, %W, %labels` with `%h2 = graph.reshape %h` to `[N, H]`
    (none when `h` is 2-D). Reduction and `ignore_index` are kept. The matmul's and the
    reshape's results have no other user. A head bias, `add(matmul, b)` or `add(b, matmul)`
    with `b` `[V]` (Phi's head; before the reshape), becomes the fused op's `bias` operand.
    Logits scaled by a one-element float constant `c`, `mul(z, c)`, `mul(c, z)` or
    `div(z, c)` before or after the reshape (Cohere's `logit_scale`, Granite's
    `logits_scaling`), fuse with the scale moved onto the head's input and bias:
    `(h W^T + b) * c = (h * c) W^T + b * c`, an op on `[N, H]` and `[V]` instead of `[N, V]`.
    Any other addend or scale (a `[V]` vector), soft-capped logits (any other op between
    the matmul and the loss), a weight in `[H, V]` layout, a batched
    weight, a `transpose_a`, logits of a rank other than 2 (`[N, C, d...]`), or logits used
    elsewhere leave the graph unfused.

    Before:
    ```mlir
    %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<264x32xf32>) -> tensor<32x264xf32>
    %z = graph.matmul %h, %wt : (tensor<2x16x32xf32>, tensor<32x264xf32>) -> tensor<2x16x264xf32>
    %z2 = graph.reshape %z : tensor<2x16x264xf32> to tensor<32x264xf32>
    %loss = graph.cross_entropy mean %z2, %y {ignore_index = -100 : i64} : (tensor<32x264xf32>, tensor<32xi64>) -> tensor<f32>
    ```
    After:
    ```mlir
    %h2 = graph.reshape %h : tensor<2x16x32xf32> to tensor<32x32xf32>
    %loss = graph.linear_cross_entropy mean %h2, %w, %y {ignore_index = -100 : i64} : (tensor<32x32xf32>, tensor<264x32xf32>, tensor<32xi64>) -> tensor<f32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

#endif // RP_PASSES_GRAPH_NORMFUSIONPASSES_TD
