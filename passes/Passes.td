//===- Passes.td - rpc passes --------------------------------*- tablegen -*-===//

#ifndef RP_PASSES_TD
#define RP_PASSES_TD

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

// Pass families in their own files, one owner each.
include "passes/NormFusionPasses.td"
include "passes/BlockFusionPasses.td"
include "passes/LayerPasses.td"
include "passes/SchedulePasses.td"

#endif // RP_PASSES_TD
