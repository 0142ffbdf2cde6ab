//===- RefTrain.cpp - rp-ref --train: the non-pipelined training oracle ---===//

#include "RefTrain.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/data/BatchSampler.h"
#include "runtime/optim/AdamW.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/MetricsLog.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace mlir::rp {

using ::rp::runtime::DType;
using ::rp::runtime::HostTensor;
namespace rt = ::rp::runtime;

namespace {

constexpr int kBadInput = 2;

int fail(const std::string &message) {
  llvm::errs() << "rp-ref: error: " << message << "\n";
  return kBadInput;
}

/// The argument of `func` read as embedding-gather indices (tokens) or cross-entropy labels,
/// directly or through ops that only move the value (reshape, cast, transpose, expand).
std::optional<unsigned> argumentUsedAs(func::FuncOp func, bool labels) {
  for (BlockArgument arg : func.getArguments()) {
    SmallVector<Value> worklist{arg};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (isa<graph::ReshapeOp, graph::CastOp, graph::TransposeOp, graph::ExpandOp>(user)) {
          worklist.push_back(user->getResult(0));
          continue;
        }
        if (use.getOperandNumber() != 1)
          continue;
        if ((!labels && isa<graph::GatherOp>(user)) ||
            (labels && isa<graph::CrossEntropyOp>(user)))
          return arg.getArgNumber();
      }
    }
  }
  return std::nullopt;
}

struct Param {
  std::string name;
  bool trainable = false;
  HostTensor master, compute, m, v, acc; // f32 (frozen: `compute` only)
};

rt::SafetensorsTensor tensorOf(const std::string &name, const HostTensor &t) {
  return rt::SafetensorsTensor{name, rt::fromRuntimeDType(t.dtype()), t.shape(), t.raw(),
                               t.byteSize()};
}

} // namespace

