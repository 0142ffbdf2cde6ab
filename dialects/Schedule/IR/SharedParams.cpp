//===- SharedParams.cpp - owners and readers of a plan's params -----------===//

#include "dialects/Schedule/IR/SharedParams.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::rp::schedule;

ParamReaders::ParamReaders(PlanOp plan) {
  auto module = plan->getParentOfType<ModuleOp>();
  for (auto [i, layer] : llvm::enumerate(plan.getLayers())) {
    owned_.emplace_back();
    for (Attribute a : layer.getParams()) {
      auto ref = cast<FlatSymbolRefAttr>(a);
      auto param = dyn_cast_or_null<mlir::rp::graph::ParamOp>(
          module ? SymbolTable::lookupSymbolIn(module, ref.getAttr()) : nullptr);
      if (!param || !param.getTrainable())
        continue;
      SmallVector<unsigned, 2> &r = readers_[ref.getValue()];
      if (!r.empty() && r.back() == i)
        continue; // named twice by one layer: the layer verifier reports it
      if (r.empty())
        owned_.back().push_back(param.getSymName());
      r.push_back(static_cast<unsigned>(i));
    }
  }
}

ArrayRef<unsigned> ParamReaders::readers(StringRef param) const {
  auto it = readers_.find(param);
  if (it == readers_.end())
    return {};
  return it->second;
}

bool ParamReaders::ownsTrainable(unsigned layer) const {
  return layer < owned_.size() && !owned_[layer].empty();
}

OptimizerStepEvents mlir::rp::schedule::expectedOptimizerStep(PlanOp plan,
                                                               const ParamReaders &readers,
                                                               unsigned layer) {
  // The layers whose stages matter: the layer and every other reader of a param it owns.
  SmallVector<unsigned> coupled{layer};
  for (StringRef p : readers.owned(layer))
    for (unsigned r : readers.readers(p))
      if (!llvm::is_contained(coupled, r))
        coupled.push_back(r);
  OptimizerStepEvents events;
  SmallVector<bool> holdsGrads(coupled.size(), false);
  for (StageOp stage : plan.getStages()) {
    bool uploads = false;
    for (auto [k, l] : llvm::enumerate(coupled)) {
      if (!stage.containsLayer(l))
        continue;
      uploads = true;
      if (!stage.hasBackward() || holdsGrads[k])
        continue;
      holdsGrads[k] = true; // the first backward-kind stage holding reader l
      if (k == 0)
        events.grads = stage;
      else if (!llvm::is_contained(events.sharedGrads, stage))
        events.sharedGrads.push_back(stage);
    }
    if (uploads)
      events.uploads.push_back(stage);
  }
  // A stage holding both the layer's own gradients and a copy's is not a second wait.
  llvm::erase(events.sharedGrads, events.grads);
  return events;
}

ArrayAttr mlir::rp::schedule::stageRefs(MLIRContext *context, ArrayRef<StageOp> stages) {
  SmallVector<Attribute> refs;
  for (StageOp stage : stages)
    refs.push_back(FlatSymbolRefAttr::get(context, stage.getSymName()));
  return ArrayAttr::get(context, refs);
}
