//===- rp-ref.cpp - reference execution of an ONNX model on the CPU -------===//
//
//   rp-ref MODEL.onnx --inputs DIR --out DIR [--dim NAME=N]... [--input-shape NAME=AxB]...
//          [--f64] [--grads] [--lora-rank R --lora-alpha A --lora-targets REGEX] [--freeze REGEX]
//   rp-ref MODEL.onnx --reference SIDECAR.safetensors [--loss-rtol 1e-4] [--grad-rtol 1e-3]
//          [--fused]
//   rp-ref MODEL.onnx --train --data FILE --steps N --micro-batches M [--update sync|async]
//          [--lr X --warmup W --lr-schedule constant|cosine|linear --min-lr X --weight-decay X
//          --grad-clip X --seed S] [--log F.jsonl] [--save DIR]
//
// Imports the model into the graph dialect and interprets it on the CPU reference kernels
// (kernels/cpu): the numeric oracle of the project. Reads `input_N.pb` (ONNX TensorProto) from
// --inputs in the order of the graph inputs and writes `output_N.pb` to --out in the order of
// the graph outputs: the layout of the ONNX backend test data. --f64 computes every
// floating-point op in double precision (outputs keep their declared types). --grads builds
// the training function (rp-autodiff) and writes `loss.pb` and `grad_<param>.pb` for every
// trainable param instead (characters other than [A-Za-z0-9._-] in names become '_').
// --reference compares the loss and every gradient on a PyTorch sidecar's batch (RefCheck.h;
// exit 1 outside the tolerances). --fused runs rpc-compile's fusion pipeline before --grads,
// --reference or the interpreter, so that they check the graph rpc-compile trains. --train runs the non-pipelined training reference (tools/rp-ref/RefTrain.h): the whole
// model's forward and backward per micro-batch, fp32 accumulation, the runtime's AdamW, and
// the metrics and checkpoint files rp-run writes, so the two compare bit for bit.
// Exit codes: 0 success, 2 bad input, 1 internal error.
//
//===----------------------------------------------------------------------===//

#include "RefCheck.h"
#include "RefTrain.h"
#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "compiler/ReferenceTrainStep.h"
#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <CLI/CLI.hpp>

#include <cctype>

using namespace mlir;
using ::rp::base::HostTensor;

