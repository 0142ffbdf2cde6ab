//===- LowerToSchedule.cpp - rp-lower-to-schedule -------------------------===//
//
// Builds one RoundPipe iteration as a `schedule.plan` from the layer functions and the stage
// partition (RoundPipe, arXiv 2604.27085, §3-4; the reference library's scheduler.py: forward
// stages ascend, the fused tail runs forward + loss + backward of the last layers, backward
// stages descend and recompute from inputs saved in the forward pass).
//
//===----------------------------------------------------------------------===//

#include "passes/Schedule/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "dialects/Schedule/IR/SharedParams.h"
#include "passes/Graph/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_LOWERTOSCHEDULE
#include "passes/Schedule/Passes.h.inc"

namespace {

using schedule::StageKind;

/// A layer output: (layer index, result index), named "<layer>#<result>".
using ValueId = std::pair<int64_t, int64_t>;

struct LayerArg {
  std::optional<ValueId> boundary; ///< Produced by an earlier layer.
  std::string input;               ///< Otherwise: the model input's name.
  Type type;
};

struct LayerInfo {
  func::FuncOp forward;
  func::FuncOp saving;   ///< The forward returning the residuals too (`<layer>_fwd`).
  func::FuncOp backward; ///< Consumes the residuals (`<layer>_bwd`).
  SmallVector<int64_t> residuals; ///< The `saving` result of each residual argument.
  SmallVector<LayerArg> args;
  SmallVector<unsigned> wrtArgs;     ///< Float boundary args (their gradients are results).
  SmallVector<unsigned> cotResults;  ///< Float results (one cotangent argument each).
  SmallVector<FlatSymbolRefAttr> params;
};

struct StageInfo {
  std::string name;
  StageKind kind;
  int64_t begin, end;
};

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

class Lowering {
public:
  Lowering(ModuleOp module, const LowerToScheduleOptions &options)
      : module(module), options(options), b(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult collectLayers();
  LogicalResult collectStages();
  LogicalResult checkUses();
  LogicalResult buildBackwardFunctions();
  LogicalResult convertComputeDType();
  void planTransfers();
  LogicalResult buildPlan();
  void buildStageBody(schedule::StageOp stageOp, size_t s);
  /// Layer `l`'s saving-forward call in backward-kind stage `s`: its outputs go to `values`
  /// (unless uploaded), downloaded when a later stage reads them; returns its residuals.
  SmallVector<Value> buildSavingCall(int64_t l, size_t s, SmallVector<Value> args,
                                     std::map<ValueId, Value> &values, Location loc);
  /// Layer `l`'s backward call in stage `st`: args (the layer's inputs) + its residuals + its
  /// cotangents, or for the last layer (the fused tail) the loss seed; then the loss download,
  /// the gradient accumulations and the input gradients (to `cotangents` inside the stage,
  /// else downloaded).
  void buildBackwardCall(int64_t l, const StageInfo &st, SmallVector<Value> args,
                         ArrayRef<Value> residuals, Value seed,
                         std::map<ValueId, Value> &cotangents, Location loc);

  std::string valueName(ValueId v) {
    return layers[v.first].forward.getSymName().str() + "#" + std::to_string(v.second);
  }
  std::string cotangentName(ValueId v) { return valueName(v) + ".cot"; }
  /// The stage running layer `l` in the forward pass (a forward stage or the fused tail).
  size_t forwardStageOf(int64_t l) const {
    for (size_t s = 0; s < stages.size(); ++s)
      if (stages[s].kind != StageKind::backward && stages[s].begin <= l && l < stages[s].end)
        return s;
    llvm_unreachable("layer outside the partition");
  }
  /// The stage running layer `l`'s backward (the fused tail or a backward stage).
  size_t backwardStageOf(int64_t l) const {
    for (size_t s = 0; s < stages.size(); ++s)
      if (stages[s].kind != StageKind::forward && stages[s].begin <= l && l < stages[s].end)
        return s;
    llvm_unreachable("layer outside the partition");
  }
  LogicalResult fail(const Twine &message) {
    module.emitError("rp-lower-to-schedule: ") << message;
    return failure();
  }

  ModuleOp module;
  const LowerToScheduleOptions &options;
  OpBuilder b;
  std::vector<LayerInfo> layers;
  SmallVector<StageInfo> stages;
  /// Consumer (layer, arg) of each boundary value.
  std::map<ValueId, std::pair<int64_t, unsigned>> consumer;
  /// Boundary values a stage reads from the host in its job body, with the stage that
  /// downloads them; model inputs per stage.
  llvm::MapVector<StringRef, Type> inputs;
  std::map<ValueId, size_t> activationProducer; ///< value -> stage downloading it
  std::map<ValueId, size_t> cotangentProducer;  ///< value -> stage downloading its cotangent
  llvm::StringMap<schedule::HostBufferOp> buffers;
  /// The readers of each trainable param, once the plan's layers exist (buildPlan).
  std::optional<schedule::ParamReaders> readers;
  std::string lossName = "loss";
  std::string seedName = "loss_seed"; ///< The fused tail's loss-seed buffer.
  FloatType computeType; ///< options.dtype, set first.
};

LogicalResult Lowering::collectLayers() {
  auto names = module->getAttrOfType<ArrayAttr>("graph.layers");
  if (!names)
    return fail("no 'graph.layers' attribute: run rp-group-layers first");
  llvm::StringMap<int64_t> indexOf;
  for (auto [i, a] : llvm::enumerate(names)) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    auto fn = ref ? module.lookupSymbol<func::FuncOp>(ref) : nullptr;
    if (!fn)
      return fail("'graph.layers' entry " + Twine(i) + " is not a function of the module");
    indexOf[fn.getSymName()] = i;
    LayerInfo info;
    info.forward = fn;
    for (unsigned a = 0; a < fn.getNumArguments(); ++a) {
      LayerArg arg;
      arg.type = fn.getArgumentTypes()[a];
      if (auto boundary = fn.getArgAttrOfType<StringAttr>(a, "graph.boundary")) {
        auto [layer, result] = boundary.getValue().split('#');
        int64_t r;
        auto it = indexOf.find(layer);
        if (it == indexOf.end() || result.getAsInteger(10, r))
          return fail("@" + fn.getSymName() + " argument " + Twine(a) + " names boundary '" +
                      boundary.getValue() + "', which is not an output of an earlier layer");
        arg.boundary = ValueId{it->second, r};
        if (isFloatTensor(arg.type))
          info.wrtArgs.push_back(a);
      } else if (auto name = fn.getArgAttrOfType<StringAttr>(a, "graph.name")) {
        arg.input = name.getValue().str();
        auto [it, inserted] = inputs.insert({name.getValue(), arg.type});
        if (!inserted && it->second != arg.type)
          return fail("model input '" + arg.input + "' has two types in the layer functions");
      } else {
        return fail("@" + fn.getSymName() + " argument " + Twine(a) +
                    " has neither 'graph.boundary' nor 'graph.name'");
      }
      info.args.push_back(arg);
    }
    for (auto [r, t] : llvm::enumerate(fn.getResultTypes()))
      if (isFloatTensor(t))
        info.cotResults.push_back(r);
    // Params in module order (the host order of the layer).
    llvm::DenseSet<StringRef> loaded;
    fn.walk([&](graph::LoadParamOp load) { loaded.insert(load.getParam()); });
    for (auto p : module.getOps<graph::ParamOp>())
      if (loaded.contains(p.getSymName()))
        info.params.push_back(FlatSymbolRefAttr::get(p.getSymNameAttr()));
    layers.push_back(std::move(info));
  }
  if (layers.empty())
    return fail("'graph.layers' is empty");
  return success();
}

LogicalResult Lowering::collectStages() {
  auto partition = module->getAttrOfType<DictionaryAttr>("graph.partition");
  if (!partition)
    return fail("no 'graph.partition' attribute: run rp-partition-stages first");
  auto forward = partition.getAs<ArrayAttr>("forward");
  auto backward = partition.getAs<ArrayAttr>("backward");
  if (!forward || !backward || backward.empty())
    return fail("'graph.partition' needs 'forward' and a non-empty 'backward' list");
  auto range = [&](Attribute a, int64_t &begin, int64_t &end) {
    auto r = dyn_cast<DenseI64ArrayAttr>(a);
    if (!r || r.size() != 2)
      return false;
    begin = r[0];
    end = r[1];
    return 0 <= begin && begin < end && end <= static_cast<int64_t>(layers.size());
  };
  for (auto [i, a] : llvm::enumerate(forward)) {
    StageInfo s{"F" + std::to_string(i), StageKind::forward, 0, 0};
    if (!range(a, s.begin, s.end))
      return fail("forward stage " + Twine(i) + " has an invalid layer range");
    stages.push_back(s);
  }
  for (auto [i, a] : llvm::enumerate(backward)) {
    StageInfo s{"B" + std::to_string(i), i == 0 ? StageKind::fused_tail : StageKind::backward,
                0, 0};
    if (!range(a, s.begin, s.end))
      return fail("backward stage " + Twine(i) + " has an invalid layer range");
    stages.push_back(s);
  }
  // Coverage: the schedule verifier states the invariants; check the partition here so that
  // the message names the partition rather than the built plan.
  int64_t next = 0;
  for (const StageInfo &s : stages) {
    if (s.kind == StageKind::backward)
      break;
    if (s.begin != next)
      return fail("stage " + s.name + " begins at layer " + Twine(s.begin) + ", expected " +
                  Twine(next));
    next = s.end;
  }
  if (next != static_cast<int64_t>(layers.size()))
    return fail("the forward stages and the fused tail end at layer " + Twine(next) +
                ", expected " + Twine(layers.size()));
  return success();
}

LogicalResult Lowering::checkUses() {
  for (auto [c, info] : llvm::enumerate(layers))
    for (auto [a, arg] : llvm::enumerate(info.args)) {
      if (!arg.boundary)
        continue;
      auto [it, inserted] = consumer.insert({*arg.boundary, {c, a}});
      if (!inserted)
        return fail("boundary value '" + valueName(*arg.boundary) + "' is used by @" +
                    layers[it->second.first].forward.getSymName() + " and @" +
                    info.forward.getSymName() +
                    "; a value used by two layers is not supported by the schedule yet");
    }
  for (size_t l = 0; l + 1 < layers.size(); ++l)
    for (unsigned r : layers[l].cotResults)
      if (!consumer.count({l, r}))
        return fail("result " + Twine(r) + " of @" + layers[l].forward.getSymName() +
                    " is used by no later layer");
  if (inputs.count(StringRef(lossName)))
    lossName = "loss.0";
  if (inputs.count(StringRef(seedName)))
    seedName = "loss_seed.0";
  return success();
}

LogicalResult Lowering::buildBackwardFunctions() {
  for (auto [l, info] : llvm::enumerate(layers)) {
    bool last = l + 1 == layers.size();
    // The seed of the last layer: the trainer's per-micro-batch seed (token weight, loss
    // scale). The same configuration as the partitioner's residual estimate (LayerCosts.h).
    AutodiffConfig config = layerGradientConfig(info.forward, last);
    assert(config.wrtArgs == info.wrtArgs && "layerGradientConfig disagrees with the lowering");
    auto saving = module.lookupSymbol<func::FuncOp>(config.output + "_fwd");
    auto backward = module.lookupSymbol<func::FuncOp>(config.output + "_bwd");
    if (saving && backward) {
      // Lowered before (the pass is idempotent on functions).
      info.saving = saving;
      info.backward = backward;
    } else {
      FailureOr<SplitGradient> split = buildSplitGradientFunctions(info.forward, config);
      if (failed(split))
        return failure();
      info.saving = split->forward;
      info.backward = split->backward;
    }
    auto residuals = info.backward->getAttrOfType<DenseI64ArrayAttr>("graph.residuals");
    if (!residuals)
      return fail("@" + info.backward.getSymName() + " has no 'graph.residuals' attribute");
    info.residuals.assign(residuals.asArrayRef().begin(), residuals.asArrayRef().end());
  }
  return success();
}

/// Mixed precision: weights and activations in the compute dtype (the kernels accumulate in
/// fp32; the optimizer keeps fp32 master weights). Every f32 tensor of the module's functions
/// and params becomes `dtype`; f32 constants are rounded to nearest even; the fused tail's
/// loss is cast back to f32 for the host.
LogicalResult Lowering::convertComputeDType() {
  FloatType dtype = computeType;
  if (dtype.isF32())
    return success();
  MLIRContext *ctx = module.getContext();
  auto convert = [&](Type t) -> Type {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.getElementType().isF32() ? rt.clone(dtype) : t;
  };
  for (auto p : module.getOps<graph::ParamOp>())
    p.setType(cast<RankedTensorType>(convert(p.getType())));
  for (auto fn : module.getOps<func::FuncOp>()) {
    for (BlockArgument a : fn.getArguments())
      a.setType(convert(a.getType()));
    WalkResult walk = fn.walk([&](Operation *op) {
      if (auto c = dyn_cast<graph::ConstantOp>(op)) {
        auto rt = cast<RankedTensorType>(c.getType());
        if (rt.getElementType().isF32()) {
          auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
          if (!dense) {
            c.emitError("rp-lower-to-schedule: cannot convert this constant to ") << dtype;
            return WalkResult::interrupt();
          }
          c.setValueAttr(dense.mapValues(dtype, [&](const APFloat &v) {
            APFloat x = v;
            bool lost;
            x.convert(dtype.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
            return x.bitcastToAPInt();
          }));
        }
      }
      for (Value r : op->getResults())
        r.setType(convert(r.getType()));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    fn.setType(FunctionType::get(ctx, fn.getBody().getArgumentTypes(), ret.getOperandTypes()));
  }
  // The loss leaves the fused tail in f32, and its seed comes in as f32 (a loss scale of 2^16
  // times a token share may exceed fp16's range before the share is applied).
  func::FuncOp tail = layers.back().backward;
  BlockArgument seed = tail.getArguments().back();
  Type seedType = seed.getType();
  seed.setType(cast<RankedTensorType>(seedType).clone(Float32Type::get(ctx)));
  b.setInsertionPointToStart(&tail.getBody().front());
  Value seedCast = graph::CastOp::create(b, tail.getLoc(), seedType, seed);
  seed.replaceAllUsesExcept(seedCast, seedCast.getDefiningOp());
  auto ret = cast<func::ReturnOp>(tail.getBody().front().getTerminator());
  Value loss = ret.getOperand(0);
  auto lossType = cast<RankedTensorType>(loss.getType());
  b.setInsertionPoint(ret);
  Value f32Loss = graph::CastOp::create(b, ret.getLoc(), lossType.clone(Float32Type::get(ctx)), loss);
  ret.setOperand(0, f32Loss);
  tail.setType(FunctionType::get(ctx, tail.getBody().getArgumentTypes(), ret.getOperandTypes()));
  return success();
}

void Lowering::planTransfers() {
  bool layerGrain = options.recompute == schedule::RecomputeGrain::layer;
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageInfo &st = stages[s];
    for (int64_t l = st.begin; l < st.end; ++l)
      for (const LayerArg &arg : layers[l].args) {
        if (!arg.boundary)
          continue;
        int64_t p = arg.boundary->first;
        bool fromOutside = p < st.begin;
        // Backward stages with layer grain read every layer's input from the host.
        if (st.kind == StageKind::backward && layerGrain)
          fromOutside = true;
        if (fromOutside)
          activationProducer[*arg.boundary] = forwardStageOf(p);
      }
    if (st.kind == StageKind::forward)
      continue;
    // Cotangents of this stage's outputs computed by a later layer in another stage.
    for (int64_t l = st.begin; l < st.end; ++l)
      for (unsigned r : layers[l].cotResults) {
        auto it = consumer.find({l, r});
        if (it != consumer.end() && it->second.first >= st.end)
          cotangentProducer[{l, r}] = backwardStageOf(it->second.first);
      }
  }
}

void Lowering::buildStageBody(schedule::StageOp stageOp, size_t s) {
  const StageInfo &st = stages[s];
  MLIRContext *ctx = module.getContext();
  Location loc = stageOp.getLoc();
  Block *stageBlock = &stageOp.getBody().emplaceBlock();
  b.setInsertionPointToEnd(stageBlock);
  schedule::AwaitWeightsOp::create(b, loc);
  auto mb = schedule::MicroBatchOp::create(b, loc);
  Block *body = &mb.getBody().emplaceBlock();
  if (st.kind != StageKind::forward)
    schedule::DownloadGradsOp::create(b, loc);
  b.setInsertionPointToEnd(body);

  auto sym = [&](StringRef name) { return FlatSymbolRefAttr::get(ctx, name); };
  auto stageSym = [&](size_t i) { return sym(stages[i].name); };
  bool layerGrain =
      options.recompute == schedule::RecomputeGrain::layer && st.kind == StageKind::backward;

  // Uploads: model inputs (once each), boundary values produced outside the stage (or every
  // boundary input with layer grain), cotangents from the previous backward stage.
  llvm::StringMap<Value> inputValues;
  std::map<ValueId, Value> values;
  std::map<ValueId, Value> cotangents;
  for (int64_t l = st.begin; l < st.end; ++l)
    for (const LayerArg &arg : layers[l].args) {
      if (!arg.boundary) {
        if (!inputValues.count(arg.input))
          inputValues[arg.input] = schedule::UploadOp::create(
              b, loc, arg.type, sym(buffers[arg.input].getSymName()), nullptr, nullptr);
        continue;
      }
      ValueId v = *arg.boundary;
      if ((v.first < st.begin || layerGrain) && !values.count(v))
        values[v] = schedule::UploadOp::create(b, loc, arg.type, sym(valueName(v)),
                                               stageSym(activationProducer.at(v)), nullptr);
    }
  if (st.kind != StageKind::forward)
    for (int64_t l = st.begin; l < st.end; ++l)
      for (unsigned r : layers[l].cotResults) {
        auto it = cotangentProducer.find({l, r});
        if (it != cotangentProducer.end() && it->second != s)
          cotangents[{l, r}] = schedule::UploadOp::create(
              b, loc, layers[l].forward.getResultTypes()[r], sym(cotangentName({l, r})),
              stageSym(it->second), nullptr);
      }
  // The fused tail's loss seed (filled by the trainer per micro-batch).
  Value seed;
  if (st.kind == StageKind::fused_tail)
    seed = schedule::UploadOp::create(b, loc, buffers[seedName].getTensorType(),
                                      sym(seedName), nullptr, nullptr);
  schedule::PrefetchNextOp::create(b, loc);

  auto argsOf = [&](int64_t l) {
    SmallVector<Value> args;
    for (const LayerArg &arg : layers[l].args)
      args.push_back(arg.boundary ? values.at(*arg.boundary) : inputValues.at(arg.input));
    return args;
  };
  // A forward stage runs every layer's forward.
  if (st.kind == StageKind::forward) {
    for (int64_t l = st.begin; l < st.end; ++l) {
      func::FuncOp fn = layers[l].forward;
      auto call = schedule::CallOp::create(b, loc, fn.getResultTypes(), sym(fn.getSymName()),
                                           argsOf(l), nullptr);
      for (auto [r, v] : llvm::enumerate(call.getResults())) {
        values[{l, (int64_t)r}] = v;
        if (activationProducer.count({l, (int64_t)r}) && activationProducer.at({l, (int64_t)r}) == s)
          schedule::DownloadOp::create(b, loc, v, sym(valueName({l, (int64_t)r})));
      }
    }
    return;
  }
  // Backward kinds run each layer's forward once, saving its residuals, and its backward once:
  // with layer grain (every input uploaded) layer by layer from the top; otherwise every
  // forward bottom-up (each feeds the next), then every backward top-down.
  std::map<int64_t, SmallVector<Value>> residuals;
  if (layerGrain) {
    for (int64_t l = st.end - 1; l >= st.begin; --l) {
      residuals[l] = buildSavingCall(l, s, argsOf(l), values, loc);
      buildBackwardCall(l, st, argsOf(l), residuals[l], seed, cotangents, loc);
    }
  } else {
    for (int64_t l = st.begin; l < st.end; ++l)
      residuals[l] = buildSavingCall(l, s, argsOf(l), values, loc);
    for (int64_t l = st.end - 1; l >= st.begin; --l)
      buildBackwardCall(l, st, argsOf(l), residuals[l], seed, cotangents, loc);
  }
  // A forward whose results nothing reads (a layer whose backward needs no residual, at the
  // top of a backward stage or with layer grain) is not run; last first, so that a chain of
  // such forwards goes.
  SmallVector<schedule::CallOp> calls(body->getOps<schedule::CallOp>());
  for (schedule::CallOp call : llvm::reverse(calls))
    if (call->use_empty() && llvm::any_of(layers, [&](LayerInfo &info) {
          return info.saving.getSymName() == call.getCallee();
        }))
      call->erase();
}

SmallVector<Value> Lowering::buildSavingCall(int64_t l, size_t s, SmallVector<Value> args,
                                             std::map<ValueId, Value> &values, Location loc) {
  auto sym = [&](StringRef name) { return FlatSymbolRefAttr::get(module.getContext(), name); };
  LayerInfo &info = layers[l];
  auto call = schedule::CallOp::create(b, loc, info.saving.getResultTypes(),
                                       sym(info.saving.getSymName()), args, nullptr);
  // The last layer's `_fwd` returns residuals only (its forward result is the loss, which
  // its `_bwd` returns).
  const bool last = l + 1 == static_cast<int64_t>(layers.size());
  const unsigned numOutputs = last ? 0 : info.forward.getNumResults();
  for (unsigned r = 0; r < numOutputs; ++r) {
    ValueId v{l, (int64_t)r};
    values.insert({v, call.getResult(r)}); // an uploaded input stays the one read
    auto it = activationProducer.find(v);
    if (it != activationProducer.end() && it->second == s)
      schedule::DownloadOp::create(b, loc, call.getResult(r), sym(valueName(v)));
  }
  SmallVector<Value> saved;
  for (int64_t index : info.residuals)
    saved.push_back(call.getResult(index));
  return saved;
}

void Lowering::buildBackwardCall(int64_t l, const StageInfo &st, SmallVector<Value> args,
                                 ArrayRef<Value> residuals, Value seed,
                                 std::map<ValueId, Value> &cotangents, Location loc) {
  MLIRContext *ctx = module.getContext();
  auto sym = [&](StringRef name) { return FlatSymbolRefAttr::get(ctx, name); };
  LayerInfo &info = layers[l];
  const bool last = l + 1 == static_cast<int64_t>(layers.size());
  args.append(residuals.begin(), residuals.end());
  if (!last)
    for (unsigned r : info.cotResults)
      args.push_back(cotangents.at({l, (int64_t)r}));
  else
    args.push_back(seed);
  func::FuncOp fn = info.backward;
  auto call = schedule::CallOp::create(b, loc, fn.getResultTypes(), sym(fn.getSymName()), args,
                                       nullptr);
  unsigned next = 0;
  if (last)
    schedule::DownloadOp::create(b, loc, call.getResult(next++),
                                 sym(buffers[lossName].getSymName()));
  for (FlatSymbolRefAttr p : info.params)
    if (module.lookupSymbol<graph::ParamOp>(p).getTrainable())
      schedule::AccumulateOp::create(b, loc, call.getResult(next++), p,
                                     readers->isShared(p.getValue())
                                         ? FlatSymbolRefAttr::get(info.forward.getSymNameAttr())
                                         : FlatSymbolRefAttr());
  for (unsigned a : info.wrtArgs) {
    ValueId v = *info.args[a].boundary;
    Value g = call.getResult(next++);
    if (v.first >= st.begin)
      cotangents[v] = g;
    else
      schedule::DownloadOp::create(b, loc, g, sym(cotangentName(v)));
  }
}

LogicalResult Lowering::buildPlan() {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  auto partition = module->getAttrOfType<DictionaryAttr>("graph.partition");
  auto gpus = partition.getAs<IntegerAttr>("gpus");
  auto microBatches = partition.getAs<IntegerAttr>("micro_batches");
  if (!gpus || !microBatches)
    return fail("'graph.partition' needs 'gpus' and 'micro_batches'");
  if (module.lookupSymbol(options.planName))
    return fail("a symbol named '" + options.planName + "' already exists");

  auto f = [](double v) { return llvm::APFloat(v); };
  auto adamw = schedule::AdamWAttr::get(ctx, f(options.lr), f(options.beta1), f(options.beta2),
                                        f(options.eps), f(options.weightDecay),
                                        f(options.gradClip));
  b.setInsertionPointToEnd(module.getBody());
  auto plan = schedule::PlanOp::create(
      b, loc, b.getStringAttr(options.planName), b.getI64IntegerAttr(microBatches.getInt()),
      b.getI64IntegerAttr(gpus.getInt()), schedule::UpdateModeAttr::get(ctx, options.update),
      schedule::RecomputeGrainAttr::get(ctx, options.recompute), b.getStringAttr("round_robin"),
      TypeAttr::get(computeType), adamw, nullptr, nullptr);
  Block *body = &plan.getBody().emplaceBlock();
  b.setInsertionPointToEnd(body);

  for (LayerInfo &info : layers)
    schedule::LayerOp::create(b, loc, info.forward.getSymNameAttr(),
                              FlatSymbolRefAttr::get(info.forward.getSymNameAttr()),
                              FlatSymbolRefAttr::get(info.backward.getSymNameAttr()),
                              b.getArrayAttr(SmallVector<Attribute>(info.params.begin(),
                                                                    info.params.end())),
                              FlatSymbolRefAttr::get(info.saving.getSymNameAttr()), nullptr,
                              nullptr, nullptr);
  // A trainable param read by several layers is one parameter with a copy per reading layer
  // (dialects/Schedule/IR/SharedParams.h): its gradients are accumulated per reader.
  readers.emplace(plan);

  auto addBuffer = [&](StringRef name, schedule::BufferKind kind, StringAttr inputName,
                       Type type) {
    auto op = schedule::HostBufferOp::create(b, loc, b.getStringAttr(name),
                                             schedule::BufferKindAttr::get(ctx, kind),
                                             inputName, TypeAttr::get(type), nullptr);
    buffers[name] = op;
  };
  for (auto &[name, type] : inputs)
    addBuffer(name, schedule::BufferKind::input, b.getStringAttr(name), type);
  for (auto &[v, stage] : activationProducer)
    addBuffer(valueName(v), schedule::BufferKind::activation, nullptr,
              layers[v.first].forward.getResultTypes()[v.second]);
  for (auto &[v, stage] : cotangentProducer)
    addBuffer(cotangentName(v), schedule::BufferKind::cotangent, nullptr,
              layers[v.first].forward.getResultTypes()[v.second]);
  Type lossType = layers.back().backward.getResultTypes().front();
  addBuffer(lossName, schedule::BufferKind::loss, nullptr, lossType);
  addBuffer(seedName, schedule::BufferKind::loss_seed, nullptr,
            layers.back().backward.getArgumentTypes().back());

  for (size_t s = 0; s < stages.size(); ++s) {
    b.setInsertionPointToEnd(body);
    auto stageOp = schedule::StageOp::create(
        b, loc, b.getStringAttr(stages[s].name),
        schedule::StageKindAttr::get(ctx, stages[s].kind), b.getI64IntegerAttr(stages[s].begin),
        b.getI64IntegerAttr(stages[s].end), nullptr, nullptr, nullptr, nullptr, nullptr);
    buildStageBody(stageOp, s);
  }

  // Optimizer steps in the order gradients arrive: backward-kind stages in dispatch order,
  // layers descending inside each; one per layer owning a trainable param, waiting for the
  // events dialects/Schedule/IR/SharedParams.h derives.
  b.setInsertionPointToEnd(body);

  for (size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].kind == StageKind::forward)
      continue;
    for (int64_t l = stages[s].end - 1; l >= stages[s].begin; --l) {
      if (!readers->ownsTrainable(static_cast<unsigned>(l)))
        continue;
      schedule::OptimizerStepEvents events =
          schedule::expectedOptimizerStep(plan, *readers, static_cast<unsigned>(l));
      if (events.grads.getSymName() != stages[s].name)
        continue; // the layer's gradients arrive in an earlier stage
      schedule::OptimizerStepOp::create(
          b, loc, FlatSymbolRefAttr::get(layers[l].forward.getSymNameAttr()),
          FlatSymbolRefAttr::get(ctx, stages[s].name),
          events.sharedGrads.empty() ? ArrayAttr()
                                     : schedule::stageRefs(ctx, events.sharedGrads),
          schedule::stageRefs(ctx, events.uploads));
    }
  }
  return success();
}

LogicalResult Lowering::run() {
  MLIRContext *ctx = module.getContext();
  switch (options.dtype) {
  case ComputeDType::F32:
    computeType = Float32Type::get(ctx);
    break;
  case ComputeDType::F16:
    computeType = Float16Type::get(ctx);
    break;
  case ComputeDType::BF16:
    computeType = BFloat16Type::get(ctx);
    break;
  }
  if (failed(collectLayers()) || failed(collectStages()) || failed(checkUses()) ||
      failed(buildBackwardFunctions()) || failed(convertComputeDType()))
    return failure();
  for (LayerInfo &info : layers)
    for (auto [arg, type] : llvm::zip(info.args, info.forward.getArgumentTypes()))
      arg.type = type;
  planTransfers();
  return buildPlan();
}

struct LowerToSchedulePass : public impl::LowerToScheduleBase<LowerToSchedulePass> {
  using LowerToScheduleBase::LowerToScheduleBase;

  void runOnOperation() override {
    LowerToScheduleOptions opts{planName, update, recompute, dtype, lr, beta1, beta2, eps,
                                weightDecay, gradClip};
    Lowering lowering(getOperation(), opts);
    if (failed(lowering.run()))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
