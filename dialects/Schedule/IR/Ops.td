//===- Ops.td - schedule dialect ops -----------------------*- tablegen -*-===//
//
// One RoundPipe iteration (arXiv 2604.27085 §3-4; the reference library's scheduler.py and
// transfer.py). docs/DECISIONS.md ("The schedule dialect") lists the invariants the verifier checks.
//
//===----------------------------------------------------------------------===//

#ifndef RP_SCHEDULE_OPS_TD
#define RP_SCHEDULE_OPS_TD

include "dialects/Schedule/IR/Attrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Schedule_Op<string mnemonic, list<Trait> traits = []>
    : Op<Schedule_Dialect, mnemonic, traits>;

def Schedule_Tensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I1]>;

//===----------------------------------------------------------------------===//
// The plan and its declarations
//===----------------------------------------------------------------------===//

def Schedule_PlanOp : Schedule_Op<"plan", [Symbol, SymbolTable, SingleBlock, NoTerminator,
    IsolatedFromAbove, HasParent<"::mlir::ModuleOp">]> {
  let summary = "one RoundPipe training iteration";
  let description = [{
    The plan of one iteration: `micro_batches` (M) micro-batches per job, the pool size
    `gpus` (N) the partition was made for (the runtime may run another N: results do not
    depend on it), the update mode (`sync`: iteration k uses the weights of step k; `async`:
    staleness 1, iteration k computes with W(k-2) while step k-1 runs on the host), the
    recomputation grain, the dispatch policy (`round_robin`: job k of the iteration runs on
    device `(ptr + k) mod N`, `ptr` carried across iterations), the compute dtype of weights
    and activations, and the AdamW hyper-parameters (fp32 master weights).

    The body holds, in this order: `schedule.layer`s (in model order), `schedule.host_buffer`s,
    `schedule.stage`s (in dispatch order), `schedule.optimizer_step`s. `rp-plan-memory` adds
    `device_arena` and `host_arena`.

    ```mlir
    schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
        optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
      schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed]
      schedule.host_buffer @input_ids input "input_ids" : tensor<2x8xi64>
      schedule.stage @F0 forward layers [0, 1) { ... }
      ...
      schedule.optimizer_step @prefix grads @B1 uploads [@F0, @B1]
    }
    ```

    The verifier checks RoundPipe's invariants: every layer is in exactly one forward stage
    (or the fused tail) and exactly one backward stage (or the fused tail); forward stages
    ascend from layer 0, the fused tail holds the last layers, backward stages descend to
    layer 0; every upload of a host buffer written by a stage names that stage, which comes
    earlier in dispatch order; every layer with trainable params has one optimizer step that
    waits for all the iteration's stages uploading it; once memory is planned, every stage's
    weights and gradient accumulators fit one of the two weight slots.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$micro_batches,
                       ConfinedAttr<I64Attr, [IntPositive]>:$gpus,
                       Schedule_UpdateModeAttr:$update,
                       Schedule_RecomputeGrainAttr:$recompute,
                       DefaultValuedStrAttr<StrAttr, "round_robin">:$dispatch,
                       TypeAttr:$dtype,
                       Schedule_AdamWAttr:$optimizer,
                       OptionalAttr<Schedule_DeviceArenaAttr>:$device_arena,
                       OptionalAttr<Schedule_HostArenaAttr>:$host_arena);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `micro_batches` $micro_batches `gpus` $gpus `update` $update
    `recompute` $recompute `dtype` $dtype `optimizer` qualified($optimizer)
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The declarations of the body, in order.
    auto getLayers() { return getBody().front().getOps<LayerOp>(); }
    auto getHostBuffers() { return getBody().front().getOps<HostBufferOp>(); }
    auto getStages() { return getBody().front().getOps<StageOp>(); }
    auto getOptimizerSteps() { return getBody().front().getOps<OptimizerStepOp>(); }
  }];
}

