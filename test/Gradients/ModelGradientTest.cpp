//===- ModelGradientTest.cpp - whole-model gradients against finite differences ===//
//
// The tiny transformer of test/Frontends/onnx/Inputs/tiny_transformer.py (2 layers, d=32,
// 4 heads, SwiGLU, RMSNorm, vocab 48, mean cross-entropy with ignored labels) is written by the
// script, imported with batch=2 seq=8, and differentiated with buildGradientFunction. Both the
// gradient function and the loss for the finite differences run on the float64 reference
// interpreter (EvalPrecision::F64) with the model's f32 weights widened to f64.
//
// FullModel: a seeded sample of 28 entries across 12 params (the embedding rows of tokens in
// the batch, the norm scales, attention, MLP and LM-head weights) against the central finite
// difference of the loss (GradientCheck.h: h = 1e-6 * max(1, |x|)).
//
// LoraAdapters: rp-inject-lora (rank 4, alpha 8, targets `layers\.0\.(q|v)`) before autodiff;
// every entry of the four adapters' gradients is checked. The adapters' values: A as the
// importer's InitializerTable gives it (`init kaiming_uniform`, base/ParamInit.h);
// B is overridden with U(-0.2, 0.2) values, since with B = 0 (`init zeros`) dA is exactly 0
// and the check would say nothing about A's VJP path.
//
// Criteria, over the checked entries of each param:
//   per param: ||g - fd||_2 / ||fd||_2 < 1e-6 over the checked entries (both tests);
//   per entry: |g - fd| <= 1e-6 * max(|fd|, 1e-3 * max|g|), max|g| over the param's whole
//              gradient (FullModel's sample; LoraAdapters prints the worst entry only).
// The per-entry criterion is limited by the finite difference itself, not by the VJP: with
// loss ~ 3.9 and h = 1e-6 the rounding error of fd is ~ 4e-10 absolute, so an entry of
// |g| ~ 5e-4 (a few 1e-3 of its param's max, as some of the 512 adapter entries are) sits at
// ~0.8e-6 (measured: lora_B entry at 8.4e-7; 1.1e-7 with h = 1e-5, where the same entries
// agree to ~1e-9 relative). Asserting it on every adapter entry would test the finite
// difference's noise floor; the norm over all 512 entries (measured <= 7.6e-9) does not.
//
//===----------------------------------------------------------------------===//

#include "test/Gradients/GradientCheck.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxModel.h"
#include "compiler/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace rp::gradtest;
using ::rp::base::DType;
namespace ronnx = mlir::rp::onnx;
namespace graph = mlir::rp::graph;

namespace {

constexpr double kTolerance = 1e-6;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10e", v);
  return buf;
}

/// The model files the script writes, shared by the tests of this binary.
struct ModelFiles {
  std::string dir;
  std::string error;              // why the files could not be made
  std::vector<HostTensor> inputs; // input_ids, labels (i64 [2, 8])
};

ModelFiles &files() {
  static ModelFiles f = [] {
    ModelFiles out;
    llvm::SmallString<256> dir;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("rp-model-gradient", dir)) {
      out.error = "cannot create a temporary directory: " + ec.message();
      return out;
    }
    out.dir = std::string(dir);
    std::string script = RP_SOURCE_DIR "/test/Frontends/onnx/Inputs/tiny_transformer.py";
    std::string cmd = "/usr/bin/python3 '" + script + "' write '" + out.dir + "'";
    if (int rc = std::system(cmd.c_str()); rc != 0) {
      out.error = "'" + cmd + "' failed with status " + std::to_string(rc);
      return out;
    }
    for (int i = 0; i < 2; ++i) {
      llvm::SmallString<256> path(out.dir);
      llvm::sys::path::append(path, "inputs", "input_" + std::to_string(i) + ".pb");
      llvm::Expected<HostTensor> t = ronnx::readTensorFile(path);
      if (!t) {
        out.error = llvm::toString(t.takeError());
        return out;
      }
      out.inputs.push_back(std::move(*t));
    }
    return out;
  }();
  return f;
}

