//===- Attrs.td - schedule dialect attributes --------------*- tablegen -*-===//

#ifndef RP_SCHEDULE_ATTRS_TD
#define RP_SCHEDULE_ATTRS_TD

include "dialects/Schedule/IR/Dialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"

// Enums are specialised integer attributes printed as bare keywords.

def Schedule_UpdateModeAttr : I32EnumAttr<"UpdateMode",
    "when the optimizer's new weights are used", [
    I32EnumAttrCase<"sync", 0>, I32EnumAttrCase<"async", 1>]> {
  let cppNamespace = "::mlir::rp::schedule";
}
def Schedule_RecomputeGrainAttr : I32EnumAttr<"RecomputeGrain",
    "what a backward stage recomputes from: its input (stage) or every layer's input (layer)", [
    I32EnumAttrCase<"stage", 0>, I32EnumAttrCase<"layer", 1>]> {
  let cppNamespace = "::mlir::rp::schedule";
}
def Schedule_StageKindAttr : I32EnumAttr<"StageKind",
    "forward stage, the fused tail (forward + loss + backward), or backward stage", [
    I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"fused_tail", 1>,
    I32EnumAttrCase<"backward", 2>]> {
  let cppNamespace = "::mlir::rp::schedule";
}
def Schedule_BufferKindAttr : I32EnumAttr<"BufferKind",
    "what a per-micro-batch host buffer holds", [
    I32EnumAttrCase<"input", 0>, I32EnumAttrCase<"activation", 1>,
    I32EnumAttrCase<"cotangent", 2>, I32EnumAttrCase<"loss", 3>,
    I32EnumAttrCase<"loss_seed", 4>]> {
  let cppNamespace = "::mlir::rp::schedule";
}

class Schedule_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Schedule_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A double printed in its shortest round-tripping form.
class Schedule_DoubleParameter<string desc> : APFloatParameter<desc> {
  let parser = "::mlir::rp::schedule::parseDouble($_parser)";
  let printer = "::mlir::rp::schedule::printDouble($_printer, $_self)";
}

def Schedule_AdamWAttr : Schedule_Attr<"AdamW", "adamw"> {
  let summary = "AdamW hyper-parameters (fp32 master weights)";
  let description = [{
    Decoupled weight decay AdamW (Loshchilov & Hutter, 2019) on fp32 master weights: `lr` is
    the peak learning rate (the runtime's schedule scales it), `beta1`, `beta2`, `eps`,
    `weight_decay` as in `torch.optim.AdamW`; `grad_clip` > 0 clips the gradients by their
    global L2 norm first (0: no clipping).

    ```mlir
    #schedule.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 1.0>
    ```
  }];
  let parameters = (ins Schedule_DoubleParameter<"learning rate">:$lr,
                        Schedule_DoubleParameter<"first-moment decay">:$beta1,
                        Schedule_DoubleParameter<"second-moment decay">:$beta2,
                        Schedule_DoubleParameter<"denominator epsilon">:$eps,
                        Schedule_DoubleParameter<"decoupled weight decay">:$weight_decay,
                        Schedule_DoubleParameter<"global-norm clip (0: off)">:$grad_clip);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Schedule_DeviceArenaAttr : Schedule_Attr<"DeviceArena", "device_arena"> {
  let summary = "the static layout of one device's memory (bytes)";
  let description = [{
    Set by `rp-plan-memory`. One device arena is laid out as
    `[constants | weight slot 0 | weight slot 1 | activations 0 | activations 1 | workspace]`:
    `constants` holds the layer functions' constant tensors (uploaded once); a weight slot
    holds one stage's weights (compute dtype) followed by its fp32 gradient accumulators, and
    is sized by the largest stage (two slots: the running job and the prefetched next one);
    the activation region is double-buffered by micro-batch parity (upload of m + 1 overlaps
    compute of m); the workspace holds the intermediates of one layer-function call. All sizes
    are multiples of 256 bytes.

    ```mlir
    #schedule.device_arena<constants = 0, slot = 43520, activations = 12288, workspace = 65536>
    ```
  }];
  let parameters = (ins "int64_t":$constants, "int64_t":$slot, "int64_t":$activations,
                        "int64_t":$workspace);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Byte offsets of the regions, and the arena's total size.
    int64_t getSlotOffset(int64_t slot) const { return getConstants() + slot * getSlot(); }
    int64_t getActivationOffset(int64_t set) const {
      return getConstants() + 2 * getSlot() + set * getActivations();
    }
    int64_t getWorkspaceOffset() const {
      return getConstants() + 2 * getSlot() + 2 * getActivations();
    }
    int64_t getTotal() const { return getWorkspaceOffset() + getWorkspace(); }
  }];
}

def Schedule_HostArenaAttr : Schedule_Attr<"HostArena", "host_arena"> {
  let summary = "the static layout of the host arena (bytes)";
  let description = [{
    Set by `rp-plan-memory`. The host arena is laid out as
    `[weights | master | moment1 | moment2 | grads | activations]`: `weights` holds every param
    entry of every layer in the compute dtype, in layer order, so that each stage's weights are
    one contiguous range (a param read by several layers has one copy per reading layer); the
    three fp32 optimizer-state regions (`state` bytes each) hold each trainable param once, at
    its owner's entry (the lowest layer reading it); the fp32 `grads` region holds one gradient
    slot per trainable entry in layer order, so that each backward stage's gradients are one
    contiguous range (without shared params, `grads` equals `state`); `activations` holds the
    host buffers, each `micro_batches` times.

    ```mlir
    #schedule.host_arena<weights = 123904, state = 123904, grads = 123904, activations = 30720>
    ```
  }];
  let parameters = (ins "int64_t":$weights, "int64_t":$state, "int64_t":$grads,
                        "int64_t":$activations);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Byte offset of fp32 state region `i` (0 master, 1 moment1, 2 moment2).
    int64_t getStateOffset(int64_t i) const { return getWeights() + i * getState(); }
    int64_t getGradsOffset() const { return getWeights() + 3 * getState(); }
    int64_t getActivationOffset() const { return getGradsOffset() + getGrads(); }
    int64_t getTotal() const { return getActivationOffset() + getActivations(); }
  }];
}

#endif // RP_SCHEDULE_ATTRS_TD
