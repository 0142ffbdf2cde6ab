//===- SplitGradient.cpp - rp-split-gradient ------------------------------===//
//
// Splits a layer's reverse-mode function into a forward that saves residuals and a backward
// that consumes them (PyTorch autograd's saved tensors; RoundPipe's backward stages run each
// layer's forward once, then its backward). The gradient function comes from rp-autodiff with
// its forward copy tagged (`rp.forward`); the split moves the tagged ops to `<name>_fwd`, the
// reverse pass to `<name>_bwd`, and passes the forward values the reverse pass reads as
// results of the one and arguments of the other. No op changes: the arithmetic is the unsplit
// function's, op for op.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::rp {

#define GEN_PASS_DEF_SPLITGRADIENT
#include "passes/Graph/Passes.h.inc"

namespace {

constexpr StringLiteral kForwardTag = "rp.forward";

bool isForwardOp(Operation *op) { return op && op->hasAttr(kForwardTag); }

/// Makes every op that reads `v`, transitively, a reverse-pass op: the loss terms added to a
/// cross-entropy whose value now comes from its VJP (graph::moveLossUsersAfterVjp) run in
/// `_bwd`, after that VJP, and are no forward ops any more.
void untagReaders(Value v) {
  SmallVector<Value> work{v};
  while (!work.empty())
    for (Operation *user : work.pop_back_val().getUsers())
      if (isForwardOp(user)) {
        user->removeAttr(kForwardTag);
        llvm::append_range(work, user->getResults());
      }
}

/// What the backward does for a forward value it reads.
enum class Residual {
  save,  ///< A result of `_fwd`, an argument of `_bwd`.
  remat, ///< Re-emitted in `_bwd`; its operands are needed instead.
  defer, ///< A reshape: re-emitted when its operand is in `_bwd` anyway, else saved.
};

/// How the backward gets the value of forward op `op`: param loads, constants, pure ops other
/// than contractions whose operands all come from params and constants alone (a transposed
/// or cast weight, a mask built from iota constants) and broadcasts (`graph.expand`: its
/// operand is the smaller residual) are re-emitted; a reshape (a copy as large as its
/// operand) is deferred; anything else is saved.
Residual residualKind(Operation *op, llvm::DenseMap<Operation *, bool> &paramOnly) {
  if (!isPure(op))
    return Residual::save;
  if (op->getNumOperands() == 0 || isa<graph::ExpandOp>(op))
    return Residual::remat;
  if (isa<graph::MatMulOp, graph::AttentionOp>(op))
    return Residual::save;
  std::function<bool(Operation *)> fromParams = [&](Operation *o) -> bool {
    if (!o || !isPure(o))
      return false;
    auto it = paramOnly.find(o);
    if (it != paramOnly.end())
      return it->second;
    bool r = !isa<graph::MatMulOp, graph::AttentionOp>(o) &&
             llvm::all_of(o->getOperands(), [&](Value v) { return fromParams(v.getDefiningOp()); });
    paramOnly[o] = r;
    return r;
  };
  if (fromParams(op))
    return Residual::remat;
  return isa<graph::ReshapeOp>(op) ? Residual::defer : Residual::save;
}

/// Erases the pure ops of `fn` whose results nothing uses, last first.
void removeDeadOps(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isPure(op))
      op->erase();
}

/// The split of one tagged gradient function `grad`: its first `numArgs` arguments are the
/// layer's, the rest cotangents or the seed; its first `numResults` results are the layer's
/// forward results (they go to the forward function), the rest gradients (and the loss).
class Splitter {
public:
  Splitter(func::FuncOp grad, unsigned numArgs, unsigned numResults)
      : grad(grad), numArgs(numArgs), numResults(numResults), b(grad.getContext()) {}

