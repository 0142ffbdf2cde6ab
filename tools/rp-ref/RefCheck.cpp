//===- RefCheck.cpp - rp-ref --reference: compare with a PyTorch sidecar --===//

#include "RefCheck.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "runtime/io/Safetensors.h"
#include "runtime/optim/AdamW.h"
#include "runtime/train/TokenWeights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

using namespace mlir;
using ::rp::base::DType;
using ::rp::base::HostTensor;

namespace {

namespace graph = mlir::rp::graph;

int badInput(const std::string &message) {
  std::fprintf(stderr, "rp-ref: error: %s\n", message.c_str());
  return 2;
}

/// A copy of a sidecar tensor as a HostTensor (the mapping is not aligned).
std::optional<HostTensor> toHost(const ::rp::runtime::SafetensorsTensorView &view) {
  std::optional<DType> dtype = ::rp::runtime::toRuntimeDType(view.dtype);
  if (!dtype)
    return std::nullopt;
  HostTensor t(*dtype, view.shape);
  if (view.size)
    std::memcpy(t.raw(), view.data, view.size);
  return t;
}

/// max |a - b| / max |b| over float32 tensors of equal size.
double normalisedError(const HostTensor &a, const HostTensor &b) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.data<float>()[i], y = b.data<float>()[i];
    diff = std::max(diff, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  return scale > 0 ? diff / scale : diff;
}

/// The initializer `param` names (its exported name) when it differs from the param's own.
std::optional<std::string> initializerName(func::FuncOp trainStep, FlatSymbolRefAttr param) {
  auto op = SymbolTable::lookupNearestSymbolFrom<graph::ParamOp>(trainStep, param);
  if (!op || !op.getInitializer() || *op.getInitializer() == param.getValue())
    return std::nullopt;
  return op.getInitializer()->str();
}

/// The argument `trainStep`'s cross-entropy (plain or fused with the LM head) reads its labels from (through ops that only move
/// the value), or -1; `ignoreIndex` receives the loss's ignore_index.
int labelsArgument(func::FuncOp trainStep, int64_t &ignoreIndex) {
  int arg = -1;
  auto visit = [&](Value v, int64_t ignore) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<graph::ReshapeOp, graph::CastOp,
               graph::TransposeOp, graph::ExpandOp>(def))
        return;
      v = def->getOperand(0);
    }
    if (auto a = dyn_cast<BlockArgument>(v)) {
      arg = static_cast<int>(a.getArgNumber());
      ignoreIndex = ignore;
    }
  };
  trainStep.walk([&](Operation *op) {
    if (auto ce = dyn_cast<graph::CrossEntropyOp>(op))
      visit(ce.getLabels(), ce.getIgnoreIndexAttr().getInt());
    else if (auto lce = dyn_cast<graph::LinearCrossEntropyOp>(op))
      visit(lce.getLabels(), lce.getIgnoreIndexAttr().getInt());
    else if (auto vjp = dyn_cast<graph::LinearCrossEntropyVjpOp>(op))
      visit(vjp.getLabels(), vjp.getIgnoreIndexAttr().getInt());
  });
  return arg;
}

/// Labels of `t` other than `ignoreIndex` (i64 or i32 labels).
int64_t trainedLabels(const HostTensor &t, int64_t ignoreIndex) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numElements(); ++i)
    n += (t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i]) != ignoreIndex;
  return n;
}

/// Rows [m * rows, (m + 1) * rows) of `t` along dimension 0.
HostTensor rowsOf(const HostTensor &t, int64_t m, int64_t rows) {
  std::vector<int64_t> shape = t.shape();
  const int64_t bytesPerRow = t.byteSize() / shape[0];
  shape[0] = rows;
  HostTensor out(t.dtype(), shape);
  std::memcpy(out.raw(), static_cast<const char *>(t.raw()) + m * rows * bytesPerRow,
              static_cast<size_t>(rows * bytesPerRow));
  return out;
}

