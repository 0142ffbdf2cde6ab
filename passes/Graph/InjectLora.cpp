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
// A and B are PEFT's transposed (see base/ParamInit.h for the initialiser).
//
// The adapters' names tell how W is read: `<W>.lora_A` / `<W>.lora_B` adapt x @ W;
// `<M>.lora_A.weight` / `<M>.lora_B.weight` adapt x @ W^T, where W is `<M>.weight` (or `<M>`
// when W's name does not end in ".weight"), the names PEFT gives nn.Linear adapters
// (without its adapter name). An export (rp-run --export-hf) merges W + (alpha / r) A B or its
// transpose accordingly.
//
// A mixture of experts' stacked expert weight W [E, ...] (rank 3) that matches `targets` is
// adapted per expert when every read of it is the literal batched_mm import's: `graph.gather
// (load_param @W, ids) {axis = 0}` of rank-1 routing ids, multiplied per (token, choice) pair
// as `matmul(gather [R, out, in], x [R, in, 1])` (W [E, out, in], Qwen3-MoE: W_e x) or
// `matmul(x [R, 1, in], gather [R, in, out])` (W [E, in, out], GPT-OSS: x W_e). The adapters
// are stacked per expert in PEFT's per-expert layout, A `[E, r, in]` (init kaiming_uniform,
// fan-in `in`) and B `[E, out, r]` (init zeros), named as for a dense W: `<W>.lora_A.weight` /
// `<W>.lora_B.weight` for W_e x (W [E, out, in], the analogue of x @ W^T), `<W>.lora_A` /
// `<W>.lora_B` for x W_e (W [E, in, out]), so that an export knows W's layout; and each
// pair's update `(alpha / r) B_e (A_e x)` is two more batched matmuls of adapters gathered by
// the same ids, in the weights-left form for both layouts (x as a column; for x W_e the
// product is the transposed update, x A_e^T B_e^T). rp-fuse-routed-experts turns them into
// grouped matmuls over the tokens sorted by expert, like the experts themselves. Any other
// read of a matching rank-3 param is an error: a broad pattern must not freeze it silently.
//
// LoRA adapters are recognised by name: a param whose name contains ".lora_" is never adapted
// and never frozen here (a second run with other targets keeps the first run's adapters).
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"
#include "passes/Graph/ParamPattern.h"

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
#include "passes/Graph/Passes.h.inc"

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

/// One per-pair product of a stacked expert weight: `matmul` reads `gather(load_param @W, ids)
/// {axis = 0}` (identity transposes around the gather allowed); `weightsLeft`: the gather is the lhs (W [E, out, in], W_e x with x [R, in, 1]),
/// otherwise the rhs (W [E, in, out], x W_e with x [R, 1, in]).
struct ExpertSite {
  graph::MatMulOp matmul;
  graph::GatherOp gather;
  bool weightsLeft = false;
};

/// The single use of `v`, past identity transposes (the literal import's `transpose` with
/// permutation [0, 1, 2]) that have `v` as their only use; null when `v` has not one use.
OpOperand *soleUseThroughIdentities(Value v) {
  while (v.hasOneUse()) {
    OpOperand &use = *v.getUses().begin();
    auto transpose = dyn_cast<graph::TransposeOp>(use.getOwner());
    if (!transpose || !llvm::equal(transpose.getPermutation(),
                                   llvm::seq<int64_t>(0, transpose.getPermutation().size())))
      return &use;
    v = transpose.getResult();
  }
  return nullptr;
}

/// The expert site that starts at `loaded`, a load_param of the stacked weight, when it is the
/// literal batched_mm form described in the file header; nullopt otherwise.
std::optional<ExpertSite> expertSite(Value loaded) {
  OpOperand *use = soleUseThroughIdentities(loaded);
  auto gather = use ? dyn_cast<graph::GatherOp>(use->getOwner()) : graph::GatherOp();
  if (!gather || gather.getAxisAttr().getInt() != 0 || use->getOperandNumber() != 0 ||
      cast<RankedTensorType>(gather.getIndices().getType()).getRank() != 1)
    return std::nullopt;
  OpOperand *product = soleUseThroughIdentities(gather.getResult());
  auto matmul = product ? dyn_cast<graph::MatMulOp>(product->getOwner()) : graph::MatMulOp();
  if (!matmul || matmul.getTransposeA() || matmul.getTransposeB())
    return std::nullopt;
  bool left = product->getOperandNumber() == 0;
  ArrayRef<int64_t> w = cast<RankedTensorType>(product->get().getType()).getShape();
  ArrayRef<int64_t> x = cast<RankedTensorType>((left ? matmul.getRhs() : matmul.getLhs())
                                                   .getType()).getShape();
  bool rows = x.size() == 3 && x[0] == w[0] &&
              (left ? x[1] == w[2] && x[2] == 1 : x[1] == 1 && x[2] == w[1]);
  if (!rows || matmul.getLhs() == matmul.getRhs())
    return std::nullopt;
  return ExpertSite{matmul, gather, left};
}

