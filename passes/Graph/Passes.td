//===- Passes.td - graph passes ----------------------------*- tablegen -*-===//
//
// The passes that rewrite `graph` IR: what trains (freeze, LoRA), differentiation, the
// fusions (NormFusionPasses.td, BlockFusionPasses.td), the grouping into layer functions, and
// the rewrites of the layer functions the lowering runs (transposes into matmul flags, the
// LM-head loss chunks).
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_PASSES_TD
#define RP_PASSES_GRAPH_PASSES_TD

include "mlir/Pass/PassBase.td"

def Autodiff : Pass<"rp-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode automatic differentiation of a loss function";
  let description = [{
    Builds `@<output>` next to `@<function>`: the forward computation followed by its reverse
    pass, returning the loss (result 0 of `@<function>`, a scalar float) and then one gradient
    per trainable `graph.param` in module order (zeros for params the loss does not depend on;
    frozen params get none), then one gradient per argument listed in `wrt-args`. Fan-out
    accumulates (`graph.add`). Each op's VJP comes from its `GradientOpInterface`; gradients
    flow only through values that depend on a trainable param or a `wrt-args` argument.

    With `cotangent-args`, `@<function>` may return any tensors (one layer of a pipeline):
    `@<output>` then takes one extra argument per floating-point result, the cotangent of that
    result, instead of seeding the loss with 1, and returns the forward results first.

    With `seed-arg` (a loss function), `@<output>` takes the loss's seed as one extra last
    argument (`graph.name = "loss_seed"`, the loss's type) instead of the constant 1: the
    runtime weights each micro-batch by its share of the step's trained tokens and multiplies
    in the fp16 loss scale through it.

    Result attributes say what each result is: `graph.grad_of = @param`,
    `graph.grad_of_arg = i`.

    Before:
    ```mlir
    graph.param @w trainable : tensor<4x2xf32>
    func.func @forward(%x: tensor<3x4xf32>) -> tensor<f32> {
      %w = graph.load_param @w : tensor<4x2xf32>
      %y = graph.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      %l = graph.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<3x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (`@forward` is kept):
    ```mlir
    func.func @train_step(%x: tensor<3x4xf32>) -> (tensor<f32>, tensor<4x2xf32> {graph.grad_of = @w}) {
      ... forward ...
      %one = graph.constant dense<1.0> : tensor<f32>
      ... %dy = graph.expand ... ; %xt = graph.transpose %x ...
      %dw = graph.matmul %xt, %dy : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      return %l, %dw : tensor<f32>, tensor<4x2xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to differentiate">,
    Option<"output", "output", "std::string", /*default=*/"\"train_step\"",
           "Name of the function to build">,
    ListOption<"wrtArgs", "wrt-args", "unsigned",
               "Arguments to also return gradients for (the activation gradient of a stage)">,
    Option<"cotangentArgs", "cotangent-args", "bool", /*default=*/"false",
           "Take the results' cotangents as arguments instead of seeding a scalar loss">,
    Option<"seedArg", "seed-arg", "bool", /*default=*/"false",
           "Take the loss's seed (its cotangent, a scalar of the loss type) as one extra last "
           "argument named loss_seed instead of 1 (token-weighted and scaled losses)">,
  ];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

def SplitGradient : Pass<"rp-split-gradient", "::mlir::ModuleOp"> {
  let summary = "A layer's gradient as a forward that saves residuals and a backward using them";
  let description = [{
    Builds the reverse-mode function of `@<function>` (rp-autodiff's, for the trainable params
    the function reads) and splits it in two, next to `@<function>`:

    - `@<function>_fwd`: the arguments of `@<function>` -> its results (with `cotangent-args`;
      none with `seed-arg`), then the *residuals*: the forward values the reverse pass reads;
    - `@<function>_bwd`: the arguments of `@<function>`, the residuals, then the cotangents (or
      the loss seed) -> what the unsplit function returns after its forward results (with
      `seed-arg`: the loss first), with the same result attributes. Each residual argument
      carries `graph.residual = i`, the `_fwd` result it takes, and the function
      `graph.residuals`, the list of them.

    Every op of the unsplit function lands in exactly one of the two functions, unchanged, so
    the values are the unsplit function's bit for bit. Forward ops free to rematerialise are
    re-emitted in `_bwd` instead of saved: param loads, constants, `graph.expand` (its operand
    is saved instead, never larger), and pure ops other than `graph.matmul` /
    `graph.attention` whose operands derive from params and constants alone (a transposed
    weight, a mask built from constants); a `graph.reshape` (a copy as large as its operand)
    is re-emitted when its operand is in `_bwd` anyway (an argument, saved or re-emitted),
    else saved itself. rp-lower-to-schedule calls this for
    every layer: a backward stage runs each layer's `_fwd` once and its `_bwd` once.

    ```mlir
    // --rp-split-gradient="function=block cotangent-args=true wrt-args=0"
    func.func @block_fwd(%x) -> (%y, %h)                  // %h: a residual
    func.func @block_bwd(%x, %h {graph.residual = 1}, %dy) -> (%dw, %dx)
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The layer function to differentiate and split">,
    ListOption<"wrtArgs", "wrt-args", "unsigned",
               "Arguments to also return gradients for (the layer's float inputs)">,
    Option<"cotangentArgs", "cotangent-args", "bool", /*default=*/"false",
           "Take the results' cotangents as arguments (a layer other than the last)">,
    Option<"seedArg", "seed-arg", "bool", /*default=*/"false",
           "Take the loss's seed as the last argument (the last layer)">,
  ];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

def InjectLora : Pass<"rp-inject-lora", "::mlir::ModuleOp"> {
  let summary = "Adds LoRA adapters to the matmuls of matching weights";
  let description = [{
    Every `graph.matmul %x, %w` whose `%w` is `graph.load_param @W` with `@W` matching `targets`
    (an ECMAScript regex searched in the param name) becomes
    `x @ W + ((x @ A) @ B) * (alpha / rank)` (Hu et al., LoRA, 2021; PEFT's scaling), with new
    trainable params `@<W>.lora_A : [in, rank]` (`init kaiming_uniform`, as PEFT initialises A)
    and `@<W>.lora_B : [rank, out]` (`init zeros`); `@W` becomes frozen. Every other param is
    frozen too (LoRA trains adapters only). A `targets` pattern that matches no matmul weight is
    an error. A weight read as `graph.transpose(graph.load_param @W) {permutation = [1, 0]}`
    (x @ W^T: nn.Linear's [out, in] weight, as the Hugging Face exports compute projections) is
    adapted the same way, with A [in, rank] and B [rank, out] named `@<M>.lora_A.weight` and
    `@<M>.lora_B.weight` (M: W's name without `.weight`, PEFT's names); a weight read both as
    W and as W^T is an error. A mixture of experts' stacked weight W [E, ...] read as the
    batched_mm import does (`graph.matmul` of `graph.gather(W, ids) {axis = 0}` by one row per
    (token, choice) pair: W_e x or x W_e) gets stacked adapters A [E, rank, in]
    (`kaiming_uniform`, fan-in `in`) and B [E, out, rank] (`zeros`), and each product y gets
    `y + B_e (A_e x) * (alpha / rank)` through two batched matmuls of adapters gathered by the
    same ids (rp-fuse-routed-experts makes them grouped matmuls); a matching rank-3 param read
    any other way is an error.

    Before:
    ```mlir
    graph.param @q_proj trainable : tensor<64x64xf32> initializer "q_proj"
    %w = graph.load_param @q_proj : tensor<64x64xf32>
    %y = graph.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    ```
    After (`rank=8 alpha=16 targets=q_proj`):
    ```mlir
    graph.param @q_proj : tensor<64x64xf32> initializer "q_proj"
    graph.param @q_proj.lora_A trainable : tensor<64x8xf32> init kaiming_uniform
    graph.param @q_proj.lora_B trainable : tensor<8x64xf32> init zeros
    %y = graph.matmul %x, %w ...
    %xa = graph.matmul %x, %a ...
    %xab = graph.matmul %xa, %b ...
    %s = graph.constant dense<2.0> : tensor<f32>
    %d = graph.mul %xab, %s ...
    %y2 = graph.add %y, %d ...
    ```
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"8", "LoRA rank r">,
    Option<"alpha", "alpha", "double", /*default=*/"16.0", "LoRA alpha (the update is scaled by alpha / rank)">,
    Option<"targets", "targets", "std::string", /*default=*/"\"q_proj|v_proj\"",
           "Regex searched in the names of the params to adapt">,
  ];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def FreezeParams : Pass<"rp-freeze-params", "::mlir::ModuleOp"> {
  let summary = "Makes matching params frozen (no gradient, no optimizer state)";
  let description = [{
    Clears `trainable` on every `graph.param` whose name matches `pattern` (an ECMAScript regex
    searched in the name). A pattern that matches no param is an error.

    ```mlir
    graph.param @embed trainable : tensor<256x64xf32>   // --rp-freeze-params=pattern=embed
    graph.param @embed : tensor<256x64xf32>
    ```
  }];
  let options = [
    Option<"pattern", "pattern", "std::string", /*default=*/"\"\"", "Regex of the params to freeze">,
  ];
}

def QuantizeBaseWeights : Pass<"rp-quantize-base-weights", "::mlir::ModuleOp"> {
  let summary = "Holds the frozen weights the GEMMs read quantized (QLoRA's base weights)";
  let description = [{
    Every frozen param of rank >= 2 that only GEMMs read as a weight (`graph.matmul`'s
    operand, directly or through a transpose of its last two dimensions: the projections;
    `graph.grouped_matmul`'s weights: stacked experts `[E, ...]`) is held in `format`
    (`nf4`, `nf4-fp32-absmax`, `int8`, `fp8`; kernels/Quantization.h): its type becomes the
    `ui8` storage with `quant`, `stored_type` (and for int8/fp8 `quant_axis`, the input axis
    the GEMM contracts), and each `graph.load_param` of it is followed by a
    `graph.dequantize` that the GEMM reads instead. Trainable params, embeddings, norms,
    biases and the fused LM head's weight (`graph.linear_cross_entropy`) stay as they are.
    Errors: an unknown format; no frozen GEMM weight at all (quantizing needs LoRA or
    --freeze); a weight the format cannot hold (nf4: a last dimension that is not a multiple
    of 64).

    ```mlir
    graph.param @w : tensor<128x64xf32>
    %w = graph.load_param @w : tensor<128x64xf32>
    %t = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    // --rp-quantize-base-weights=format=nf4
    graph.param @w : tensor<4232xui8> {quant = 0 : i32, stored_type = tensor<128x64xf32>}
    %q = graph.load_param @w : tensor<4232xui8>
    %w = graph.dequantize nf4 %q : (tensor<4232xui8>) -> tensor<128x64xf32>
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"nf4\"",
           "nf4, nf4-fp32-absmax, int8 or fp8">,
  ];
}

def FoldTransposeIntoMatmul : Pass<"rp-fold-transpose-into-matmul", "::mlir::ModuleOp"> {
  let summary = "Folds transposes of the last two dimensions into graph.matmul's flags";
  let description = [{
    A `graph.matmul` operand defined by a `graph.transpose` whose permutation swaps the last two
    dimensions (and keeps the others) reads the transpose's input instead, with the operand's
    `transpose_a` / `transpose_b` flag toggled (a flag already set is cleared: two transposes
    cancel). The GEMM kernels take the operand transposed, so the transpose's copy disappears
    once it has no other user. Other permutations, and operands of rank < 2, are left alone.
    Runs on every function of the module (layer functions, their backward functions).

    Before:
    ```mlir
    %wt = graph.transpose %w {permutation = array<i64: 1, 0>} : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %y = graph.matmul %x, %wt : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
    ```
    After:
    ```mlir
    %y = graph.matmul %x, %w {transpose_b} : (tensor<8x64xf32>, tensor<256x64xf32>) -> tensor<8x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
}

def GroupLayers : Pass<"rp-group-layers", "::mlir::ModuleOp"> {
  let summary = "Splits the forward function into layer functions: prefix, blocks, tail";
  let description = [{
    Assigns every op of `@<function>` to a layer and outlines one function per layer:
    `@prefix` (embeddings, position tables), `@block_0` ... `@block_{B-1}` (the repeated
    transformer blocks) and `@tail` (final norm, LM head, loss). The module gets
    `graph.layers = [@prefix, @block_0, ..., @tail]`, in execution order.

    Blocks are found from scopes: the ONNX node name of an op (`/model/layers.3/...`) or the
    name of a param it reads (`model.layers.3.mlp.up_proj.weight`, `transformer.h.3...`,
    `blocks.3...`). Without scoped names, the structure decides: the residual stream (the
    chain of `graph.add`s whose other operand is computed from the stream through params) is
    cut into segments, and the segments whose params have the same shapes repeat with a period
    (a block is one period, e.g. attention + MLP); params shared by several segments are not
    block params. The names of constants and of ops computed only from constants are no
    scope (an exporter may name a folded rotary table after the first block). Ops without a
    scope join the latest layer among their operands; a parameter-free computation that no
    block parameter reaches (masks, positions) and values of an unscoped parameter read by
    several layers (rotary tables) are rematerialised in every layer that uses them; an unscoped parameter first used before the blocks belongs to the
    prefix, one first used after them to the tail. A parameter-free op whose results only a
    later layer uses moves into that layer when that lowers the number of values crossing the
    boundary, so that a boundary carries the hidden state. Layer functions take the values of
    earlier layers they use (the hidden state) and the model inputs they read; they return what
    later layers use, the tail returns the results of `@<function>`. A boundary argument's
    `graph.boundary = "<layer>#<result index>"` names the result it receives; model inputs
    keep their `graph.name`.

    Before:
    ```mlir
    graph.param @"layers.0.w" trainable : tensor<8x8xf32>
    func.func @forward(%ids: tensor<2x4xi64>) -> tensor<f32> {
      %e = graph.load_param @embed ...
      %h0 = graph.gather %e, %ids ...
      %w0 = graph.load_param @"layers.0.w" ...
      %h1 = graph.matmul %h0, %w0 ...
      %l = graph.reduce_mean %h1 ...
      return %l
    }
    ```
    After (`@forward` is kept):
    ```mlir
    module attributes {graph.layers = [@prefix, @block_0, @tail]} {
      func.func @prefix(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> { ... gather ... }
      func.func @block_0(%h: tensor<2x4x8xf32> {graph.boundary = "prefix#0"}) -> tensor<2x4x8xf32> { ... matmul ... }
      func.func @tail(%h: tensor<2x4x8xf32> {graph.boundary = "block_0#0"}) -> tensor<f32> { ... reduce_mean ... }
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to split">,
  ];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect", "::mlir::func::FuncDialect"];
}

def ChooseLossChunks : Pass<"rp-choose-loss-chunks", "::mlir::ModuleOp"> {
  let summary = "Sets chunk_rows of the fused LM-head losses from a memory budget";
  let description = [{
    Gives every `graph.linear_cross_entropy` and `graph.linear_cross_entropy_vjp` without a
    `chunk_rows` the rows per chunk whose f32 logits fit the budget:
    `chunk_rows = clamp(floor(budget / (4 V)), 1, N)`, rounded down to a multiple of 64 when
    at least 64 and below N (GEMM tiles), with `budget = max(budget-floor, the largest tensor any op of
    the module's functions produces)` in bytes: the chunk never holds more than the largest
    value the functions hold anyway (in a `_train` tail, the head's weight gradient `V x H`).
    The kernels' results do not depend on the chunk size, only their scratch does.

    Before:
    ```mlir
    %loss = graph.linear_cross_entropy mean %h, %w, %y {ignore_index = -100 : i64} : (tensor<4096x2048xbf16>, tensor<151936x2048xbf16>, tensor<4096xi64>) -> tensor<bf16>
    ```
    After (the largest value 64 MiB: 110 rows, rounded to 64):
    ```mlir
    %loss = graph.linear_cross_entropy mean %h, %w, %y {chunk_rows = 64 : i64, ignore_index = -100 : i64} : ...
    ```
  }];
  let dependentDialects = ["::mlir::rp::graph::GraphDialect"];
  let options = [
    Option<"budgetFloor", "budget-floor", "int64_t", /*default=*/"int64_t(64) << 20",
           "The smallest budget of a chunk's f32 logits, bytes">,
  ];
}

// Pass families in their own files, one owner each.
include "passes/Graph/NormFusionPasses.td"
include "passes/Graph/BlockFusionPasses.td"

#endif // RP_PASSES_GRAPH_PASSES_TD
