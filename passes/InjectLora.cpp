//===- InjectLora.cpp - LoRA adapters on matching matmul weights ----------===//
//
// rp-inject-lora (Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", 2021;
// the scaling and initialisation of Hugging Face PEFT's `LoraLayer`):
//
//   y = x @ W                      y = x @ W + ((x @ A) @ B) * (alpha / rank)
//                           ==>    A: [in, rank], trainable, init kaiming_uniform
//                                  B: [rank, out], trainable, init zeros
//
// for every `graph.matmul %x, %w` whose `%w` is a `graph.load_param @W` of a rank-2 [in, out]
// floating-point param whose name matches `targets`, and likewise for `%w = graph.transpose
// (graph.load_param @W) {permutation = [1, 0]}` (x @ W^T: nn.Linear's [out, in] weight, as
// the Hugging Face exports compute every projection). Each W gets one A/B pair however many
// matmuls read it; A and B are [in, rank] and [rank, out] either way. Then every param that is
// not a LoRA adapter is frozen. PEFT's nn.Linear adapters are A: [r, in], B: [out, r], so our
// A and B are PEFT's transposed (see runtime/core/ParamInit.h for the initialiser).
//
// The adapters' names tell how W is read: `<W>.lora_A` / `<W>.lora_B` adapt x @ W;
// `<M>.lora_A.weight` / `<M>.lora_B.weight` adapt x @ W^T, where W is `<M>.weight` (or `<M>`
// when W's name does not end in ".weight"), the names PEFT gives nn.Linear adapters
// (without its adapter name). An export (rp-run --export-hf) merges W + (alpha / r) A B or its
// transpose accordingly.
//
// A param of rank 3 or more that matches `targets` (a mixture of experts' stacked [E, ...]
// weights) is an error: the pass adapts rank-2 matmul weights only, and a broad pattern must not
// freeze the experts silently.
//
// LoRA adapters are recognised by name: a param whose name contains ".lora_" is never adapted
// and never frozen here (a second run with other targets keeps the first run's adapters).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/ParamPattern.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>
#include <regex>
#include <string>

namespace mlir::rp {

#define GEN_PASS_DEF_INJECTLORA
#include "passes/Passes.h.inc"

namespace {

/// True for the params rp-inject-lora creates (`<W>.lora_A`, `<W>.lora_B`) and for adapters
/// imported under PEFT-style names (`...q_proj.lora_A.default.weight`).
bool isLoraAdapter(StringRef name) { return name.contains(".lora_"); }

/// The param a matmul's rhs reads: `load_param @W` (x @ W) or `transpose(load_param @W)` with
/// permutation [1, 0] (x @ W^T); null when the rhs is neither.
std::pair<graph::LoadParamOp, bool> matmulWeight(graph::MatMulOp matmul) {
  if (auto load = matmul.getRhs().getDefiningOp<graph::LoadParamOp>())
    return {load, false};
  auto transpose = matmul.getRhs().getDefiningOp<graph::TransposeOp>();
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {graph::LoadParamOp(), false};
  return {transpose.getInput().getDefiningOp<graph::LoadParamOp>(), true};
}

/// The names of W's adapters: `<W>.lora_X` for x @ W, `<M>.lora_X.weight` for x @ W^T.
std::string adapterName(StringRef weight, bool transposed, StringRef part) {
  if (!transposed)
    return (weight + "." + part).str();
  StringRef module = weight;
  module.consume_back(".weight");
  return (module + "." + part + ".weight").str();
}

/// Reports the params that match `regex` but are stacked expert weights (rank 3 or more, e.g.
/// a mixture of experts' [E, in, out]), which this pass does not adapt: without the error a
/// pattern such as `proj` would adapt the dense projections and silently freeze the experts.
/// Returns true when it reported one. Adapters (`.lora_` names) and adapted sites are skipped.
bool refuseStackedExperts(ModuleOp module, const std::regex &regex,
                          const llvm::MapVector<Operation *, SmallVector<graph::MatMulOp>> &sites) {
  bool failed = false;
  for (graph::ParamOp param : module.getOps<graph::ParamOp>()) {
    StringRef name = param.getSymName();
    if (sites.contains(param) || isLoraAdapter(name) || param.getTensorType().getRank() < 3 ||
        !std::regex_search(name.str(), regex))
      continue;
    param.emitError() << "rp-inject-lora: param '" << name << "' matches the targets but has type "
                      << param.getTensorType()
                      << "; LoRA adapts rank-2 matmul weights, not stacked [E, ...] expert "
                         "weights (narrow the targets, e.g. to the attention projections "
                         "'(q|k|v|o)_proj', to train with the experts frozen)";
    failed = true;
  }
  return failed;
}

struct InjectLora : impl::InjectLoraBase<InjectLora> {
  using InjectLoraBase::InjectLoraBase;