/// The expert sites of every read of a rank-3 float param `weight`, or nullopt when one read
/// is not an expert site (then `where` is that read).
std::optional<SmallVector<ExpertSite>> expertSitesOf(graph::ParamOp weight, ModuleOp module,
                                                     Operation *&where) {
  SmallVector<ExpertSite> sites;
  bool ok = true;
  module.walk([&](graph::LoadParamOp load) {
    if (!ok || load.getParam() != weight.getSymName())
      return;
    std::optional<ExpertSite> site = expertSite(load.getResult());
    if (!site) {
      ok = false;
      where = load;
      return;
    }
    sites.push_back(*site);
  });
  if (!ok)
    return std::nullopt;
  return sites;
}

/// Finds the stacked expert weights (rank 3) that match `regex` and their sites; reports those
/// read otherwise (without the error a pattern such as `proj` would adapt the dense
/// projections and silently freeze the experts). Returns true when it reported one. Adapters
/// (`.lora_` names) and the dense `sites` (reported with their matmuls) are skipped.
bool findStackedExperts(ModuleOp module, const std::regex &regex,
                        const llvm::MapVector<Operation *, SmallVector<graph::MatMulOp>> &sites,
                        llvm::MapVector<Operation *, SmallVector<ExpertSite>> &experts) {
  bool failed = false;
  SymbolTable symbols(module);
  for (graph::ParamOp param : module.getOps<graph::ParamOp>()) {
    StringRef name = param.getSymName();
    RankedTensorType type = param.getTensorType();
    if (sites.contains(param) || isLoraAdapter(name) || type.getRank() < 3 ||
        !std::regex_search(name.str(), regex))
      continue; // (a matmul weight of another rank is reported with its matmul)
    Operation *where = nullptr;
    std::optional<SmallVector<ExpertSite>> sites;
    if (type.getRank() == 3 && isa<FloatType>(type.getElementType()))
      sites = expertSitesOf(param, module, where);
    if (sites && llvm::any_of(*sites, [&](const ExpertSite &e) {
          return e.weightsLeft != sites->front().weightsLeft;
        })) {
      param.emitError() << "rp-inject-lora: stacked expert weight '" << name
                        << "' is read both as W_e x and as x W_e; LoRA adapts one of the two";
      failed = true;
      continue;
    }
    if (sites && !sites->empty()) {
      for (StringRef part : {"lora_A", "lora_B"}) {
        std::string adapter = adapterName(name, sites->front().weightsLeft, part);
        if (symbols.lookup(adapter)) {
          param.emitError() << "rp-inject-lora: cannot add '" << adapter
                            << "': the symbol exists (was LoRA injected already?)";
          failed = true;
        }
      }
      experts[param] = std::move(*sites);
      continue;
    }
    InFlightDiagnostic diag =
        param.emitError() << "rp-inject-lora: param '" << name << "' matches the targets but has type "
                          << type << "; LoRA adapts rank-2 matmul weights and stacked [E, ...] "
                          << "expert weights read as a mixture of experts' batched_mm "
                          << "(matmul of graph.gather(W, routing ids) by one row per pair), "
                          << "not this (narrow the targets, e.g. to the attention projections "
                          << "'(q|k|v|o)_proj', to train with it frozen)";
    if (where)
      diag.attachNote(where->getLoc()) << "read here";
    failed = true;
  }
  return failed;
}

