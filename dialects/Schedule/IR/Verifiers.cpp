//===- Verifiers.cpp - plan and timeline verifiers ------------------------===//
//
// The invariants of a whole RoundPipe iteration (arXiv 2604.27085 §3-4; the reference
// library's scheduler.py): the plan's attributes, the order of its body, the forward and
// backward partitions of the layers, the producer of every host buffer, the optimizer steps,
// the weight slots; and the per-device job order of a materialized timeline.
//
//===----------------------------------------------------------------------===//

#include "dialects/Schedule/IR/ScheduleOps.h"
#include "dialects/Schedule/IR/SharedParams.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::rp::schedule;

namespace {

FlatSymbolRefAttr ref(MLIRContext *context, StringRef name) {
  return FlatSymbolRefAttr::get(context, name);
}

/// "forward stage @F0", "fused_tail stage @B0".
std::string describe(StageOp stage) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << stringifyStageKind(stage.getKind()) << " stage "
     << ref(stage.getContext(), stage.getSymName());
  return text;
}

/// "'schedule.stage' @F0", "'schedule.optimizer_step' of layer @prefix".
std::string describeBodyOp(Operation &op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op.getName() << "'";
  if (auto symbol = op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
    os << " " << ref(op.getContext(), symbol.getValue());
  else if (auto step = dyn_cast<OptimizerStepOp>(op))
    os << " of layer " << step.getLayerAttr();
  return text;
}

/// The position of an op kind in a plan body: layers, host buffers, stages, optimizer steps.
int bodyRank(Operation &op) {
  if (isa<LayerOp>(op))
    return 0;
  if (isa<HostBufferOp>(op))
    return 1;
  if (isa<StageOp>(op))
    return 2;
  if (isa<OptimizerStepOp>(op))
    return 3;
  return -1;
}

/// Buffers the trainer fills on the host (model inputs, loss seeds): no stage writes them.
bool isHostFilled(HostBufferOp buffer) {
  return buffer.getKind() == BufferKind::input || buffer.getKind() == BufferKind::loss_seed;
}

/// Dispatch order of the kinds: forward stages, the fused tail, backward stages.
int kindRank(StageKind kind) {
  switch (kind) {
  case StageKind::forward:
    return 0;
  case StageKind::fused_tail:
    return 1;
  case StageKind::backward:
    return 2;
  }
  return 3;
}

/// Verifies the region of a plan whose ops are individually valid.
class PlanVerifier {
public:
  explicit PlanVerifier(PlanOp plan)
      : plan(plan), context(plan.getContext()), self(ref(context, plan.getSymName())) {}

  LogicalResult verify() {
    if (failed(verifyBodyOrder()) || failed(collect()) || failed(verifyStageKinds()) ||
        failed(verifyRanges()) || failed(verifyDownloads()) || failed(verifyUploads()) ||
        failed(verifyOptimizerSteps()) || failed(verifyWeightSlots()))
      return failure();
    return success();
  }

private:
  PlanOp plan;
  MLIRContext *context;
  FlatSymbolRefAttr self;
  SmallVector<LayerOp> layers;
  SmallVector<StageOp> stages;
  StageOp fusedTail;
  llvm::StringMap<HostBufferOp> buffers;
  llvm::StringMap<unsigned> stageIndex;
  /// The stages downloading each host buffer, in dispatch order.
  llvm::StringMap<SmallVector<StageOp, 1>> writers;

  LogicalResult verifyBodyOrder() {
    Operation *latest = nullptr;
    for (Operation &op : plan.getBody().front()) {
      int rank = bodyRank(op);
      if (rank < 0)
        return op.emitOpError() << "is not allowed in plan " << self
                                << ": a plan body holds schedule.layer, schedule.host_buffer, "
                                   "schedule.stage and schedule.optimizer_step ops";
      // Only a layer, host buffer or stage can follow an op of a later kind: all are symbols.
      if (latest && rank < bodyRank(*latest))
        return op.emitOpError() << ref(context, SymbolTable::getSymbolName(&op).getValue())
                                << " must come before " << describeBodyOp(*latest)
                                << ": a plan body holds layers, then host buffers, then "
                                   "stages, then optimizer steps";
      if (!latest || rank > bodyRank(*latest))
        latest = &op;
    }
    return success();
  }

  LogicalResult collect() {
    layers.assign(plan.getLayers().begin(), plan.getLayers().end());
    if (layers.empty())
      return plan.emitOpError() << "has no schedule.layer: expected at least one layer";
    stages.assign(plan.getStages().begin(), plan.getStages().end());
    for (auto [i, stage] : llvm::enumerate(stages))
      stageIndex[stage.getSymName()] = i;
    for (HostBufferOp buffer : plan.getHostBuffers())
      buffers[buffer.getSymName()] = buffer;
    return success();
  }

  LogicalResult verifyStageKinds() {
    StageOp previous;
    for (StageOp stage : stages) {
      if (previous && kindRank(stage.getKind()) < kindRank(previous.getKind()))
        return stage.emitOpError() << describe(stage) << " comes after " << describe(previous)
                                   << ": stages are dispatched forward, then the fused tail, "
                                      "then backward";
      if (stage.getKind() == StageKind::fused_tail) {
        if (fusedTail)
          return stage.emitOpError()
                 << describe(stage) << " is a second fused tail (the first is "
                 << ref(context, fusedTail.getSymName()) << "): expected exactly one";
        fusedTail = stage;
      }
      previous = stage;
    }
    if (!fusedTail)
      return plan.emitOpError() << "has no fused_tail stage: expected exactly one";
    return success();
  }

  // Every layer is in exactly one forward stage or the fused tail, and in exactly one
  // backward stage or the fused tail.
  LogicalResult verifyRanges() {
    int64_t numLayers = layers.size();
    int64_t forwardEnd = 0;
    bool anyForward = false;
    for (StageOp stage : stages) {
      if (stage.getKind() != StageKind::forward)
        continue;
      if (static_cast<int64_t>(stage.getBegin()) != forwardEnd)
        return stage.emitOpError() << describe(stage) << " starts at layer " << stage.getBegin()
                                   << ", expected " << forwardEnd
                                   << (anyForward ? " (where the previous forward stage ended)"
                                                  : " (the first forward stage starts at layer 0)");
      forwardEnd = stage.getEnd();
      anyForward = true;
    }
    if (static_cast<int64_t>(fusedTail.getBegin()) != forwardEnd)
      return fusedTail.emitOpError() << describe(fusedTail) << " starts at layer "
                                     << fusedTail.getBegin() << ", expected " << forwardEnd
                                     << (anyForward ? " (where the last forward stage ended)"
                                                    : " (there is no forward stage)");
    if (static_cast<int64_t>(fusedTail.getEnd()) != numLayers)
      return fusedTail.emitOpError()
             << describe(fusedTail) << " ends at layer " << fusedTail.getEnd() << ", expected "
             << numLayers << " (the number of layers)";
    int64_t backwardEnd = fusedTail.getBegin();
    StageOp lastBackward;
    for (StageOp stage : stages) {
      if (stage.getKind() != StageKind::backward)
        continue;
      if (static_cast<int64_t>(stage.getEnd()) != backwardEnd)
        return stage.emitOpError() << describe(stage) << " ends at layer " << stage.getEnd()
                                   << ", expected " << backwardEnd
                                   << (lastBackward ? " (where the previous backward stage begins)"
                                                    : " (where the fused tail begins)");
      backwardEnd = stage.getBegin();
      lastBackward = stage;
    }
    if (backwardEnd != 0) {
      if (!lastBackward)
        return fusedTail.emitOpError()
               << describe(fusedTail) << " begins at layer " << backwardEnd
               << ", but no backward stage covers layers [0, " << backwardEnd << ")";
      return lastBackward.emitOpError()
             << "the last backward stage " << ref(context, lastBackward.getSymName())
             << " begins at layer " << backwardEnd
             << ", expected 0 (backward stages descend to layer 0)";
    }
    return success();
  }

  /// Every non-input host buffer is downloaded by exactly one stage; input buffers by none.
  LogicalResult verifyDownloads() {
    for (StageOp stage : stages) {
      SmallVector<DownloadOp> downloads;
      stage.walk([&](DownloadOp op) { downloads.push_back(op); });
      for (DownloadOp download : downloads) {
        HostBufferOp buffer = buffers.lookup(download.getBuffer());
        if (!buffer)
          return download.emitOpError() << "downloads to " << download.getBufferAttr()
                                        << ", which is not a host buffer of plan " << self;
        if (isHostFilled(buffer))
          return download.emitOpError()
                 << "downloads to " << stringifyBufferKind(buffer.getKind()) << " buffer "
                 << download.getBufferAttr()
                 << ": model inputs and loss seeds are written by the trainer, not by a stage";
        if (download.getValue().getType() != buffer.getType())
          return download.emitOpError()
                 << "downloads a " << download.getValue().getType() << " to "
                 << download.getBufferAttr() << " of type " << buffer.getType();
        writers[download.getBuffer()].push_back(stage);
      }
    }
    for (HostBufferOp buffer : plan.getHostBuffers()) {
      if (isHostFilled(buffer))
        continue;
      auto it = writers.find(buffer.getSymName());
      if (it == writers.end())
        return buffer.emitOpError()
               << stringifyBufferKind(buffer.getKind()) << " buffer "
               << ref(context, buffer.getSymName())
               << " is never downloaded: expected exactly one stage to write it";
      if (it->second.size() > 1)
        return buffer.emitOpError() << stringifyBufferKind(buffer.getKind()) << " buffer "
                                    << ref(context, buffer.getSymName()) << " is downloaded by "
                                    << describe(it->second[0]) << " and " << describe(it->second[1])
                                    << ": expected exactly one stage to write it";
    }
    return success();
  }

  /// An upload of a written buffer waits for the stage that downloads it, dispatched earlier.
  LogicalResult verifyUploads() {
    for (auto [index, stage] : llvm::enumerate(stages)) {
      SmallVector<UploadOp> uploads;
      stage.walk([&](UploadOp op) { uploads.push_back(op); });
      for (UploadOp upload : uploads) {
        FlatSymbolRefAttr name = upload.getBufferAttr();
        HostBufferOp buffer = buffers.lookup(name.getValue());
        if (!buffer)
          return upload.emitOpError()
                 << "uploads " << name << ", which is not a host buffer of plan " << self;
        if (upload.getType() != buffer.getType())
          return upload.emitOpError() << "yields a " << upload.getType() << " from " << name
                                      << " of type " << buffer.getType();
        if (buffer.getKind() == BufferKind::loss_seed && stage.getKind() != StageKind::fused_tail)
          return upload.emitOpError()
                 << "uploads loss_seed buffer " << name << " in a "
                 << stringifyStageKind(stage.getKind())
                 << " stage: only the fused tail's backward reads the loss seed";
        if (isHostFilled(buffer)) {
          if (upload.getAfterAttr())
            return upload.emitOpError()
                   << "uploads " << stringifyBufferKind(buffer.getKind()) << " buffer " << name
                   << " after " << upload.getAfterAttr()
                   << ", but no stage writes it (the trainer does): expected no 'after'";
          continue;
        }
        StageOp writer = writers.lookup(name.getValue()).front();
        FlatSymbolRefAttr after = upload.getAfterAttr();
        if (!after)
          return upload.emitOpError()
                 << "uploads " << name << " without 'after': expected 'after "
                 << ref(context, writer.getSymName()) << "', the stage that downloads it";
        auto producer = stageIndex.find(after.getValue());
        if (producer == stageIndex.end())
          return upload.emitOpError()
                 << "waits for " << after << ", which is not a stage of plan " << self;
        if (stages[producer->second] != writer)
          return upload.emitOpError() << "waits for " << after << ", but " << name
                                      << " is downloaded by " << describe(writer);
        if (producer->second >= index)
          return upload.emitOpError() << "in " << describe(stage) << " waits for "
                                      << describe(writer) << ", which is not dispatched before it";
      }
    }
    return success();
  }

  /// One step per layer owning a trainable param (dialects/Schedule/IR/SharedParams.h), with
  /// the gradient and upload events that SharedParams derives from the stages.
  LogicalResult verifyOptimizerSteps() {
    ParamReaders readers(plan);
    llvm::StringMap<unsigned> layerIndex;
    for (auto [i, layer] : llvm::enumerate(layers))
      layerIndex[layer.getSymName()] = i;
    SmallVector<OptimizerStepOp> stepOf(layers.size());
    for (OptimizerStepOp step : plan.getOptimizerSteps()) {
      auto found = layerIndex.find(step.getLayer());
      if (found == layerIndex.end())
        return step.emitOpError() << "updates " << step.getLayerAttr()
                                  << ", which is not a layer of plan " << self;
      unsigned i = found->second;
      if (!readers.ownsTrainable(i))
        return step.emitOpError() << "updates layer " << step.getLayerAttr()
                                  << ", which owns no trainable param (a shared param is "
                                     "updated by its lowest reader)";
      if (stepOf[i])
        return step.emitOpError() << "is a second optimizer step of layer " << step.getLayerAttr()
                                  << ": expected exactly one";
      stepOf[i] = step;

      OptimizerStepEvents expected = expectedOptimizerStep(plan, readers, i);
      StageOp grads = expected.grads;
      if (!grads)
        return step.emitOpError() << "of layer " << step.getLayerAttr()
                                  << ": no backward stage holds the layer";
      if (step.getGrads() != grads.getSymName())
        return step.emitOpError() << "of layer " << step.getLayerAttr()
                                  << " waits for the gradients of " << step.getGradsAttr()
                                  << ", expected " << ref(context, grads.getSymName()) << " (the "
                                  << stringifyStageKind(grads.getKind()) << " stage holding layer "
                                  << i << ")";
      ArrayAttr shared = step.getSharedGradsAttr() ? step.getSharedGradsAttr()
                                                   : ArrayAttr::get(context, {});
      if (shared != stageRefs(context, expected.sharedGrads))
        return step.emitOpError() << "of layer " << step.getLayerAttr()
                                  << " waits for the shared gradients of " << shared
                                  << ", expected " << stageRefs(context, expected.sharedGrads)
                                  << " (the other backward stages holding a reader of a shared "
                                     "param it owns, in dispatch order)";
      if (step.getUploads() != stageRefs(context, expected.uploads))
        return step.emitOpError() << "of layer " << step.getLayerAttr()
                                  << " waits for the uploads of " << step.getUploads()
                                  << ", expected " << stageRefs(context, expected.uploads)
                                  << " (the stages holding layer " << i
                                  << " or a reader of a shared param it owns, in dispatch order)";
    }
    for (auto [i, layer] : llvm::enumerate(layers))
      if (readers.ownsTrainable(i) && !stepOf[i])
        return layer.emitOpError() << "layer " << ref(context, layer.getSymName())
                                   << " owns trainable params but has no schedule.optimizer_step";
    return success();
  }

  /// A device holds two weight slots: its running job's and the prefetched next job's.
  LogicalResult verifyWeightSlots() {
    std::optional<DeviceArenaAttr> arena = plan.getDeviceArena();
    if (!arena)
      return success();
    for (StageOp stage : stages) {
      IntegerAttr weights = stage.getWeightBytesAttr();
      if (!weights)
        continue;
      IntegerAttr grads = stage.getGradBytesAttr();
      int64_t need = weights.getInt() + (grads ? grads.getInt() : 0);
      if (need > arena->getSlot())
        return stage.emitOpError()
               << "stage " << ref(context, stage.getSymName()) << " needs " << need
               << " bytes of weights and gradients but a weight slot holds " << arena->getSlot();
    }
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

LogicalResult PlanOp::verify() {
  if (getDispatch() != "round_robin")
    return emitOpError() << "dispatch policy '" << getDispatch()
                         << "' is not supported: expected 'round_robin'";
  Type dtype = getDtype();
  if (!dtype.isF32() && !dtype.isF16() && !dtype.isBF16())
    return emitOpError() << "expected compute dtype f32, f16 or bf16, got " << dtype;

  AdamWAttr adamw = getOptimizer();
  struct Check {
    const char *rule;
    double value;
    bool ok;
  };
  double lr = adamw.getLr().convertToDouble(), beta1 = adamw.getBeta1().convertToDouble(),
         beta2 = adamw.getBeta2().convertToDouble(), eps = adamw.getEps().convertToDouble(),
         weightDecay = adamw.getWeightDecay().convertToDouble(),
         gradClip = adamw.getGradClip().convertToDouble();
  // Written so that NaN fails every rule.
  for (const Check &check :
       {Check{"lr > 0", lr, lr > 0}, Check{"0 <= beta1 < 1", beta1, beta1 >= 0 && beta1 < 1},
        Check{"0 <= beta2 < 1", beta2, beta2 >= 0 && beta2 < 1}, Check{"eps > 0", eps, eps > 0},
        Check{"weight_decay >= 0", weightDecay, weightDecay >= 0},
        Check{"grad_clip >= 0", gradClip, gradClip >= 0}})
    if (!check.ok)
      return emitOpError() << "expected optimizer " << check.rule << ", got "
                           << formatDouble(check.value);

  if (std::optional<DeviceArenaAttr> arena = getDeviceArena())
    for (auto [name, bytes] : {std::pair<const char *, int64_t>{"constants", arena->getConstants()},
                               {"slot", arena->getSlot()},
                               {"activations", arena->getActivations()},
                               {"workspace", arena->getWorkspace()}})
      if (bytes < 0 || bytes % 256 != 0)
        return emitOpError() << "device arena " << name << " = " << bytes
                             << " bytes is not a non-negative multiple of 256";
  if (std::optional<HostArenaAttr> arena = getHostArena()) {
    for (auto [name, bytes] : {std::pair<const char *, int64_t>{"weights", arena->getWeights()},
                               {"state", arena->getState()},
                               {"activations", arena->getActivations()}})
      if (bytes < 0)
        return emitOpError() << "host arena " << name << " = " << bytes << " bytes is negative";
    int64_t microBatches = getMicroBatches();
    if (arena->getActivations() % microBatches != 0)
      return emitOpError() << "host arena activations = " << arena->getActivations()
                           << " bytes is not a multiple of micro_batches = " << microBatches
                           << " (one record per micro-batch)";
  }
  return success();
}

LogicalResult PlanOp::verifyRegions() { return PlanVerifier(*this).verify(); }

//===----------------------------------------------------------------------===//
// TimelineOp
//===----------------------------------------------------------------------===//

LogicalResult TimelineOp::verify() {
  auto module = cast<ModuleOp>((*this)->getParentOp());
  auto plan =
      dyn_cast_or_null<PlanOp>(SymbolTable::lookupSymbolIn(module, getPlanAttr().getAttr()));
  if (!plan)
    return emitOpError() << "names " << getPlanAttr()
                         << ", which is not a schedule.plan in the module";
  // The plan's own region is checked by the plan's verifier.
  if (plan.getBody().empty())
    return success();
  SmallVector<StageOp> stages(plan.getStages());
  llvm::StringMap<int64_t> stageIndex;
  for (auto [i, stage] : llvm::enumerate(stages))
    stageIndex[stage.getSymName()] = i;
  int64_t numStages = stages.size(), gpus = getGpus(), iterations = getIterations(), ptr = getPtr(),
          numJobs = iterations * numStages;
  MLIRContext *context = getContext();

  // Keyed by job: `iterations` may be large, the runs listed are what the IR holds.
  llvm::DenseMap<int64_t, RunOp> byJob;
  int64_t numDevices = 0;
  for (Operation &op : getBody().front()) {
    auto device = dyn_cast<DeviceOp>(op);
    if (!device)
      return op.emitOpError() << "is not allowed in a timeline: expected schedule.device ops";
    int64_t index = device.getIndex();
    if (index >= gpus)
      return device.emitOpError() << "has index " << index
                                  << ", but the timeline has gpus = " << gpus;
    if (index != numDevices)
      return device.emitOpError() << "has index " << index << ", expected " << numDevices
                                  << " (devices are listed 0 .. gpus-1 in order, each once)";
    ++numDevices;
    if (device.getBody().empty())
      continue;
    int64_t position = 0;
    RunOp previous;
    for (Operation &inner : device.getBody().front()) {
      auto run = dyn_cast<RunOp>(inner);
      if (!run)
        return inner.emitOpError()
               << "is not allowed in device " << index << ": expected schedule.run ops";
      auto stage = stageIndex.find(run.getStage());
      if (stage == stageIndex.end())
        return run.emitOpError() << "names " << run.getStageAttr()
                                 << ", which is not a stage of plan " << getPlanAttr();
      int64_t job = run.getJob();
      if (job >= numJobs)
        return run.emitOpError() << "has job " << job << ", but " << iterations << " iterations of "
                                 << numStages << " stages run jobs 0 .. " << numJobs - 1;
      int64_t iteration = job / numStages, k = job % numStages;
      if (static_cast<int64_t>(run.getIteration()) != iteration || stage->second != k)
        return run.emitOpError() << "job " << job << " is stage "
                                 << ref(context, stages[k].getSymName()) << " of iteration "
                                 << iteration << ", got " << run.getStageAttr() << " of iteration "
                                 << run.getIteration();
      int64_t expectedDevice = (ptr + job) % gpus;
      if (expectedDevice != index)
        return run.emitOpError() << "job " << job
                                 << " runs on device (ptr + job) mod gpus = " << expectedDevice
                                 << ", not on device " << index;
      if (byJob.count(job))
        return run.emitOpError() << "job " << job << " appears twice";
      if (previous && job < static_cast<int64_t>(previous.getJob()))
        return run.emitOpError() << "job " << job << " follows job " << previous.getJob()
                                 << " on device " << index << ": jobs ascend on each device";
      int64_t slot = position % 2;
      if (static_cast<int64_t>(run.getSlot()) != slot)
        return run.emitOpError() << "job " << job << " is job #" << position << " of device "
                                 << index << " and uses slot " << run.getSlot()
                                 << ", expected slot " << slot
                                 << " (a device alternates its two weight slots)";
      byJob[job] = run;
      previous = run;
      ++position;
    }
  }
  if (numDevices != gpus)
    return emitOpError() << "lists " << numDevices << " devices, expected gpus = " << gpus;
  // Every run is a distinct job below numJobs: when some are missing, the first is at most
  // the number of runs.
  for (int64_t job = 0; job < numJobs && static_cast<int64_t>(byJob.size()) < numJobs; ++job)
    if (!byJob.count(job))
      return emitOpError() << "is missing job " << job << " (stage "
                           << ref(context, stages[job % numStages].getSymName()) << " of iteration "
                           << job / numStages << ") on device " << (ptr + job) % gpus;
  return success();
}
