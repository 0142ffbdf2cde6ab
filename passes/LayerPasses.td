//===- LayerPasses.td - layer grouping ---------------------*- tablegen -*-===//

#ifndef RP_LAYERPASSES_TD
#define RP_LAYERPASSES_TD

include "mlir/Pass/PassBase.td"

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

def PartitionStages : Pass<"rp-partition-stages", "::mlir::ModuleOp"> {
  let summary = "Partitions the layers into RoundPipe forward and backward stages";
  let description = [{
    Runs the stage partitioner (runtime/partition: `roundpipe`, the paper's candidate
    enumeration and greedy packing minimising max(S, N) * T, or `exact`, a dynamic program
    whose stage time includes PCIe transfers; `auto` keeps the plan with the lower estimated
    step time) on the layers of a module grouped by `rp-group-layers`, with the costs of a
    measured layer `profile` or the FLOP estimate of the layer functions, and records the plan
    as `graph.partition`. Backward stages start with the fused tail and descend.

    A backward stage's memory counts the residuals its layers hold (`saved_bytes` of the
    profile, or rp-split-gradient's residuals of each layer function in `dtype`; two
    micro-batches' worth, all layers' or with `recompute=layer` the largest one's). The
    target's memory is recorded as `memory_bytes` (rp-check-device-memory reads it).

    Before: `module attributes {graph.layers = [@prefix, @block_0, @block_1, @tail]}`
    After (`gpus=2`):
    ```mlir
    module attributes {graph.layers = [...], graph.partition = {algorithm = "roundpipe",
        backward = [array<i64: 3, 4>, array<i64: 2, 3>, array<i64: 0, 2>],
        forward = [array<i64: 0, 3>], gpus = 2 : i64, memory_bytes = ... : i64,
        micro_batches = 3 : i64, objective_ms = ..., stage_time_ms = ...}}
    ```
  }];
  let options = [
    Option<"gpus", "gpus", "int", /*default=*/"8", "GPU pool size N">,
    Option<"gpuMemory", "gpu-memory", "std::string", /*default=*/"\"\"",
           "Memory of one GPU (e.g. 24GiB; default: the target's)">,
    Option<"microBatches", "micro-batches", "int", /*default=*/"0",
           "Micro-batches per job M (0: N + 1)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "Measured layer profile (JSON); default: the FLOP estimate">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "Target GPU description (JSON); default: an RTX 4090">,
    Option<"partitioner", "partitioner", "::mlir::rp::Partitioner",
           /*default=*/"::mlir::rp::Partitioner::Auto", "roundpipe, exact, or auto">,
    Option<"dtype", "dtype", "::mlir::rp::ComputeDType",
           /*default=*/"::mlir::rp::ComputeDType::F32",
           "Compute dtype of the activations (the size of the layers' saved residuals)">,
    Option<"recompute", "recompute", "::mlir::rp::schedule::RecomputeGrain",
           /*default=*/"::mlir::rp::schedule::RecomputeGrain::stage",
           "Recomputation grain of the lowering: stage (a backward stage holds all its layers' "
           "residuals) or layer (one layer's)">,
  ];
}

def MaterializeTimeline : Pass<"rp-materialize-timeline", "::mlir::ModuleOp"> {
  let summary = "Expands a plan's jobs into the per-device order for N devices";
  let description = [{
    Appends to the module a `schedule.timeline` of its one `schedule.plan` (an error when
    there is none or more than one) for `gpus` devices and `iterations` iterations, replacing
    an existing timeline of the same plan. RoundPipe's round-robin dispatch (arXiv 2604.27085
    §3; the library's `scheduler.py`): with S stages, iteration i's stage k is job
    `j = i * S + k` and runs on device `(ptr + j) mod N`, so the device counter carries across
    iterations and no device waits for a flush. Each device alternates its two weight slots
    (0, 1, 0, ...): the running job's and the one its prefetch fills. The timeline is for
    inspection and tests; the runtime dispatches the same way.

    Before (`gpus=2`, a plan with stages `@F0 @F1 @B0 @B1 @B2` in dispatch order):
    ```mlir
    schedule.plan @train micro_batches 3 gpus 2 ... {
      ...
      schedule.stage @F0 forward layers [0, 2) { ... }
      ...
    }
    ```
    After (`gpus=2`):
    ```mlir
    schedule.timeline @train gpus 2 iterations 1 ptr 0 {
      schedule.device 0 {
        schedule.run @F0 iteration 0 job 0 slot 0
        schedule.run @B0 iteration 0 job 2 slot 1
        schedule.run @B2 iteration 0 job 4 slot 0
      }
      schedule.device 1 {
        schedule.run @F1 iteration 0 job 1 slot 0
        schedule.run @B1 iteration 0 job 3 slot 1
      }
    }
    ```
  }];
  let options = [
    Option<"gpus", "gpus", "int", /*default=*/"1", "Number of devices N (at least 1)">,
    Option<"iterations", "iterations", "int", /*default=*/"1",
           "Number of iterations to expand (at least 1)">,
    Option<"ptr", "ptr", "int64_t", /*default=*/"0",
           "The dispatch counter at the first job (job j runs on device (ptr + j) mod N)">,
  ];
  let dependentDialects = ["::mlir::rp::schedule::ScheduleDialect"];
}

#endif // RP_LAYERPASSES_TD
