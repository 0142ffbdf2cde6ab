//===- RefCheck.cpp - rp-ref --reference: compare with a PyTorch sidecar --===//

#include "RefCheck.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "runtime/io/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace mlir;
using ::rp::runtime::DType;
using ::rp::runtime::HostTensor;

namespace {

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

} // namespace

int mlir::rp::checkAgainstReference(func::FuncOp trainStep,
                                    const onnx::InitializerTable &initializers,
                                    const RefCheckOptions &options) {
  auto sidecar = ::rp::runtime::readSafetensors(options.sidecarPath);
  if (!sidecar.ok())
    return badInput(sidecar.status().message());
  const std::string &src = options.sidecarPath;

  std::vector<HostTensor> inputs;
  for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
    auto name = trainStep.getArgAttrOfType<StringAttr>(i, "graph.name");
    std::string key = "input." + (name ? name.getValue().str() : std::to_string(i));
    const auto *view = sidecar->find(key);
    if (!view)
      return badInput(src + ": no tensor '" + key + "' (the batch for graph input " +
                      std::to_string(i) + ")");
    std::optional<HostTensor> t = toHost(*view);
    auto type = cast<RankedTensorType>(trainStep.getArgumentTypes()[i]);
    if (!t || llvm::ArrayRef<int64_t>(t->shape()) != type.getShape() ||
        t->dtype() != graph::irDType(type.getElementType()))
      return badInput(src + ": '" + key + "' has " +
                      (t ? std::string(::rp::runtime::dtypeName(t->dtype())) + " " +
                               ::rp::runtime::formatShape(t->shape())
                         : std::string("an unsupported dtype")) +
                      ", the model expects " +
                      ::rp::runtime::dtypeName(graph::irDType(type.getElementType())) + " " +
                      graph::formatShape(type.getShape()));
    inputs.push_back(std::move(*t));
  }

  auto loadParam = [&](graph::ParamOp param) { return initializers.load(param); };
  FailureOr<SmallVector<HostTensor>> outputs =
      graph::runFunction(trainStep, inputs, loadParam, graph::EvalPrecision::F32);
  if (failed(outputs))
    return 2;

  double lossErr = -1, loss = 0, lossRef = 0;
  std::map<std::string, double> gradErr; // by param name
  for (auto [i, t] : llvm::enumerate(*outputs)) {
    auto param = trainStep.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of");
    std::string key = param ? "grad." + param.getValue().str() : "loss";
    const auto *view = sidecar->find(key);
    if (!view)
      return badInput(src + ": no reference '" + key + "'" +
                      (param ? " (a trainable param of the model)" : ""));
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
    if (view.name.rfind("grad.", 0) == 0 && !gradErr.count(view.name.substr(5)))
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