def Schedule_LayerOp : Schedule_Op<"layer", [Symbol, HasParent<"PlanOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a layer: its forward and backward functions and its params";
  let description = [{
    A layer (the prefix, one transformer block, the tail) in model order. `forward` and
    `backward` name `func.func`s of the enclosing module (graph dialect): `forward` maps the
    layer's inputs to its outputs; `backward` recomputes the layer from its inputs and takes
    one cotangent per output (results: the outputs, the gradients of the trainable params in
    `params` order, the gradients of the float inputs), except for the last layer, whose
    `backward` is the fused tail function (results: the loss, the param gradients, the input
    gradients). `params` names the `graph.param`s the layer reads, in host-arena order.

    With `saving` (what rp-lower-to-schedule builds: rp-split-gradient's pair), the layer's
    forward is run once per backward: `saving` maps the layer's inputs to its outputs and then
    the *residuals* its backward reads, and `backward` does not recompute the forward: it takes
    the layer's inputs, the residuals (one argument each, in the order of the function's
    `graph.residuals` attribute, which names the `saving` result each one is), then the
    cotangents (or, for the last layer, the loss seed). Backward-kind stages call `saving` and
    `backward`; forward stages call `forward`.

    A param read by several layers (tied input embedding and LM head, or any weight an
    exporter shares) is listed by each of them. If it is trainable it is one parameter: its
    *owner* is the lowest layer reading it, which holds its fp32 master and AdamW moments; every
    other reader has a *copy*: its own compute-dtype weights (uploaded with that layer's stage)
    and its own fp32 gradient slot. The owner's optimizer step sums the gradient slots (owner
    first, then the copies in layer order), updates the master once and writes every copy.

    `rp-plan-memory` adds `weight_offsets` (each param's byte offset in the host arena's
    weights region, compute dtype), `state_offsets` (byte offset in each fp32 state region, the
    owner's for a copy; -1 for a frozen param) and `grad_offsets` (byte offset of the entry's
    own gradient slot in the fp32 grads region; -1 for a frozen param).

    ```mlir
    schedule.layer @block_0 forward @block_0 backward @block_0_vjp params [@"layers.0.q", @"layers.0.k"]
    schedule.layer @block_1 forward @block_1 saving @block_1_fwd backward @block_1_bwd params [@"layers.1.q"]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$forward,
                       FlatSymbolRefAttr:$backward, SymbolRefArrayAttr:$params,
                       OptionalAttr<FlatSymbolRefAttr>:$saving,
                       OptionalAttr<DenseI64ArrayAttr>:$weight_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$state_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$grad_offsets);
  let assemblyFormat = [{
    $sym_name `forward` $forward (`saving` $saving^)? `backward` $backward `params` $params
    attr-dict
  }];
  let hasVerifier = 1;
}

def Schedule_HostBufferOp : Schedule_Op<"host_buffer", [Symbol, HasParent<"PlanOp">]> {
  let summary = "a per-micro-batch buffer in the host arena";
  let description = [{
    A host buffer holds one tensor per micro-batch: a model input (`input`, filled by the data
    loader from the model input called `name`), a boundary activation written by a forward
    stage and read by a later stage (`activation`: the hop between stages, and the saved
    input a backward stage recomputes from), the cotangent of a boundary activation written by
    one backward stage for the next (`cotangent`), the loss of each micro-batch (`loss`), or
    the seed of the fused tail's backward (`loss_seed`, a `tensor<f32>` the trainer fills per
    micro-batch: its share of the step's trained tokens times the loss scale).
    Boundary buffers are named after the value they hold, `"<layer>#<result>"`.

    `rp-plan-memory` adds `offset`: the byte offset inside one micro-batch's record of the
    host activation region (micro-batch m's copy is at `activations + m * record + offset`).

    ```mlir
    schedule.host_buffer @input_ids input "input_ids" : tensor<2x8xi64>
    schedule.host_buffer @"block_0#0" activation : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Schedule_BufferKindAttr:$kind,
                       OptionalAttr<StrAttr>:$name, TypeAttrOf<Schedule_Tensor>:$type,
                       OptionalAttr<I64Attr>:$offset);
  let assemblyFormat = "$sym_name $kind ($name^)? `:` $type attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Stages (jobs)
//===----------------------------------------------------------------------===//

def Schedule_StageOp : Schedule_Op<"stage", [Symbol, HasParent<"PlanOp">, SingleBlock,
    NoTerminator]> {
  let summary = "a stage and its job: one run of the stage for all micro-batches";
  let description = [{
    A contiguous range `[begin, end)` of layers, in dispatch order: `forward` stages, then the
    `fused_tail` (forward of its layers, the loss, and their backward in one job, without
    recomputation), then `backward` stages (recomputation from saved inputs, then the
    backward of their layers in descending order).

    The body is the stage's job: `schedule.await_weights` (the weights were prefetched into
    this job's weight slot by the previous job on the device, or are uploaded now), one
    `schedule.micro_batch` (its body runs for m = 0 .. M-1 in order), and for stages with a
    backward, `schedule.download_grads` (the accumulated weight gradients go to the host once,
    at the end of the job).

    `rp-plan-memory` adds `weight_bytes` (compute-dtype weights of the stage's layers, one
    contiguous host range), `grad_bytes` (fp32 gradient accumulators of its trainable params,
    backward kinds only), `activation_bytes` (one micro-batch's activations on the device),
    `workspace_bytes` (the largest call's intermediates) and `peak_bytes` (what a device
    running this job holds at most: constants, its slot, the prefetch slot, two activation
    sets and the workspace).

    ```mlir
    schedule.stage @B0 fused_tail layers [2, 4) {
      schedule.await_weights
      schedule.micro_batch { ... }
      schedule.download_grads
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Schedule_StageKindAttr:$kind,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$begin,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$end,
                       OptionalAttr<I64Attr>:$weight_bytes,
                       OptionalAttr<I64Attr>:$grad_bytes,
                       OptionalAttr<I64Attr>:$activation_bytes,
                       OptionalAttr<I64Attr>:$workspace_bytes,
                       OptionalAttr<I64Attr>:$peak_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name $kind `layers` ` ` `[` $begin `,` $end `)` attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True for the kinds that compute gradients (fused_tail, backward).
    bool hasBackward() { return getKind() != StageKind::forward; }
    /// True when layer `index` (in the plan's layer order) is in `[begin, end)`.
    bool containsLayer(int64_t index) {
      return static_cast<int64_t>(getBegin()) <= index && index < static_cast<int64_t>(getEnd());
    }
  }];
}

def Schedule_AwaitWeightsOp : Schedule_Op<"await_weights", [HasParent<"StageOp">]> {
  let summary = "waits until the stage's weights are in its weight slot";
  let description = [{
    The compute stream waits for the upload of the stage's weights into this job's weight
    slot: issued as chunks behind the previous job's activation uploads on this device
    (`schedule.prefetch_next`), or, for the first job a device runs, uploaded here. It is the
    first op of a stage body.

    ```mlir
    schedule.await_weights
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Schedule_MicroBatchOp : Schedule_Op<"micro_batch", [HasParent<"StageOp">, SingleBlock,
    NoTerminator]> {
  let summary = "the body of a job, run once per micro-batch in order";
  let description = [{
    The region runs for micro-batches m = 0 .. M-1 in order on the job's device. Uploads and
    downloads refer to micro-batch m's copy of a host buffer; device values live in
    activation set `m mod 2` at the offsets `rp-plan-memory` assigned.

    ```mlir
    schedule.micro_batch {
      %x = schedule.upload @"prefix#0" after @F0 : tensor<2x8x32xf32>
      schedule.prefetch_next
      %y = schedule.call @block_0(%x) : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
      schedule.download %y to @"block_0#0" : tensor<2x8x32xf32>
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
}

def Schedule_UploadOp : Schedule_Op<"upload", [HasParent<"MicroBatchOp">]> {
  let summary = "host-to-device activation transfer (activation priority)";
  let description = [{
    Copies micro-batch m's copy of a host buffer to the device on the activation upload
    stream, which has priority over weight prefetch. A buffer written by a stage names it with
    `after`: the upload waits for the event that stage recorded after downloading micro-batch
    m (a cross-device event; the producer runs earlier in dispatch order). Model inputs
    (`input` buffers) have no producer.

    `rp-plan-memory` adds `offset`, the byte offset of the result in the activation set.

    ```mlir
    %ids = schedule.upload @input_ids : tensor<2x8xi64>
    %h = schedule.upload @"block_0#0" after @F0 : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$buffer, OptionalAttr<FlatSymbolRefAttr>:$after,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs Schedule_Tensor:$result);
  let assemblyFormat = "$buffer (`after` $after^)? attr-dict `:` type($result)";
  let hasCanonicalizer = 1;
  let hasVerifier = 1;
}

def Schedule_DownloadOp : Schedule_Op<"download", [HasParent<"MicroBatchOp">]> {
  let summary = "device-to-host activation, cotangent or loss transfer";
  let description = [{
    Copies a device value into micro-batch m's copy of a host buffer on the download stream
    and records the event that uploads of the buffer (naming this stage with `after`) wait
    for.

    ```mlir
    schedule.download %h1 to @"block_0#0" : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins Schedule_Tensor:$value, FlatSymbolRefAttr:$buffer);
  let assemblyFormat = "$value `to` $buffer attr-dict `:` type($value)";
  let hasCanonicalizer = 1;
}

def Schedule_CallOp : Schedule_Op<"call", [HasParent<"MicroBatchOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "runs a layer function's kernel sequence on the compute stream";
  let description = [{
    Runs the `func.func` named `callee` (graph dialect: the layer's forward or backward
    function), reading params from the job's weight slot. Operand and result types equal the
    callee's. `rp-plan-memory` adds `offsets`, the byte offsets of the results in the
    activation set.

    ```mlir
    %r:3 = schedule.call @block_0_vjp(%x, %dy) : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Schedule_Tensor>:$args,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets);
  let results = (outs Variadic<Schedule_Tensor>:$results);
  let assemblyFormat = "$callee `(` $args `)` attr-dict `:` functional-type($args, $results)";
  let hasVerifier = 1;
}

def Schedule_AccumulateOp : Schedule_Op<"accumulate", [HasParent<"MicroBatchOp">]> {
  let summary = "adds a weight gradient into its fp32 accumulator on the device";
  let description = [{
    Adds `value`, the gradient of `param` for micro-batch m, into the param's fp32 gradient
    accumulator in the job's weight slot (set to the value for m = 0). Micro-batches are added
    in order on one device, so the sum does not depend on the pool size. `param` must be a
    trainable param of a layer of the stage and the value's shape must be the param's. A param
    read by several layers of the stage has one accumulator per reading layer: `of` names the
    layer (required then; optional otherwise).

    ```mlir
    schedule.accumulate %g into @"layers.0.q" : tensor<32x32xf32>
    schedule.accumulate %e into @embed of @tail : tensor<256x32xf32>
    ```
  }];
  let arguments = (ins Schedule_Tensor:$value, FlatSymbolRefAttr:$param,
                       OptionalAttr<FlatSymbolRefAttr>:$layer);
  let assemblyFormat = "$value `into` $param (`of` $layer^)? attr-dict `:` type($value)";
}

def Schedule_PrefetchNextOp : Schedule_Op<"prefetch_next", [HasParent<"MicroBatchOp">]> {
  let summary = "issues chunk m of the next job's weights behind an activation upload";
  let description = [{
    Priority-aware transfer scheduling (paper §4.2; the library's `upload_layers`): the
    weights of the next job on this device are split into M byte-balanced chunks (one stage's
    weights are one contiguous host range, so the chunks are equal byte ranges); in
    micro-batch m, chunk m is issued on the weight upload stream after the activation uploads
    that precede this op, so critical-path activations go first. It must follow at least one
    `schedule.upload` and occurs once per micro-batch body.

    ```mlir
    schedule.prefetch_next
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Schedule_DownloadGradsOp : Schedule_Op<"download_grads", [HasParent<"StageOp">]> {
  let summary = "downloads the job's accumulated weight gradients to the host";
  let description = [{
    After the last micro-batch, copies the fp32 gradient accumulators of the stage's
    trainable params into the host gradient region (one contiguous range) and records each
    layer's gradient-ready host event, which its `schedule.optimizer_step` waits for. The last
    op of a `fused_tail` or `backward` stage body.

    ```mlir
    schedule.download_grads
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Schedule_OptimizerStepOp : Schedule_Op<"optimizer_step", [HasParent<"PlanOp">]> {
  let summary = "the host AdamW step of one layer, with the events it waits for";
  let description = [{
    Updates the fp32 master weights and moments of the layer's trainable params on the host
    and writes the compute-dtype weights back (paper §4.3). It waits for the gradient
    download of the stage `grads` (the stage whose backward covers the layer) and, before
    overwriting the compute-dtype weights, for every upload of the layer in this iteration:
    the stages in `uploads` (all stages covering the layer). After it, the layer's host
    gradient buffer may be written again. Steps appear in the order their gradients arrive.

    A layer that owns a shared trainable param (see `schedule.layer`) also waits for the
    gradient downloads of the other stages holding a reader of it (`shared_grads`, in dispatch
    order), and its `uploads` include every stage holding a reader (the copies it writes).
    Only layers that own a trainable param have a step.

    ```mlir
    schedule.optimizer_step @block_0 grads @B1 uploads [@F0, @B1]
    schedule.optimizer_step @prefix grads @B1 shared_grads [@B0] uploads [@F0, @B0, @B1]
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$layer, FlatSymbolRefAttr:$grads,
                       OptionalAttr<SymbolRefArrayAttr>:$shared_grads,
                       SymbolRefArrayAttr:$uploads);
  let assemblyFormat = [{
    $layer `grads` $grads (`shared_grads` $shared_grads^)? `uploads` $uploads attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// The materialized timeline (inspection)
//===----------------------------------------------------------------------===//

def Schedule_TimelineOp : Schedule_Op<"timeline", [HasParent<"::mlir::ModuleOp">,
    SingleBlock, NoTerminator]> {
  let summary = "the per-device order of a plan's jobs for N devices";
  let description = [{
    Written by `rp-materialize-timeline{gpus=N iterations=I}` for inspection: one
    `schedule.device` per device 0 .. N-1, each listing the jobs it runs in order. Job k of
    the run (counting across iterations) runs on device `(ptr + k) mod N`; each device
    alternates its two weight slots.

    ```mlir
    schedule.timeline @train gpus 2 iterations 1 ptr 0 {
      schedule.device 0 {
        schedule.run @F0 iteration 0 job 0 slot 0
        schedule.run @B1 iteration 0 job 2 slot 1
      }
      schedule.device 1 {
        schedule.run @B0 iteration 0 job 1 slot 0
      }
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$plan, ConfinedAttr<I64Attr, [IntPositive]>:$gpus,
                       ConfinedAttr<I64Attr, [IntPositive]>:$iterations,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$ptr);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $plan `gpus` $gpus `iterations` $iterations `ptr` $ptr attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Schedule_DeviceOp : Schedule_Op<"device", [HasParent<"TimelineOp">, SingleBlock,
    NoTerminator]> {
  let summary = "the jobs one device runs, in order";
  let description = [{
    ```mlir
    schedule.device 1 {
      schedule.run @B0 iteration 0 job 1 slot 0
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$index);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$index attr-dict-with-keyword $body";
}

def Schedule_RunOp : Schedule_Op<"run", [HasParent<"DeviceOp">]> {
  let summary = "one job on a device: a stage in an iteration, and its weight slot";
  let description = [{
    `job` counts the jobs of the whole run in dispatch order (iteration i's job k is
    `i * S + k` for S stages); `slot` is the weight slot (0 or 1) the job's weights occupy.

    ```mlir
    schedule.run @F0 iteration 0 job 0 slot 0
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$stage, ConfinedAttr<I64Attr, [IntNonNegative]>:$iteration,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$job,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$slot);
  let assemblyFormat = "$stage `iteration` $iteration `job` $job `slot` $slot attr-dict";
}

#endif // RP_SCHEDULE_OPS_TD