namespace {

constexpr int kBadInput = 2;

/// A file-name-safe form of a param name.
std::string safeName(llvm::StringRef name) {
  std::string out = name.str();
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '_';
  return out;
}

int fail(const llvm::Twine &message) {
  llvm::errs() << "rp-ref: error: " << message << "\n";
  return kBadInput;
}

/// The flags as parsed.
struct RefFlags {
  std::string modelPath, inputsDir, outDir;
  std::vector<std::string> dims, shapes;
  int64_t foldLimit = mlir::rp::onnx::ImportOptions().foldLimit;
  bool f64 = false, grads = false, train = false, fused = false;
  mlir::rp::TrainingOptions training;
  mlir::rp::RefCheckOptions check;
  std::string update = "sync", dataFormat = "auto", lrSchedule = "constant";
  mlir::rp::RefTrainOptions ref;
};

/// The model, the import, output and training-graph flags (in --help's order, with the
/// --reference and --train groups).
void addFlags(CLI::App &app, RefFlags &f) {
  app.add_option("model", f.modelPath, "ONNX model (.onnx or .onnxtext)")->required();
  app.add_option("--inputs", f.inputsDir, "Directory with input_N.pb, one per graph input");
  app.add_option("--out", f.outDir, "Directory to write output_N.pb into (created if missing)");
  app.add_option("--dim", f.dims, "Bind a symbolic dimension, NAME=N (repeatable)");
  app.add_option("--input-shape", f.shapes, "Set a graph input's shape, NAME=AxB (repeatable)");
  app.add_option("--fold-limit", f.foldLimit,
                 "Fold import-time constants of at most N elements (testing: a small model "
                 "keeps its attention mask as runtime ops, as a long sequence does)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  app.add_flag("--f64", f.f64, "Compute floating-point ops in double precision");
  app.add_flag("--grads", f.grads, "Write the loss and every trainable param's gradient");
  app.add_flag("--fused", f.fused,
               "Run rpc-compile's fusions first (--train always does): check the fused graph");
  app.add_option("--reference", f.check.sidecarPath,
                 "Compare loss and gradients on the batch of a PyTorch sidecar (safetensors)");
  app.add_option("--loss-rtol", f.check.lossRtol, "--reference: loss relative tolerance")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grad-rtol", f.check.gradRtol,
                 "--reference: gradient tolerance (max |diff| / max |reference| per param)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lora-rank", f.training.loraRank, "Add LoRA adapters of this rank (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lora-alpha", f.training.loraAlpha, "LoRA alpha (updates scaled by alpha/rank)");
  app.add_option("--lora-targets", f.training.loraTargets,
                 "Regex of the weights that get adapters");
  app.add_option("--freeze", f.training.freeze, "Regex of params to freeze");
}

/// --train's flags (the reference of rp-run's).
void addTrainFlags(CLI::App &app, RefFlags &f) {
  mlir::rp::RefTrainOptions &ref = f.ref;
  app.add_flag("--train", f.train, "Train (non-pipelined reference of rp-run) instead");
  app.add_option("--data", ref.dataPath, "--train: token file or text (as rp-run --data)");
  app.add_option("--data-format", f.dataFormat, "--train: auto | tokens | text")
      ->check(CLI::IsMember({"auto", "tokens", "text"}));
  app.add_option("--steps", ref.steps, "--train: steps")->check(CLI::PositiveNumber);
  app.add_option("--micro-batches", ref.microBatches,
                 "--train: micro-batches per step; --reference: split the sidecar's batch "
                 "into this many (token-weighted loss)")
      ->check(CLI::PositiveNumber);
  app.add_option("--update", f.update, "--train: sync | async (staleness 1)")
      ->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--lr", ref.lr, "--train: peak learning rate");
  app.add_option("--warmup", ref.warmup, "--train: linear warmup steps");
  app.add_option("--lr-schedule", f.lrSchedule,
                 "--train: constant | cosine | linear decay after the warmup over --steps (as "
                 "rp-run's)")
      ->check(CLI::IsMember({"constant", "cosine", "linear"}));
  app.add_option("--min-lr", ref.minLr, "--train: the decay's floor (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--beta1", ref.beta1, "--train: AdamW beta1");
  app.add_option("--beta2", ref.beta2, "--train: AdamW beta2");
  app.add_option("--eps", ref.eps, "--train: AdamW epsilon");
  app.add_option("--weight-decay", ref.weightDecay, "--train: AdamW decoupled weight decay");
  app.add_option("--grad-clip", ref.gradClip, "--train: clip by global norm (0: off)");
  app.add_option("--seed", ref.seed, "--train: data sampling seed");
  app.add_option("--log", ref.logPath, "--train: metrics as JSON lines");
  app.add_option("--save", ref.saveDir, "--train: write a checkpoint to DIR at the end");
  app.add_option("--inject-nonfinite-step", ref.injectNonFiniteStep,
                 "--train, testing: step K's backward seeds are +inf (the step is skipped, as "
                 "rp-run's flag)")
      ->check(CLI::PositiveNumber);
}

/// The modes' required and exclusive flags: 0, or the exit code after the message.
int checkModes(const RefFlags &f) {
  if (f.train && f.ref.dataPath.empty())
    return fail("--train needs --data FILE");
  if (f.train && f.fused)
    return fail("--fused is for --reference, --grads and --inputs: --train always fuses");
  const bool reference = !f.check.sidecarPath.empty();
  if (reference && (f.train || !f.inputsDir.empty() || !f.outDir.empty()))
    return fail("--reference compares on the sidecar's batch: no --train, --inputs or --out");
  if (!f.train && !reference && (f.inputsDir.empty() || f.outDir.empty()))
    return fail("--inputs DIR and --out DIR are required (or --train)");
  return 0;
}

/// The graph rpc-compile lowers (parameter transformations, fusion, layer functions), chained
/// back into one function and differentiated as a whole-model backward instead of per-layer
/// ones, with a shared param's gradient per reading layer (compiler/ReferenceTrainStep.h),
/// trained by the reference (RefTrain.h).
int trainReference(MLIRContext &context, ModuleOp module, const mlir::rp::onnx::OnnxModel &model,
                   const RefFlags &f) {
  PassManager pm(&context);
  mlir::rp::TrainingOptions training = f.training;
  training.differentiate = false;
  mlir::rp::buildTrainPipeline(pm, training);
  mlir::rp::buildLayersPipeline(pm);
  if (failed(pm.run(module)))
    return kBadInput;
  // The fused tail's seed argument (runtime/train/TokenWeights.h) as rp-run feeds it.
  if (failed(mlir::rp::buildReferenceTrainStep(module, "train_step", /*seedArg=*/true)))
    return kBadInput;
  PassManager cleanup(&context);
  // The GEMMs rp-run runs: rpc-compile folds the same transposes (buildSchedulePipeline).
  mlir::rp::addTransposeFolding(cleanup);
  cleanup.addPass(createCanonicalizerPass());
  if (failed(cleanup.run(module)))
    return kBadInput;
  mlir::rp::onnx::InitializerTable initializers(model);
  return mlir::rp::runReferenceTraining(module.lookupSymbol<func::FuncOp>("train_step"),
                                        initializers, f.ref);
}

/// Reads `input_N.pb` from `dir` for every argument of `func`, in the order of the graph
/// inputs, checking shapes and element types: 0, or the exit code after the message.
int readInputs(func::FuncOp func, const std::string &dir, std::vector<HostTensor> &inputs) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, "input_" + std::to_string(i) + ".pb");
    llvm::Expected<HostTensor> t = mlir::rp::onnx::readTensorFile(path);
    if (!t)
      return fail(llvm::toString(t.takeError()));
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    auto name = func.getArgAttrOfType<StringAttr>(i, "graph.name");
    if (llvm::ArrayRef<int64_t>(t->shape()) != type.getShape())
      return fail(llvm::Twine(path) + ": input '" + name.getValue() + "' has shape " +
                  ::rp::base::formatShape(t->shape()) + ", the model expects " +
                  mlir::rp::graph::formatShape(type.getShape()));
    ::rp::base::DType expected = mlir::rp::graph::irDType(type.getElementType());
    if (t->dtype() != expected)
      return fail(llvm::Twine(path) + ": input '" + name.getValue() + "' has element type " +
                  ::rp::base::dtypeName(t->dtype()) + ", the model expects " +
                  ::rp::base::dtypeName(expected));
    inputs.push_back(std::move(*t));
  }
  return 0;
}