/// The error for targets that match no weight, listing the matmul weights there are.
void reportNoMatch(Location loc, StringRef targets, ArrayRef<StringRef> matmulWeights) {
  InFlightDiagnostic diag = emitError(loc) << "rp-inject-lora: targets '" << targets
                                           << "' match no matmul weight; ";
  if (matmulWeights.empty())
    diag << "the module has no graph.matmul whose rhs is a graph.load_param";
  else
    diag << "matmul weights: " << detail::joinNamesForMessage(matmulWeights);
}

/// The dense matmuls to adapt, grouped by weight (in the order of first use), how each of
/// those weights is read (true: x @ W^T), and every matmul weight of the module (named by the
/// error for targets that match none).
struct DenseSites {
  llvm::MapVector<Operation *, SmallVector<graph::MatMulOp>> byWeight;
  llvm::DenseMap<Operation *, bool> transposed;
  llvm::SetVector<StringRef> matmulWeights;
};

struct InjectLora : impl::InjectLoraBase<InjectLora> {
  using InjectLoraBase::InjectLoraBase;

  void runOnOperation() override;

private:
  /// The regex of `targets` once every option is valid; emits an error at `loc` and returns
  /// nullopt on the first bad option.
  std::optional<std::regex> checkOptions(Location loc);
  /// Finds the matmuls whose weight matches `regex` and checks them before the IR changes;
  /// returns true when it reported an error (every one is reported).
  bool findDenseSites(ModuleOp module, const std::regex &regex, DenseSites &dense);
  /// Records `matmul` in `dense` when its weight matches; returns true when it reported a
  /// weight read both as W and as W^T, of another type than a rank-2 float [in, out], or
  /// whose adapters' names are taken.
  bool addDenseSite(graph::MatMulOp matmul, SymbolTable &symbols, const std::regex &regex,
                    DenseSites &dense);
  /// One A/B pair per weight, one adapted computation per matmul or expert site.
  void adaptSites(const DenseSites &dense,
                  const llvm::MapVector<Operation *, SmallVector<ExpertSite>> &experts);
  /// Adds W's A [in, rank] and B [rank, out] right after `weight` (named by adapterName);
  /// returns them.
  std::pair<graph::ParamOp, graph::ParamOp> createAdapters(graph::ParamOp weight,
                                                           bool transposed);
  /// Rewrites the uses of `matmul` (x @ W) to x @ W + ((x @ A) @ B) * scale.
  void adaptMatMul(graph::MatMulOp matmul, graph::ParamOp a, graph::ParamOp b);
  /// Adds a stacked expert weight's A [E, r, in] and B [E, out, r] right after it (named by
  /// adapterName, `weightsLeft` as `transposed`).
  std::pair<graph::ParamOp, graph::ParamOp> createExpertAdapters(graph::ParamOp weight,
                                                                 bool weightsLeft);
  /// Rewrites the uses of an expert site's product y to y + scale * the per-pair update.
  void adaptExpertSite(ExpertSite site, graph::ParamOp a, graph::ParamOp b);
  /// The constant alpha / rank of `element` type (PEFT's scaling, rounded once).
  Value scaleConstant(OpBuilder &builder, Location loc, Type element);
};

/// LoRA trains the adapters only: every other param is frozen.
void freezeAllButAdapters(ModuleOp module) {
  for (graph::ParamOp param : module.getOps<graph::ParamOp>())
    if (!isLoraAdapter(param.getSymName()))
      param.setTrainable(false);
}

void InjectLora::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<std::regex> regex = checkOptions(module.getLoc());
  if (!regex)
    return signalPassFailure();

  // Find the sites and check everything before changing the IR.
  DenseSites dense;
  bool reported = findDenseSites(module, *regex, dense);
  llvm::MapVector<Operation *, SmallVector<ExpertSite>> experts;
  reported |= findStackedExperts(module, *regex, dense.byWeight, experts);
  if (reported)
    return signalPassFailure();
  if (dense.byWeight.empty() && experts.empty()) {
    reportNoMatch(module.getLoc(), targets, dense.matmulWeights.getArrayRef());
    return signalPassFailure();
  }

  adaptSites(dense, experts);
  freezeAllButAdapters(module);
}

