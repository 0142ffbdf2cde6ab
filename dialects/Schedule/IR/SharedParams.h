//===- SharedParams.h - owners and readers of a plan's params ---*- C++ -*-===//
//
// A param read by several layers of a plan (the tied input embedding and LM head of GPT-2,
// Llama 3.2, Qwen3 up to 4B, Gemma; any weight an exporter shares) is one parameter. Its
// *owner* is the lowest layer reading it: the owner's entry holds the fp32 master and the
// AdamW moments. Every other reading layer holds a *copy*: its own compute-dtype weights,
// uploaded with its own stage (as the RoundPipe library uploads a tied weight with each stage
// that uses it), and its own fp32 gradient slot. The owner's optimizer step waits for every
// reader's gradient, sums them in layer order, updates the master once and writes every copy.
//
// This file derives ownership and the optimizer step a layer needs from a plan's layers and
// stages; the lowering builds the steps with it and the plan verifier checks them with it.
//
//===----------------------------------------------------------------------===//
#ifndef RP_DIALECTS_SCHEDULE_IR_SHAREDPARAMS_H
#define RP_DIALECTS_SCHEDULE_IR_SHAREDPARAMS_H

#include "dialects/Schedule/IR/ScheduleOps.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::rp::schedule {

/// The readers of each trainable param of a plan.
class ParamReaders {
public:
  /// Reads the `schedule.layer`s of `plan` (params are looked up in the enclosing module;
  /// names that are no trainable `graph.param` are ignored: the layer verifier reports them).
  explicit ParamReaders(PlanOp plan);

  /// The layers (indices, ascending, each once) reading trainable param `param`; empty when
  /// `param` is frozen or unknown.
  ArrayRef<unsigned> readers(StringRef param) const;
  /// The owner of trainable param `param`: its lowest reader.
  unsigned owner(StringRef param) const { return readers(param).front(); }
  /// Whether layer `layer`'s entry of trainable `param` is a copy (not the owner's).
  bool isCopy(StringRef param, unsigned layer) const { return owner(param) != layer; }
  /// Whether trainable `param` is read by more than one layer.
  bool isShared(StringRef param) const { return readers(param).size() > 1; }
  /// Whether layer `layer` owns at least one trainable param (and so has an optimizer step).
  bool ownsTrainable(unsigned layer) const;
  /// The trainable params owned by `layer`, in the layer's param order.
  ArrayRef<StringRef> owned(unsigned layer) const { return owned_[layer]; }

private:
  llvm::StringMap<SmallVector<unsigned, 2>> readers_;
  SmallVector<SmallVector<StringRef>> owned_;
};

/// The events the optimizer step of a layer waits for (see `schedule.optimizer_step`).
struct OptimizerStepEvents {
  StageOp grads;                       ///< The first backward-kind stage holding the layer.
  SmallVector<StageOp> sharedGrads;    ///< Other stages holding gradients of its shared params.
  SmallVector<StageOp> uploads;        ///< Every stage uploading its params or their copies.
};

/// The optimizer step layer `layer` (an owner of a trainable param) needs in `plan`, whose
/// stages are in dispatch order. `grads` is null when no backward-kind stage holds the layer
/// (the plan verifier reports that as a partition error).
OptimizerStepEvents expectedOptimizerStep(PlanOp plan, const ParamReaders &readers,
                                          unsigned layer);

/// `stages` as the symbol references an optimizer step lists (`shared_grads`, `uploads`).
ArrayAttr stageRefs(MLIRContext *context, ArrayRef<StageOp> stages);

} // namespace mlir::rp::schedule

#endif // RP_DIALECTS_SCHEDULE_IR_SHAREDPARAMS_H