  FailureOr<SplitGradient> split(StringRef forwardName, StringRef backwardName) {
    if (failed(collectSaved()))
      return failure();
    SplitGradient out;
    out.forward = buildForward(forwardName);
    out.backward = buildBackward(backwardName);
    return out;
  }

private:
  Block &body() { return grad.getBody().front(); }
  func::ReturnOp ret() { return cast<func::ReturnOp>(body().getTerminator()); }

  /// The forward values the reverse pass reads, minus those it rematerialises: `saved`, in
  /// op order; `remat` the forward ops re-emitted in the backward.
  LogicalResult collectSaved() {
    SmallVector<Value> work;
    auto need = [&](Value v) {
      if (isForwardOp(v.getDefiningOp()))
        work.push_back(v);
    };
    for (Operation &op : body().without_terminator()) {
      bool forward = isForwardOp(&op);
      for (Value v : op.getOperands()) {
        if (forward && v.getDefiningOp() && !isForwardOp(v.getDefiningOp()))
          return op.emitError("rp-split-gradient: a forward op reads a value of the reverse "
                              "pass");
        if (forward && isa<BlockArgument>(v) && cast<BlockArgument>(v).getArgNumber() >= numArgs)
          return op.emitError("rp-split-gradient: a forward op reads a cotangent argument");
        if (!forward)
          need(v);
      }
    }
    for (Value v : ret().getOperands().drop_front(numResults))
      need(v);
    llvm::DenseMap<Operation *, bool> paramOnly;
    llvm::DenseSet<Value> visited;
    llvm::SetVector<Value> savedSet;
    SmallVector<Value> deferred;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!visited.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      switch (residualKind(def, paramOnly)) {
      case Residual::save:
        savedSet.insert(v);
        continue;
      case Residual::defer:
        deferred.push_back(v);
        continue;
      case Residual::remat:
        remat.insert(def);
        for (Value operand : def->getOperands())
          need(operand);
        continue;
      }
    }
    llvm::DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body().getOperations()))
      position[&op] = i;
    // Reshapes in op order (a chain's first link decides before the next): re-emitted when the
    // operand is a layer argument, saved or re-emitted anyway, else saved themselves.
    llvm::sort(deferred, [&](Value a, Value c) {
      return position[a.getDefiningOp()] < position[c.getDefiningOp()];
    });
    // A value is in `_bwd` anyway when it is an argument, saved, re-emitted, or a chain of
    // reshapes of such a value (re-emitted with it).
    std::function<bool(Value)> available = [&](Value v) -> bool {
      Operation *def = v.getDefiningOp();
      if (!isForwardOp(def) || savedSet.contains(v) || remat.contains(def))
        return true;
      if (!isa<graph::ReshapeOp>(def) || !available(def->getOperand(0)))
        return false;
      remat.insert(def);
      return true;
    };
    for (Value v : deferred)
      if (!available(v))
        savedSet.insert(v);
    saved.assign(savedSet.begin(), savedSet.end());
    llvm::sort(saved, [&](Value a, Value c) {
      auto ka = std::make_pair(position[a.getDefiningOp()], cast<OpResult>(a).getResultNumber());
      auto kc = std::make_pair(position[c.getDefiningOp()], cast<OpResult>(c).getResultNumber());
      return ka < kc;
    });
    return success();
  }

  /// `<name>_fwd`: the layer's args -> its forward results, then the saved values that are
  /// not among them.
  func::FuncOp buildForward(StringRef name) {
    SmallVector<Value> results(ret().getOperands().take_front(numResults));
    for (Value v : saved) {
      auto it = llvm::find(results, v);
      residualIndex.push_back(it - results.begin());
      if (it == results.end())
        results.push_back(v);
    }
    SmallVector<Type> argTypes(grad.getArgumentTypes().take_front(numArgs));
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    b.setInsertionPoint(grad);
    auto fn = func::FuncOp::create(b, grad.getLoc(), name, b.getFunctionType(argTypes, resultTypes));
    Block *entry = fn.addEntryBlock();
    IRMapping map;
    for (unsigned i = 0; i < numArgs; ++i) {
      map.map(grad.getArgument(i), entry->getArgument(i));
      if (auto attrs = grad.getArgAttrDict(i))
        fn.setArgAttrs(i, attrs);
    }
    b.setInsertionPointToStart(entry);
    for (Operation &op : body().without_terminator())
      if (isForwardOp(&op))
        b.clone(op, map)->removeAttr(kForwardTag);
    SmallVector<Value> mapped;
    for (Value v : results)
      mapped.push_back(map.lookupOrDefault(v));
    func::ReturnOp::create(b, grad.getLoc(), mapped);
    removeDeadOps(fn);
    return fn;
  }

  /// `<name>_bwd`: the layer's args, the saved values, the cotangents or seed -> the gradient
  /// function's results after the forward ones, with their attributes.
  func::FuncOp buildBackward(StringRef name) {
    SmallVector<Type> argTypes(grad.getArgumentTypes().take_front(numArgs));
    for (Value v : saved)
      argTypes.push_back(v.getType());
    for (Type t : grad.getArgumentTypes().drop_front(numArgs))
      argTypes.push_back(t);
    SmallVector<Type> resultTypes(grad.getResultTypes().drop_front(numResults));
    b.setInsertionPoint(grad);
    auto fn = func::FuncOp::create(b, grad.getLoc(), name, b.getFunctionType(argTypes, resultTypes));
    Block *entry = fn.addEntryBlock();
    IRMapping map;
    const unsigned numSaved = saved.size();
    for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
      unsigned to = i < numArgs ? i : i + numSaved;
      map.map(grad.getArgument(i), entry->getArgument(to));
      if (auto attrs = grad.getArgAttrDict(i))
        fn.setArgAttrs(to, attrs);
    }
    for (auto [k, v] : llvm::enumerate(saved)) {
      map.map(v, entry->getArgument(numArgs + k));
      fn.setArgAttr(numArgs + k, "graph.residual", b.getI64IntegerAttr(residualIndex[k]));
    }
    b.setInsertionPointToStart(entry);
    for (Operation &op : body().without_terminator())
      if (!isForwardOp(&op) || remat.contains(&op))
        b.clone(op, map)->removeAttr(kForwardTag);
    SmallVector<Value> mapped;
    for (Value v : ret().getOperands().drop_front(numResults))
      mapped.push_back(map.lookup(v));
    func::ReturnOp::create(b, grad.getLoc(), mapped);
    for (unsigned r = numResults; r < grad.getNumResults(); ++r)
      if (auto attrs = grad.getResultAttrDict(r))
        fn.setResultAttrs(r - numResults, attrs);
    SmallVector<int64_t> indices(residualIndex.begin(), residualIndex.end());
    fn->setAttr("graph.residuals", b.getDenseI64ArrayAttr(indices));
    removeDeadOps(fn);
    return fn;
  }

  func::FuncOp grad;
  unsigned numArgs, numResults;
  OpBuilder b;
  SmallVector<Value> saved;
  SmallVector<int64_t> residualIndex; ///< The forward function's result index of each saved value.
  llvm::DenseSet<Operation *> remat;
};

} // namespace