class Cleanup : public ::testing::Environment {
public:
  void TearDown() override {
    if (!files().dir.empty())
      llvm::sys::fs::remove_directories(files().dir);
  }
};

[[maybe_unused]] const auto *const cleanupEnv = ::testing::AddGlobalTestEnvironment(new Cleanup);

/// One imported model with mutable f64 param values.
class ModelGradient : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(files().error.empty()) << files().error;
    llvm::SmallString<256> path(files().dir);
    llvm::sys::path::append(path, "model.onnx");
    llvm::Expected<ronnx::OnnxModel> loaded = ronnx::loadOnnxModel(path);
    ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    model = std::move(*loaded);
    ronnx::ImportOptions options;
    options.dims = {{"batch", 2}, {"seq", 8}};
    module = ronnx::importOnnxModel(ctx.get(), model, options);
    ASSERT_TRUE(module) << ctx.takeDiagnostics();
    for (const HostTensor &t : files().inputs)
      args.push_back(t.clone());
  }

  /// Reads every param's value (f64) through the InitializerTable; `adjust` may change it.
  void loadParams(const std::function<void(graph::ParamOp, HostTensor &)> &adjust = {}) {
    ronnx::InitializerTable table(model);
    for (auto p : module->getOps<graph::ParamOp>()) {
      mlir::FailureOr<HostTensor> t = table.load(p);
      ASSERT_TRUE(mlir::succeeded(t)) << ctx.takeDiagnostics();
      HostTensor v = toF64(*t);
      if (adjust)
        adjust(p, v);
      values.emplace(p.getSymName().str(), std::move(v));
    }
  }

  ParamLoader loader() {
    return [this](graph::ParamOp p) -> mlir::FailureOr<HostTensor> {
      auto it = values.find(p.getSymName().str());
      if (it == values.end())
        return p.emitError("no value for this param in the test");
      return it->second.clone();
    };
  }

  std::optional<double> loss(mlir::func::FuncOp forward) {
    auto out = runF64(forward, args, loader());
    if (!out)
      return std::nullopt;
    return at((*out)[0], 0);
  }

  /// Builds @train_step, runs it, returns the gradient of each trainable param by name.
  void gradients(std::map<std::string, HostTensor> &grads, double &stepLoss) {
    auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
    ASSERT_TRUE(forward);
    mlir::FailureOr<mlir::func::FuncOp> step =
        mlir::rp::buildGradientFunction(forward, mlir::rp::AutodiffConfig{});
    ASSERT_TRUE(mlir::succeeded(step)) << ctx.takeDiagnostics();
    ASSERT_TRUE(mlir::succeeded(mlir::verify(*module))) << ctx.takeDiagnostics();
    auto out = runF64(*step, args, loader());
    ASSERT_TRUE(out) << "@train_step failed to run:\n" << ctx.takeDiagnostics();
    ASSERT_EQ(out->size(), step->getNumResults());
    stepLoss = at((*out)[0], 0);
    for (unsigned i = 1; i < step->getNumResults(); ++i) {
      auto of = step->getResultAttrOfType<mlir::FlatSymbolRefAttr>(i, "graph.grad_of");
      ASSERT_TRUE(of) << "result " << i << " of @train_step has no graph.grad_of";
      grads.emplace(of.getValue().str(), std::move((*out)[i]));
    }
  }

  struct Entry {
    std::string param;
    int64_t index;
  };

  /// Checks `entries` against central finite differences of @forward's loss: the norm
  /// criterion per param always, the per-entry criterion when `perEntry` (else printed only).
  void check(const std::vector<Entry> &entries, const std::map<std::string, HostTensor> &grads,
             bool perEntry) {
    auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> byParam;
    for (const Entry &e : entries) {
      auto g = grads.find(e.param);
      ASSERT_NE(g, grads.end()) << "no gradient for " << e.param;
      double maxAbs = 0;
      for (int64_t j = 0; j < g->second.numElements(); ++j)
        maxAbs = std::max(maxAbs, std::abs(at(g->second, j)));
      double *slot = &values.at(e.param).data<double>()[e.index];
      std::optional<double> fd = centralDifference(slot, [&] { return loss(forward); });
      ASSERT_TRUE(fd) << ctx.takeDiagnostics();
      double got = at(g->second, e.index);
      double bound = kTolerance * std::max(std::abs(*fd), 1e-3 * maxAbs);
      double ratio = std::abs(got - *fd) / std::max(std::abs(*fd), 1e-300);
      if (verbose)
        std::printf("  %-22s [%4lld] g = % .10e  fd = % .10e  |g-fd|/|fd| = %.2e  "
                    "|g-fd|/bound = %.3f\n",
                    e.param.c_str(), static_cast<long long>(e.index), got, *fd, ratio,
                    std::abs(got - *fd) / bound);
      if (perEntry) {
        EXPECT_LE(std::abs(got - *fd), bound)
            << e.param << "[" << e.index << "]: autodiff " << got << ", finite difference " << *fd
            << " (max |g| of the param " << maxAbs << ")";
      }
      double rel = std::abs(got - *fd) / (bound / kTolerance);
      if (rel >= worstEntry) {
        worstEntry = rel;
        worstText = e.param + "[" + std::to_string(e.index) + "]: g = " + fmt(got) +
                    ", fd = " + fmt(*fd) + ", max|g| = " + fmt(maxAbs);
      }
      byParam[e.param].first.push_back(got);
      byParam[e.param].second.push_back(*fd);
    }
    for (const auto &[name, gf] : byParam) {
      double err = relativeError(gf.first, gf.second);
      std::printf("  %-22s %3zu entries: ||g - fd|| / ||fd|| = %.3e\n", name.c_str(),
                  gf.first.size(), err);
      EXPECT_LT(err, kTolerance) << name << ": relative error over the checked entries";
    }
    std::printf("  worst per-entry |g - fd| / max(|fd|, 1e-3 max|g|) = %.3e at %s\n", worstEntry,
                worstText.c_str());
  }

  TestContext ctx;
  ronnx::OnnxModel model;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<HostTensor> args;
  std::map<std::string, HostTensor> values;
  double worstEntry = 0;
  std::string worstText;
  bool verbose = true;
};