  void runOnOperation() override;

private:
  /// Adds W's A [in, rank] and B [rank, out] right after `weight` (named by adapterName);
  /// returns them.
  std::pair<graph::ParamOp, graph::ParamOp> createAdapters(graph::ParamOp weight,
                                                           bool transposed);
  /// Rewrites the uses of `matmul` (x @ W) to x @ W + ((x @ A) @ B) * scale.
  void adaptMatMul(graph::MatMulOp matmul, graph::ParamOp a, graph::ParamOp b);
};

void InjectLora::runOnOperation() {
  ModuleOp module = getOperation();
  Location moduleLoc = module.getLoc();

  if (rank <= 0) {
    emitError(moduleLoc) << "rp-inject-lora: 'rank' must be positive, got "
                         << static_cast<int64_t>(rank);
    return signalPassFailure();
  }
  if (!std::isfinite(alpha)) {
    const char *value = std::isnan(alpha) ? "nan" : (alpha > 0 ? "inf" : "-inf");
    emitError(moduleLoc) << "rp-inject-lora: 'alpha' must be finite, got " << value;
    return signalPassFailure();
  }
  if (targets.empty()) {
    emitError(moduleLoc) << "rp-inject-lora: 'targets' is empty; give a regex of the weights "
                            "to adapt (e.g. targets=q_proj|v_proj)";
    return signalPassFailure();
  }
  std::string whyNot;
  std::optional<std::regex> regex = detail::compileParamPattern(targets, whyNot);
  if (!regex) {
    emitError(moduleLoc) << "rp-inject-lora: bad targets '" << targets << "': " << whyNot;
    return signalPassFailure();
  }

  // Phase 1: find the matmuls to adapt, grouped by weight (in the order of first use), and
  // check everything before changing the IR.
  SymbolTable symbols(module);
  llvm::MapVector<Operation *, SmallVector<graph::MatMulOp>> sites;
  llvm::DenseMap<Operation *, bool> transposedUse;
  llvm::SetVector<StringRef> matmulWeights;
  bool failed = false;
  module.walk([&](graph::MatMulOp matmul) {
    auto [load, transposed] = matmulWeight(matmul);
    if (!load)
      return;
    auto weight = symbols.lookup<graph::ParamOp>(load.getParam());
    if (!weight) // The load_param verifier reports it.
      return;
    StringRef name = weight.getSymName();
    matmulWeights.insert(name);
    if (isLoraAdapter(name) || !std::regex_search(name.str(), *regex))
      return;
    bool firstUse = !sites.contains(weight);
    sites[weight].push_back(matmul);
    if (!firstUse) {
      if (transposedUse[weight] != transposed) {
        InFlightDiagnostic diag = weight.emitError()
                                  << "rp-inject-lora: param '" << name
                                  << "' is read both as x @ W and as x @ transpose(W); LoRA "
                                     "adapts one of the two";
        diag.attachNote(matmul.getLoc()) << "used as a matmul weight here";
        failed = true;
      }
      return;
    }
    transposedUse[weight] = transposed;
    RankedTensorType type = weight.getTensorType();
    if (type.getRank() != 2 || !isa<FloatType>(type.getElementType())) {
      InFlightDiagnostic diag = weight.emitError()
                                << "rp-inject-lora: param '" << name << "' matches targets '"
                                << targets << "' but has type " << type
                                << "; LoRA adapts a rank-2 floating-point [in, out] weight";
      diag.attachNote(matmul.getLoc()) << "used as a matmul weight here";
      failed = true;
      return;
    }
    for (StringRef part : {"lora_A", "lora_B"}) {
      std::string adapter = adapterName(name, transposed, part);
      if (Operation *existing = symbols.lookup(adapter)) {
        InFlightDiagnostic diag = weight.emitError()
                                  << "rp-inject-lora: cannot add '" << adapter << "' for param '"
                                  << name << "': the symbol exists (was LoRA injected already?)";
        diag.attachNote(existing->getLoc()) << "existing symbol here";
        failed = true;
      }
    }
  });
  failed |= refuseStackedExperts(module, *regex, sites);
  if (failed)
    return signalPassFailure();
  if (sites.empty()) {
    InFlightDiagnostic diag = emitError(moduleLoc) << "rp-inject-lora: targets '" << targets
                                                   << "' match no matmul weight; ";
    if (matmulWeights.empty())
      diag << "the module has no graph.matmul whose rhs is a graph.load_param";
    else
      diag << "matmul weights: " << detail::joinNamesForMessage(matmulWeights.getArrayRef());
    return signalPassFailure();
  }

  // Phase 2: one A/B pair per weight, one adapted computation per matmul.
  for (auto &[op, matmuls] : sites) {
    auto [a, b] = createAdapters(cast<graph::ParamOp>(op), transposedUse[op]);
    for (graph::MatMulOp matmul : matmuls)
      adaptMatMul(matmul, a, b);
  }

  // Phase 3: LoRA trains the adapters only.
  for (graph::ParamOp param : module.getOps<graph::ParamOp>())
    if (!isLoraAdapter(param.getSymName()))
      param.setTrainable(false);
}

std::pair<graph::ParamOp, graph::ParamOp> InjectLora::createAdapters(graph::ParamOp weight,
                                                                     bool transposed) {
  MLIRContext *ctx = weight.getContext();
  RankedTensorType type = weight.getTensorType();
  Type element = type.getElementType();
  int64_t in = type.getDimSize(transposed ? 1 : 0), out = type.getDimSize(transposed ? 0 : 1);
  StringRef name = weight.getSymName();

  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(weight);
  auto a =
      graph::ParamOp::create(builder, weight.getLoc(), adapterName(name, transposed, "lora_A"),
                             RankedTensorType::get({in, rank}, element),
                             /*trainable=*/true, /*initializer=*/StringAttr(),
                             graph::ParamInitAttr::get(ctx, graph::ParamInit::kaiming_uniform));
  auto b = graph::ParamOp::create(builder, weight.getLoc(), adapterName(name, transposed, "lora_B"),
                                  RankedTensorType::get({rank, out}, element),
                                  /*trainable=*/true, /*initializer=*/StringAttr(),
                                  graph::ParamInitAttr::get(ctx, graph::ParamInit::zeros));
  return {a, b};
}

void InjectLora::adaptMatMul(graph::MatMulOp matmul, graph::ParamOp a, graph::ParamOp b) {
  Location loc = matmul.getLoc();
  Value x = matmul.getLhs();
  Value y = matmul.getResult();
  Type element = a.getTensorType().getElementType();

  OpBuilder builder(matmul.getContext());
  builder.setInsertionPointAfter(matmul);
  Value aVal = graph::LoadParamOp::create(builder, loc, a.getTensorType(), a.getSymName());
  Value bVal = graph::LoadParamOp::create(builder, loc, b.getTensorType(), b.getSymName());
  Value xa = graph::MatMulOp::create(builder, loc, x, aVal);
  Value xab = graph::MatMulOp::create(builder, loc, xa, bVal);
  // PEFT's scaling; rounded once to the element type (2.0 for alpha 16, rank 8 is exact).
  double scale = alpha / static_cast<double>(rank);
  auto scalarType = RankedTensorType::get({}, element);
  Value s = graph::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(scalarType,
                             ArrayRef<Attribute>{builder.getFloatAttr(element, scale)}));
  Value delta = graph::MulOp::create(builder, loc, xab, s);
  auto sum = graph::AddOp::create(builder, loc, y, delta);
  y.replaceAllUsesExcept(sum.getResult(), sum);
}

} // namespace
} // namespace mlir::rp
