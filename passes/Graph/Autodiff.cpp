//===- Autodiff.cpp - reverse-mode automatic differentiation --------------===//
//
// rp-autodiff: clones the forward function into the gradient function, seeds the loss (or
// takes the results' cotangents as arguments), walks the cloned ops in reverse and asks each
// op on a gradient path for its VJP (GradientOpInterface), accumulating cotangents at fan-out.
// Only values that depend on a trainable param or a wrt argument are differentiated; unused
// forward ops are removed at the end.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rp {

#define GEN_PASS_DEF_AUTODIFF
#include "passes/Graph/Passes.h.inc"

namespace {

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

Value zerosOf(OpBuilder &b, Location loc, Type type) {
  auto rt = cast<RankedTensorType>(type);
  return graph::ConstantOp::create(
      b, loc, rt, DenseElementsAttr::get(rt, b.getFloatAttr(rt.getElementType(), 0.0)));
}

/// Emits an error at `forward` and fails when `config` cannot differentiate it: more than one
/// block, a loss that is not a scalar float (without cotangent arguments), a wrt argument out
/// of range or not a float tensor, an output name already taken.
LogicalResult checkGradientRequest(func::FuncOp forward, const AutodiffConfig &config) {
  auto module = forward->getParentOfType<ModuleOp>();
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("rp-autodiff: expected a function with one block");
  FunctionType ft = forward.getFunctionType();
  if (!config.cotangentArgs) {
    auto loss = ft.getNumResults() ? dyn_cast<RankedTensorType>(ft.getResult(0)) : nullptr;
    if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType())) {
      auto diag = forward.emitError("rp-autodiff: expected the loss (result 0 of @")
                  << forward.getSymName() << ") to be a scalar floating-point tensor, got ";
      if (ft.getNumResults())
        diag << ft.getResult(0);
      else
        diag << "no result";
      return diag;
    }
  }
  for (unsigned a : config.wrtArgs) {
    if (a >= ft.getNumInputs())
      return forward.emitError("rp-autodiff: wrt-args index ")
             << a << " is out of range (@" << forward.getSymName() << " has "
             << ft.getNumInputs() << " arguments)";
    if (!isFloatTensor(ft.getInput(a)))
      return forward.emitError("rp-autodiff: argument ")
             << a << " is not a floating-point tensor (" << ft.getInput(a)
             << ") and has no gradient";
  }
  if (module.lookupSymbol(config.output))
    return forward.emitError("rp-autodiff: a symbol named '")
           << config.output << "' already exists";
  return success();
}

/// Builds the reverse-mode function of one forward function, step by step (see
/// buildGradientFunction): signature, a copy of the forward body, activity, seed, reverse
/// pass, results, dead-code removal.
class GradientBuilder {
public:
  GradientBuilder(func::FuncOp forward, const AutodiffConfig &config)
      : forward(forward), config(config), ft(forward.getFunctionType()), b(forward.getContext()),
        loc(forward.getLoc()) {}

  FailureOr<func::FuncOp> build() {
    collectParams();
    createFunction();
    cloneForward();
    markActive();
    seed();
    if (failed(reversePass())) {
      fn.erase();
      return failure();
    }
    buildResults();
    removeUnused();
    return fn;
  }

private:
  /// The trainable params that get a gradient, in module order.
  void collectParams() {
    auto module = forward->getParentOfType<ModuleOp>();
    llvm::DenseSet<StringRef> loaded;
    forward.walk([&](graph::LoadParamOp load) { loaded.insert(load.getParam()); });
    for (auto p : module.getOps<graph::ParamOp>())
      if (p.getTrainable() && (!config.usedParamsOnly || loaded.contains(p.getSymName())))
        params.push_back(p);
  }