std::optional<std::regex> InjectLora::checkOptions(Location loc) {
  if (rank <= 0) {
    emitError(loc) << "rp-inject-lora: 'rank' must be positive, got "
                   << static_cast<int64_t>(rank);
    return std::nullopt;
  }
  if (!std::isfinite(alpha)) {
    const char *value = std::isnan(alpha) ? "nan" : (alpha > 0 ? "inf" : "-inf");
    emitError(loc) << "rp-inject-lora: 'alpha' must be finite, got " << value;
    return std::nullopt;
  }
  if (targets.empty()) {
    emitError(loc) << "rp-inject-lora: 'targets' is empty; give a regex of the weights "
                      "to adapt (e.g. targets=q_proj|v_proj)";
    return std::nullopt;
  }
  std::string whyNot;
  std::optional<std::regex> regex = detail::compileParamPattern(targets, whyNot);
  if (!regex)
    emitError(loc) << "rp-inject-lora: bad targets '" << targets << "': " << whyNot;
  return regex;
}

bool InjectLora::findDenseSites(ModuleOp module, const std::regex &regex, DenseSites &dense) {
  SymbolTable symbols(module);
  bool reported = false;
  module.walk([&](graph::MatMulOp matmul) {
    reported |= addDenseSite(matmul, symbols, regex, dense);
  });
  return reported;
}

bool InjectLora::addDenseSite(graph::MatMulOp matmul, SymbolTable &symbols,
                              const std::regex &regex, DenseSites &dense) {
  auto [load, transposed] = matmulWeight(matmul);
  if (!load)
    return false;
  auto weight = symbols.lookup<graph::ParamOp>(load.getParam());
  if (!weight) // The load_param verifier reports it.
    return false;
  StringRef name = weight.getSymName();
  dense.matmulWeights.insert(name);
  if (isLoraAdapter(name) || !std::regex_search(name.str(), regex))
    return false;
  bool firstUse = !dense.byWeight.contains(weight);
  dense.byWeight[weight].push_back(matmul);
  if (!firstUse) {
    if (dense.transposed[weight] == transposed)
      return false;
    InFlightDiagnostic diag = weight.emitError()
                              << "rp-inject-lora: param '" << name
                              << "' is read both as x @ W and as x @ transpose(W); LoRA "
                                 "adapts one of the two";
    diag.attachNote(matmul.getLoc()) << "used as a matmul weight here";
    return true;
  }
  dense.transposed[weight] = transposed;
  RankedTensorType type = weight.getTensorType();
  if (type.getRank() != 2 || !isa<FloatType>(type.getElementType())) {
    InFlightDiagnostic diag = weight.emitError()
                              << "rp-inject-lora: param '" << name << "' matches targets '"
                              << targets << "' but has type " << type
                              << "; LoRA adapts a rank-2 floating-point [in, out] weight";
    diag.attachNote(matmul.getLoc()) << "used as a matmul weight here";
    return true;
  }
  bool reported = false;
  for (StringRef part : {"lora_A", "lora_B"}) {
    std::string adapter = adapterName(name, transposed, part);
    if (Operation *existing = symbols.lookup(adapter)) {
      InFlightDiagnostic diag = weight.emitError()
                                << "rp-inject-lora: cannot add '" << adapter << "' for param '"
                                << name << "': the symbol exists (was LoRA injected already?)";
      diag.attachNote(existing->getLoc()) << "existing symbol here";
      reported = true;
    }
  }
  return reported;
}

void InjectLora::adaptSites(const DenseSites &dense,
                            const llvm::MapVector<Operation *, SmallVector<ExpertSite>> &experts) {
  for (auto &[op, matmuls] : dense.byWeight) {
    auto [a, b] = createAdapters(cast<graph::ParamOp>(op), dense.transposed.lookup(op));
    for (graph::MatMulOp matmul : matmuls)
      adaptMatMul(matmul, a, b);
  }
  for (auto &[op, expertSites] : experts) {
    auto [a, b] = createExpertAdapters(cast<graph::ParamOp>(op), expertSites.front().weightsLeft);
    for (const ExpertSite &site : expertSites)
      adaptExpertSite(site, a, b);
  }
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
                             graph::ParamInitAttr::get(ctx, graph::ParamInit::kaiming_uniform),
                             /*quant=*/nullptr, /*stored_type=*/nullptr, /*quant_axis=*/nullptr);
  auto b = graph::ParamOp::create(builder, weight.getLoc(), adapterName(name, transposed, "lora_B"),
                                  RankedTensorType::get({rank, out}, element),
                                  /*trainable=*/true, /*initializer=*/StringAttr(),
                                  graph::ParamInitAttr::get(ctx, graph::ParamInit::zeros),
                             /*quant=*/nullptr, /*stored_type=*/nullptr, /*quant_axis=*/nullptr);
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

