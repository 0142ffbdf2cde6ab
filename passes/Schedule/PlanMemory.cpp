//===- PlanMemory.cpp - rp-plan-memory ------------------------------------===//
//
// Static memory planning of a schedule.plan (arXiv 2604.27085 §3, stateless workers; the
// reference library allocates at run time with a caching allocator and pins memory per
// tensor, we lay out two arenas once): offsets in the host arena and in one device arena.
//
//===----------------------------------------------------------------------===//

#include "passes/Schedule/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <map>

namespace mlir::rp {

#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Schedule/Passes.h.inc"

namespace {

constexpr int64_t kAlign = 256;

int64_t alignUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

int64_t elementBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  return static_cast<int64_t>(t.getIntOrFloatBitWidth()) / 8;
}

int64_t tensorBytes(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return rt.getNumElements() * elementBytes(rt.getElementType());
}

/// First-fit allocation of byte ranges in an arena that grows to its peak; every block is
/// aligned to 256 bytes.
class FirstFit {
public:
  int64_t allocate(int64_t bytes) {
    bytes = std::max<int64_t>(alignUp(bytes), kAlign);
    int64_t offset = 0;
    for (auto [begin, size] : live) {
      if (begin - offset >= bytes)
        break;
      offset = std::max(offset, begin + size);
    }
    live.emplace(offset, bytes);
    peak = std::max(peak, offset + bytes);
    return offset;
  }
  void release(int64_t offset) { live.erase(offset); }
  int64_t getPeak() const { return peak; }

private:
  std::map<int64_t, int64_t> live; ///< offset -> size
  int64_t peak = 0;
};

/// Assigns offsets to `values` (in program order; value i defined at position defs[i]) by
/// liveness: a value lives from its definition to `lastUse`, an inclusive position.
template <typename Fn>
int64_t allocateByLiveness(ArrayRef<Value> values, const llvm::DenseMap<Value, int64_t> &defAt,
                           const llvm::DenseMap<Value, int64_t> &lastUse, Fn assign) {
  FirstFit arena;
  // Release every value whose last use is before the position where the next value is
  // defined: the operands of the defining op stay allocated, so results never alias them.
  std::multimap<int64_t, int64_t> releaseAt; // last use -> offset
  for (Value v : values) {
    int64_t def = defAt.lookup(v);
    while (!releaseAt.empty() && releaseAt.begin()->first < def) {
      arena.release(releaseAt.begin()->second);
      releaseAt.erase(releaseAt.begin());
    }
    int64_t offset = arena.allocate(tensorBytes(v.getType()));
    assign(v, offset);
    auto it = lastUse.find(v);
    releaseAt.emplace(it == lastUse.end() ? def : it->second, offset);
  }
  return arena.getPeak();
}

class MemoryPlanner {
public:
  MemoryPlanner(ModuleOp module, schedule::PlanOp plan)
      : module(module), plan(plan), b(module.getContext()) {}

  LogicalResult run();

private:
  int64_t weightBytes(graph::ParamOp p) {
    auto t = p.getTensorType();
    int64_t size = isa<FloatType>(t.getElementType()) ? elementBytes(plan.getDtype())
                                                       : elementBytes(t.getElementType());
    return t.getNumElements() * size;
  }
  void planHost();
  LogicalResult planFunctions();
  int64_t planFunction(func::FuncOp fn);
  void planStages();

