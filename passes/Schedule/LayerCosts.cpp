//===- LayerCosts.cpp - per-layer costs of the grouped IR -----------------===//

#include "passes/Schedule/LayerCosts.h"

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "kernels/FlopRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rp {

namespace {

int64_t bytesOf(Type t) {
  auto rt = cast<RankedTensorType>(t);
  unsigned bits = rt.getElementType().getIntOrFloatBitWidth();
  return rt.getNumElements() * std::max<unsigned>(bits / 8, 1);
}

/// Bytes of `t` with float tensors at `floatBytes` per element (the compute dtype: bf16 or f16
/// weights and activations take 2 bytes, whatever the graph's f32), integer tensors as they
/// are.
uint64_t computeBytes(Type t, int64_t floatBytes) {
  auto rt = cast<RankedTensorType>(t);
  if (isa<FloatType>(rt.getElementType()))
    return static_cast<uint64_t>(rt.getNumElements() * floatBytes);
  return static_cast<uint64_t>(bytesOf(t));
}

double elements(Type t) { return static_cast<double>(cast<RankedTensorType>(t).getNumElements()); }

::rp::kernels::Shape shapeOf(Value v) {
  ArrayRef<int64_t> dims = cast<RankedTensorType>(v.getType()).getShape();
  return ::rp::kernels::Shape(dims.begin(), dims.end());
}

} // namespace

double forwardFlops(func::FuncOp func) {
  double flops = 0;
  func.walk([&](Operation *op) {
    if (isa<graph::ConstantOp, graph::LoadParamOp, graph::ReshapeOp, func::ReturnOp>(op) ||
        op->getNumResults() == 0)
      return;
    if (auto mm = dyn_cast<graph::MatMulOp>(op)) {
      auto lhs = mm.getLhs().getType();
      int64_t k = lhs.getShape()[lhs.getRank() - (mm.getTransposeA() ? 2 : 1)];
      flops += 2.0 * elements(mm.getType()) * static_cast<double>(k);
      return;
    }
    if (isa<graph::GroupedMatMulOp, graph::GroupedMatMulWgradOp>(op)) {
      // Routed experts: each of the R = T * k (token, choice) rows meets ONE expert's [K, N]
      // matrix, so 2 R K N, the active FLOPs (kernels/FlopRules.h), not E times that. For
      // grouped_matmul R, K = rows' dims and N = the result's last; for the wgrad R, K = lhs'
      // dims and N = rhs' last (the [E, K, N] result is not a measure of the work).
      auto a = cast<RankedTensorType>(op->getOperand(0).getType());
      auto b = cast<RankedTensorType>(isa<graph::GroupedMatMulOp>(op) ? op->getResult(0).getType()
                                                                     : op->getOperand(1).getType());
      flops += 2.0 * elements(a) * static_cast<double>(b.getDimSize(b.getRank() - 1));
      return;
    }
    if (auto att = dyn_cast<graph::AttentionOp>(op)) {
      // QK^T and PV over the (query, key) pairs the kernels compute (kernels/FlopRules.h):
      // 2 B Hq P (D + Dv), P = S Sk or, causal, the pairs on or below the diagonal (in the
      // sliding window's band when there is one).
      flops += ::rp::kernels::kernelFlops("attention", {shapeOf(att.getQuery()),
                                                        shapeOf(att.getKey()),
                                                        shapeOf(att.getValue())},
                                          {shapeOf(att.getResult())}, att.getCausal(),
                                          /*transposeA=*/false, att.getWindow().value_or(0));
      return;
    }
    if (isa<graph::MoeCombineOp>(op)) {
      // A multiply-add per (token, choice) row element: 2 * elements(rows [T * k, N]).
      flops += 2.0 * elements(op->getOperand(0).getType());
      return;
    }
    if (isa<graph::LinearCrossEntropyOp, graph::LinearCrossEntropyVjpOp>(op)) {
      // The head's products (2 N H V per pass over the logits; the VJP runs three) and the
      // softmax over [N, V], as a matmul and a cross_entropy count.
      auto h = cast<RankedTensorType>(op->getOperand(0).getType());
      auto w = cast<RankedTensorType>(op->getOperand(1).getType());
      const double logits = static_cast<double>(h.getDimSize(0)) *
                            static_cast<double>(w.getDimSize(0));
      const bool forward = isa<graph::LinearCrossEntropyOp>(op);
      const double products = forward ? 1 : 3;
      // A head bias: one add per logit, and the VJP's dbias one more (FlopRules).
      const bool bias = op->getNumOperands() == (forward ? 4u : 5u);
      flops += products * 2.0 * logits * static_cast<double>(h.getDimSize(1)) + 5.0 * logits +
               (bias ? (forward ? 1.0 : 2.0) * logits : 0.0);
      return;
    }
    if (isa<graph::ReduceSumOp, graph::ReduceMeanOp, graph::ReduceMaxOp, graph::SoftmaxOp,
            graph::LogSoftmaxOp, graph::LayerNormOp, graph::RmsNormOp, graph::RmsNormVjpOp,
            graph::CrossEntropyOp>(op)) {
      flops += 5.0 * elements(op->getOperand(0).getType());
      return;
    }
    for (Type t : op->getResultTypes())
      flops += elements(t);
  });
  return flops;
}