int runReferenceTraining(func::FuncOp func, const onnx::InitializerTable &initializers,
                         const RefTrainOptions &o) {
  std::optional<unsigned> tokensArg = argumentUsedAs(func, false);
  std::optional<unsigned> labelsArg = argumentUsedAs(func, true);
  if (!tokensArg)
    return fail("@train_step has no token-id argument (the indices of an embedding gather)");
  if (func.getNumArguments() != (labelsArg ? 2u : 1u))
    return fail("--train feeds a token-id argument and a labels argument only; @train_step "
                "has " + std::to_string(func.getNumArguments()) + " arguments");
  auto tokensType = cast<RankedTensorType>(func.getArgumentTypes()[*tokensArg]);
  if (tokensType.getRank() != 2)
    return fail("the token-id argument must be [batch, seq]");
  const int64_t batch = tokensType.getDimSize(0), seq = tokensType.getDimSize(1);
  const DType idType = graph::irDType(tokensType.getElementType());
  // Labels may have another integer dtype than the token ids.
  const DType labelType =
      labelsArg ? graph::irDType(
                      cast<RankedTensorType>(func.getArgumentTypes()[*labelsArg]).getElementType())
                : idType;

  rt::StatusOr<rt::TokenData> data = rt::readTokens(o.dataPath, o.dataFormat);
  if (!data.ok())
    return fail(data.status().message());
  rt::StatusOr<rt::BatchSampler> sampler = rt::BatchSampler::create(*data, batch, seq, o.seed);
  if (!sampler.ok())
    return fail(sampler.status().message());

  // Params: every graph.param; trainable = has a gradient result.
  auto module = func->getParentOfType<ModuleOp>();
  std::map<std::string, Param> params;
  for (auto p : module.getOps<graph::ParamOp>()) {
    FailureOr<HostTensor> value = initializers.load(p);
    if (failed(value))
      return kBadInput;
    Param &param = params[p.getSymName().str()];
    param.name = p.getSymName().str();
    param.compute = std::move(*value);
  }
  int lossResult = -1;
  std::vector<std::string> gradOf(func.getNumResults());
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (auto of = func.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of")) {
      gradOf[i] = of.getValue().str();
      Param &p = params.at(gradOf[i]);
      p.trainable = true;
      p.master = p.compute.clone();
      p.m = HostTensor(DType::F32, p.compute.shape());
      p.v = HostTensor(DType::F32, p.compute.shape());
    } else {
      lossResult = static_cast<int>(i);
    }
  }
  if (lossResult < 0)
    return fail("@train_step has no loss result");

  std::optional<rt::MetricsLog> log;
  if (!o.logPath.empty()) {
    rt::StatusOr<rt::MetricsLog> l = rt::MetricsLog::open(o.logPath);
    if (!l.ok())
      return fail(l.status().message());
    log = std::move(l).value();
  }
  if (!o.saveDir.empty())
    if (rt::Status s = rt::checkCheckpointDir(o.saveDir); !s.ok())
      return fail(s.message());

  auto loadParam = [&](graph::ParamOp p) -> FailureOr<HostTensor> {
    return params.at(p.getSymName().str()).compute.clone();
  };
  const int64_t M = o.microBatches;
  for (int64_t step = 0; step < o.steps; ++step) {
    std::vector<float> losses;
    for (int64_t mb = 0; mb < M; ++mb) {
      SmallVector<HostTensor> args;
      args.resize(func.getNumArguments());
      HostTensor tokens(idType, {batch, seq}), labels(labelType, {batch, seq});
      if (rt::Status s =
              sampler->fillTrain(step, mb, idType, tokens.raw(), labelType, labels.raw());
          !s.ok())
        return fail(s.message());
      args[*tokensArg] = std::move(tokens);
      if (labelsArg)
        args[*labelsArg] = std::move(labels);
      FailureOr<SmallVector<HostTensor>> results =
          graph::runFunction(func, args, loadParam, graph::EvalPrecision::F32);
      if (failed(results))
        return kBadInput;
      losses.push_back((*results)[static_cast<size_t>(lossResult)].data<float>()[0]);
      for (size_t i = 0; i < gradOf.size(); ++i) {
        if (gradOf[i].empty())
          continue;
        Param &p = params.at(gradOf[i]);
        const HostTensor &g = (*results)[i];
        if (mb == 0)
          p.acc = HostTensor(DType::F32, g.shape());
        rt::accumulateGradient(p.acc.data<float>(), g.data<float>(), g.numElements(), mb == 0);
      }
    }
    double sum = 0;
    for (float l : losses)
      sum += static_cast<double>(l);
    const double loss = sum / static_cast<double>(M);

    // The optimizer step, exactly as runtime/exec/Executor.cpp orders it.
    float gradScale = static_cast<float>(1.0 / static_cast<double>(M));
    if (o.gradClip > 0) {
      double squares = 0;
      for (auto &[name, p] : params) // std::map: sorted by name
        if (p.trainable)
          squares += rt::sumOfSquares(p.acc.data<float>(), p.acc.numElements(), gradScale);
      rt::StatusOr<float> clipped = rt::clippedGradScale(squares, o.gradClip, M, step + 1);
      if (!clipped.ok()) { // a diverged run, not bad input: exit 1 as rp-run
        fail(clipped.status().message());
        return 1;
      }
      gradScale = clipped.value();
    }
    const double lr = rt::learningRate(o.lr, o.warmup, step);
    rt::AdamWConfig config{lr, o.beta1, o.beta2, o.eps, o.weightDecay};
    for (auto &[name, p] : params) {
      if (!p.trainable)
        continue;
      if (o.async) // iteration step + 1 computes with W_step
        p.compute = p.master.clone();
      rt::adamwStep(p.master.data<float>(), p.m.data<float>(), p.v.data<float>(),
                    p.acc.data<float>(), p.master.numElements(), config, step + 1, gradScale);
      if (!o.async)
        p.compute = p.master.clone();
    }
    std::printf("step %lld loss %.9g\n", static_cast<long long>(step + 1), loss);
    if (log) {
      rt::StepMetrics metrics{step + 1, loss, lr,           M * batch * seq,
                              0,        0,    std::nullopt, std::nullopt};
      if (rt::Status s = log->write(metrics); !s.ok())
        return fail(s.message());
    }
  }

  if (!o.saveDir.empty()) {
    rt::CheckpointData ckpt;
    ckpt.step = o.steps;
    ckpt.metadata = {{"producer", "rp-ref"},
                     {"update", o.async ? "async" : "sync"},
                     {"seed", std::to_string(o.seed)},
                     {"micro_batches", std::to_string(M)},
                     {"compute_dtype", "f32"}};
    for (auto &[name, p] : params) {
      if (!p.trainable) {
        ckpt.model.push_back(tensorOf(name, p.compute));
        continue;
      }
      ckpt.model.push_back(tensorOf(name, p.master));
      ckpt.optimizer.push_back(tensorOf("m." + name, p.m));
      ckpt.optimizer.push_back(tensorOf("v." + name, p.v));
      if (o.async)
        ckpt.optimizer.push_back(tensorOf("weights." + name, p.compute));
    }
    if (rt::Status s = rt::saveCheckpoint(o.saveDir, ckpt); !s.ok())
      return fail(s.message());
  }
  return 0;
}

} // namespace mlir::rp