  /// Signature: forward args (+ cotangents) -> loss or forward results, param grads, arg
  /// grads. Creates the function after `forward`, with the args' `graph.name`s.
  void createFunction() {
    SmallVector<Type> argTypes(ft.getInputs()), resultTypes;
    if (config.cotangentArgs) {
      for (auto [i, t] : llvm::enumerate(ft.getResults()))
        if (isFloatTensor(t)) {
          argTypes.push_back(t);
          cotangentOf.push_back(i);
        }
      if (config.forwardResults)
        resultTypes.append(ft.getResults().begin(), ft.getResults().end());
    } else {
      resultTypes.push_back(ft.getResult(0));
      if (config.seedArg)
        argTypes.push_back(ft.getResult(0));
    }
    firstGrad = resultTypes.size();
    for (auto p : params)
      for (size_t k = 0, n = layersOf(p).size(); k < n; ++k)
        resultTypes.push_back(p.getType());
    for (unsigned a : config.wrtArgs)
      resultTypes.push_back(ft.getInput(a));

    b.setInsertionPointAfter(forward);
    fn = func::FuncOp::create(b, loc, config.output, b.getFunctionType(argTypes, resultTypes));
    body = fn.addEntryBlock();
    for (unsigned i = 0; i < ft.getNumInputs(); ++i)
      if (auto name = forward.getArgAttr(i, "graph.name"))
        fn.setArgAttr(i, "graph.name", name);
    if (!config.cotangentArgs && config.seedArg)
      fn.setArgAttr(ft.getNumInputs(), "graph.name", b.getStringAttr("loss_seed"));
  }

  /// Forward: a copy of the body; `outs` are the copies of the returned values.
  void cloneForward() {
    b.setInsertionPointToStart(body);
    IRMapping map;
    for (unsigned i = 0; i < ft.getNumInputs(); ++i)
      map.map(forward.getArgument(i), body->getArgument(i));
    for (Operation &op : forward.getBody().front().without_terminator()) {
      forwardOps.push_back(b.clone(op, map));
      if (config.tagForwardOps)
        forwardOps.back()->setAttr("rp.forward", b.getUnitAttr());
    }
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    for (Value v : ret.getOperands())
      outs.push_back(map.lookup(v));
  }

