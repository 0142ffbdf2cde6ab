//===- Passes.td - schedule passes -------------------------*- tablegen -*-===//
//
// The passes from a grouped graph module to a verified RoundPipe plan: the stage partition,
// the lowering to the `schedule` dialect, memory planning and its check, and the timeline
// expansion for inspection.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_SCHEDULE_PASSES_TD
#define RP_PASSES_SCHEDULE_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      call's intermediates (first-fit by liveness inside each function). A `graph.reshape`
      of an intermediate into an intermediate is an alias: its result takes the operand's
      offset and the two share one allocation over both lifetimes (a value is never written
      after its definition), so its kernel copies nothing; a reshape of an argument or into
      a returned value still copies.

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

#endif // RP_PASSES_SCHEDULE_PASSES_TD