int64_t peakLiveBytes(func::FuncOp func, int64_t floatBytes) {
  // A value is live from its definition to its last use (arguments from the start); param
  // loads are weights, counted by param_bytes, not here.
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t n = 0;
  for (Operation &op : body)
    position[&op] = n++;
  SmallVector<int64_t> delta(n + 1, 0); // bytes that become live (+) or dead (-) at a point
  auto account = [&](Value v, int64_t from) {
    int64_t last = from;
    for (Operation *user : v.getUsers())
      last = std::max(last, position.lookup(user));
    const auto bytes = static_cast<int64_t>(computeBytes(v.getType(), floatBytes));
    delta[from] += bytes;
    delta[last + 1] -= bytes;
  };
  for (BlockArgument a : body.getArguments())
    account(a, 0);
  for (Operation &op : body)
    if (!isa<graph::LoadParamOp>(op))
      for (Value r : op.getResults())
        account(r, position[&op]);
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

FailureOr<SmallVector<uint64_t>> estimateSavedBytes(ModuleOp module, int64_t floatBytes) {
  auto layers = module->getAttrOfType<ArrayAttr>("graph.layers");
  if (!layers)
    return module.emitError("no 'graph.layers' attribute: run rp-group-layers first");
  SmallVector<uint64_t> saved;
  for (auto [i, a] : llvm::enumerate(layers)) {
    auto fn = module.lookupSymbol<func::FuncOp>(cast<FlatSymbolRefAttr>(a));
    if (!fn)
      return module.emitError("graph.layers names a missing function ") << a;
    bool last = i + 1 == layers.size();
    FailureOr<int64_t> bytes = layerResidualBytes(fn, layerGradientConfig(fn, last), floatBytes);
    if (failed(bytes))
      return failure();
    saved.push_back(static_cast<uint64_t>(*bytes));
  }
  return saved;
}

FailureOr<::rp::partition::Profile> estimateProfile(ModuleOp module,
                                                    const ::rp::partition::TargetSpec &target,
                                                    double efficiency, int64_t floatBytes) {
  auto layers = module->getAttrOfType<ArrayAttr>("graph.layers");
  if (!layers)
    return module.emitError("no 'graph.layers' attribute: run rp-group-layers first");
  if (!(target.peakTflops > 0))
    return module.emitError("the target '")
           << target.name << "' has no peak TFLOP/s: give one or a measured --profile";
  ::rp::partition::Profile profile;
  double rate = target.peakTflops * 1e12 * efficiency; // FLOP/s
  for (Attribute a : layers) {
    auto fn = module.lookupSymbol<func::FuncOp>(cast<FlatSymbolRefAttr>(a));
    if (!fn)
      return module.emitError("graph.layers names a missing function ") << a;
    ::rp::partition::LayerProfile layer;
    layer.name = fn.getSymName().str();
    double fwd = forwardFlops(fn) / rate * 1e3;
    layer.fwdMs = fwd;
    layer.recomputeMs = fwd;
    layer.bwdMs = 2 * fwd;
    llvm::DenseSet<StringRef> seen;
    fn.walk([&](graph::LoadParamOp load) {
      if (!seen.insert(load.getParam()).second)
        return;
      auto param = SymbolTable::lookupNearestSymbolFrom<graph::ParamOp>(load, load.getParamAttr());
      // Weights go up in the compute dtype; gradients come down as the slot's fp32
      // accumulators (the device arena's layout), whatever the compute dtype.
      layer.paramBytes += computeBytes(load.getType(), floatBytes);
      if (param && param.getTrainable())
        layer.trainableBytes += computeBytes(load.getType(), 4);
    });
    for (Type t : fn.getResultTypes())
      layer.actBytes += computeBytes(t, floatBytes);
    layer.workBytes = static_cast<uint64_t>(peakLiveBytes(fn, floatBytes));
    profile.layers.push_back(std::move(layer));
  }
  FailureOr<SmallVector<uint64_t>> saved = estimateSavedBytes(module, floatBytes);
  if (failed(saved))
    return failure();
  for (auto [layer, bytes] : llvm::zip_equal(profile.layers, *saved))
    layer.savedBytes = bytes;
  return profile;
}

} // namespace mlir::rp