Value InjectLora::scaleConstant(OpBuilder &builder, Location loc, Type element) {
  double scale = alpha / static_cast<double>(rank);
  auto scalarType = RankedTensorType::get({}, element);
  return graph::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(scalarType,
                             ArrayRef<Attribute>{builder.getFloatAttr(element, scale)}));
}

std::pair<graph::ParamOp, graph::ParamOp>
InjectLora::createExpertAdapters(graph::ParamOp weight, bool weightsLeft) {
  MLIRContext *ctx = weight.getContext();
  RankedTensorType type = weight.getTensorType();
  Type element = type.getElementType();
  int64_t experts = type.getDimSize(0);
  int64_t in = type.getDimSize(weightsLeft ? 2 : 1), out = type.getDimSize(weightsLeft ? 1 : 2);
  StringRef name = weight.getSymName();
  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(weight);
  auto a = graph::ParamOp::create(builder, weight.getLoc(), adapterName(name, weightsLeft, "lora_A"),
                                  RankedTensorType::get({experts, rank, in}, element),
                                  /*trainable=*/true, /*initializer=*/StringAttr(),
                                  graph::ParamInitAttr::get(ctx, graph::ParamInit::kaiming_uniform),
                             /*quant=*/nullptr, /*stored_type=*/nullptr, /*quant_axis=*/nullptr);
  auto b = graph::ParamOp::create(builder, weight.getLoc(), adapterName(name, weightsLeft, "lora_B"),
                                  RankedTensorType::get({experts, out, rank}, element),
                                  /*trainable=*/true, /*initializer=*/StringAttr(),
                                  graph::ParamInitAttr::get(ctx, graph::ParamInit::zeros),
                             /*quant=*/nullptr, /*stored_type=*/nullptr, /*quant_axis=*/nullptr);
  return {a, b};
}

void InjectLora::adaptExpertSite(ExpertSite site, graph::ParamOp a, graph::ParamOp b) {
  graph::MatMulOp matmul = site.matmul;
  Location loc = matmul.getLoc();
  Value y = matmul.getResult();
  Value x = site.weightsLeft ? matmul.getRhs() : matmul.getLhs();
  Value ids = site.gather.getIndices();
  RankedTensorType xType = cast<RankedTensorType>(x.getType());
  Type element = xType.getElementType();
  int64_t pairs = xType.getDimSize(0), in = xType.getNumElements() / pairs;

  OpBuilder builder(matmul.getContext());
  builder.setInsertionPointAfter(matmul);
  auto axis0 = builder.getI64IntegerAttr(0);
  // x as a column per pair [R, in, 1] (x [R, 1, in] holds the same elements).
  Value column = x;
  if (!site.weightsLeft)
    column = graph::ReshapeOp::create(builder, loc, RankedTensorType::get({pairs, in, 1}, element),
                                      x);
  Value aVal = graph::LoadParamOp::create(builder, loc, a.getTensorType(), a.getSymName());
  Value bVal = graph::LoadParamOp::create(builder, loc, b.getTensorType(), b.getSymName());
  Value ga = graph::GatherOp::create(builder, loc, aVal, ids, axis0);
  Value ax = graph::MatMulOp::create(builder, loc, ga, column);   // [R, r, 1]
  Value gb = graph::GatherOp::create(builder, loc, bVal, ids, axis0);
  Value bax = graph::MatMulOp::create(builder, loc, gb, ax);      // [R, out, 1]
  if (bax.getType() != y.getType())
    bax = graph::ReshapeOp::create(builder, loc, y.getType(), bax); // [R, 1, out]
  Value delta = graph::MulOp::create(builder, loc, bax, scaleConstant(builder, loc, element));
  auto sum = graph::AddOp::create(builder, loc, y, delta);
  y.replaceAllUsesExcept(sum.getResult(), sum);
}

} // namespace
} // namespace mlir::rp