/// Writes `outputs` (the results of `func`) to `dir`: output_N.pb, or with `grads` loss.pb
/// and grad_<param>.pb.
int writeOutputs(MLIRContext &context, func::FuncOp func, llvm::ArrayRef<HostTensor> outputs,
                 const std::string &dir, bool grads) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create '" + dir + "': " + ec.message());
  for (auto [i, t] : llvm::enumerate(outputs)) {
    auto type = cast<RankedTensorType>(func.getResultTypes()[i]);
    auto name = func.getResultAttrOfType<StringAttr>(i, "graph.name");
    std::string file = "output_" + std::to_string(i) + ".pb";
    if (grads) {
      auto param = func.getResultAttrOfType<FlatSymbolRefAttr>(i, "graph.grad_of");
      file = param ? "grad_" + safeName(param.getValue()) + ".pb" : "loss.pb";
      name = StringAttr::get(&context, param ? "grad_" + param.getValue().str() : "loss");
    }
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    if (llvm::Error e = mlir::rp::onnx::writeTensorFile(mlir::rp::graph::tensorInIRType(t, type),
                                                        name ? name.getValue() : "", path))
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}

/// Interprets `func` on the inputs of --inputs and writes its results to --out.
int runInference(MLIRContext &context, func::FuncOp func, const mlir::rp::onnx::OnnxModel &model,
                 const RefFlags &f, bool grads) {
  std::vector<HostTensor> inputs;
  if (int code = readInputs(func, f.inputsDir, inputs))
    return code;
  mlir::rp::onnx::InitializerTable initializers(model);
  auto loadParam = [&](mlir::rp::graph::ParamOp param) { return initializers.load(param); };
  auto precision =
      f.f64 ? mlir::rp::graph::EvalPrecision::F64 : mlir::rp::graph::EvalPrecision::F32;
  FailureOr<llvm::SmallVector<HostTensor>> outputs =
      mlir::rp::graph::runFunction(func, inputs, loadParam, precision);
  if (failed(outputs))
    return kBadInput;
  return writeOutputs(context, func, *outputs, f.outDir, grads);
}

