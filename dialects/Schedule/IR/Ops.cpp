//===- Ops.cpp - schedule dialect op verifiers ----------------------------===//
//
// Verifiers of the declarations and of a stage's job (layer, host buffer, stage, upload,
// call). The invariants that relate the ops of a whole plan (stage ranges, producers of host
// buffers, optimizer steps, weight slots) and the timeline's are in Verifiers.cpp; the
// canonicalization patterns in Canonicalize.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Schedule/IR/ScheduleOps.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::rp::schedule;

namespace {

/// `@name`, quoted when the name needs it (`@"block_0#0"`), for messages.
FlatSymbolRefAttr ref(MLIRContext *context, StringRef name) {
  return FlatSymbolRefAttr::get(context, name);
}

/// The module holding `op` (a plan's ops live in a plan, which lives in a module).
ModuleOp enclosingModule(Operation *op) { return op->getParentOfType<ModuleOp>(); }

/// The op called `name` directly in `module`, or null. A linear scan without building a
/// SymbolTable: nested verifiers run before the module's symbol uniqueness is checked.
Operation *lookupInModule(ModuleOp module, StringRef name) {
  if (!module)
    return nullptr;
  return SymbolTable::lookupSymbolIn(module, StringAttr::get(module.getContext(), name));
}

/// "forward stage @F0", "fused_tail stage @B0".
std::string describe(StageOp stage) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << stringifyStageKind(stage.getKind()) << " stage "
     << ref(stage.getContext(), stage.getSymName());
  return text;
}

/// "'schedule.call'", or "the end of the body" for a missing op.
std::string describeOp(Operation *op) {
  if (!op)
    return "the end of the body";
  return ("'" + op->getName().getStringRef() + "'").str();
}

} // namespace

//===----------------------------------------------------------------------===//
// LayerOp
//===----------------------------------------------------------------------===//

LogicalResult LayerOp::verify() {
  size_t numParams = getParams().size();
  llvm::StringMap<unsigned> seen;
  for (auto [i, param] : llvm::enumerate(getParams())) {
    auto flat = dyn_cast<FlatSymbolRefAttr>(param);
    if (!flat)
      return emitOpError() << "param #" << i << " is " << param
                           << ", expected a flat symbol reference to a graph.param";
    if (!seen.try_emplace(flat.getValue(), i).second)
      return emitOpError() << "lists param " << flat << " twice (#" << seen.lookup(flat.getValue())
                           << " and #" << i << ")";
  }
  if (std::optional<ArrayRef<int64_t>> offsets = getWeightOffsets()) {
    if (offsets->size() != numParams)
      return emitOpError() << "has " << offsets->size() << " weight offsets, expected " << numParams
                           << " (one per param)";
    for (auto [i, offset] : llvm::enumerate(*offsets))
      if (offset < 0)
        return emitOpError() << "weight offset #" << i << " is " << offset << ", expected >= 0";
  }
  for (auto [what, offsets] : {std::pair<StringRef, std::optional<ArrayRef<int64_t>>>{
                                    "state", getStateOffsets()},
                                {"grad", getGradOffsets()}}) {
    if (!offsets)
      continue;
    if (offsets->size() != numParams)
      return emitOpError() << "has " << offsets->size() << " " << what << " offsets, expected "
                           << numParams << " (one per param)";
    for (auto [i, offset] : llvm::enumerate(*offsets))
      if (offset < -1)
        return emitOpError() << what << " offset #" << i << " is " << offset
                             << ", expected >= 0 (or -1 for a frozen param)";
  }
  return success();
}