TEST_F(ModelGradient, FullModel) {
  loadParams();
  std::map<std::string, HostTensor> grads;
  double stepLoss = 0;
  gradients(grads, stepLoss);
  if (HasFatalFailure())
    return;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  std::optional<double> l = loss(forward);
  ASSERT_TRUE(l);
  EXPECT_EQ(stepLoss, *l);
  EXPECT_EQ(grads.size(), values.size()) << "every param of the imported model is trainable";

  // A seeded sample: (param, number of entries). Embedding entries are taken from rows of
  // tokens present in the batch (the other rows' gradients are exactly zero).
  std::mt19937_64 rng(20240611);
  const std::vector<std::pair<std::string, int>> plan = {
      {"embed", 4},          {"final_norm", 3},    {"lm_head", 4},     {"layers.0.norm1", 2},
      {"layers.1.norm2", 2}, {"layers.0.q", 2},    {"layers.0.k", 2},  {"layers.1.v", 2},
      {"layers.1.o", 1},     {"layers.0.gate", 2}, {"layers.1.up", 2}, {"layers.0.down", 2}};
  const HostTensor &ids = files().inputs[0];
  std::vector<Entry> entries;
  for (const auto &[name, n] : plan) {
    auto it = values.find(name);
    ASSERT_NE(it, values.end()) << "the model has no param " << name;
    const HostTensor &v = it->second;
    for (int i = 0; i < n; ++i) {
      int64_t index;
      if (name == "embed") {
        int64_t row = ids.data<int64_t>()[std::uniform_int_distribution<int64_t>(
            0, ids.numElements() - 1)(rng)];
        index = row * v.dim(1) + std::uniform_int_distribution<int64_t>(0, v.dim(1) - 1)(rng);
      } else {
        index = std::uniform_int_distribution<int64_t>(0, v.numElements() - 1)(rng);
      }
      entries.push_back({name, index});
    }
  }
  std::printf("loss %.12f; %zu sampled entries\n", stepLoss, entries.size());
  check(entries, grads, /*perEntry=*/true);
}

