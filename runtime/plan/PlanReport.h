//===- PlanReport.h - FLOPs, transfers and device memory of a plan -*- C++ -*-===//
//
// What one training step of a compiled plan costs, computed from the plan alone (no weights,
// no device): the instrument for making plans GPU-efficient. `rp-run MODEL.rpplan --check
// --report` and `rpc-compile MODEL.onnx ... --emit=report` print it.
//
// Executed FLOPs. Every Call of a stage's micro-batch body runs one function; its FLOPs are
// the sum of kernelFlops (kernels/FlopRules.h: matmul 2MNK, attention 2 B Hq P (D + Dv) with
// only the unmasked pairs P of a causal attention) over the function's instructions. A call
// is `forward` when it runs a layer's forward (its forward function, or its saving forward:
// the forward that also returns the residuals) for the first time in the step (in dispatch
// order), `recompute` when it runs it again (a backward stage recomputing from its saved
// input), `backward` when it runs a layer's backward function (in plans without saving
// forwards, the backward functions recompute their layer's forward inside). A stage runs its
// body once per micro-batch: per step, M times.
//
// Paper FLOPs: what RoundPipe's schedule of the same partition executes, per stage and micro-
// batch (forward once per pass, backward once; runtime/plan/PaperFlops.h defines it), and the
// executed / paper ratio per stage and per step.
//
// Model FLOPs (the denominator of model FLOPs utilisation), per step:
//   6 N T + 3 A,   T = M x tokens per micro-batch,
// N the elements of every param entry except the embeddings (an entry whose only readers in
// its layer's forward function are gathers of rows, i.e. the input token and position
// embeddings; a tied LM head is counted, as its matmul is), trainable and frozen, an entry
// read as the weights of a grouped_matmul (routed experts [E, ...]) counted for its active
// share R / (E x tokens per micro-batch), i.e. k of its E experts per token; A the
// non-causal attention FLOPs of one forward pass, times M: the attention products of every
// layer's forward function, i.e. each fused attention instruction, 2 B Hq S Sk (D + Dv), and
// each matmul of two batched operands (rank >= 3 each: QK^T and PV of an unfused attention;
// projections multiply by a 2-D weight), 2 MNK. For a decoder of L layers, H heads of size
// Q, context T_ctx and D = Dv = Q, 3 A / T = 12 L H Q T_ctx: PaLM's model FLOPs per token
// 6N + 12 L H Q T (Chowdhery et al. 2022, "PaLM", Appendix B), which extends Kaplan et al.
// 2020 ("Scaling Laws for Neural Language Models", §2.1: 6N + 6 n_layer n_ctx d_attn for a
// training token, counting QK^T only) with the PV product. The tokens per micro-batch are the
// index elements of the embedding gather; a plan without one has no model FLOPs (0).
//
// Transfers per step: each stage uploads its weights once (Stage.weight_bytes) and, backward
// kinds, downloads its fp32 gradient accumulators once (Stage.grad_bytes); per micro-batch it
// uploads and downloads the host buffers its body names (inputs, boundary activations,
// cotangents, the loss, the loss seed), times M.
//
// Device memory: the device arena (plan.proto DeviceArena) and the largest values the called
// functions write into the workspace or into the caller's activation set (results of space
// WORKSPACE or RESULT), each with the instruction that first writes it (a later value of the
// same size at the same place, e.g. a reshape's view, is the same buffer).
//
// The plan must be validated (runtime/plan/PlanValidator.h): indices are not checked here.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PLAN_PLANREPORT_H
#define RP_RUNTIME_PLAN_PLANREPORT_H

#include "runtime/plan/plan.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rp::runtime {

/// FLOPs of one micro-batch of a stage, by the kind of call.
struct CallFlops {
  double forward = 0;   ///< First forward call of a layer in the step.
  double recompute = 0; ///< A layer's forward function called again.
  double backward = 0;  ///< Backward functions (the fused tail's forward + backward).
  double total() const { return forward + recompute + backward; }
};

/// One stage of the report, in dispatch order.
struct StageReport {
  std::string name;
  std::string kind;     ///< "forward", "fused_tail", "backward".
  int begin = 0, end = 0; ///< Layers [begin, end).
  int calls = 0;        ///< Function calls per micro-batch.
  CallFlops flops;      ///< Per micro-batch.
  int64_t weightUpload = 0;       ///< Bytes, once per step.
  int64_t gradDownload = 0;       ///< Bytes, once per step (fp32 gradient accumulators).
  int64_t activationUpload = 0;   ///< Bytes per micro-batch (host buffers uploaded).
  int64_t activationDownload = 0; ///< Bytes per micro-batch (host buffers downloaded).
  int64_t peakBytes = 0;          ///< The planned device peak (Stage.peak_bytes).
  /// RoundPipe's schedule of this stage per micro-batch (runtime/plan/PaperFlops.h).
  double paperFlops = 0;
  /// flops.total() / paperFlops (1 when both are 0).
  double executedOverPaper() const {
    return paperFlops > 0 ? flops.total() / paperFlops : (flops.total() > 0 ? 0 : 1);
  }
};

