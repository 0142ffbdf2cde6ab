//===- SchedulePasses.td - lowering to the schedule dialect ---*- tablegen -*-===//

#ifndef RP_SCHEDULEPASSES_TD
#define RP_SCHEDULEPASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToSchedule : Pass<"rp-lower-to-schedule", "::mlir::ModuleOp"> {
  let summary = "Builds the RoundPipe iteration (schedule.plan) from the partitioned graph IR";
  let description = [{
    Reads the layer functions (`graph.layers`, rp-group-layers) and the stage partition
    (`graph.partition`, rp-partition-stages) and writes one `schedule.plan`:

    - per layer a backward function: `@<layer>_vjp` (rp-autodiff with cotangent arguments:
      the layer's inputs and one cotangent per float output -> the gradients of the layer's
      trainable params, then of its float boundary inputs) and, for the last layer, the fused
      tail function `@<layer>_train` (loss mode: -> loss, param gradients, input gradients);
    - host buffers: the model inputs, every boundary activation that crosses stages or that a
      backward stage recomputes from, the cotangents crossing backward stages, the loss;
    - the stages in dispatch order, F0.. (forward), B0 (fused tail), B1.. (backward), each
      with its job body: uploads (model inputs, hops, saved inputs, cotangents), one weight
      prefetch chunk behind them, the calls (forward; recomputation; backward in descending
      layer order), the gradient accumulation, the downloads, the gradient download;
    - one optimizer step per layer with trainable params, in the order its gradients arrive.

    Recomputation grain `stage` uploads a backward stage's boundary inputs and recomputes its
    layers' forward to rebuild the inputs of the upper layers; `layer` uploads every layer's
    input saved in the forward pass and recomputes nothing outside the backward functions.

    Before (after rp-partition-stages):
    ```mlir
    module attributes {graph.layers = [@prefix, @block_0, @tail], graph.partition = {forward = [array<i64: 0, 1>], backward = [array<i64: 1, 3>, array<i64: 0, 1>], ...}} {
      func.func @prefix(%ids: tensor<2x8xi64> {graph.name = "input_ids"}) -> tensor<2x8x32xf32>
      ...
    }
    ```
    After:
    ```mlir
    schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32 optimizer #schedule.adamw<...> {
      schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed]
      schedule.host_buffer @input_ids input "input_ids" : tensor<2x8xi64>
      schedule.host_buffer @"prefix#0" activation : tensor<2x8x32xf32>
      schedule.stage @F0 forward layers [0, 1) {
        schedule.await_weights
        schedule.micro_batch {
          %0 = schedule.upload @input_ids : tensor<2x8xi64>
          schedule.prefetch_next
          %1 = schedule.call @prefix(%0) : (tensor<2x8xi64>) -> tensor<2x8x32xf32>
          schedule.download %1 to @"prefix#0" : tensor<2x8x32xf32>
        }
      }
      ...
    }
    ```
    A boundary value used by more than one layer, a param read by two layers unless frozen,
    or a non-last layer output that no layer uses are errors.
  }];
  let dependentDialects = ["::mlir::rp::schedule::ScheduleDialect"];
  let options = [
    Option<"planName", "name", "std::string", /*default=*/"\"train\"", "Symbol of the plan">,
    Option<"update", "update", "::mlir::rp::schedule::UpdateMode",
           /*default=*/"::mlir::rp::schedule::UpdateMode::async",
           "Optimizer update mode: sync or async (staleness 1)">,
    Option<"recompute", "recompute", "::mlir::rp::schedule::RecomputeGrain",
           /*default=*/"::mlir::rp::schedule::RecomputeGrain::stage",
           "Recomputation grain: stage or layer">,
    Option<"dtype", "dtype", "::mlir::rp::ComputeDType",
           /*default=*/"::mlir::rp::ComputeDType::F32",
           "Compute dtype of weights and activations: f32 (or fp32), f16 (or fp16), bf16">,
    Option<"lr", "lr", "double", /*default=*/"3.0e-4", "AdamW learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1.0e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "AdamW decoupled weight decay">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0.0",
           "Clip gradients to this global L2 norm (0: off)">,
  ];
}

def PlanMemory : Pass<"rp-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Assigns static offsets in the device and host arenas of a schedule.plan";
  let description = [{
    Lays out, with every size rounded up to 256 bytes:

    - the host arena `[weights | master | moment1 | moment2 | grads | activations]`: params in
      layer order (a stage's weights and gradients are each one contiguous range), the
      compute dtype for floating-point weights, fp32 for the four optimizer-state regions
      (trainable params only), and one record of host buffers per micro-batch;
    - the device arena `[constants | slot 0 | slot 1 | activations 0 | activations 1 |
      workspace]`: the layer functions' constants; two weight slots sized by the largest
      stage's weights plus its fp32 gradient accumulators; per micro-batch parity, the job
      body's values (first-fit by liveness; a downloaded value lives to the end of the body
      so its memory is not reused while the download may run); the workspace, the largest
      call's intermediates (first-fit by liveness inside each function).

    It annotates `weight_offsets`/`state_offsets` on layers, `offset` on host buffers and
    uploads, `offsets` on calls, per-stage sizes (`weight_bytes`, `grad_bytes`,
    `activation_bytes`, `workspace_bytes`, `peak_bytes`), `schedule.workspace_bytes` on
    functions, `schedule.offsets` on function ops and `schedule.offset` on constants, and the
    plan's `device_arena` and `host_arena`.

    ```mlir
    schedule.plan @train ... attributes {device_arena = #schedule.device_arena<constants = 256, slot = 43520, activations = 12288, workspace = 65536>, host_arena = #schedule.host_arena<weights = 123904, state = 123904, activations = 30720>} {
      schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@"layers.0.q"] {state_offsets = array<i64: 256>, weight_offsets = array<i64: 256>}
      ...
    }
    ```
  }];
}

def CheckDeviceMemory : Pass<"rp-check-device-memory", "::mlir::ModuleOp"> {
  let summary = "Fails when a planned device arena exceeds the target GPU's memory";
  let description = [{
    After `rp-plan-memory`: every worker allocates the plan's `device_arena` (constants, two
    weight slots, two activation sets, the workspace), and each stage's job peaks at its
    `peak_bytes`. When the arena is larger than the target's memory (`memory-bytes`, else the
    `memory_bytes` that `rp-partition-stages` recorded in `graph.partition`), the pass fails
    with an error naming the arena, its parts, the stage with the largest peak (its kind,
    layers and peak) and the target's memory, and what to try: more GPUs, fewer tokens per
    micro-batch, layer-grain recomputation, or a larger `--gpu-memory`. Without a known target
    memory (neither given) it checks nothing. The module is not changed.

    ```
    error: rp-check-device-memory: the plan needs 20.9 GiB of device memory per worker ...
    ```
  }];
  let options = [
    Option<"memoryBytes", "memory-bytes", "int64_t", /*default=*/"0",
           "Target GPU memory in bytes (0: graph.partition's memory_bytes; absent: no check)">,
  ];
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

#endif // RP_SCHEDULEPASSES_TD
