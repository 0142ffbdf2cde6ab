//===- RefTrain.cpp - rp-ref --train: the non-pipelined training oracle ---===//

#include "RefTrain.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "runtime/data/BatchSampler.h"
#include "runtime/optim/AdamW.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/MetricsLog.h"
#include "runtime/train/TokenWeights.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

namespace mlir::rp {

using ::rp::base::DType;
using ::rp::base::HostTensor;
namespace rt = ::rp::runtime;

namespace {

constexpr int kBadInput = 2;

int fail(const std::string &message) {
  llvm::errs() << "rp-ref: error: " << message << "\n";
  return kBadInput;
}

/// The argument of `func` read as embedding-gather indices (tokens) or cross-entropy labels,
/// directly or through ops that only move the value (reshape, cast, transpose, expand).
std::optional<unsigned> argumentUsedAs(func::FuncOp func, bool labels,
                                       std::optional<unsigned> skip = std::nullopt) {
  for (BlockArgument arg : func.getArguments()) {
    if (skip && arg.getArgNumber() == *skip)
      continue;
    SmallVector<Value> worklist{arg};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (isa<graph::ReshapeOp, graph::CastOp, graph::TransposeOp, graph::ExpandOp>(user)) {
          worklist.push_back(user->getResult(0));
          continue;
        }
        const unsigned operand = use.getOperandNumber();
        if ((!labels && operand == 1 && isa<graph::GatherOp>(user)) ||
            (labels && operand == 1 && isa<graph::CrossEntropyOp>(user)) ||
            (labels && operand == 2 &&
             isa<graph::LinearCrossEntropyOp, graph::LinearCrossEntropyVjpOp>(user)))
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
  /// A param read by several layers: the gradient of each further reader, accumulated
  /// apart (`acc` holds the lowest reader's) and added to `acc` in layer order before the
  /// optimizer step, as the executor sums a shared param's gradient slots.
  std::vector<HostTensor> parts;
};

rt::SafetensorsTensor tensorOf(const std::string &name, const HostTensor &t) {
  return rt::SafetensorsTensor{name, rt::fromRuntimeDType(t.dtype()), t.shape(), t.raw(),
                               t.byteSize()};
}

/// The argument named `position_ids` (runtime/plan/PlanInputs.h), if any.
std::optional<unsigned> positionArgument(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "graph.name"))
      if (name.getValue() == rt::kPositionIdsInput)
        return i;
  return std::nullopt;
}

/// The model's token-id, labels and position arguments, as the sampler fills them.
struct FeedArgs {
  unsigned tokens = 0;
  std::optional<unsigned> labels;
  std::optional<unsigned> positions; ///< `position_ids`
  DType positionType = DType::I64;
  unsigned seed = 0;             ///< The loss seed (the last argument; TokenWeights.h).
  int64_t ignoreIndex = -100;    ///< The cross-entropy's, for masked-out labels.
  bool meanLoss = true;          ///< The cross-entropy averages (token weighting applies).
  int64_t batch = 0, seq = 0;
  DType idType = DType::I64;
  DType labelType = DType::I64; ///< Labels may have another integer dtype than the token ids.
};

/// rp-ref --train, step by step. Each phase returns 0 to go on, or the process exit code (with
/// its message on stderr).
class ReferenceTrainer {
public:
  ReferenceTrainer(func::FuncOp func, const onnx::InitializerTable &initializers,
                   const RefTrainOptions &options)
      : func_(func), initializers_(initializers), o_(options) {}

  int run();

private:
  /// The token-id and labels arguments of @train_step, and their shapes and dtypes.
  int findFeed();
  /// The data and the sampler of (batch, seq) windows.
  int openData();
  /// Params: every graph.param at its initial value; trainable = has a gradient result (its
  /// fp32 master and AdamW moments); the loss result.
  int loadParams();
  /// The metrics log and the checkpoint directory check.
  int openOutputs();
  /// Step `step`: the M micro-batches' forward and backward seeded with their token weights,
  /// gradients accumulated in fp32 in micro-batch order; `loss` receives the token-weighted
  /// loss (runtime/train/TokenWeights.h).
  int runMicroBatches(int64_t step, double &loss);
  /// The optimizer step, exactly as runtime/exec/Executor.cpp orders it; `lr` receives the
  /// step's learning rate, `skipped` whether a non-finite gradient skipped it.
  int optimizerStep(int64_t step, double &lr, bool &skipped);
  /// The checkpoint of the last step, as rp-run writes it.
  int saveCheckpoint();

