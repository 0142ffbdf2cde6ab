//===- Dialect.td - the schedule dialect -------------------*- tablegen -*-===//
//
// The `schedule` dialect: one RoundPipe training iteration, stated so that a reader (and the
// verifier) can check it. Modelled on IREE's `stream` dialect: resources live in arenas with
// static offsets, transfers and kernel calls are explicit, and every cross-job dependence is
// named.
//
//===----------------------------------------------------------------------===//

#ifndef RP_SCHEDULE_DIALECT_TD
#define RP_SCHEDULE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Schedule_Dialect : Dialect {
  let name = "schedule";
  let cppNamespace = "::mlir::rp::schedule";
  let summary = "A RoundPipe training iteration: stages, jobs, transfers, events, optimizer";
  let description = [{
    The `schedule` dialect is rpc's second IR. `rp-lower-to-schedule` builds it from the
    partitioned `graph` IR; `rp-plan-memory` assigns static offsets; the plan exporter writes
    it into the `.rpplan` file that `rp-run` executes.

    A `schedule.plan` holds one iteration (RoundPipe, arXiv 2604.27085, §3-4):

    - `schedule.layer`: a layer (prefix, a transformer block, the tail), its forward and
      backward functions (`func.func` in the enclosing module, in the `graph` dialect) and
      its params;
    - `schedule.host_buffer`: per-micro-batch host buffers (model inputs, boundary
      activations, saved recomputation inputs, cotangents, losses);
    - `schedule.stage`: a stage in dispatch order (forward stages ascending, the fused tail,
      backward stages descending). A stage is run once per iteration as one *job* on one
      device for all M micro-batches; its body states the job: wait for the stage's weights,
      then per micro-batch the activation uploads, the kernel calls, gradient accumulation,
      the downloads, and the next job's weight prefetch chunk; then the gradient download.
    - `schedule.optimizer_step`: the host AdamW step of one layer, with the host events it
      waits for.

    Job k of an iteration runs on device `(ptr + k) mod N`; `ptr` is carried across
    iterations (`rp-materialize-timeline` expands the order for a given N).

    ```mlir
    schedule.plan @train micro_batches 3 gpus 2 update sync recompute stage dtype f32
        optimizer #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
      schedule.layer @prefix forward @prefix backward @prefix_vjp params [@embed]
      ...
      schedule.stage @F0 forward layers [0, 2) {
        schedule.await_weights
        schedule.micro_batch {
          %ids = schedule.upload @input_ids : tensor<2x8xi64>
          schedule.prefetch_next
          %h = schedule.call @prefix(%ids) : (tensor<2x8xi64>) -> tensor<2x8x32xf32>
          %h1 = schedule.call @block_0(%h) : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
          schedule.download %h1 to @"block_0#0" : tensor<2x8x32xf32>
        }
      }
      ...
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
}

#endif // RP_SCHEDULE_DIALECT_TD