/// The micro-batches' arguments of `trainStep` (its last argument, the loss seed, filled as
/// runtime/train/TokenWeights.h does): the sidecar's `input.<name>` tensors, M times the
/// model's batch along dimension 0, split into M. 0, or the exit code after the message.
int readMicroBatches(func::FuncOp trainStep, const ::rp::runtime::SafetensorsFile &sidecar,
                     const std::string &src, int64_t M,
                     std::vector<std::vector<HostTensor>> &batches) {
  const unsigned seedArg = trainStep.getNumArguments() - 1;
  int64_t ignoreIndex = -100;
  const int labels = labelsArgument(trainStep, ignoreIndex);
  batches.clear();
  batches.resize(static_cast<size_t>(M));
  for (unsigned i = 0; i < seedArg; ++i) {
    auto name = trainStep.getArgAttrOfType<StringAttr>(i, "graph.name");
    std::string key = "input." + (name ? name.getValue().str() : std::to_string(i));
    const auto *view = sidecar.find(key);
    if (!view)
      return badInput(src + ": no tensor '" + key + "' (the batch for graph input " +
                      std::to_string(i) + ")");
    std::optional<HostTensor> t = toHost(*view);
    auto type = cast<RankedTensorType>(trainStep.getArgumentTypes()[i]);
    SmallVector<int64_t> whole(type.getShape());
    if (!whole.empty())
      whole[0] *= M;
    if (!t || llvm::ArrayRef<int64_t>(t->shape()) != llvm::ArrayRef<int64_t>(whole) ||
        t->dtype() != graph::irDType(type.getElementType()) || (whole.empty() && M > 1))
      return badInput(src + ": '" + key + "' has " +
                      (t ? std::string(::rp::base::dtypeName(t->dtype())) + " " +
                               ::rp::base::formatShape(t->shape())
                         : std::string("an unsupported dtype")) +
                      ", the model expects " +
                      ::rp::base::dtypeName(graph::irDType(type.getElementType())) + " " +
                      graph::formatShape(whole) +
                      (M > 1 ? " (" + std::to_string(M) + " micro-batches)" : std::string()));
    for (int64_t m = 0; m < M; ++m)
      batches[static_cast<size_t>(m)].push_back(M > 1 ? rowsOf(*t, m, type.getShape()[0])
                                                      : std::move(*t));
  }
  std::vector<int64_t> trained;
  for (const std::vector<HostTensor> &b : batches)
    trained.push_back(labels >= 0 ? trainedLabels(b[static_cast<size_t>(labels)], ignoreIndex)
                                  : 1);
  const std::vector<float> seeds = ::rp::runtime::lossSeeds(trained);
  for (int64_t m = 0; m < M; ++m) {
    HostTensor seed(DType::F32, std::vector<int64_t>{});
    seed.data<float>()[0] = seeds[static_cast<size_t>(m)];
    batches[static_cast<size_t>(m)].push_back(std::move(seed));
  }
  return 0;
}

/// Runs `trainStep` on every micro-batch: the token-weighted loss and, per result, the
/// gradients summed in fp32 in micro-batch order and scaled by 1/M (what the host optimizer
/// sees). Returns false when the interpreter failed (its message printed).
bool runMicroBatches(func::FuncOp trainStep, const mlir::rp::onnx::InitializerTable &initializers,
                     std::vector<std::vector<HostTensor>> &batches, int64_t ignoreIndex,
                     int labels, SmallVector<HostTensor> &results) {
  auto loadParam = [&](graph::ParamOp param) { return initializers.load(param); };
  const int64_t M = static_cast<int64_t>(batches.size());
  std::vector<float> losses;
  std::vector<int64_t> trained;
  for (int64_t m = 0; m < M; ++m) {
    FailureOr<SmallVector<HostTensor>> out = graph::runFunction(
        trainStep, batches[static_cast<size_t>(m)], loadParam, graph::EvalPrecision::F32);
    if (failed(out))
      return false;
    for (auto [i, t] : llvm::enumerate(*out)) {
      if (!trainStep.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of")) {
        losses.push_back(t.data<float>()[0]);
        if (m == 0)
          results.push_back(HostTensor(DType::F32, std::vector<int64_t>{}));
        continue;
      }
      if (m == 0)
        results.push_back(HostTensor(DType::F32, t.shape()));
      ::rp::runtime::accumulateGradient(results[i].data<float>(), t.data<float>(),
                                        t.numElements(), m == 0);
    }
    trained.push_back(labels >= 0 ? trainedLabels(batches[static_cast<size_t>(m)]
                                                      [static_cast<size_t>(labels)],
                                                  ignoreIndex)
                                  : 1);
  }
  const float scale = static_cast<float>(1.0 / static_cast<double>(M));
  for (auto [i, t] : llvm::enumerate(results)) {
    if (!trainStep.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of")) {
      t.data<float>()[0] =
          static_cast<float>(::rp::runtime::tokenWeightedLoss(losses, trained));
      continue;
    }
    for (int64_t k = 0; k < t.numElements(); ++k)
      t.data<float>()[k] *= scale;
  }
  return true;
}

} // namespace