  func::FuncOp func_;
  const onnx::InitializerTable &initializers_;
  const RefTrainOptions &o_;
  FeedArgs feed_;
  std::optional<rt::TokenData> data_;
  std::optional<rt::BatchSampler> sampler_;
  std::map<std::string, Param> params_;
  int lossResult_ = -1;
  std::vector<std::string> gradOf_; ///< Per result: the param of a gradient ("" : the loss).
  std::vector<int> gradPart_;       ///< Per gradient result: 0, or 1 + the index in `parts`.
  std::optional<rt::MetricsLog> log_;
};

int ReferenceTrainer::findFeed() {
  std::optional<unsigned> positionsArg = positionArgument(func_);
  std::optional<unsigned> tokensArg = argumentUsedAs(func_, false, positionsArg);
  std::optional<unsigned> labelsArg = argumentUsedAs(func_, true, positionsArg);
  if (!tokensArg)
    return fail("@train_step has no token-id argument (the indices of an embedding gather)");
  if (func_.getNumArguments() != 2u + (labelsArg ? 1u : 0u) + (positionsArg ? 1u : 0u))
    return fail("--train feeds a token-id argument, a labels argument and position_ids only; "
                "@train_step has " + std::to_string(func_.getNumArguments() - 1) + " arguments");
  feed_.positions = positionsArg;
  feed_.seed = func_.getNumArguments() - 1;
  if (labelsArg)
    func_.walk([&](Operation *op) {
      auto readLoss = [&](auto loss) {
        feed_.ignoreIndex = loss.getIgnoreIndexAttr().getInt();
        feed_.meanLoss = loss.getReduction() == graph::LossReduction::mean;
      };
      if (auto ce = dyn_cast<graph::CrossEntropyOp>(op))
        readLoss(ce);
      else if (auto lce = dyn_cast<graph::LinearCrossEntropyOp>(op))
        readLoss(lce);
      else if (auto vjp = dyn_cast<graph::LinearCrossEntropyVjpOp>(op))
        readLoss(vjp);
    });
  auto tokensType = cast<RankedTensorType>(func_.getArgumentTypes()[*tokensArg]);
  if (tokensType.getRank() != 2)
    return fail("the token-id argument must be [batch, seq]");
  feed_.tokens = *tokensArg;
  feed_.labels = labelsArg;
  feed_.batch = tokensType.getDimSize(0);
  feed_.seq = tokensType.getDimSize(1);
  feed_.idType = graph::irDType(tokensType.getElementType());
  feed_.labelType =
      labelsArg ? graph::irDType(
                      cast<RankedTensorType>(func_.getArgumentTypes()[*labelsArg]).getElementType())
                : feed_.idType;
  if (positionsArg) {
    auto type = cast<RankedTensorType>(func_.getArgumentTypes()[*positionsArg]);
    if (type.getShape() != tokensType.getShape())
      return fail("position_ids must have the token ids' shape [batch, seq]");
    feed_.positionType = graph::irDType(type.getElementType());
    if (feed_.positionType != DType::I64 && feed_.positionType != DType::I32)
      return fail("position_ids must hold i64 or i32");
  }
  return 0;
}

int ReferenceTrainer::openData() {
  ::rp::base::StatusOr<rt::TokenData> data = rt::readTokens(o_.dataPath, o_.dataFormat);
  if (!data.ok())
    return fail(data.status().message());
  data_ = std::move(data).value();
  ::rp::base::StatusOr<rt::BatchSampler> sampler =
      rt::BatchSampler::create(*data_, feed_.batch, feed_.seq, o_.seed);
  if (!sampler.ok())
    return fail(sampler.status().message());
  sampler_.emplace(std::move(sampler).value());
  sampler_->setIgnoreIndex(feed_.ignoreIndex);
  if (!data_->lossMask.empty() && !(feed_.labels && feed_.meanLoss))
    return fail(o_.dataPath + " has a loss mask, but the model has no labels input of a `mean` "
                              "cross-entropy to mask (export the model with a labels input)");
  if (::rp::base::Status s =
          rt::checkPositionFeed(*data_, feed_.positions.has_value(), 0, feed_.seq);
      !s.ok())
    return fail(s.message());
  return 0;
}

int ReferenceTrainer::loadParams() {
  auto module = func_->getParentOfType<ModuleOp>();
  for (auto p : module.getOps<graph::ParamOp>()) {
    FailureOr<HostTensor> value = initializers_.load(p);
    if (failed(value))
      return kBadInput;
    Param &param = params_[p.getSymName().str()];
    param.name = p.getSymName().str();
    param.compute = std::move(*value);
  }
  gradOf_.assign(func_.getNumResults(), std::string());
  gradPart_.assign(func_.getNumResults(), 0);
  std::map<std::string, int> readers; // gradient results seen per param
  for (unsigned i = 0; i < func_.getNumResults(); ++i) {
    if (auto of = func_.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of")) {
      gradOf_[i] = of.getValue().str();
      gradPart_[i] = readers[gradOf_[i]]++; // per-layer results come in layer order
      Param &p = params_.at(gradOf_[i]);
      if (gradPart_[i] > 0) {
        p.parts.emplace_back();
        continue;
      }
      p.trainable = true;
      p.master = p.compute.clone();
      p.m = HostTensor(DType::F32, p.compute.shape());
      p.v = HostTensor(DType::F32, p.compute.shape());
    } else {
      lossResult_ = static_cast<int>(i);
    }
  }
  if (lossResult_ < 0)
    return fail("@train_step has no loss result");
  return 0;
}

int ReferenceTrainer::openOutputs() {
  if (!o_.logPath.empty()) {
    ::rp::base::StatusOr<rt::MetricsLog> l = rt::MetricsLog::open(o_.logPath);
    if (!l.ok())
      return fail(l.status().message());
    log_ = std::move(l).value();
  }
  if (!o_.saveDir.empty())
    if (::rp::base::Status s = rt::checkCheckpointDir(o_.saveDir); !s.ok())
      return fail(s.message());
  return 0;
}

int ReferenceTrainer::runMicroBatches(int64_t step, double &loss) {
  auto loadParam = [&](graph::ParamOp p) -> FailureOr<HostTensor> {
    return params_.at(p.getSymName().str()).compute.clone();
  };
  const int64_t M = o_.microBatches;
  std::vector<float> losses;
  // Every micro-batch's data first: the seeds need the step's trained-label count.
  std::vector<SmallVector<HostTensor>> batches(static_cast<size_t>(M));
  std::vector<int64_t> trained(static_cast<size_t>(M));
  for (int64_t mb = 0; mb < M; ++mb) {
    SmallVector<HostTensor> &args = batches[static_cast<size_t>(mb)];
    args.resize(func_.getNumArguments());
    HostTensor tokens(feed_.idType, {feed_.batch, feed_.seq}),
        labels(feed_.labelType, {feed_.batch, feed_.seq});
    std::optional<HostTensor> positions;
    if (feed_.positions)
      positions.emplace(feed_.positionType, std::vector<int64_t>{feed_.batch, feed_.seq});
    if (::rp::base::Status s = sampler_->fillTrain(
            step, mb, feed_.idType, tokens.raw(), feed_.labelType, labels.raw(),
            &trained[static_cast<size_t>(mb)], feed_.positionType,
            positions ? positions->raw() : nullptr);
        !s.ok())
      return fail(s.message());
    args[feed_.tokens] = std::move(tokens);
    if (feed_.labels)
      args[*feed_.labels] = std::move(labels);
    if (positions)
      args[*feed_.positions] = std::move(*positions);
  }
  if (!feed_.labels || !feed_.meanLoss) // every micro-batch weighs the same
    std::fill(trained.begin(), trained.end(), feed_.batch * feed_.seq);
  std::vector<float> seeds = rt::lossSeeds(trained);
  if (step + 1 == o_.injectNonFiniteStep) // testing: an overflow in this step's backward
    std::fill(seeds.begin(), seeds.end(), std::numeric_limits<float>::infinity());
  for (int64_t mb = 0; mb < M; ++mb) {
    SmallVector<HostTensor> &args = batches[static_cast<size_t>(mb)];
    args[feed_.seed] = HostTensor(DType::F32, std::vector<int64_t>{});
    args[feed_.seed].data<float>()[0] = seeds[static_cast<size_t>(mb)];
    FailureOr<SmallVector<HostTensor>> results =
        graph::runFunction(func_, args, loadParam, graph::EvalPrecision::F32);
    if (failed(results))
      return kBadInput;
    losses.push_back((*results)[static_cast<size_t>(lossResult_)].data<float>()[0]);
    for (size_t i = 0; i < gradOf_.size(); ++i) {
      if (gradOf_[i].empty())
        continue;
      Param &p = params_.at(gradOf_[i]);
      const HostTensor &g = (*results)[i];
      HostTensor &acc = gradPart_[i] == 0 ? p.acc : p.parts[static_cast<size_t>(gradPart_[i] - 1)];
      if (mb == 0)
        acc = HostTensor(DType::F32, g.shape());
      rt::accumulateGradient(acc.data<float>(), g.data<float>(), g.numElements(), mb == 0);
    }
  }
  loss = rt::tokenWeightedLoss(losses, trained);
  return 0;
}

int ReferenceTrainer::optimizerStep(int64_t step, double &lr, bool &skipped) {
  const int64_t M = o_.microBatches;
  float gradScale = static_cast<float>(1.0 / static_cast<double>(M));
  for (auto &[name, p] : params_) // a shared param: its readers' gradients, in layer order
    for (const HostTensor &part : p.parts)
      rt::accumulateGradient(p.acc.data<float>(), part.data<float>(), part.numElements(),
                             /*first=*/false);
  // A non-finite gradient anywhere skips the step whole (rp-run's rule, in every dtype).
  skipped = false;
  for (auto &[name, p] : params_)
    if (p.trainable && !rt::allFinite(p.acc.data<float>(), p.acc.numElements()))
      skipped = true;
  if (o_.gradClip > 0 && !skipped) {
    double squares = 0;
    for (auto &[name, p] : params_) // std::map: sorted by name
      if (p.trainable)
        squares += rt::sumOfSquares(p.acc.data<float>(), p.acc.numElements(), gradScale);
    ::rp::base::StatusOr<float> clipped = rt::clippedGradScale(squares, o_.gradClip, M, step + 1);
    if (!clipped.ok()) { // not reached: a finite gradient has a finite norm
      fail(clipped.status().message());
      return 1;
    }
    gradScale = clipped.value();
  }
  lr = rt::learningRate(rt::LrSchedule{o_.lr, o_.warmup, o_.lrDecay, o_.minLr, o_.steps}, step);
  rt::AdamWConfig config{lr, o_.beta1, o_.beta2, o_.eps, o_.weightDecay};
  for (auto &[name, p] : params_) {
    if (!p.trainable)
      continue;
    if (o_.async) // iteration step + 1 computes with W_step
      p.compute = p.master.clone();
    if (!skipped)
      rt::adamwStep(p.master.data<float>(), p.m.data<float>(), p.v.data<float>(),
                    p.acc.data<float>(), p.master.numElements(), config, step + 1, gradScale);
    if (!o_.async)
      p.compute = p.master.clone();
  }
  return 0;
}

int ReferenceTrainer::saveCheckpoint() {
  rt::CheckpointData ckpt;
  ckpt.step = o_.steps;
  ckpt.metadata = {{"producer", "rp-ref"},
                   {"update", o_.async ? "async" : "sync"},
                   {"seed", std::to_string(o_.seed)},
                   {"micro_batches", std::to_string(o_.microBatches)},
                   {"compute_dtype", "f32"}};
  for (auto &[name, p] : params_) {
    if (!p.trainable) {
      ckpt.model.push_back(tensorOf(name, p.compute));
      continue;
    }
    ckpt.model.push_back(tensorOf(name, p.master));
    ckpt.optimizer.push_back(tensorOf("m." + name, p.m));
    ckpt.optimizer.push_back(tensorOf("v." + name, p.v));
    if (o_.async)
      ckpt.optimizer.push_back(tensorOf("weights." + name, p.compute));
  }
  if (::rp::base::Status s = rt::saveCheckpoint(o_.saveDir, ckpt); !s.ok())
    return fail(s.message());
  return 0;
}

int ReferenceTrainer::run() {
  if (int code = findFeed())
    return code;
  if (int code = openData())
    return code;
  if (int code = loadParams())
    return code;
  if (int code = openOutputs())
    return code;
  const int64_t M = o_.microBatches;
  for (int64_t step = 0; step < o_.steps; ++step) {
    double loss = 0, lr = 0;
    bool skipped = false;
    if (int code = runMicroBatches(step, loss))
      return code;
    if (!std::isfinite(loss)) { // rp-run's rule: a non-finite loss ends the run (exit 1)
      fail("the loss of step " + std::to_string(step + 1) + " is " +
           (std::isnan(loss) ? "nan" : "inf") + "; the run diverged (try a lower --lr)");
      return 1;
    }
    if (int code = optimizerStep(step, lr, skipped))
      return code;
    std::printf("step %lld loss %.9g%s\n", static_cast<long long>(step + 1), loss,
                skipped ? " (skipped: non-finite gradients)" : "");
    if (log_) {
      rt::StepMetrics metrics;
      metrics.step = step + 1;
      metrics.loss = loss;
      metrics.lr = lr;
      metrics.tokens = M * feed_.batch * feed_.seq;
      metrics.skipped = skipped;
      if (::rp::base::Status s = log_->write(metrics); !s.ok())
        return fail(s.message());
    }
  }
  return o_.saveDir.empty() ? 0 : saveCheckpoint();
}

} // namespace

int runReferenceTraining(func::FuncOp func, const onnx::InitializerTable &initializers,
                         const RefTrainOptions &o) {
  return ReferenceTrainer(func, initializers, o).run();
}

} // namespace mlir::rp