/// The FLOPs of one plan function's instructions (instructionFlops, runtime/plan/Instruction.h).
struct FunctionFlops {
  std::string name;                 ///< The function's name.
  std::vector<double> instructions; ///< Per instruction of its body, in order.
  double total() const;             ///< One call: the sum over its instructions.
};

/// One value a function instruction writes on the device.
struct BufferReport {
  int64_t bytes = 0;
  std::string type;     ///< "f32[4,64,128]".
  std::string space;    ///< "workspace" or "activation" (a function result).
  std::string function; ///< The function's name.
  std::string kernel;   ///< The instruction's kernel id.
  std::string location; ///< The graph op's location.
};

/// The report of one plan; every count is exact (FLOPs up to 2^53).
struct PlanReport {
  int64_t microBatches = 0; ///< M.
  int64_t gpus = 0;         ///< The pool size the plan was partitioned for.
  int64_t tokensPerMicroBatch = 0; ///< 0: the plan has no embedding gather.
  double params = 0;            ///< Elements of every param (a shared param once).
  double nonEmbeddingParams = 0; ///< N.
  double modelAttentionFlops = 0; ///< A: one non-causal forward pass of every attention, per step.
  std::vector<StageReport> stages;
  std::vector<FunctionFlops> functions;     ///< Every plan function, in plan order.
  std::vector<BufferReport> largestBuffers; ///< At most 5, largest first.
  /// The host weights region by how the params are held ("bf16", "f32", ... for the compute
  /// dtype or an integer param's own; "nf4", "int8", ... for quantized base weights, Param.quant;
  /// "padding" for the alignment between params), in bytes.
  std::map<std::string, int64_t> hostWeightsByDType;
  /// The weights uploaded per step by the same keys (each stage uploads its layers' params).
  std::map<std::string, int64_t> weightUploadByDType;

  double executedFlops() const; ///< Per step: sum over stages of M x per micro-batch.
  double modelFlops() const;    ///< Per step: 6 N T + 3 A (0 without tokens).
  double paperFlops() const;    ///< Per step: sum over stages of M x StageReport::paperFlops.
  int64_t uploadBytes() const;   ///< Per step.
  int64_t downloadBytes() const; ///< Per step.
};

/// The report of a validated plan; `largest` buffers are kept (ties: plan order).
PlanReport computePlanReport(const rp::plan::Plan &plan, int largest = 5);

/// The report as text (the stage table, the step totals, the host and device arenas of `plan`
/// and the largest buffers). Stable: exact integers, then a rounded human form in parentheses.
std::string formatPlanReport(const PlanReport &report, const rp::plan::Plan &plan);

/// The report as one JSON object (indented, newline-terminated): "micro_batches", "gpus",
/// "stages" (each: name, kind, layers [begin, end), calls_per_micro_batch,
/// flops_per_micro_batch {forward, recompute, backward}, paper_flops_per_micro_batch,
/// executed_over_paper, activation upload/download bytes per
/// micro-batch, weight_upload_bytes, grad_download_bytes, peak_bytes), "step" (executed_flops,
/// paper_flops, executed_over_paper (null when 0), model_flops, executed_over_model (null without tokens), tokens, params,
/// non_embedding_params, model_attention_flops, upload_bytes, download_bytes),
/// "host_arena" (bytes, weights, state (one of three), grads, activations (one of two)),
/// "device_arena" (bytes, constants, slot, activations, workspace), "largest_buffers" (bytes,
/// type, space, function, kernel, location), "functions" (every plan function in plan order:
/// name, flops of one call, instruction_flops: formatInstructionFlops of its instructions).
/// FLOPs and counts are JSON integers.
std::string formatPlanReportJson(const PlanReport &report, const rp::plan::Plan &plan);

/// The FLOPs of a function's instructions as text, e.g. "2:4096 5:18432": each instruction
/// with non-zero FLOPs as "<index>:<FLOPs>" (the index in the function's body, the FLOPs as a
/// whole number, "%.0f"), in body order, separated by single spaces; "" when none has any. The plan
/// report's JSON and the simulator's trace (runtime/sim/SimBackend.h) both write a function's
/// FLOPs with this, so that the two can be compared instruction by instruction.
std::string formatInstructionFlops(const std::vector<double> &flops);

} // namespace rp::runtime

#endif // RP_RUNTIME_PLAN_PLANREPORT_H