LogicalResult LayerOp::verifySymbolUses(SymbolTableCollection &) {
  ModuleOp module = enclosingModule(*this);
  for (auto [role, callee] : {std::pair<StringRef, FlatSymbolRefAttr>{"forward", getForwardAttr()},
                              {"saving", getSavingAttr()},
                              {"backward", getBackwardAttr()}})
    if (callee && !isa_and_nonnull<func::FuncOp>(lookupInModule(module, callee.getValue())))
      return emitOpError() << role << " function " << callee << " of layer "
                           << ref(getContext(), getSymName())
                           << " is not a func.func in the module";
  std::optional<ArrayRef<int64_t>> stateOffsets = getStateOffsets();
  std::optional<ArrayRef<int64_t>> gradOffsets = getGradOffsets();
  for (auto [i, attr] : llvm::enumerate(getParams())) {
    auto name = cast<FlatSymbolRefAttr>(attr);
    auto param =
        dyn_cast_or_null<mlir::rp::graph::ParamOp>(lookupInModule(module, name.getValue()));
    if (!param)
      return emitOpError() << "param " << name << " of layer " << ref(getContext(), getSymName())
                           << " is not a graph.param in the module";
    for (auto [what, offsets] :
         {std::pair<StringRef, std::optional<ArrayRef<int64_t>>>{"state", stateOffsets},
          {"grad", gradOffsets}}) {
      if (!offsets)
        continue;
      int64_t offset = (*offsets)[i];
      if (param.getTrainable() && offset < 0)
        return emitOpError() << "trainable param " << name << " has " << what << " offset "
                             << offset << ", expected >= 0";
      if (!param.getTrainable() && offset != -1)
        return emitOpError() << "frozen param " << name << " has " << what << " offset " << offset
                             << ", expected -1 (a frozen param has no optimizer state)";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// HostBufferOp
//===----------------------------------------------------------------------===//

LogicalResult HostBufferOp::verify() {
  FlatSymbolRefAttr self = ref(getContext(), getSymName());
  bool isInput = getKind() == BufferKind::input;
  if (isInput && !getName())
    return emitOpError() << "input buffer " << self
                         << " needs the name of the model input it holds";
  if (isInput && getName()->empty())
    return emitOpError() << "input buffer " << self << " has an empty model input name";
  if (!isInput && getName())
    return emitOpError() << stringifyBufferKind(getKind()) << " buffer " << self
                         << " has a model input name (\"" << *getName()
                         << "\"), but only input buffers name one";
  RankedTensorType type = getTensorType();
  if ((getKind() == BufferKind::loss || getKind() == BufferKind::loss_seed) &&
      (type.getRank() != 0 || !type.getElementType().isF32()))
    return emitOpError() << stringifyBufferKind(getKind()) << " buffer " << self
                         << " must hold a tensor<f32>, got " << type;
  if (IntegerAttr offset = getOffsetAttr(); offset && offset.getInt() < 0)
    return emitOpError() << "host buffer " << self << " has offset " << offset.getInt()
                         << ", expected >= 0";
  return success();
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

namespace {

/// Checks the body of a stage's `schedule.micro_batch` against the stage's layers.
LogicalResult verifyMicroBatchBody(StageOp stage, MicroBatchOp microBatch,
                                   ArrayRef<LayerOp> layers) {
  MLIRContext *context = stage.getContext();
  ModuleOp module = enclosingModule(stage);
  int64_t begin = stage.getBegin(), end = stage.getEnd();
  auto layersOfStage = [&] { return ArrayRef<LayerOp>(layers).slice(begin, end - begin); };

  int numPrefetches = 0;
  bool seenUpload = false;
  llvm::StringMap<DownloadOp> downloads;
  for (Operation &op : microBatch.getBody().front()) {
    if (isa<UploadOp>(op)) {
      seenUpload = true;
      continue;
    }
    if (isa<PrefetchNextOp>(op)) {
      if (++numPrefetches > 1)
        return op.emitOpError()
               << "is a second 'schedule.prefetch_next' in the micro-batch body of "
               << describe(stage) << ": expected exactly one";
      if (!seenUpload)
        return op.emitOpError() << "in " << describe(stage)
                                << " must follow a 'schedule.upload' (the weight chunk is "
                                   "issued behind a pending activation upload)";
      continue;
    }
    if (auto download = dyn_cast<DownloadOp>(op)) {
      if (!downloads.try_emplace(download.getBuffer(), download).second)
        return download.emitOpError()
               << "downloads to " << download.getBufferAttr()
               << " a second time in the micro-batch body of " << describe(stage);
      continue;
    }
    if (auto accumulate = dyn_cast<AccumulateOp>(op)) {
      if (!stage.hasBackward())
        return accumulate.emitOpError() << "in " << describe(stage)
                                        << ": only fused_tail and backward stages accumulate "
                                           "gradients";
      StringRef name = accumulate.getParam();
      SmallVector<LayerOp> readers;
      for (LayerOp layer : layersOfStage())
        // Not cast: a layer placed after the stage is verified later (and the plan's order
        // check reports the placement).
        if (llvm::any_of(layer.getParams(), [&](Attribute p) {
              auto flat = dyn_cast<FlatSymbolRefAttr>(p);
              return flat && flat.getValue() == name;
            }))
          readers.push_back(layer);
      if (readers.empty())
        return accumulate.emitOpError()
               << "accumulates into " << accumulate.getParamAttr()
               << ", which is not a param of a layer of " << describe(stage) << " (layers ["
               << begin << ", " << end << "))";
      if (std::optional<StringRef> of = accumulate.getLayer()) {
        if (!llvm::any_of(readers, [&](LayerOp l) { return l.getSymName() == *of; }))
          return accumulate.emitOpError()
                 << "accumulates into " << accumulate.getParamAttr() << " of "
                 << accumulate.getLayerAttr() << ", which is not a layer of " << describe(stage)
                 << " reading it";
      } else if (readers.size() > 1) {
        return accumulate.emitOpError()
               << "accumulates into " << accumulate.getParamAttr() << ", which "
               << readers.size() << " layers of " << describe(stage)
               << " read: name the layer (`of @layer`)";
      }
      // A missing param is reported by the layer's symbol check.
      if (auto param = dyn_cast_or_null<mlir::rp::graph::ParamOp>(lookupInModule(module, name))) {
        if (!param.getTrainable())
          return accumulate.emitOpError()
                 << "accumulates into frozen param " << accumulate.getParamAttr()
                 << ": only trainable params have gradient accumulators";
        auto valueType = cast<RankedTensorType>(accumulate.getValue().getType());
        if (valueType.getShape() != param.getTensorType().getShape())
          return accumulate.emitOpError()
                 << "accumulates a " << valueType << " into " << accumulate.getParamAttr()
                 << " of type " << param.getType() << ": the shapes differ";
      }
      continue;
    }
    if (auto call = dyn_cast<CallOp>(op)) {
      StringRef callee = call.getCallee();
      LayerOp forwardOf, backwardOf;
      for (LayerOp layer : layersOfStage()) {
        if (!forwardOf && layer.getForward() == callee)
          forwardOf = layer;
        // The saving forward runs in backward-kind stages, as the backward function does.
        if (!backwardOf && (layer.getBackward() == callee || layer.getSaving() == callee))
          backwardOf = layer;
      }
      if (!forwardOf && !backwardOf)
        return call.emitOpError() << "calls " << call.getCalleeAttr()
                                  << ", which is not the forward, saving or backward function "
                                     "of a layer of "
                                  << describe(stage) << " (layers [" << begin << ", " << end
                                  << "))";
      if (!forwardOf && !stage.hasBackward())
        return call.emitOpError() << "calls " << call.getCalleeAttr()
                                  << ", the saving or backward function of layer "
                                  << ref(context, backwardOf.getSymName()) << ", but "
                                  << describe(stage) << " calls only forward functions";
      continue;
    }
    return op.emitOpError() << "is not allowed in the micro-batch body of " << describe(stage)
                            << ": expected schedule.upload, call, accumulate, download and "
                               "prefetch_next ops";
  }
  if (numPrefetches == 0)
    return microBatch.emitOpError()
           << "of " << describe(stage) << " has no 'schedule.prefetch_next': expected exactly one";
  return success();
}

} // namespace

LogicalResult StageOp::verify() {
  std::string self = describe(*this);
  int64_t begin = getBegin(), end = getEnd();
  if (begin >= end)
    return emitOpError() << self << " has layers [" << begin << ", " << end
                         << "): expected begin < end";
  auto plan = cast<PlanOp>((*this)->getParentOp());
  SmallVector<LayerOp> layers(plan.getLayers());
  if (end > static_cast<int64_t>(layers.size()))
    return emitOpError() << self << " has layers [" << begin << ", " << end << "), but plan "
                         << ref(getContext(), plan.getSymName()) << " has " << layers.size()
                         << " layers";
  for (auto [name, value] :
       {std::pair<StringRef, IntegerAttr>{"weight_bytes", getWeightBytesAttr()},
        {"grad_bytes", getGradBytesAttr()},
        {"activation_bytes", getActivationBytesAttr()},
        {"workspace_bytes", getWorkspaceBytesAttr()},
        {"peak_bytes", getPeakBytesAttr()}})
    if (value && value.getInt() < 0)
      return emitOpError() << self << " has " << name << " = " << value.getInt()
                           << ", expected >= 0";

  // The job: await_weights, micro_batch, and download_grads for the kinds with a backward.
  Block &body = getBody().front();
  auto it = body.begin();
  auto next = [&]() -> Operation * { return it == body.end() ? nullptr : &*it++; };
  Operation *first = next();
  if (!isa_and_nonnull<AwaitWeightsOp>(first))
    return emitOpError() << self << " must begin with 'schedule.await_weights', found "
                         << describeOp(first);
  Operation *second = next();
  auto microBatch = dyn_cast_or_null<MicroBatchOp>(second);
  if (!microBatch)
    return emitOpError() << self
                         << " must have one 'schedule.micro_batch' after 'schedule.await_weights', "
                            "found "
                         << describeOp(second);
  Operation *third = next();
  if (hasBackward()) {
    if (!isa_and_nonnull<DownloadGradsOp>(third))
      return emitOpError() << self
                           << " must end with 'schedule.download_grads' after its "
                              "'schedule.micro_batch', found "
                           << describeOp(third);
    third = next();
  } else if (isa_and_nonnull<DownloadGradsOp>(third)) {
    return third->emitOpError() << "in " << self
                                << ": a forward stage has no gradients to download";
  }
  if (third)
    return third->emitOpError() << "is not allowed in " << self
                                << ": a stage body is 'schedule.await_weights', "
                                   "'schedule.micro_batch' and, with a backward, "
                                   "'schedule.download_grads'";
  // An empty region is reported by the micro_batch's own verifier, which runs next.
  if (microBatch.getBody().empty())
    return success();
  return verifyMicroBatchBody(*this, microBatch, layers);
}

//===----------------------------------------------------------------------===//
// UploadOp, CallOp
//===----------------------------------------------------------------------===//

LogicalResult UploadOp::verify() {
  if (IntegerAttr offset = getOffsetAttr(); offset && offset.getInt() < 0)
    return emitOpError() << "has offset " << offset.getInt() << ", expected >= 0";
  return success();
}

LogicalResult CallOp::verify() {
  std::optional<ArrayRef<int64_t>> offsets = getOffsets();
  if (!offsets)
    return success();
  if (offsets->size() != getNumResults())
    return emitOpError() << "has " << offsets->size() << " offsets, expected " << getNumResults()
                         << " (one per result)";
  for (auto [i, offset] : llvm::enumerate(*offsets))
    if (offset < 0)
      return emitOpError() << "offset #" << i << " is " << offset << ", expected >= 0";
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &) {
  auto callee = dyn_cast_or_null<func::FuncOp>(lookupInModule(enclosingModule(*this), getCallee()));
  // The stage verifier requires the callee to be a layer's function, and the layers' symbol
  // uses (checked before nested ops) require that to be a func.func.
  if (!callee)
    return success();
  auto type = FunctionType::get(getContext(), getArgs().getTypes(), getResultTypes());
  if (type != callee.getFunctionType())
    return emitOpError() << "has type " << type << ", but callee " << getCalleeAttr()
                         << " has type " << callee.getFunctionType();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Schedule/IR/ScheduleOps.cpp.inc"