FailureOr<SplitGradient> buildSplitGradientFunctions(func::FuncOp forward,
                                                     const AutodiffConfig &config) {
  auto module = forward->getParentOfType<ModuleOp>();
  std::string fwdName = config.output + "_fwd", bwdName = config.output + "_bwd";
  for (const std::string &name : {fwdName, bwdName})
    if (module.lookupSymbol(name))
      return forward.emitError("rp-split-gradient: a symbol named '") << name
                                                                       << "' already exists";
  AutodiffConfig tagged = config;
  tagged.output = config.output + "_unsplit";
  tagged.tagForwardOps = true;
  if (config.cotangentArgs)
    tagged.forwardResults = true;
  FailureOr<func::FuncOp> grad = buildGradientFunction(forward, tagged);
  if (failed(grad))
    return failure();
  // A fused loss whose one-pass VJP also computes it: the loss comes from the VJP, so the
  // logits are computed once, in `_bwd` (split apart, the canonicalizer could not merge them).
  SmallVector<graph::LinearCrossEntropyOp> losses;
  grad->walk([&](graph::LinearCrossEntropyOp op) { losses.push_back(op); });
  for (graph::LinearCrossEntropyOp op : losses) {
    // A loss that adds another term (a router's load-balancing loss) reads the cross-entropy
    // before the VJP of the sum: its readers move after the VJP first.
    IRRewriter rewriter(op.getContext());
    const bool moved = graph::moveLossUsersAfterVjp(op, rewriter);
    if (graph::LinearCrossEntropyVjpOp vjp = graph::findOnePassVjp(op)) {
      op.getResult().replaceAllUsesWith(vjp.getLoss());
      op->erase();
      if (moved)
        untagReaders(vjp.getLoss());
    }
  }
  unsigned numResults = config.cotangentArgs ? forward.getNumResults() : 0;
  FailureOr<SplitGradient> split =
      Splitter(*grad, forward.getNumArguments(), numResults).split(fwdName, bwdName);
  grad->erase();
  return split;
}