int mlir::rp::checkAgainstReference(func::FuncOp trainStep,
                                    const onnx::InitializerTable &initializers,
                                    const RefCheckOptions &options) {
  auto sidecar = ::rp::runtime::readSafetensors(options.sidecarPath);
  if (!sidecar.ok())
    return badInput(sidecar.status().message());
  const std::string &src = options.sidecarPath;
  std::vector<std::vector<HostTensor>> batches;
  if (int code = readMicroBatches(trainStep, *sidecar, src, options.microBatches, batches))
    return code;
  int64_t ignoreIndex = -100;
  const int labels = labelsArgument(trainStep, ignoreIndex);
  SmallVector<HostTensor> outputs;
  if (!runMicroBatches(trainStep, initializers, batches, ignoreIndex, labels, outputs))
    return 2;

  double lossErr = -1, loss = 0, lossRef = 0;
  std::map<std::string, double> gradErr; // by param name
  std::set<std::string> matched;          // the sidecar's keys compared
  for (auto [i, t] : llvm::enumerate(outputs)) {
    auto param = trainStep.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of");
    std::string key = param ? "grad." + param.getValue().str() : "loss";
    const auto *view = sidecar->find(key);
    // A param's gradient may also be keyed by its exported initializer's name: a sidecar
    // written from the exporter's initializers names a tied embedding after the LM head
    // (`grad.lm_head.weight`), rpc after the embedding.
    std::optional<std::string> exported = param ? initializerName(trainStep, param) : std::nullopt;
    if (!view && exported && (view = sidecar->find("grad." + *exported)))
      key = "grad." + *exported;
    if (!view)
      return badInput(src + ": no reference '" + key + "'" +
                      (exported ? " or 'grad." + *exported + "'" : "") +
                      (param ? " (a trainable param of the model)" : ""));
    matched.insert(key);
    std::optional<HostTensor> ref = toHost(*view);
    if (!ref || ref->dtype() != DType::F32 || t.dtype() != DType::F32 ||
        ref->numElements() != t.numElements())
      return badInput(src + ": '" + key + "' is not float32 with " +
                      std::to_string(t.numElements()) + " elements");
    if (!param) {
      loss = t.data<float>()[0];
      lossRef = ref->data<float>()[0];
      lossErr = std::fabs(loss - lossRef) / std::max(std::fabs(lossRef), 1e-30);
    } else {
      gradErr[param.getValue().str()] = normalisedError(t, *ref);
    }
  }
  for (const auto &view : sidecar->tensors())
    if (view.name.rfind("grad.", 0) == 0 && !matched.count(view.name))
      return badInput(src + ": reference gradient '" + view.name +
                      "' has no trainable param in the model");
  if (lossErr < 0)
    return badInput("the model's training function has no loss result");

  std::vector<std::pair<double, std::string>> worst;
  for (const auto &[name, err] : gradErr)
    worst.emplace_back(err, name);
  std::sort(worst.rbegin(), worst.rend());
  std::printf("loss %.9g  reference %.9g  relative error %.3g (tolerance %.3g)\n", loss, lossRef,
              lossErr, options.lossRtol);
  std::printf("gradients of %zu params: max normalised error %.3g (tolerance %.3g)%s%s\n",
              gradErr.size(), worst.empty() ? 0.0 : worst.front().first, options.gradRtol,
              worst.empty() ? "" : ", worst ", worst.empty() ? "" : worst.front().second.c_str());
  bool ok = lossErr <= options.lossRtol;
  for (const auto &[err, name] : worst)
    if (err > options.gradRtol) {
      std::fprintf(stderr, "rp-ref: gradient of '%s' differs: normalised error %.3g > %.3g\n",
                   name.c_str(), err, options.gradRtol);
      ok = false;
    }
  if (lossErr > options.lossRtol)
    std::fprintf(stderr, "rp-ref: loss differs: %.9g vs %.9g (relative error %.3g > %.3g)\n",
                 loss, lossRef, lossErr, options.lossRtol);
  return ok ? 0 : 1;
}
