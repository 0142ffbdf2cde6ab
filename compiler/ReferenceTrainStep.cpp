//===- ReferenceTrainStep.cpp - rp-ref --train's training function -------===//

#include "compiler/ReferenceTrainStep.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::rp {

FailureOr<func::FuncOp> buildLayeredForward(ModuleOp module, func::FuncOp forward,
                                            StringRef name) {
  auto layers = module->getAttrOfType<ArrayAttr>("graph.layers");
  if (!layers || layers.empty())
    return module.emitError("rp-ref: the module has no 'graph.layers' (run rp-group-layers)");
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  auto fn = func::FuncOp::create(b, forward.getLoc(), name, forward.getFunctionType());
  Block *body = fn.addEntryBlock();
  llvm::StringMap<Value> inputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto n = forward.getArgAttrOfType<StringAttr>(i, "graph.name")) {
      inputs[n.getValue()] = body->getArgument(i);
      fn.setArgAttr(i, "graph.name", n);
    }
  b.setInsertionPointToEnd(body);
  llvm::StringMap<Value> boundary; // "<layer>#<result>" -> value
  SmallVector<Value> last;
  for (auto [k, ref] : llvm::enumerate(layers.getAsRange<FlatSymbolRefAttr>())) {
    auto layer = module.lookupSymbol<func::FuncOp>(ref.getAttr());
    if (!layer || !layer.getBody().hasOneBlock()) {
      fn.erase();
      return module.emitError("rp-ref: layer @") << ref.getValue() << " is not a one-block function";
    }
    IRMapping map;
    for (BlockArgument a : layer.getArguments()) {
      auto input = layer.getArgAttrOfType<StringAttr>(a.getArgNumber(), "graph.name");
      auto from = layer.getArgAttrOfType<StringAttr>(a.getArgNumber(), "graph.boundary");
      Value v = input ? inputs.lookup(input.getValue())
                      : from ? boundary.lookup(from.getValue()) : Value();
      if (!v) {
        fn.erase();
        return layer.emitError("rp-ref: argument ")
               << a.getArgNumber() << " of @" << layer.getSymName() << " is bound to nothing";
      }
      map.map(a, v);
    }
    for (Operation &op : layer.getBody().front().without_terminator()) {
      Operation *clone = b.clone(op, map);
      if (isa<graph::LoadParamOp>(clone))
        clone->setAttr("graph.layer", b.getI64IntegerAttr(static_cast<int64_t>(k)));
    }
    last.clear();
    for (auto [r, v] : llvm::enumerate(layer.getBody().front().getTerminator()->getOperands())) {
      last.push_back(map.lookupOrDefault(v));
      boundary[(ref.getValue() + "#" + Twine(r)).str()] = last.back();
    }
  }
  if (TypeRange(ValueRange(last)) != forward.getFunctionType().getResults()) {
    fn.erase();
    return forward.emitError("rp-ref: the last layer's results do not match @")
           << forward.getSymName() << "'s";
  }
  func::ReturnOp::create(b, forward.getLoc(), last);
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    if (auto n = forward.getResultAttr(i, "graph.name"))
      fn.setResultAttr(i, "graph.name", n);
  return fn;
}

FailureOr<func::FuncOp> buildReferenceTrainStep(ModuleOp module, StringRef output,
                                                bool seedArg) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("rp-ref: the model has no @forward function");
  FailureOr<func::FuncOp> layered = buildLayeredForward(module, forward, "layered_forward");
  if (failed(layered))
    return failure();
  AutodiffConfig config;
  config.output = output.str();
  config.gradPerLayer = true;
  config.seedArg = seedArg;
  return buildGradientFunction(*layered, config);
}

} // namespace mlir::rp