  ModuleOp module;
  schedule::PlanOp plan;
  OpBuilder b;
  int64_t weightsBytes = 0, stateBytes = 0, gradBytes = 0, recordBytes = 0;
  int64_t constantsBytes = 0, workspaceBytes = 0, slotBytes = 0, activationBytes = 0;
  llvm::DenseMap<Operation *, int64_t> functionWorkspace;
  SmallVector<func::FuncOp> functions;
};

void MemoryPlanner::planHost() {
  // Weights: every entry of every layer (a shared param has a copy per reader). State: each
  // trainable param once, at its owner's entry. Grads: every trainable entry, so that a
  // stage's gradients stay one contiguous range (dialects/Schedule/IR/SharedParams.h).
  llvm::StringMap<int64_t> stateOf;
  for (auto layer : plan.getLayers()) {
    SmallVector<int64_t> weights, state, grads;
    for (Attribute a : layer.getParams()) {
      auto p = module.lookupSymbol<graph::ParamOp>(cast<FlatSymbolRefAttr>(a));
      weights.push_back(weightsBytes);
      weightsBytes += alignUp(weightBytes(p));
      if (!p.getTrainable()) {
        state.push_back(-1);
        grads.push_back(-1);
        continue;
      }
      const int64_t bytes = alignUp(p.getTensorType().getNumElements() * 4);
      auto [it, owner] = stateOf.try_emplace(p.getSymName(), stateBytes);
      if (owner)
        stateBytes += bytes;
      state.push_back(it->second);
      grads.push_back(gradBytes);
      gradBytes += bytes;
    }
    layer.setWeightOffsetsAttr(b.getDenseI64ArrayAttr(weights));
    layer.setStateOffsetsAttr(b.getDenseI64ArrayAttr(state));
    layer.setGradOffsetsAttr(b.getDenseI64ArrayAttr(grads));
  }
  for (auto buffer : plan.getHostBuffers()) {
    buffer.setOffsetAttr(b.getI64IntegerAttr(recordBytes));
    recordBytes += alignUp(tensorBytes(buffer.getType()));
  }
}

int64_t MemoryPlanner::planFunction(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::DenseSet<Value> returned(ret.getOperands().begin(), ret.getOperands().end());
  llvm::DenseMap<Value, int64_t> defAt, lastUse;
  SmallVector<Value> values;
  int64_t position = 0;
  for (Operation &op : body) {
    for (Value operand : op.getOperands())
      lastUse[operand] = position;
    if (isa<graph::LoadParamOp, graph::ConstantOp>(op) || &op == ret.getOperation()) {
      ++position;
      continue;
    }
    for (Value r : op.getResults())
      if (!returned.contains(r)) {
        defAt[r] = position;
        values.push_back(r);
      }
    ++position;
  }
  // A reshape of a workspace value is an alias: its result takes the operand's buffer (the
  // same bytes in the same order; a value is never written after its definition), so the two
  // share one allocation that lives from the operand's definition to the last use of either,
  // and the reshape's kernel, given one address for both, copies nothing. Chains of reshapes
  // share the first operand's buffer. A reshape of an argument or into a returned value (the
  // caller's buffers) still copies.
  llvm::DenseMap<Value, Value> aliasOf; // a reshape's result -> the value owning its buffer
  for (Operation &op : body) {
    auto reshape = dyn_cast<graph::ReshapeOp>(op);
    if (!reshape || !defAt.count(reshape.getInput()) || returned.contains(reshape.getResult()))
      continue;
    Value owner = aliasOf.lookup(reshape.getInput());
    if (!owner)
      owner = reshape.getInput();
    aliasOf[reshape.getResult()] = owner;
    auto used = lastUse.find(reshape.getResult());
    const int64_t until = used == lastUse.end() ? defAt.lookup(reshape.getResult()) : used->second;
    lastUse[owner] = std::max(lastUse.lookup(owner), until);
  }
  SmallVector<Value> owned;
  for (Value v : values)
    if (!aliasOf.count(v))
      owned.push_back(v);
  llvm::DenseMap<Value, int64_t> offsets;
  int64_t peak = allocateByLiveness(owned, defAt, lastUse,
                                    [&](Value v, int64_t offset) { offsets[v] = offset; });
  for (auto [alias, owner] : aliasOf)
    offsets[alias] = offsets.lookup(owner);
  for (Operation &op : body) {
    if (isa<graph::LoadParamOp, graph::ConstantOp>(op) || op.getNumResults() == 0)
      continue;
    SmallVector<int64_t> resultOffsets;
    for (Value r : op.getResults())
      resultOffsets.push_back(returned.contains(r) ? -1 : offsets.lookup(r));
    op.setAttr("schedule.offsets", b.getDenseI64ArrayAttr(resultOffsets));
  }
  fn->setAttr("schedule.workspace_bytes", b.getI64IntegerAttr(peak));
  return peak;
}

LogicalResult MemoryPlanner::planFunctions() {
  llvm::DenseSet<Operation *> seen;
  for (auto layer : plan.getLayers())
    for (FlatSymbolRefAttr ref :
         {layer.getForwardAttr(), layer.getSavingAttr(), layer.getBackwardAttr()}) {
      if (!ref)
        continue;
      auto fn = module.lookupSymbol<func::FuncOp>(ref);
      if (!fn)
        return plan.emitError("rp-plan-memory: layer @")
               << layer.getSymName() << " names " << ref << ", which is not a function";
      if (seen.insert(fn).second)
        functions.push_back(fn);
    }
  // Constants: one copy of each distinct value in the constants region.
  llvm::DenseMap<Attribute, int64_t> constantOffset;
  for (func::FuncOp fn : functions)
    fn.walk([&](graph::ConstantOp c) {
      auto [it, inserted] = constantOffset.insert({c.getValue(), constantsBytes});
      if (inserted)
        constantsBytes += alignUp(tensorBytes(c.getType()));
      c->setAttr("schedule.offset", b.getI64IntegerAttr(it->second));
    });
  for (func::FuncOp fn : functions) {
    int64_t peak = planFunction(fn);
    functionWorkspace[fn] = peak;
    workspaceBytes = std::max(workspaceBytes, peak);
  }
  return success();
}

void MemoryPlanner::planStages() {
  SmallVector<schedule::LayerOp> layers(plan.getLayers());
  for (auto stage : plan.getStages()) {
    // Host ranges: the stage's weights and its gradient slots are contiguous.
    int64_t wBegin = -1, wEnd = 0, sBegin = -1, sEnd = 0;
    for (int64_t l = stage.getBeginAttr().getInt(), e = stage.getEndAttr().getInt(); l < e; ++l) {
      auto layer = layers[l];
      for (auto [i, a] : llvm::enumerate(layer.getParams())) {
        auto p = module.lookupSymbol<graph::ParamOp>(cast<FlatSymbolRefAttr>(a));
        int64_t w = (*layer.getWeightOffsets())[i], s = (*layer.getGradOffsets())[i];
        if (wBegin < 0)
          wBegin = w;
        wEnd = w + alignUp(weightBytes(p));
        if (s >= 0) {
          if (sBegin < 0)
            sBegin = s;
          sEnd = s + alignUp(p.getTensorType().getNumElements() * 4);
        }
      }
    }
    int64_t weights = wBegin < 0 ? 0 : wEnd - wBegin;
    int64_t grads = (!stage.hasBackward() || sBegin < 0) ? 0 : sEnd - sBegin;
    stage.setWeightBytesAttr(b.getI64IntegerAttr(weights));
    stage.setGradBytesAttr(b.getI64IntegerAttr(grads));
    slotBytes = std::max(slotBytes, weights + grads);

    // Job-level values of one micro-batch, by liveness; downloaded values live to the end.
    Block &body = stage.getBody().front();
    schedule::MicroBatchOp mb;
    for (Operation &op : body)
      if (auto m = dyn_cast<schedule::MicroBatchOp>(op))
        mb = m;
    Block &mbBody = mb.getBody().front();
    llvm::DenseMap<Value, int64_t> defAt, lastUse;
    SmallVector<Value> values;
    int64_t position = 0, end = static_cast<int64_t>(mbBody.getOperations().size());
    int64_t workspace = 0;
    for (Operation &op : mbBody) {
      for (Value operand : op.getOperands())
        lastUse[operand] = isa<schedule::DownloadOp>(op) ? end : position;
      for (Value r : op.getResults()) {
        defAt[r] = position;
        values.push_back(r);
      }
      if (auto call = dyn_cast<schedule::CallOp>(op))
        workspace = std::max(workspace,
                             functionWorkspace.lookup(module.lookupSymbol(call.getCalleeAttr())));
      ++position;
    }
    llvm::DenseMap<Value, int64_t> offsets;
    int64_t peak = allocateByLiveness(values, defAt, lastUse,
                                      [&](Value v, int64_t offset) { offsets[v] = offset; });
    for (Operation &op : mbBody) {
      if (auto up = dyn_cast<schedule::UploadOp>(op))
        up.setOffsetAttr(b.getI64IntegerAttr(offsets.lookup(up.getResult())));
      if (auto call = dyn_cast<schedule::CallOp>(op)) {
        SmallVector<int64_t> o;
        for (Value r : call.getResults())
          o.push_back(offsets.lookup(r));
        call.setOffsetsAttr(b.getDenseI64ArrayAttr(o));
      }
    }
    stage.setActivationBytesAttr(b.getI64IntegerAttr(peak));
    stage.setWorkspaceBytesAttr(b.getI64IntegerAttr(workspace));
    activationBytes = std::max(activationBytes, peak);
  }
  // What a device running the job holds at most: the constants, its weights and gradients,
  // the next job's prefetched weights (at most a slot), two activation sets, the workspace.
  for (auto stage : plan.getStages())
    stage.setPeakBytesAttr(b.getI64IntegerAttr(
        constantsBytes + *stage.getWeightBytes() + *stage.getGradBytes() + slotBytes +
        2 * *stage.getActivationBytes() + *stage.getWorkspaceBytes()));
}

LogicalResult MemoryPlanner::run() {
  planHost();
  if (failed(planFunctions()))
    return failure();
  planStages();
  MLIRContext *ctx = module.getContext();
  plan.setDeviceArenaAttr(schedule::DeviceArenaAttr::get(
      ctx, alignUp(constantsBytes), alignUp(slotBytes), alignUp(activationBytes),
      alignUp(workspaceBytes)));
  plan.setHostArenaAttr(schedule::HostArenaAttr::get(
      ctx, weightsBytes, stateBytes, gradBytes, recordBytes * plan.getMicroBatches()));
  return success();
}

struct PlanMemoryPass : public impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<schedule::PlanOp> plans(module.getOps<schedule::PlanOp>());
    if (plans.size() != 1) {
      module.emitError("rp-plan-memory: expected one schedule.plan, found ") << plans.size();
      return signalPassFailure();
    }
    MemoryPlanner planner(module, plans.front());
    if (failed(planner.run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
