//===- BlockFusionPasses.td ---------------------------------------*- tablegen -*-===//
//
// Fusions of transformer-block patterns (MLP activation, rotary embedding) into the fused ops
// of the graph dialect (Ops.td, "Fused ops"). Each pass rewrites only exact matches whose
// intermediates have no other user, so the rewrite never duplicates work.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_BLOCKFUSIONPASSES_TD
#define RP_PASSES_GRAPH_BLOCKFUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseSwiglu : Pass<"rp-fuse-swiglu", "::mlir::ModuleOp"> {
  let summary = "Fuses silu(x @ Wg) * (x @ Wu) into graph.swiglu";
  let description = [{
    Rewrites the gated MLP activation of Llama / Qwen exports,
    `mul(silu(x @ Wg), x @ Wu)`, into `graph.swiglu %gate, %up`. The SiLU is either
    `graph.silu %gate` or `graph.mul %gate, graph.sigmoid %gate` (operands of each `mul` in
    either order). Both matmuls share their left operand `x`, or gate and up are disjoint
    pieces of the last axis of one matmul's result (Phi-3's fused `gate_up_proj`: the results
    of one `graph.split`, or two unit-step `graph.slice`s of the last axis alone); the SiLU's
    intermediates (the sigmoid, the silu) have no other user, and gate and up have the same
    type (no broadcast).

    Before:
    ```mlir
    %g = graph.matmul %x, %wg : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
    %u = graph.matmul %x, %wu : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
    %s = graph.sigmoid %g : tensor<8x172xf32>
    %a = graph.mul %g, %s : (tensor<8x172xf32>, tensor<8x172xf32>) -> tensor<8x172xf32>
    %h = graph.mul %a, %u : (tensor<8x172xf32>, tensor<8x172xf32>) -> tensor<8x172xf32>
    ```
    After:
    ```mlir
    %g = graph.matmul %x, %wg : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
    %u = graph.matmul %x, %wu : (tensor<8x64xf32>, tensor<64x172xf32>) -> tensor<8x172xf32>
    %h = graph.swiglu %g, %u : tensor<8x172xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseRope : Pass<"rp-fuse-rope", "::mlir::ModuleOp"> {
  let summary = "Fuses the rotary embedding (rotate-half or interleaved) into graph.rope";
  let description = [{
    Rewrites HF `apply_rotary_pos_emb` as exported and imported,
    `x * cos + concat(-x2, x1) * sin` with `x1`, `x2` the unit-step halves of `x`'s last
    dimension (`graph.slice`), into `graph.rope %x, %cos, %sin`. The `add` and `mul`s may have
    their operands in either order; the slices, the `neg`, the `concat` and both products have
    no other user; `cos` and `sin` have the same type and broadcast to `x` with a last
    dimension equal to `x`'s (what `graph.rope` accepts).

    The interleaved form (GPT-J, CodeGen, Cohere: HF `rotate_every_two`, both exporters),
    `x * cos + flatten(stack(-x[..., 1::2], x[..., 0::2])) * sin` as imported (two step-2
    slices of the last dimension, each reshaped to a unit last dimension, the `neg` before or
    after that reshape, a `concat` on the new axis, a reshape back to `x`'s shape), becomes
    `graph.rope %x, %cos, %sin {interleaved}` under the same conditions. Slices of other
    starts or steps, pairs stacked in the other order or a flatten to another shape stay as
    they are.

    Before:
    ```mlir
    %x1 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
    %x2 = graph.slice %q {axes = array<i64: 3>, starts = array<i64: 8>, ends = array<i64: 16>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
    %n = graph.neg %x2 : tensor<2x4x8x8xf32>
    %r = graph.concat %n, %x1 {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
    %a = graph.mul %q, %cos : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    %b = graph.mul %r, %sin : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    %y = graph.add %a, %b : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
    After:
    ```mlir
    %y = graph.rope %q, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseAttention : Pass<"rp-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Fuses eager scaled dot-product attention into graph.attention";
  let description = [{
    Rewrites `matmul(softmax(mask(scale(matmul(q, transpose(k))))), v)` (HF eager attention as
    imported) into `graph.attention %q, %k, %v`. `q` is `[B, Hq, S, D]`; `v` is
    `[B, Hkv, S, Dv]`, its head size possibly other than `D` (multi-head latent attention:
    DeepSeek's 192 and 128); the transpose swaps the last two dimensions; the scale is a
    `graph.mul` by (or `graph.div` by) a one-element constant, or absent (scale 1); the
    softmax is over the last axis. The causal mask is
    optional and is either a constant `[1.., S, S]` added to the scores (0 on and below the
    diagonal, `-inf` or at most `-1e9` above it) or `graph.where(tril, scores, fill)` with a
    constant lower-triangular `i1` condition and a constant fill of at most `-1e9` (those
    entries get probability 0 either way). Keys and values that are HF `repeat_kv` as
    imported (`reshape` to `[B, Hkv, 1, S, D]`, `expand` to `[B, Hkv, G, S, D]`, `reshape` to
    `[B, Hkv * G, S, D]`) become grouped-query attention on the unrepeated tensors, as do a
    key and value of one head that the matmuls broadcast over the query's heads (multi-query
    attention). Every intermediate has a single user.

    torch.onnx's decomposition of `scaled_dot_product_attention` (what both its exporters emit
    for HF's sdpa attention) is matched too: the scale may instead multiply each product
    operand (`q * c1`, `k^T * c2`: scale `c1 * c2`); the additive mask may carry leading
    dims such as the batch (`[B, 1, S, S]`) if every `[S, S]` slice is causal; `k^T` may be
    `reshape(transpose(reshape(k -> [B * H, S, D]), [0, 2, 1]) -> [B, H, D, S])`, with `k`
    also repeat_kv's expanded `[B, Hkv, G, S, D]`; and the probabilities may pass through the
    NaN guard `where(not(p == p), 0, p)`, the identity on the finite scores of a causal mask
    (it never hides a whole row) and dropped.

    With `sinks`, transformers' eager GPT-OSS attention with attention sinks is matched as
    well (both exporters import it alike): the sink column `expand(reshape(sinks [Hq] ->
    [1, Hq, 1, 1]) -> [B, Hq, S, 1])` concatenated after the (masked, scaled) scores on the
    last axis, optionally `x - reduce_max(x, last, keepdims)`, the softmax over `S + 1`, and
    the sink column sliced off (`[0, S)`) before the product with `v`; it becomes
    `graph.attention ... sinks %sinks`. On by default (rpc-compile forms them; both backends
    run them); `sinks=false` leaves sink softmaxes unfused.

    A sliding-window causal mask (transformers' `sliding_window` masks: Mistral, Qwen2,
    Gemma-2/3 and GPT-OSS's alternate layers; query `i` keeps key `j` iff `j <= i` and
    `i - j < w`), additive or boolean, folded or unfolded, with or without sinks, sets the
    attention's `window = w`: `w` is the count of kept keys in the last row of the first
    `[S, S]` slice, and every element of the mask must then match that band, so a band that
    does not end at the diagonal, a window off by one in any row, or slices with different
    windows stay unfused. A `w` of at least `S` is the plain causal mask (no `window`).

    A logit soft-cap between the scale and the mask (Gemma-2's eager attention:
    `mul(tanh(div(scores, c)), c)`, the division possibly a product by `1 / c`, either operand
    order of the products, every intermediate single-use) sets the attention's `softcap = c`
    when `c` is positive and the two constants agree within a relative 1e-6.

    Before:
    ```mlir
    %kt = graph.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
    %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
    %c = graph.constant dense<0.353553385> : tensor<f32>
    %t = graph.mul %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %m = graph.add %t, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
    %p = graph.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
    %y = graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
    ```
    After (`%mask` a constant causal mask):
    ```mlir
    %y = graph.attention %q, %k, %v {causal, scale = 0.35355338454246521 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
    ```
  }];
  let options = [
    Option<"sinks", "sinks", "bool", /*default=*/"true",
           "Also fuse attention with attention sinks (GPT-OSS) into graph.attention's sinks">,
  ];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FuseRoutedExperts : Pass<"rp-fuse-routed-experts", "::mlir::ModuleOp"> {
  let summary = "Rewrites batched_mm routed experts into grouped GEMMs (graph.moe_*, graph.grouped_matmul)";
  let description = [{
    transformers' `batched_mm` experts import as a `graph.gather` of the stacked expert
    weights `[E, A, B]` by the router's top-k indices (`graph.top_k` on axis 1 of `[T, E]`
    scores, reshaped to `[T * k]`) and a batched `graph.matmul` per (token, choice) pair:
    `matmul(gather(W), rows [T*k, B, 1])` (Qwen3-MoE's `W[e] x`, both exporters) or
    `matmul(rows [T*k, 1, A], gather(W))` (GPT-OSS's `x W[e]`). Each such matmul becomes
    `graph.moe_dispatch` (rows into expert order; from the tokens directly when the rows are
    each token repeated k times), one `graph.grouped_matmul` on the un-gathered `W` (with
    `transpose_b` for `W[e] x`) and a `graph.moe_combine` with unit weights back to pair
    order. One `graph.moe_sort` per router. A bias `[E, N]` gathered by the same indices and
    added to the product (GPT-OSS) is added in expert order as a grouped matmul of ones with
    the bias as `[E, 1, N]`. The weighted sum over the k choices, `reduce_sum(reshape(rows *
    reshape(w [T, k] to [T*k, 1]), [T, k, N]), axis 1)`, of rows permuted back becomes one
    `graph.moe_combine` with the routing weights. A dispatch of row-wise ops (elementwise ops,
    column slices and splits, reshapes keeping the rows; other operands broadcasting one row
    to all) of rows permuted back computes those ops in expert order instead, so the
    activation between the two projections never leaves expert order.

    Not matched (left as imported): a gather on another axis or by indices that are not a
    reshaped `graph.top_k` (largest, axis 1, rank 2), a matmul with a transpose flag or whose
    other operand is not one row per pair, a router whose scores have another number of
    experts than the weights.

    Before (one of the two projections):
    ```mlir
    %i = graph.top_k %s {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x2xi64>
    %f = graph.reshape %i : tensor<32x2xi64> to tensor<64xi64>
    %g = graph.gather %w, %f {axis = 0 : i64} : (tensor<4x32x16xf32>, tensor<64xi64>) -> tensor<64x32x16xf32>
    %x3 = graph.reshape %h : tensor<64x16xf32> to tensor<64x16x1xf32>
    %y = graph.matmul %g, %x3 : (tensor<64x32x16xf32>, tensor<64x16x1xf32>) -> tensor<64x32x1xf32>
    ```
    After:
    ```mlir
    %pos, %off = graph.moe_sort %i {num_experts = 4 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<5xi64>)
    %p1 = graph.reshape %pos : tensor<32x2xi64> to tensor<64x1xi64>
    %xs = graph.moe_dispatch %h, %p1 : (tensor<64x16xf32>, tensor<64x1xi64>) -> tensor<64x16xf32>
    %ys = graph.grouped_matmul %xs, %w, %off {transpose_b} : (tensor<64x16xf32>, tensor<4x32x16xf32>, tensor<5xi64>) -> tensor<64x32xf32>
    %y2 = graph.moe_combine %ys, %ones, %p1 : (tensor<64x32xf32>, tensor<64x1xf32>, tensor<64x1xi64>) -> tensor<64x32xf32>
    %y = graph.reshape %y2 : tensor<64x32xf32> to tensor<64x32x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

#endif // RP_PASSES_GRAPH_BLOCKFUSIONPASSES_TD