TEST_F(ModelGradient, LoraAdapters) {
  mlir::rp::InjectLoraOptions options;
  options.rank = 4;
  options.alpha = 8.0;
  options.targets = "layers\\.0\\.(q|v)";
  mlir::PassManager pm(&ctx.get());
  pm.addPass(mlir::rp::createInjectLora(options));
  ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << ctx.takeDiagnostics();

  const std::vector<std::string> adapters = {"layers.0.q.lora_A", "layers.0.q.lora_B",
                                             "layers.0.v.lora_A", "layers.0.v.lora_B"};
  for (const std::string &name : adapters) {
    auto p = module->lookupSymbol<graph::ParamOp>(name);
    ASSERT_TRUE(p) << "rp-inject-lora made no param " << name;
    EXPECT_TRUE(p.getTrainable()) << name;
  }

  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(-0.2, 0.2);
  loadParams([&](graph::ParamOp p, HostTensor &v) {
    if (p.getSymName().ends_with(".lora_B"))
      for (int64_t i = 0; i < v.numElements(); ++i)
        v.data<double>()[i] = u(rng);
  });
  if (HasFatalFailure())
    return;
  // A comes from `init kaiming_uniform`: non-zero, within 1/sqrt(fan_in).
  for (const char *name : {"layers.0.q.lora_A", "layers.0.v.lora_A"}) {
    const HostTensor &a = values.at(name);
    double bound = 1 / std::sqrt(static_cast<double>(a.dim(0))), maxAbs = 0;
    for (int64_t i = 0; i < a.numElements(); ++i)
      maxAbs = std::max(maxAbs, std::abs(a.data<double>()[i]));
    EXPECT_GT(maxAbs, 0) << name << " is all zeros";
    EXPECT_LE(maxAbs, bound) << name;
  }

  std::map<std::string, HostTensor> grads;
  double stepLoss = 0;
  gradients(grads, stepLoss);
  if (HasFatalFailure())
    return;
  EXPECT_EQ(grads.size(), adapters.size()) << "only the adapters are trainable after LoRA";

  std::vector<Entry> entries;
  for (const std::string &name : adapters)
    for (int64_t i = 0; i < values.at(name).numElements(); ++i)
      entries.push_back({name, i});
  std::printf("loss %.12f; all %zu adapter entries\n", stepLoss, entries.size());
  verbose = false;
  check(entries, grads, /*perEntry=*/false);
}

} // namespace