  /// Activity: values that depend on a trainable param or a wrt argument.
  void markActive() {
    llvm::DenseSet<StringRef> trainable;
    for (auto p : params)
      trainable.insert(p.getSymName());
    for (unsigned a : config.wrtArgs)
      active.insert(body->getArgument(a));
    for (Operation *op : forwardOps) {
      if (auto load = dyn_cast<graph::LoadParamOp>(op)) {
        if (trainable.contains(load.getParam()))
          active.insert(load.getResult());
        continue;
      }
      if (llvm::any_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
        for (Value r : op->getResults())
          if (isFloatTensor(r.getType()))
            active.insert(r);
    }
  }

  /// Adds `g` to the cotangent of `v` (fan-out accumulates with graph.add).
  void accumulate(Value v, Value g) {
    auto it = grads.find(v);
    if (it == grads.end())
      grads[v] = g;
    else
      it->second = graph::AddOp::create(b, loc, it->second, g);
  }

  /// Seed: the cotangent arguments, the seed argument, or 1 for the loss.
  void seed() {
    b.setInsertionPointToEnd(body);
    if (config.cotangentArgs) {
      for (auto [k, r] : llvm::enumerate(cotangentOf))
        accumulate(outs[r], body->getArgument(ft.getNumInputs() + k));
      return;
    }
    if (config.seedArg) {
      accumulate(outs[0], body->getArgument(ft.getNumInputs()));
      return;
    }
    auto lossType = cast<RankedTensorType>(ft.getResult(0));
    auto one = DenseElementsAttr::get(lossType, b.getFloatAttr(lossType.getElementType(), 1.0));
    accumulate(outs[0], graph::ConstantOp::create(b, loc, lossType, one));
  }

  /// Reverse pass: the VJP of every forward op on a gradient path, last op first.
  LogicalResult reversePass() {
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        Value g = active.contains(r) ? grads.lookup(r) : Value();
        resultGrads.push_back(g);
        any |= static_cast<bool>(g);
      }
      // Leaves (param loads, constants) and ops whose operands carry no gradient end the path.
      if (!any || llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
        continue;
      auto iface = dyn_cast<graph::GradientOpInterface>(op);
      if (!iface)
        return op->emitError("rp-autodiff: '")
               << op->getName() << "' has no VJP but lies on a gradient path";
      SmallVector<Value> operandGrads;
      b.setInsertionPointToEnd(body);
      if (failed(iface.buildVJP(b, resultGrads, operandGrads)))
        return failure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && active.contains(operand))
          accumulate(operand, g);
    }
    return success();
  }

  /// Results: (loss | forward results), param grads in module order, argument grads, with
  /// their `graph.grad_of` / `graph.grad_of_arg` attributes.
  void buildResults() {
    SmallVector<Value> results;
    if (config.cotangentArgs) {
      if (config.forwardResults)
        results.append(outs.begin(), outs.end());
    } else
      results.push_back(outs[0]);
    SmallVector<std::pair<graph::ParamOp, std::optional<int64_t>>> gradOf;
    for (auto p : params) {
      SmallVector<int64_t> layers = layersOf(p);
      for (int64_t layer : layers) {
        Value total; // the loads' cotangents in op order
        for (Operation *op : forwardOps)
          if (auto load = dyn_cast<graph::LoadParamOp>(op))
            if (load.getParam() == p.getSymName() && (layers.size() == 1 || layerOf(load) == layer))
              if (Value g = grads.lookup(load.getResult()))
                total = total ? Value(graph::AddOp::create(b, loc, total, g)) : g;
        results.push_back(total ? total : zerosOf(b, loc, p.getType()));
        gradOf.push_back({p, layers.size() > 1 ? std::optional<int64_t>(layer) : std::nullopt});
      }
    }
    for (unsigned a : config.wrtArgs) {
      Value g = grads.lookup(body->getArgument(a));
      results.push_back(g ? g : zerosOf(b, loc, ft.getInput(a)));
    }
    func::ReturnOp::create(b, loc, results);
    for (auto [i, of] : llvm::enumerate(gradOf)) {
      fn.setResultAttr(firstGrad + i, "graph.grad_of",
                       FlatSymbolRefAttr::get(of.first.getSymNameAttr()));
      if (of.second)
        fn.setResultAttr(firstGrad + i, "graph.grad_layer", b.getI64IntegerAttr(*of.second));
    }
    for (auto [i, a] : llvm::enumerate(config.wrtArgs))
      fn.setResultAttr(firstGrad + gradOf.size() + i, "graph.grad_of_arg", b.getI64IntegerAttr(a));
  }

  static int64_t layerOf(graph::LoadParamOp load) {
    auto layer = load->getAttrOfType<IntegerAttr>("graph.layer");
    return layer ? layer.getInt() : -1;
  }

  /// The layers of `p`'s gradient results: its loads' distinct `graph.layer` values,
  /// ascending, with gradPerLayer; otherwise one entry (one summed result).
  SmallVector<int64_t> layersOf(graph::ParamOp p) {
    SmallVector<int64_t> layers;
    if (config.gradPerLayer)
      forward.walk([&](graph::LoadParamOp load) {
        if (load.getParam() == p.getSymName() && !llvm::is_contained(layers, layerOf(load)))
          layers.push_back(layerOf(load));
      });
    llvm::sort(layers);
    if (layers.size() <= 1)
      return {0};
    return layers;
  }

  /// Removes what nothing uses (forward values no gradient needs, unused VJP pieces).
  void removeUnused() {
    SmallVector<Operation *> ops;
    for (Operation &op : body->without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && isPure(op))
        op->erase();
  }

  func::FuncOp forward;
  const AutodiffConfig &config;
  FunctionType ft;
  OpBuilder b;
  Location loc;
  SmallVector<graph::ParamOp> params;
  SmallVector<unsigned> cotangentOf; ///< forward result index of each cotangent argument
  unsigned firstGrad = 0;            ///< index of the first gradient result
  func::FuncOp fn;
  Block *body = nullptr;
  SmallVector<Operation *> forwardOps;
  SmallVector<Value> outs;
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;
};

} // namespace

FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp forward, const AutodiffConfig &config) {
  if (failed(checkGradientRequest(forward, config)))
    return failure();
  return GradientBuilder(forward, config).build();
}

namespace {

struct AutodiffPass : public impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError("rp-autodiff: no function named '") << function << "'";
      return signalPassFailure();
    }
    AutodiffConfig config;
    config.output = output;
    config.wrtArgs.assign(wrtArgs.begin(), wrtArgs.end());
    config.cotangentArgs = cotangentArgs;
    config.seedArg = seedArg;
    if (failed(buildGradientFunction(forward, config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::rp