AutodiffConfig layerGradientConfig(func::FuncOp layer, bool last) {
  AutodiffConfig config;
  config.output = layer.getSymName().str();
  for (unsigned a = 0; a < layer.getNumArguments(); ++a) {
    auto type = dyn_cast<RankedTensorType>(layer.getArgumentTypes()[a]);
    if (type && isa<FloatType>(type.getElementType()) &&
        layer.getArgAttr(a, "graph.boundary"))
      config.wrtArgs.push_back(a);
  }
  config.cotangentArgs = !last;
  config.seedArg = last;
  config.usedParamsOnly = true;
  return config;
}

FailureOr<int64_t> layerResidualBytes(func::FuncOp layer, const AutodiffConfig &config,
                                      int64_t floatBytes) {
  // The split itself, under names no symbol can have, read and erased.
  AutodiffConfig probe = config;
  probe.output = config.output + ".residual_probe";
  FailureOr<SplitGradient> split = buildSplitGradientFunctions(layer, probe);
  if (failed(split))
    return failure();
  auto bytes = [&](Type t) -> int64_t {
    auto rt = cast<RankedTensorType>(t);
    Type e = rt.getElementType();
    int64_t size = isa<FloatType>(e) && floatBytes > 0
                       ? floatBytes
                       : std::max<int64_t>(e.getIntOrFloatBitWidth() / 8, 1);
    return rt.getNumElements() * size;
  };
  // `_bwd`'s arguments: the layer's, the residuals, then the cotangents or the seed.
  auto residuals = split->backward->getAttrOfType<DenseI64ArrayAttr>("graph.residuals");
  const unsigned fromForward = layer.getNumArguments() + static_cast<unsigned>(residuals.size());
  int64_t total = 0;
  for (unsigned a = 0; a < fromForward; ++a) {
    BlockArgument arg = split->backward.getArgument(a);
    if (!arg.use_empty())
      total += bytes(arg.getType());
  }
  split->forward.erase();
  split->backward.erase();
  return total;
}

namespace {

struct SplitGradientPass : public impl::SplitGradientBase<SplitGradientPass> {
  using SplitGradientBase::SplitGradientBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError("rp-split-gradient: no function named '") << function << "'";
      return signalPassFailure();
    }
    if (cotangentArgs && seedArg) {
      module.emitError("rp-split-gradient: cotangent-args and seed-arg exclude each other");
      return signalPassFailure();
    }
    AutodiffConfig config;
    config.output = function;
    config.wrtArgs.assign(wrtArgs.begin(), wrtArgs.end());
    config.cotangentArgs = cotangentArgs;
    config.seedArg = seedArg;
    config.usedParamsOnly = true;
    if (failed(buildSplitGradientFunctions(forward, config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