namespace {

/// rp-group-layers keeps the computation: running @prefix, @block_*, @tail in the order of
/// `graph.layers`, feeding each boundary argument the result its `graph.boundary` names,
/// reproduces @forward's loss and logits bit for bit (the same ops run in the same order).
TEST_F(ModelGradient, LayerGroupingReproducesForward) {
  loadParams();
  mlir::PassManager pm(&ctx.get());
  pm.addPass(mlir::rp::createGroupLayers());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << ctx.takeDiagnostics();
  auto layers = (*module)->getAttrOfType<mlir::ArrayAttr>("graph.layers");
  ASSERT_TRUE(layers);
  ASSERT_EQ(layers.size(), 4u); // prefix, two blocks, tail

  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  auto expected = runF64(forward, args, loader());
  ASSERT_TRUE(expected) << ctx.takeDiagnostics();

  std::map<std::string, HostTensor> produced; // "<layer>#<i>" -> value
  std::map<std::string, const HostTensor *> inputs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    inputs[forward.getArgAttrOfType<mlir::StringAttr>(i, "graph.name").str()] = &args[i];
  std::vector<HostTensor> last;
  for (mlir::Attribute a : layers) {
    auto fn = module->lookupSymbol<mlir::func::FuncOp>(mlir::cast<mlir::FlatSymbolRefAttr>(a));
    ASSERT_TRUE(fn);
    std::vector<HostTensor> fnArgs;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      if (auto from = fn.getArgAttrOfType<mlir::StringAttr>(i, "graph.boundary")) {
        ASSERT_TRUE(produced.count(from.str())) << "no value for " << from.str();
        fnArgs.push_back(produced.at(from.str()).clone());
      } else {
        auto name = fn.getArgAttrOfType<mlir::StringAttr>(i, "graph.name");
        ASSERT_TRUE(name) << "argument " << i << " of @" << fn.getSymName().str();
        fnArgs.push_back(inputs.at(name.str())->clone());
      }
    }
    // Blocks take only the hidden state: one boundary argument, no model inputs.
    if (fn.getSymName().starts_with("block_")) {
      EXPECT_EQ(fn.getNumArguments(), 1u) << "@" << fn.getSymName().str();
      EXPECT_EQ(fn.getNumResults(), 1u) << "@" << fn.getSymName().str();
    }
    auto out = runF64(fn, fnArgs, loader());
    ASSERT_TRUE(out) << ctx.takeDiagnostics();
    for (unsigned i = 0; i < out->size(); ++i)
      produced.emplace(fn.getSymName().str() + "#" + std::to_string(i), (*out)[i].clone());
    last = std::move(*out);
  }
  ASSERT_EQ(last.size(), expected->size());
  for (size_t r = 0; r < last.size(); ++r) {
    ASSERT_EQ(last[r].shape(), (*expected)[r].shape());
    for (int64_t i = 0; i < last[r].numElements(); ++i)
      ASSERT_EQ(at(last[r], i), at((*expected)[r], i)) << "result " << r << " element " << i;
  }
}

} // namespace

namespace {

/// The fusion pipeline turns the tiny transformer's exported chains into fused ops (RMSNorm,
/// SwiGLU, attention, cross-entropy) without changing what it computes: loss and logits agree
/// with the unfused graph to 1e-12 relative in float64.
TEST_F(ModelGradient, FusionsPreserveForward) {
  loadParams();
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  auto expected = runF64(forward, args, loader());
  ASSERT_TRUE(expected) << ctx.takeDiagnostics();

  mlir::PassManager pm(&ctx.get());
  mlir::rp::buildFusionPipeline(pm);
  ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << ctx.takeDiagnostics();
  std::map<std::string, int> fused;
  forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  forward.walk([&](mlir::Operation *op) { ++fused[op->getName().getStringRef().str()]; });
  EXPECT_EQ(fused["graph.rms_norm"], 5);      // two per block and the final norm
  EXPECT_EQ(fused["graph.swiglu"], 2);
  EXPECT_EQ(fused["graph.attention"], 2);
  EXPECT_EQ(fused["graph.cross_entropy"], 1);
  EXPECT_EQ(fused["graph.softmax"], 0);

  auto got = runF64(forward, args, loader());
  ASSERT_TRUE(got) << ctx.takeDiagnostics();
  ASSERT_EQ(got->size(), expected->size());
  for (size_t r = 0; r < got->size(); ++r) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < (*got)[r].numElements(); ++i) {
      double d = at((*got)[r], i) - at((*expected)[r], i);
      num += d * d;
      den += at((*expected)[r], i) * at((*expected)[r], i);
    }
    EXPECT_LE(std::sqrt(num / den), 1e-12) << "result " << r;
  }
}

} // namespace