/// Imports the model and runs the mode: --train, --reference, or the interpreter.
int runModel(RefFlags &f, const mlir::rp::onnx::ImportOptions &options) {
  llvm::Expected<mlir::rp::onnx::OnnxModel> model = mlir::rp::onnx::loadOnnxModel(f.modelPath);
  if (!model)
    return fail(llvm::toString(model.takeError()));
  // rp-ref holds every weight in memory at once.
  if (llvm::Error e = mlir::rp::onnx::checkInitializersFitInMemory(*model))
    return fail(llvm::toString(std::move(e)));

  DialectRegistry registry;
  mlir::rp::registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = mlir::rp::onnx::importOnnxModel(context, *model, options);
  if (!module)
    return kBadInput;
  const bool reference = !f.check.sidecarPath.empty();
  const bool grads = f.grads || reference;
  f.training.differentiate = grads && !f.train;
  f.training.seedArg = reference; // the runtime's per-micro-batch seed (RefCheck.h)
  f.check.microBatches = f.ref.microBatches;
  if (f.train)
    return trainReference(context, *module, *model, f);
  if (f.fused) {
    // As trainReference: the parameter transformations, the fusions, then autodiff.
    PassManager pm(&context);
    mlir::rp::TrainingOptions transform = f.training, differentiate;
    transform.differentiate = false;
    differentiate.differentiate = grads;
    differentiate.seedArg = f.training.seedArg;
    mlir::rp::buildTrainPipeline(pm, transform);
    mlir::rp::buildFusionPipeline(pm);
    mlir::rp::buildTrainPipeline(pm, differentiate);
    if (failed(pm.run(*module)))
      return kBadInput;
  } else if (grads || f.training.loraRank > 0 || !f.training.freeze.empty()) {
    PassManager pm(&context);
    mlir::rp::buildTrainPipeline(pm, f.training);
    if (failed(pm.run(*module)))
      return kBadInput;
  }
  auto func = module->lookupSymbol<func::FuncOp>(grads ? "train_step" : options.functionName);
  if (reference) {
    mlir::rp::onnx::InitializerTable initializers(*model);
    return mlir::rp::checkAgainstReference(func, initializers, f.check);
  }
  return runInference(context, func, *model, f, grads);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"rp-ref: reference execution of an ONNX model on the CPU (the numeric oracle)"};
  RefFlags f;
  addFlags(app, f);
  addTrainFlags(app, f);
  app.set_version_flag("--version", std::string("rp-ref ") + RP_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  if (int code = checkModes(f))
    return code;
  f.ref.async = f.update == "async";
  f.ref.dataFormat = ::rp::runtime::parseDataFormat(f.dataFormat).value();
  f.ref.lrDecay = ::rp::runtime::parseLrDecay(f.lrSchedule).value();

  mlir::rp::onnx::ImportOptions options;
  options.foldLimit = f.foldLimit;
  for (const std::string &d : f.dims)
    if (llvm::Error e = mlir::rp::onnx::parseDimBinding(d, options))
      return fail(llvm::toString(std::move(e)));
  for (const std::string &s : f.shapes)
    if (llvm::Error e = mlir::rp::onnx::parseInputShape(s, options))
      return fail(llvm::toString(std::move(e)));
  return runModel(f, options);
}
