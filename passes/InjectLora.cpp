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
// floating-point param whose name matches `targets`. Each W gets one A/B pair however many
// matmuls read it. Then every param that is not a LoRA adapter is frozen. Our weights are
// [in, out] (x @ W); PEFT's nn.Linear weights are [out, in] with A: [r, in], B: [out, r], so
// our A and B are PEFT's transposed (see runtime/core/ParamInit.h for the initialiser).
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

struct InjectLora : impl::InjectLoraBase<InjectLora> {
  using InjectLoraBase::InjectLoraBase;

  void runOnOperation() override;

private:
  /// Adds `@<W>.lora_A` and `@<W>.lora_B` right after `weight`; returns them.
  std::pair<graph::ParamOp, graph::ParamOp> createAdapters(graph::ParamOp weight);
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
  llvm::SetVector<StringRef> matmulWeights;
  bool failed = false;
  module.walk([&](graph::MatMulOp matmul) {
    auto load = matmul.getRhs().getDefiningOp<graph::LoadParamOp>();
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
    if (!firstUse)
      return;
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
    for (StringRef suffix : {".lora_A", ".lora_B"}) {
      std::string adapter = (name + suffix).str();
      if (Operation *existing = symbols.lookup(adapter)) {
        InFlightDiagnostic diag = weight.emitError()
                                  << "rp-inject-lora: cannot add '" << adapter << "' for param '"
                                  << name << "': the symbol exists (was LoRA injected already?)";
        diag.attachNote(existing->getLoc()) << "existing symbol here";
        failed = true;
      }
    }
  });
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
    auto [a, b] = createAdapters(cast<graph::ParamOp>(op));
    for (graph::MatMulOp matmul : matmuls)
      adaptMatMul(matmul, a, b);
  }

  // Phase 3: LoRA trains the adapters only.
  for (graph::ParamOp param : module.getOps<graph::ParamOp>())
    if (!isLoraAdapter(param.getSymName()))
      param.setTrainable(false);
}

std::pair<graph::ParamOp, graph::ParamOp> InjectLora::createAdapters(graph::ParamOp weight) {
  MLIRContext *ctx = weight.getContext();
  RankedTensorType type = weight.getTensorType();
  Type element = type.getElementType();
  int64_t in = type.getDimSize(0), out = type.getDimSize(1);
  StringRef name = weight.getSymName();

  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(weight);
  auto a =
      graph::ParamOp::create(builder, weight.getLoc(), (name + ".lora_A").str(),
                             RankedTensorType::get({in, rank}, element),
                             /*trainable=*/true, /*initializer=*/StringAttr(),
                             graph::ParamInitAttr::get(ctx, graph::ParamInit::kaiming_uniform));
  auto b = graph::ParamOp::create(builder, weight.getLoc(), (name + ".lora_B").str(),
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
