//===- Ops.td - graph dialect ops --------------------------*- tablegen -*-===//
//
// Semantics follow ONNX (opset 13-23) and PyTorch where they agree; where they differ the
// description says which one is meant.
//
//===----------------------------------------------------------------------===//

#ifndef RP_GRAPH_OPS_TD
#define RP_GRAPH_OPS_TD

include "dialects/Graph/IR/Base.td"
include "dialects/Graph/IR/Attrs.td"
include "dialects/Graph/IR/Interfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Graph_ParamOp : Graph_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a model parameter, stored in the weight file";
  let description = [{
    Declares a model parameter as a module-level symbol. `type` is its tensor type; a
    `trainable` param receives a gradient and an optimizer state, a frozen one does not (only
    floating-point params can be trainable). `initializer` names the tensor that holds the
    initial value (the ONNX initializer, later the safetensors key); the values themselves are
    never in the IR.

    ```mlir
    graph.param @"model.embed_tokens.weight" trainable : tensor<256x64xf32> initializer "model.embed_tokens.weight"
    graph.param @"inv_freq" : tensor<16xf32>
    graph.param @"q_proj.lora_A" trainable : tensor<64x8xf32> init kaiming_uniform
    ```

    A param without a stored value (LoRA adapters) says how it starts with `init`: `zeros`, or
    `kaiming_uniform` (PyTorch's `kaiming_uniform_(w, a=sqrt(5))` as PEFT initialises LoRA A:
    uniform in `[-1/sqrt(fan_in), 1/sqrt(fan_in)]` with `fan_in = type.shape[0]`, drawn from a
    generator seeded by the param's name).

    A frozen weight held quantized (rp-quantize-base-weights) has `quant` (the format: 0 nf4, 1 nf4_fp32_absmax, 2 int8, 3 fp8),
    `stored_type` (the float tensor the weights file holds; rp-run quantizes it as it loads
    it) and, for int8 and fp8, `quant_axis` (the input axis); its `type` is the storage,
    `ui8` of the format's byte count for `stored_type`'s shape (kernels/Quantization.h), which
    `graph.dequantize` reads:

    ```mlir
    graph.param @"model.layers.0.mlp.up_proj.weight" : tensor<25360xui8> {quant = 0 : i32, stored_type = tensor<384x128xf32>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Graph_ParamTensor>:$type,
                       UnitAttr:$trainable, OptionalAttr<StrAttr>:$initializer,
                       OptionalAttr<Graph_ParamInitAttr>:$init,
                       OptionalAttr<Graph_QuantFormatAttr>:$quant,
                       OptionalAttr<TypeAttrOf<Graph_FloatTensor>>:$stored_type,
                       OptionalAttr<I64Attr>:$quant_axis);
  let assemblyFormat = [{
    $sym_name (`trainable` $trainable^)? `:` $type (`initializer` $initializer^)?
    (`init` $init^)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// The type the weights file holds: `stored_type` for a quantized param, else `type`.
    ::mlir::RankedTensorType getStoredTensorType() {
      if (auto stored = getStoredType())
        return ::llvm::cast<::mlir::RankedTensorType>(*stored);
      return getTensorType();
    }
  }];
  let hasVerifier = 1;
}

def Graph_LoadParamOp : Graph_Op<"load_param", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a model parameter";
  let description = [{
    Yields the current value of the `graph.param` named by `param`. The result type equals the
    param's type.

    ```mlir
    %w = graph.load_param @"lm_head.weight" : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs Graph_ParamTensor:$result);
  let assemblyFormat = "$param attr-dict `:` type($result)";
}

def Graph_DequantizeOp : Graph_Op<"dequantize", [Pure]> {
  let summary = "a quantized frozen weight as a float tensor (the GEMM's operand)";
  let description = [{
    Reads the storage of a weight held quantized in `format` (kernels/Quantization.h: `nf4`,
    bitsandbytes' 4-bit NormalFloat with double-quantized absmax, QLoRA §3;
    `nf4_fp32_absmax`; `int8` and `fp8` with one scale per output channel, whose input axis
    is `axis`) and yields the weight in the result's float dtype: each value computed in f32
    and rounded once (kernels/cpu/Quantize.h). Shape rule: the input's length is the format's
    byte count for the result's shape (nf4: the last dimension a multiple of 64). Only a
    frozen weight is quantized, so no gradient flows through it: the VJP of the GEMM that
    reads the result (dX = dY W^T) uses the dequantized W, re-emitted in the backward function
    like any value of params alone.

    ```mlir
    %q = graph.load_param @"model.layers.0.mlp.up_proj.weight" : tensor<25360xui8>
    %w = graph.dequantize nf4 %q : (tensor<25360xui8>) -> tensor<384x128xf32>
    ```
  }];
  let arguments = (ins Graph_QuantStorageTensor:$input, Graph_QuantFormatAttr:$format,
                       OptionalAttr<Graph_AxisAttr>:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$format $input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor given by an elements attribute (dense, splat, or a `dense_resource` blob).

    ```mlir
    %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Graph_UnaryFloatOp<string mnemonic, string formula, list<Trait> traits = []>
    : Graph_UnaryOp<mnemonic, Graph_FloatTensor, !listconcat([DeclareOpInterfaceMethods<Graph_GradientOpInterface>], traits)> {
  let summary = "elementwise " # formula;
  let description = [{
    Applies `}] # formula # [{` to every element; the result has the operand's type.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x : tensor<2x8xf32>
    ```
  }];
}

def Graph_SqrtOp : Graph_UnaryFloatOp<"sqrt", "y = sqrt(x)">;
def Graph_ReciprocalOp : Graph_UnaryFloatOp<"reciprocal", "y = 1 / x">;
def Graph_ExpOp : Graph_UnaryFloatOp<"exp", "y = exp(x)">;
def Graph_LogOp : Graph_UnaryFloatOp<"log", "y = log(x)">;
def Graph_TanhOp : Graph_UnaryFloatOp<"tanh", "y = tanh(x)">;
def Graph_SigmoidOp : Graph_UnaryFloatOp<"sigmoid", "y = 1 / (1 + exp(-x))">;
def Graph_ErfOp : Graph_UnaryFloatOp<"erf", "y = erf(x)">;
def Graph_SiluOp : Graph_UnaryFloatOp<"silu", "y = x * sigmoid(x)">;
def Graph_SoftplusOp : Graph_UnaryFloatOp<"softplus", "y = log(1 + exp(x))"> {
  let description = [{
    `y = log(1 + exp(x))` elementwise (ONNX Softplus; `torch.nn.functional.softplus` with
    `beta = 1`), computed as `max(x, 0) + log1p(exp(-|x|))`, which neither overflows for large
    `x` nor loses the small values of very negative `x`. VJP: `g * sigmoid(x)`.

    ```mlir
    %y = graph.softplus %x : tensor<2x8xf32>
    ```
  }];
}
def Graph_CosOp : Graph_UnaryFloatOp<"cos", "y = cos(x)"> {
  let description = [{
    `y = cos(x)` elementwise, `x` in radians (ONNX Cos; `torch.cos`): the rotary embedding's
    table on positions known only at run time (packed sequences, whose `position_ids` restart
    at each document). VJP: `-g * sin(x)`.

    ```mlir
    %c = graph.cos %angles : tensor<2x16x8xf32>
    ```
  }];
}
def Graph_SinOp : Graph_UnaryFloatOp<"sin", "y = sin(x)"> {
  let description = [{
    `y = sin(x)` elementwise, `x` in radians (ONNX Sin; `torch.sin`), as graph.cos. VJP:
    `g * cos(x)`.

    ```mlir
    %s = graph.sin %angles : tensor<2x16x8xf32>
    ```
  }];
}
def Graph_FloorOp : Graph_UnaryFloatOp<"floor", "y = floor(x)"> {
  let description = [{
    Rounds every element down to an integer value (ONNX Floor: float only; `torch.floor`); NaN
    and infinities stay. Its derivative is zero wherever it exists, so the VJP gives its
    operand no cotangent (PyTorch's is zeros). `floor(floor(x))` folds to `floor(x)`.

    ```mlir
    %chunk = graph.floor %t : tensor<8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_NegOp : Graph_UnaryOp<"neg", Graph_NumericTensor, [DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise negation";
  let description = [{
    `y = -x` on floating-point or integer tensors. `neg(neg(x))` folds to `x`.

    ```mlir
    %y = graph.neg %x : tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_ReluOp : Graph_UnaryOp<"relu", Graph_NumericTensor, [DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise rectified linear unit";
  let description = [{
    `y = max(x, 0)` on floating-point or integer tensors.

    ```mlir
    %y = graph.relu %x : tensor<4xf32>
    ```
  }];
}

def Graph_LogicalNotOp : Graph_UnaryOp<"logical_not", Graph_BoolTensor> {
  let summary = "elementwise logical not";
  let description = [{
    `y = !x` on `i1` tensors. `logical_not(logical_not(x))` folds to `x`.

    ```mlir
    %y = graph.logical_not %m : tensor<8x8xi1>
    ```
  }];
  let hasFolder = 1;
}

def Graph_GeluOp : Graph_Op<"gelu", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise gaussian error linear unit";
  let description = [{
    `exact`: `y = 0.5 x (1 + erf(x / sqrt(2)))`; `tanh`:
    `y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, as ONNX Gelu's `approximate`
    attribute and `torch.nn.functional.gelu`.

    ```mlir
    %y = graph.gelu tanh %x : tensor<2x8x256xf32>
    ```
  }];
  let arguments = (ins Graph_GeluApproximationAttr:$approximate, Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$approximate $input attr-dict `:` type($input)";
}

class Graph_BroadcastBinaryOp<string mnemonic, Type tensorType, Type resultType,
                              list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)> {
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Graph_ArithOp<string mnemonic, string formula, string identity, list<Trait> traits = []>
    : Graph_BroadcastBinaryOp<mnemonic, Graph_NumericTensor, Graph_NumericTensor,
                              !listconcat([DeclareOpInterfaceMethods<Graph_GradientOpInterface>], traits)> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = [{
    `}] # formula # [{` elementwise; the operands have the same element type and
    broadcast-compatible shapes (numpy rules), and the result has the broadcast shape.
    }] # identity # [{

    ```mlir
    %y = graph.}] # mnemonic # [{ %a, %b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let hasFolder = 1;
}

def Graph_AddOp : Graph_ArithOp<"add", "lhs + rhs", "`x + 0` folds to `x` when no broadcast grows `x`.", [Commutative]>;
def Graph_SubOp : Graph_ArithOp<"sub", "lhs - rhs", "`x - 0` folds to `x` when no broadcast grows `x`.">;
def Graph_MulOp : Graph_ArithOp<"mul", "lhs * rhs", "`x * 1` folds to `x` when no broadcast grows `x`.", [Commutative]>;
def Graph_DivOp : Graph_ArithOp<"div", "lhs / rhs", "`x / 1` folds to `x` when no broadcast grows `x`; integer division truncates toward zero.">;
def Graph_PowOp : Graph_ArithOp<"pow", "lhs ^ rhs", "`x ^ 1` folds to `x` when no broadcast grows `x`.">;

def Graph_ModOp : Graph_Op<"mod", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise remainder with broadcasting (ONNX Mod)";
  let description = [{
    The remainder of `lhs / rhs` elementwise, on integer or floating-point operands of one
    element type and broadcast-compatible shapes (numpy rules). Without `fmod` the remainder
    has the sign of `rhs`, `lhs - floor(lhs / rhs) * rhs` (ONNX Mod with `fmod = 0`, Python's
    `%`, `torch.remainder`); with `fmod` it has the sign of `lhs`, `lhs - trunc(lhs / rhs) *
    rhs` (C's `fmod`, `torch.fmod`). Integer remainders are exact (a zero divisor is an error);
    float ones are `fmod`, plus `rhs` when the signs differ without `fmod` (numpy's `mod`).
    VJP (floats): `d lhs = g`, `d rhs = -g * (lhs - result) / rhs`, the floored (or truncated)
    quotient as in PyTorch; integer operands get none.

    ```mlir
    %in_chunk = graph.mod %pos, %chunk : (tensor<8xi64>, tensor<i64>) -> tensor<8xi64>
    %r = graph.mod %x, %y {fmod} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$lhs, Graph_NumericTensor:$rhs, UnitAttr:$fmod);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Graph_LogicalBinaryOp<string mnemonic, string formula>
    : Graph_BroadcastBinaryOp<mnemonic, Graph_BoolTensor, Graph_BoolTensor, [Commutative]> {
  let summary = "elementwise logical " # formula # " with broadcasting";
  let description = [{
    `}] # formula # [{` on `i1` tensors of broadcast-compatible shapes.

    ```mlir
    %m = graph.}] # mnemonic # [{ %a, %b : (tensor<8x8xi1>, tensor<8xi1>) -> tensor<8x8xi1>
    ```
  }];
}
def Graph_LogicalAndOp : Graph_LogicalBinaryOp<"logical_and", "lhs && rhs">;
def Graph_LogicalOrOp : Graph_LogicalBinaryOp<"logical_or", "lhs || rhs">;

def Graph_CompareOp : Graph_Op<"compare", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares `lhs` and `rhs` elementwise with `predicate` (`eq`, `lt`, `le`, `gt`, `ge`) and
    yields `i1`. The operands have the same element type and broadcast-compatible shapes.

    ```mlir
    %m = graph.compare lt, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins Graph_CompareKindAttr:$predicate, Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_WhereOp : Graph_Op<"where", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    `result = condition ? on_true : on_false`, ONNX Where. The three operands broadcast
    together; `on_true` and `on_false` have the same element type. A splat constant condition
    folds to the chosen operand when no broadcast grows it.

    ```mlir
    %y = graph.where %mask, %scores, %neg_inf : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$condition, Graph_Tensor:$on_true, Graph_Tensor:$on_false);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts every element to the result's element type; the shape is unchanged. Semantics of
    ONNX Cast: float to integer truncates toward zero, anything to `i1` is `x != 0`, float
    narrowing rounds to nearest even. A cast to the operand's own type folds away.

    ```mlir
    %h = graph.cast %x : tensor<2x8xf32> to tensor<2x8xbf16>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalisations
//===----------------------------------------------------------------------===//

def Graph_MatMulOp : Graph_Op<"matmul", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "matrix product with batch broadcasting (ONNX MatMul)";
  let description = [{
    `numpy.matmul` semantics, as ONNX MatMul: for ranks >= 2 the last two dimensions are
    multiplied (`[..., M, K] x [..., K, N] -> [..., M, N]`) and the leading batch dimensions
    broadcast; a 1-D `lhs` is treated as `[1, K]` and a 1-D `rhs` as `[K, 1]`, and that unit
    dimension is removed from the result. Both operands have the same element type.

    `transpose_a` / `transpose_b` read the operand with its last two dimensions swapped, as if
    it went through a `graph.transpose` of that permutation (no copy is made; the GEMM takes
    the operand transposed): with `transpose_b` the rhs is `[..., N, K]`. A flagged operand
    has rank >= 2. `graph.fold-transpose-into-matmul` sets them.

    ```mlir
    %y = graph.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
    %z = graph.matmul %x, %wt {transpose_b} : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$lhs, Graph_NumericTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Graph_ReduceOp<string mnemonic, string formula>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "reduction by " # formula # " over axes";
  let description = [{
    Reduces `input` by }] # formula # [{ over `axes` (non-empty, strictly increasing, in
    range). With `keepdims` each reduced dimension stays with size 1, otherwise it is removed.
    A reduction over size-1 dimensions with `keepdims` folds to its input.

    ```mlir
    %s = graph.}] # mnemonic # [{ %x {axes = array<i64: 2>, keepdims} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$input, DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}
def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "sum">;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", "arithmetic mean">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "maximum">;

class Graph_SoftmaxBase<string mnemonic, string formula>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = formula # " along one axis";
  let description = [{
    `}] # formula # [{` along `axis` (ONNX opset 13 semantics: one axis, not a flattened
    suffix). The result has the operand's type.

    ```mlir
    %p = graph.}] # mnemonic # [{ %scores {axis = 3 : i64} : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_AxisAttr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}
def Graph_SoftmaxOp : Graph_SoftmaxBase<"softmax", "y = exp(x - max(x)) / sum(exp(x - max(x)))">;
def Graph_LogSoftmaxOp : Graph_SoftmaxBase<"log_softmax", "y = x - max(x) - log(sum(exp(x - max(x))))">;

def Graph_CumSumOp : Graph_Op<"cumsum", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "cumulative sum along one axis (ONNX CumSum)";
  let description = [{
    `result[..., i, ...]` (position `i` along `axis`) is the sum of `input[..., j, ...]` over
    `j <= i`; with `exclusive` over `j < i` (the first is 0); with `reverse` the sums run from
    the end (`j >= i`, or `j > i` with `exclusive`), as ONNX CumSum's attributes. Floating-point
    or integer. Each sum runs in position order from the start of its run, f32 in double and
    rounded once per element (as `reduce_sum`); integers wrap. VJP: the cumulative sum of the
    cotangent in the other direction, `cumsum(g)` with `reverse` flipped. A cumulative sum
    over an axis of size 1 without `exclusive` folds to its input.

    ```mlir
    %pos = graph.cumsum %mask {axis = 1 : i64} : tensor<2x8xi64>
    %s = graph.cumsum %x {axis = 0 : i64, exclusive, reverse} : tensor<16x4xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$input, Graph_AxisAttr:$axis, UnitAttr:$exclusive,
                       UnitAttr:$reverse);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over dimensions `[axis, rank)`:
    `y = (x - mean(x)) / sqrt(var(x) + epsilon) * scale + bias` (biased variance), as ONNX
    LayerNormalization (output 0 only) and `torch.nn.functional.layer_norm`. `scale` and the
    optional `bias` have shape `x.shape[axis:]` and `x`'s element type.

    ```mlir
    %y = graph.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Optional<Graph_FloatTensor>:$bias, Graph_AxisAttr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RmsNormOp : Graph_Op<"rms_norm", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "root-mean-square normalisation over the trailing dimensions";
  let description = [{
    `y = x / sqrt(mean(x^2) + epsilon) * scale`, the mean taken over dimensions
    `[axis, rank)`, as ONNX RMSNormalization (opset 23) and the Llama/Qwen `RMSNorm` modules.
    `scale` has shape `x.shape[axis:]` and `x`'s element type.

    ```mlir
    %y = graph.rms_norm %x, %g {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_AxisAttr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RmsNormVjpOp : Graph_Op<"rms_norm_vjp", [Pure]> {
  let summary = "the VJP of graph.rms_norm, fused, before the sum over rows";
  let description = [{
    For `y = rms_norm(x, scale)` over dimensions `[axis, rank)` and the cotangent `g` of `y`,
    per row with `r = 1 / sqrt(mean(x^2) + epsilon)`, `xhat = x r`, `dxhat = g * scale`:
    `dx = r (dxhat - xhat mean(dxhat xhat))` and `dscale_rows = g * xhat`, whose sum over
    dimensions `[0, axis)` is the scale's gradient (Zhang and Sennrich, 2019, the RMSNorm
    gradient). `graph.rms_norm`'s VJP emits it and that sum; its kernels recompute `r` from
    `x` in the same pass (no saved statistics). `x`, `g` and both results have one type;
    `scale` has shape `x.shape[axis:]`.

    ```mlir
    %dx, %ds = graph.rms_norm_vjp %x, %w, %g {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale, Graph_FloatTensor:$grad,
                       Graph_AxisAttr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$dinput, Graph_FloatTensor:$dscale_rows);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_CrossEntropyOp : Graph_Op<"cross_entropy", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "softmax cross-entropy loss with an ignored label";
  let description = [{
    `loss_i = -log_softmax(logits)[i, labels_i]` over the class axis 1, reduced by `mean` over
    the elements whose label is not `ignore_index` (NaN when every label is ignored, as in
    PyTorch), or by `sum`. Shapes follow ONNX SoftmaxCrossEntropyLoss and
    `torch.nn.functional.cross_entropy`: `logits` is `[N, C, d1, ..., dk]`, `labels` is
    `[N, d1, ..., dk]` of `i64` or `i32`; the result is a 0-D tensor of the logits' element type.

    ```mlir
    %loss = graph.cross_entropy mean %logits, %labels {ignore_index = -100 : i64} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_LossReductionAttr:$reduction, Graph_FloatTensor:$logits,
                       Graph_IndexTensor:$labels, I64Attr:$ignore_index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "reinterprets the shape, keeping row-major element order";
  let description = [{
    The result has the operand's element type and element count and a static shape given by
    the result type. `reshape(reshape(x))` folds to one reshape, and a reshape to the operand's
    own type folds away.

    ```mlir
    %y = graph.reshape %x : tensor<2x8x64xf32> to tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "permutes the dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`, as ONNX Transpose with an explicit `perm`.
    An identity permutation folds away and `transpose(transpose(x))` folds to one transpose
    (or to `x`).

    ```mlir
    %y = graph.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_ExpandOp : Graph_Op<"expand", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "broadcasts to the result shape";
  let description = [{
    Broadcasts `input` to the result shape with numpy rules: the input's dimensions align with
    the trailing result dimensions and each is 1 or equal to the result's. An expand to the
    operand's own type folds away.

    ```mlir
    %y = graph.expand %mask : tensor<1x1x8x8xi1> to tensor<2x4x8x8xi1>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "concatenates along one axis";
  let description = [{
    Joins one or more tensors of the same rank and element type along `axis`; every other
    dimension is equal. A concat of a single operand folds to it.

    ```mlir
    %y = graph.concat %a, %b {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, Graph_AxisAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "strided slice along some axes";
  let description = [{
    ONNX Slice with static, normalised bounds: for each listed axis `a` (strictly increasing)
    the result keeps indices `starts[i], starts[i] + steps[i], ...` up to but excluding
    `ends[i]`. A positive step needs `0 <= start <= end <= dim`; a negative step needs
    `-1 <= end <= start < dim` (`end = -1` runs to index 0). Unlisted axes are kept whole. A
    slice with unit steps that keeps everything folds away.

    ```mlir
    %y = graph.slice %x {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_SplitOp : Graph_Op<"split", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "splits along one axis into pieces of given sizes";
  let description = [{
    Cuts `input` along `axis` into `sizes.size()` consecutive pieces; the sizes are positive and
    sum to the dimension.

    ```mlir
    %q, %k = graph.split %qk {axis = 2 : i64, sizes = array<i64: 64, 32>} : (tensor<2x8x96xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x32xf32>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_AxisAttr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherOp : Graph_Op<"gather", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "gathers slices along one axis (ONNX Gather; embedding lookup)";
  let description = [{
    `result[i..., j..., k...] = data[i..., indices[j...], k...]` with the indices taken along
    `axis`: the result shape is `data.shape[:axis] + indices.shape + data.shape[axis+1:]`. An
    embedding lookup is a gather on axis 0 of the `[vocab, hidden]` table. Indices are `i64` or
    `i32` in `[-s, s)` with `s = data.shape[axis]`; a negative index counts from the end, as in
    ONNX (the importer normalises constant indices; run-time ones are checked by the kernels).

    ```mlir
    %h = graph.gather %table, %ids {axis = 0 : i64} : (tensor<256x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices, Graph_AxisAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherElementsOp : Graph_Op<"gather_elements", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "gathers single elements along one axis (ONNX GatherElements)";
  let description = [{
    `result[i][j] = data[indices[i][j]][j]` for `axis = 0` (and likewise for other axes):
    `indices` has `data`'s rank, every non-axis dimension at most `data`'s, and the result has
    the shape of `indices` and the element type of `data`. Indices lie in `[-s, s)` with
    `s = data.shape[axis]`; a negative index counts from the end, as in ONNX.

    ```mlir
    %p = graph.gather_elements %logp, %labels {axis = 1 : i64} : (tensor<16x256xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices, Graph_AxisAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_TopKOp : Graph_Op<"top_k", [Pure, InferTypeOpAdaptor]> {
  let summary = "the indices of the k largest (or smallest) elements along one axis (ONNX TopK)";
  let description = [{
    `result[..., j, ...]` (`j < k`, along `axis`) is the position along `axis` of the input's
    `j`-th largest element (the default) or, with `smallest`, `j`-th smallest, in that order (ONNX
    `sorted = 1`; an unsorted TopK may take this order too). Equal elements keep their order:
    the lower position comes first (ONNX's tie rule). NaN ranks above every number (as in
    PyTorch's topk): first unless `smallest`, then last. The result is `i64` with the
    input's shape but `k` along `axis`, `1 <= k <= input.shape[axis]`. The values are
    `graph.gather_elements(input, result, axis)`: the importer emits that gather, whose VJP
    carries the values' gradient; the indices themselves are not differentiable.

    ```mlir
    %idx = graph.top_k %logits {axis = 1 : i64, k = 2 : i64} : (tensor<32x4xf32>) -> tensor<32x2xi64>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$k, Graph_AxisAttr:$axis,
                       UnitAttr:$smallest);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Scatters (the VJPs of gathers and slices, and ONNX's scatters)
//===----------------------------------------------------------------------===//

def Graph_ScatterAddOp : Graph_Op<"scatter_add", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "adds slices into zeros at gathered positions (the VJP of gather)";
  let description = [{
    The transpose of `graph.gather` along `axis`: starts from zeros of the result type and, for
    every index position `j...`, adds `updates[i..., j..., k...]` into
    `result[i..., indices[j...], k...]`; repeated indices accumulate. `updates` has the shape
    `graph.gather` would produce from a tensor of the result type. Indices lie in `[-s, s)` with
    `s = result.shape[axis]`. The accumulation order is fixed (row-major over `updates`), so the
    result is deterministic. The embedding gradient is a `scatter_add` on axis 0; ONNX
    ScatterND with reduction `add` is one too (the importer adds the data). VJP: `d updates =
    graph.gather(d result, indices, axis)`; the indices get none.

    ```mlir
    %dtable = graph.scatter_add %dh, %ids {axis = 0 : i64} : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$updates, Graph_IndexTensor:$indices, Graph_AxisAttr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ScatterElementsAddOp : Graph_Op<"scatter_elements_add", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "adds elements into zeros at gathered positions (the VJP of gather_elements)";
  let description = [{
    The transpose of `graph.gather_elements` along `axis`: starts from zeros of the result type
    and adds `updates[p]` into the element `indices[p]` selects along `axis` (for `axis = 1`:
    `result[i][indices[i][j]] += updates[i][j]`). `updates` and `indices` have the same shape,
    of the result's rank, each non-axis dimension at most the result's. Deterministic. Also
    ONNX ScatterElements with reduction `add` (into zeros; the importer adds a non-zero
    `data`): a mixture of experts' load-balancing loss counts routed tokens with it. VJP:
    `d updates = graph.gather_elements(d result, indices, axis)`; the indices get none.

    ```mlir
    %dlogp = graph.scatter_elements_add %dp, %labels {axis = 1 : i64} : (tensor<16x1xf32>, tensor<16x1xi64>) -> tensor<16x256xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$updates, Graph_IndexTensor:$indices, Graph_AxisAttr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ScatterOp : Graph_Op<"scatter", [Pure, AllTypesMatch<["data", "result"]>, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "writes slices into a tensor at gathered positions (ONNX ScatterND)";
  let description = [{
    The overwriting counterpart of `graph.gather` along `axis`: the result is `data` except
    `result[i..., indices[j...], k...] = updates[i..., j..., k...]` for every index position
    `j...`; `updates` has the shape `graph.gather(data, indices, axis)` has, and `data`'s
    element type (any). Indices lie in `[-s, s)` with `s = data.shape[axis]`; a negative index
    counts from the end. When indices repeat, the update of the last position (row-major in
    `indices`) wins (ONNX leaves the order undefined). The importer writes ONNX ScatterND
    without a reduction (in-place slice assignment, `k[..., :r] = k_rot`) as a scatter on axis
    0 of the data viewed as `[d0 * ... * d(k-1), ...]`, one row per index tuple. VJP: `d data
    = graph.scatter(g, indices, zeros, axis)` (an overwritten element passes no gradient to
    `data`), `d updates = graph.gather(g, indices, axis)` (every update, repeated or not, gets
    the cotangent at its target, as in PyTorch); the indices get none.

    ```mlir
    %k = graph.scatter %k0, %rows, %k_rot {axis = 0 : i64} : (tensor<64x128xf32>, tensor<16xi64>, tensor<16x128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices, Graph_Tensor:$updates,
                       Graph_AxisAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ScatterElementsOp : Graph_Op<"scatter_elements", [Pure, AllTypesMatch<["data", "result"]>, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "writes elements into a tensor at gathered positions (ONNX ScatterElements)";
  let description = [{
    The overwriting counterpart of `graph.gather_elements` along `axis` (ONNX ScatterElements
    without a reduction; `torch.Tensor.scatter`): the result is `data` except that the element
    `indices[p]` selects along `axis` (for `axis = 1`: `result[i][indices[i][j]]`) receives
    `updates[p]`, for every position `p` of `updates`. `indices` and `updates` have the same
    shape, of `data`'s rank, each dimension but `axis` at most `data`'s; `updates` has `data`'s
    element type (any). Indices lie in `[-s, s)`. A router that scatters its top-k weights
    into a dense `[tokens, experts]` mask is one. When two positions of a line along `axis`
    select the same element, the later one wins. VJP: `d data = graph.scatter_elements(g,
    indices, zeros)`, `d updates = graph.gather_elements(g, indices, axis)` (as PyTorch); the
    indices get none.

    ```mlir
    %dense = graph.scatter_elements %zeros, %top, %weights {axis = 1 : i64} : (tensor<32x8xf32>, tensor<32x2xi64>, tensor<32x2xf32>) -> tensor<32x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices, Graph_Tensor:$updates,
                       Graph_AxisAttr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SliceScatterOp : Graph_Op<"slice_scatter", [Pure]> {
  let summary = "places a tensor at a strided slice of zeros (the VJP of slice)";
  let description = [{
    The transpose of `graph.slice` with the same attributes: the result is zeros of the result
    type except at the positions the slice reads, which hold `update` (whose shape is the
    slice's result shape).

    ```mlir
    %dx = graph.slice_scatter %dy {axes = array<i64: 3>, starts = array<i64: 0>, ends = array<i64: 8>, steps = array<i64: 1>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$update, DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$update attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

def Graph_RangeOp : Graph_Op<"range", [Pure]> {
  let summary = "a 1-D arithmetic sequence (ONNX Range)";
  let description = [{
    `result[i] = start + i * delta` for `i` in `[0, max(ceil((limit - start) / delta), 0))`.
    `start`, `limit` and `delta` are integer or float attributes (integers for an integer
    result); `delta` is non-zero; the result length must equal the element count, computed
    exactly in int64 for integer bounds and in double otherwise. Float values are
    `start + i * delta` in double, rounded once (as `torch.arange`).

    ```mlir
    %pos = graph.range {start = 0 : i64, limit = 8 : i64, delta = 1 : i64} : tensor<8xi64>
    ```
  }];
  let arguments = (ins AnyAttrOf<[I64Attr, F64Attr]>:$start, AnyAttrOf<[I64Attr, F64Attr]>:$limit,
                       AnyAttrOf<[I64Attr, F64Attr]>:$delta);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_TriluOp : Graph_Op<"trilu", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "keeps the upper or lower triangle of the last two dimensions";
  let description = [{
    ONNX Trilu: with `upper`, keeps elements with `j - i >= k` and zeroes the rest; otherwise
    keeps `j - i <= k`. Applies to the last two dimensions of a tensor of rank >= 2.

    ```mlir
    %causal = graph.trilu %ones {k = 0 : i64} : tensor<8x8xi1>
    %upper = graph.trilu %x {k = 1 : i64, upper} : tensor<8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$k, UnitAttr:$upper);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//
//
// Ops that replace a composed pattern of the importer's output (the rp-fuse-* passes), so
// that a backend can run them as one kernel. Each is defined by its composed form, and its
// VJP is written from that definition with graph ops, except graph.attention's: the fused
// graph.attention_vjp (its kernels never materialise the [B, Hq, S, S] scores).

def Graph_SwigluOp : Graph_Op<"swiglu", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "gated SiLU: silu(gate) * up";
  let description = [{
    `y = silu(gate) * up = gate * sigmoid(gate) * up` elementwise, the gated feed-forward of
    Llama / Qwen MLPs (Shazeer, "GLU Variants Improve Transformer", 2020; HF
    `act_fn(gate_proj(x)) * up_proj(x)`). `gate`, `up` and the result have the same type.
    `rp-fuse-swiglu` forms it from `silu(x @ Wg) * (x @ Wu)`.

    ```mlir
    %h = graph.swiglu %gate, %up : tensor<2x8x172xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$gate, Graph_FloatTensor:$up);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Graph_SwigluVjpOp : Graph_Op<"swiglu_vjp", [Pure, SameOperandsAndResultType]> {
  let summary = "the VJP of graph.swiglu, fused";
  let description = [{
    For `y = swiglu(gate, up)` and the cotangent `g` of `y`, with `s = sigmoid(gate)`:
    `dgate = g * up * s * (1 + gate * (1 - s))` and `dup = g * gate * s`, elementwise, in
    one pass (`graph.swiglu`'s VJP emits it). Every operand and result has one type.

    ```mlir
    %dgate, %dup = graph.swiglu_vjp %gate, %up, %g : tensor<2x8x172xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$gate, Graph_FloatTensor:$up, Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$dgate, Graph_FloatTensor:$dup);
  let assemblyFormat = "$gate `,` $up `,` $grad attr-dict `:` type($dgate)";
}

def Graph_RopeOp : Graph_Op<"rope", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "rotary position embedding, rotate-half or interleaved form";
  let description = [{
    `y = x * cos + rotate_half(x) * sin`, where `rotate_half(x) = concat(-x2, x1)` with
    `x1, x2` the first and second halves of the last dimension (Su et al., RoFormer, 2021, in
    the form of HF `apply_rotary_pos_emb`). `x` is `[B, H, S, D]` in attention (any rank >= 1
    is accepted) with `D` even; `cos` and
    `sin` have the same type, `x`'s element type, a last dimension of `D`, and broadcast to
    `x`'s shape (`[S, D]`, `[B, 1, S, D]`, ...). The result has `x`'s type. `rp-fuse-rope`
    forms it from the exported slice/neg/concat/mul/add pattern.

    With `interleaved` the rotation pairs adjacent elements instead of the two halves
    (GPT-J, CodeGen, Cohere: HF `rotate_every_two`): `y = x * cos + rotate_pairs(x) * sin`
    with `rotate_pairs(x)[2i] = -x[2i + 1]` and `rotate_pairs(x)[2i + 1] = x[2i]` (the
    original RoFormer layout; `cos` and `sin` then repeat each frequency twice in a row).

    ```mlir
    %q2 = graph.rope %q, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    %q3 = graph.rope %q, %cos, %sin {interleaved} : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$cos, Graph_FloatTensor:$sin,
                       UnitAttr:$interleaved);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_RopeVjpOp : Graph_Op<"rope_vjp", [Pure]> {
  let summary = "the VJP of graph.rope with respect to its input, fused";
  let description = [{
    `graph.rope` is linear in `x`, `y = x * cos + R(x) * sin` with `R` the rotation
    (rotate-half, or with `interleaved` the rotation of adjacent pairs), so for the cotangent
    `g` of `y`: `dx = g * cos + R^T(g * sin)`, where `R^T(u)[j] = u[p]` for the first element
    `j` of a pair and `-u[p]` for the second (`p` is `j`'s partner), in one pass.
    `graph.rope`'s VJP emits it for `dx`. `g`, `cos`, `sin` and the result follow
    `graph.rope`'s rules with `g` in `x`'s place.

    ```mlir
    %dq = graph.rope_vjp %g, %cos, %sin : (tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$grad, Graph_FloatTensor:$cos, Graph_FloatTensor:$sin,
                       UnitAttr:$interleaved);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AttentionOp : Graph_Op<"attention", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "scaled dot-product attention with grouped-query heads";
  let description = [{
    `y = softmax(q k^T * scale + mask) v` per batch and query head (Vaswani et al., 2017;
    `torch.nn.functional.scaled_dot_product_attention` with `enable_gqa`). `q` is
    `[B, Hq, S, D]`; `k` is `[B, Hkv, S, D]` and `v` `[B, Hkv, S, Dv]`, of `q`'s element type,
    with `Hq` a multiple of `Hkv`: query head `h` attends with key/value head `h / (Hq / Hkv)`
    (HF `repeat_kv`). The value head size `Dv` may differ from the query/key head size `D`
    (multi-head latent attention: DeepSeek-V2/V3's 192 and 128). With `causal`, position `i`
    sees keys `j <= i` (the masked scores are `-inf`). `scale` is positive and finite
    (`1/sqrt(D)` in most models). The result is `[B, Hq, S, Dv]`: `q`'s type when `Dv = D`.

    The optional `sinks` (`[Hq]`, `q`'s element type) are attention sinks (GPT-OSS; Xiao et
    al. 2024): head `h`'s softmax has one more logit `sinks[h]` that joins the denominator and
    has no value, `p_ij = e^(s_ij) / (e^(sinks[h]) + sum_j' e^(s_ij'))`.

    The optional `window` (`>= 1`, only with `causal`) is sliding-window attention (Mistral,
    Gemma-2/3, GPT-OSS's sliding layers; transformers' `sliding_window`): query `i` sees key
    `j` exactly when `j <= i` and `i - j < window`, the last `window` positions including its
    own. A window of at least `S` is plain causal attention; the fusion then leaves it out.

    The optional `softcap` (positive, finite) caps the scores before the mask and the softmax
    (logit soft-capping: Gemma-2, Grok): `s = softcap * tanh(q k^T * scale / softcap)`.

    ```mlir
    %y = graph.attention %q, %k, %v {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
    %z = graph.attention %q, %k, %v sinks %s {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<4xf32>) -> tensor<2x4x8x16xf32>
    %w = graph.attention %q, %k, %v {causal, scale = 2.500000e-01 : f64, window = 4 : i64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
    %c = graph.attention %q, %k, %v {causal, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
    %m = graph.attention %q, %k, %v8 {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x8xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key, Graph_FloatTensor:$value,
                       Optional<Graph_FloatTensor>:$sinks, F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window, OptionalAttr<F64Attr>:$softcap);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value (`sinks` $sinks^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_AttentionVjpOp : Graph_Op<"attention_vjp", [Pure]> {
  let summary = "the VJP of graph.attention, fused (FlashAttention-2 backward)";
  let description = [{
    The gradients of `y = graph.attention(q, k, v)` for an output gradient `dout`, given the
    forward output `out` (= y):
    `P = softmax(q k^T * scale + mask)`, `D_i = sum_d dout[i, d] * out[i, d]`,
    `dS = P * (dout v^T - D)`, `dq = scale * dS k`, `dk = scale * dS^T q`, `dv = P^T dout`,
    with `dk` and `dv` summed over the query heads of each key/value head (grouped-query). It
    never materialises the `[B, Hq, S, S]` scores: the kernels recompute them per row (Dao
    2023, FlashAttention-2, Algorithm 2). `q` and `dq` have `q`'s type, `k` and `dk` `k`'s, `v`
    and `dv` `v`'s, `out` and `dout` the forward result's (`[B, Hq, S, Dv]`); `scale` and
    `causal` are the forward's. Emitted by the autodiff for graph.attention; not a
    differentiable op itself.

    With the forward's `sinks` (`[Hq]`), `P` also normalises over `e^(sinks[h])`, the
    formulas above are unchanged, and a fourth result `dsinks` (`sinks`' type) is
    `dsinks[h] = -sum_(b, i) P_sink(b, h, i) D_i` with `P_sink = e^(sinks[h] - lse_i)`;
    `sinks` and `dsinks` come together.

    `window` is the forward's: the masked pairs (`j > i` or `i - j >= window`) have `P = 0`
    and contribute to no gradient.

    `softcap` is the forward's: `P` is the softmax of the capped scores `softcap * tanh(t_ij)`,
    `t_ij = q_i . k_j * scale / softcap`, and `dS` above is multiplied by the cap's derivative
    `1 - tanh^2(t_ij)` before `dq` and `dk` are formed.

    ```mlir
    %dq, %dk, %dv = graph.attention_vjp %q, %k, %v, %y, %dy {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key, Graph_FloatTensor:$value,
                       Graph_FloatTensor:$out, Graph_FloatTensor:$dout,
                       Optional<Graph_FloatTensor>:$sinks, F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window, OptionalAttr<F64Attr>:$softcap);
  let results = (outs Graph_FloatTensor:$dquery, Graph_FloatTensor:$dkey,
                      Graph_FloatTensor:$dvalue, Optional<Graph_FloatTensor>:$dsinks);
  let assemblyFormat = "$query `,` $key `,` $value `,` $out `,` $dout (`sinks` $sinks^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LinearCrossEntropyOp : Graph_Op<"linear_cross_entropy", [Pure, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "cross-entropy of a linear head's logits, without holding the logits";
  let description = [{
    `graph.cross_entropy(hidden @ weight^T, labels)`: the loss of an LM head (fused linear
    cross-entropy, as Liger-Kernel and Apple's cut-cross-entropy, Wijmans et al. 2024).
    `hidden` is `[N, H]`, `weight` `[V, H]` (the head's or the tied embedding's layout),
    `labels` `[N]` of `i64` or `i32`; the result is a 0-D tensor of `hidden`'s element type.
    `reduction` and `ignore_index` are graph.cross_entropy's (a `mean` over the labels that are
    not `ignore_index`, NaN when all are). The optional `bias` (`[V]`, `hidden`'s element
    type; a biased head such as Phi's) is added to every row of logits: the loss of
    `hidden @ weight^T + bias`. The kernels compute the logits `chunk_rows` rows at a time
    (absent or 0: the kernel's default), so no `[N, V]` tensor exists; the result does not
    depend on the chunk size. `rp-fuse-linear-cross-entropy` forms it from
    `cross_entropy(reshape(matmul(h, transpose(W)) [+ bias]), labels)`.

    ```mlir
    %loss = graph.linear_cross_entropy mean %h, %w, %labels {ignore_index = -100 : i64} : (tensor<32x64xf32>, tensor<1000x64xf32>, tensor<32xi64>) -> tensor<f32>
    %biased = graph.linear_cross_entropy mean %h, %w, %labels bias %b {ignore_index = -100 : i64} : (tensor<32x64xf32>, tensor<1000x64xf32>, tensor<32xi64>, tensor<1000xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_LossReductionAttr:$reduction, Graph_FloatTensor:$hidden,
                       Graph_FloatTensor:$weight, Graph_IndexTensor:$labels,
                       Optional<Graph_FloatTensor>:$bias,
                       I64Attr:$ignore_index, OptionalAttr<I64Attr>:$chunk_rows);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $hidden `,` $weight `,` $labels (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Graph_LinearCrossEntropyVjpOp : Graph_Op<"linear_cross_entropy_vjp", [Pure]> {
  let summary = "graph.linear_cross_entropy's loss and gradients in one pass";
  let description = [{
    For `loss = graph.linear_cross_entropy(hidden, weight, labels)` and the loss's cotangent
    `seed` (0-D), the loss and `dhidden = G weight`, `dweight = G^T hidden` with
    `G = (softmax(hidden weight^T) - onehot(labels)) * keep * scale`, `keep` 0 on ignored
    labels, `scale = seed / (count + (count == 0))` for `mean` (count = kept labels) and
    `seed` for `sum` (graph.cross_entropy's VJP). With the optional `bias` [V] (the logits
    `hidden weight^T + bias`), a fourth result `dbias = sum over the rows of G` ([V], rows in
    order). The logits of each chunk of `chunk_rows` rows are computed once and used for the
    loss and the gradients (6 N H V FLOPs, the head's forward and backward). Emitted by the
    autodiff for graph.linear_cross_entropy; the canonicalizer replaces a forward op on the
    same operands by this op's `loss`.

    ```mlir
    %loss, %dh, %dw = graph.linear_cross_entropy_vjp mean %h, %w, %labels, %seed {ignore_index = -100 : i64} : (tensor<32x64xf32>, tensor<1000x64xf32>, tensor<32xi64>, tensor<f32>) -> (tensor<f32>, tensor<32x64xf32>, tensor<1000x64xf32>)
    ```
  }];
  let arguments = (ins Graph_LossReductionAttr:$reduction, Graph_FloatTensor:$hidden,
                       Graph_FloatTensor:$weight, Graph_IndexTensor:$labels,
                       Graph_FloatTensor:$seed, Optional<Graph_FloatTensor>:$bias,
                       I64Attr:$ignore_index, OptionalAttr<I64Attr>:$chunk_rows);
  let results = (outs Graph_FloatTensor:$loss, Graph_FloatTensor:$dhidden,
                      Graph_FloatTensor:$dweight, Optional<Graph_FloatTensor>:$dbias);
  let assemblyFormat = [{
    $reduction $hidden `,` $weight `,` $labels `,` $seed (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Routed experts (mixture of experts in grouped-GEMM form)
//===----------------------------------------------------------------------===//
//
// A routed-experts layer as `rp-fuse-routed-experts` writes it: graph.moe_sort orders the
// T * k (token, choice) pairs by expert, graph.moe_dispatch copies each token's row to its k
// sorted rows, graph.grouped_matmul multiplies each expert's row segment by that expert's
// weights, graph.moe_combine sums each token's k rows weighted by the routing probabilities.
// Per-expert row counts stay on the device (the offsets tensor); the row count is the static
// worst case T * k. Every kernel writes each output element from one thread in a fixed order
// (no atomics): results do not depend on the thread count.

def Graph_MoeSortOp : Graph_Op<"moe_sort", [Pure, InferTypeOpAdaptor]> {
  let summary = "orders the (token, choice) pairs of a top-k routing by expert";
  let description = [{
    `indices` is `[T, k]`: the expert (in `[0, num_experts)`) of each token's k choices. The
    T * k pairs are sorted by expert, stably (ties by token, then by choice): pair `(t, j)`
    goes to row `positions[t, j]` of the sorted order, and expert `e`'s rows are
    `[offsets[e], offsets[e + 1])` (`offsets[0] = 0`, `offsets[E] = T * k`). `positions` is
    `[T, k]` i64 (a permutation of `[0, T * k)`), `offsets` `[E + 1]` i64. A counting sort:
    the result is unique. Not differentiable (integer results). An expert index outside
    `[0, E)` is a run-time error.

    ```mlir
    %pos, %off = graph.moe_sort %idx {num_experts = 8 : i64} : (tensor<32x2xi64>) -> (tensor<32x2xi64>, tensor<9xi64>)
    ```
  }];
  let arguments = (ins TensorOf<[I64]>:$indices, I64Attr:$num_experts);
  let results = (outs TensorOf<[I64]>:$positions, TensorOf<[I64]>:$offsets);
  let assemblyFormat = "$indices attr-dict `:` functional-type(operands, results)";
}

def Graph_MoeDispatchOp : Graph_Op<"moe_dispatch", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "copies each token's row to its k expert-sorted rows";
  let description = [{
    `result[positions[t, j]] = input[t]` for every token `t` and choice `j`: `input` is
    `[T, H]`, `positions` `[T, k]` (graph.moe_sort's permutation), the result `[T * k, H]`.
    VJP: `d input[t] = sum_j d result[positions[t, j]]`, summed over `j` in order (a
    graph.moe_combine with unit weights). `positions` must be a permutation of `[0, T * k)`
    (checked at run time).

    ```mlir
    %rows = graph.moe_dispatch %x, %pos : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, TensorOf<[I64]>:$positions);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input `,` $positions attr-dict `:` functional-type(operands, results)";
}

def Graph_MoeCombineOp : Graph_Op<"moe_combine", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "sums each token's k expert rows weighted by the routing probabilities";
  let description = [{
    `result[t] = sum_j weights[t, j] * rows[positions[t, j]]`, summed over `j = 0 .. k-1` in
    that order: `rows` is `[T * k, N]` (expert-sorted), `weights` `[T, k]` with `rows`'
    element type, `positions` `[T, k]` (graph.moe_sort's permutation), the result `[T, N]`.
    VJP: `d rows[positions[t, j]] = weights[t, j] * d result[t]` (two graph.moe_dispatch),
    `d weights[t, j] = <d result[t], rows[positions[t, j]]>` (a gather, a product and a sum).

    ```mlir
    %y = graph.moe_combine %rows, %w, %pos : (tensor<64x64xf32>, tensor<32x2xf32>, tensor<32x2xi64>) -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$rows, Graph_FloatTensor:$weights,
                       TensorOf<[I64]>:$positions);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$rows `,` $weights `,` $positions attr-dict `:` functional-type(operands, results)";
}

def Graph_GroupedMatMulOp : Graph_Op<"grouped_matmul", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "each expert's row segment times that expert's weight matrix";
  let description = [{
    `result[r] = rows[r] @ weights[e]` for `offsets[e] <= r < offsets[e + 1]`: `rows` is
    `[R, K]`, `weights` `[E, K, N]` (`[E, N, K]` with `transpose_b`, read transposed),
    `offsets` `[E + 1]` i64 (graph.moe_sort's), the result `[R, N]`. The segment sizes are
    read on the device: nothing goes back to the host. `offsets` must be non-decreasing from
    0 to R (checked at run time). VJP: `d rows` is a graph.grouped_matmul of the cotangent
    with the weights transposed; `d weights[e] = rows_e^T d result_e` over expert e's segment
    (graph.grouped_matmul_wgrad).

    ```mlir
    %h = graph.grouped_matmul %rows, %w, %off : (tensor<64x64xf32>, tensor<8x64x128xf32>, tensor<9xi64>) -> tensor<64x128xf32>
    %d = graph.grouped_matmul %h, %w2, %off {transpose_b} : (tensor<64x128xf32>, tensor<8x64x128xf32>, tensor<9xi64>) -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$rows, Graph_FloatTensor:$weights,
                       TensorOf<[I64]>:$offsets, UnitAttr:$transpose_b);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$rows `,` $weights `,` $offsets attr-dict `:` functional-type(operands, results)";
}

def Graph_GroupedMatMulWgradOp : Graph_Op<"grouped_matmul_wgrad", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Graph_GradientOpInterface>]> {
  let summary = "per-expert sum of outer products: lhs_e^T rhs_e over each row segment";
  let description = [{
    `result[e] = sum_{offsets[e] <= r < offsets[e + 1]} lhs[r]^T rhs[r]` (an empty segment
    gives zeros): `lhs` is `[R, K]`, `rhs` `[R, N]`, `offsets` `[E + 1]` i64, the result
    `[E, K, N]`. The weight gradient of graph.grouped_matmul; each expert's sum runs over its
    rows in one fixed order (one GEMM per expert, no atomics). VJP: `d lhs` and `d rhs` are
    graph.grouped_matmul of the other operand with the cotangent.

    ```mlir
    %dw = graph.grouped_matmul_wgrad %rows, %g, %off : (tensor<64x64xf32>, tensor<64x128xf32>, tensor<9xi64>) -> tensor<8x64x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs, TensorOf<[I64]>:$offsets);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs `,` $offsets attr-dict `:` functional-type(operands, results)";
}

#endif // RP_GRAPH_OPS_TD
