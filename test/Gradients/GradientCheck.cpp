//===- GradientCheck.cpp - finite-difference checks of rp-autodiff ---------===//

#include "test/Gradients/GradientCheck.h"

#include "compiler/InitAll.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <sstream>

namespace rp::gradtest {

using ::rp::base::DType;

namespace {

mlir::DialectRegistry allDialects() {
  mlir::DialectRegistry registry;
  mlir::rp::registerAllDialects(registry);
  return registry;
}

} // namespace

TestContext::TestContext() : context(allDialects()) {
  context.loadAllAvailableDialects();
  handler.emplace(&context, [this](mlir::Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << diag.getLocation() << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      os << "  note: " << note << "\n";
    return mlir::success();
  });
}

TestContext::~TestContext() = default;

std::string TestContext::takeDiagnostics() {
  std::string out;
  out.swap(diagnostics);
  return out;
}

std::optional<std::vector<HostTensor>>
runF64(mlir::func::FuncOp func, const std::vector<HostTensor> &args, const ParamLoader &loadParam) {
  llvm::SmallVector<HostTensor> inputs;
  for (const HostTensor &a : args)
    inputs.push_back(a.clone());
  auto results =
      mlir::rp::graph::runFunction(func, inputs, loadParam, mlir::rp::graph::EvalPrecision::F64);
  if (mlir::failed(results))
    return std::nullopt;
  std::vector<HostTensor> out;
  for (HostTensor &t : *results)
    out.push_back(std::move(t));
  return out;
}

ParamLoader noParams() {
  return [](mlir::rp::graph::ParamOp param) -> mlir::FailureOr<HostTensor> {
    return param.emitError("the test provides no params");
  };
}

double at(const HostTensor &t, int64_t i) {
  switch (t.dtype()) {
  case DType::F64:
    return t.data<double>()[i];
  case DType::F32:
    return t.data<float>()[i];
  default:
    llvm::report_fatal_error("gradient test: expected a F32 or F64 tensor, got " +
                             llvm::Twine(t.typeString()));
  }
}

HostTensor toF64(const HostTensor &t) {
  if (t.dtype() != DType::F32)
    return t.clone();
  HostTensor out(DType::F64, t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.data<double>()[i] = t.data<float>()[i];
  return out;
}

HostTensor randomF64(const std::vector<int64_t> &shape, std::mt19937_64 &rng,
                     const std::function<double(std::mt19937_64 &)> &sample) {
  HostTensor t(DType::F64, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<double>()[i] = sample(rng);
  return t;
}

std::optional<double> centralDifference(double *slot,
                                        llvm::function_ref<std::optional<double>()> loss) {
  const double x = *slot, h = fdStep(x);
  *slot = x + h;
  std::optional<double> plus = loss();
  *slot = x - h;
  std::optional<double> minus = loss();
  *slot = x;
  if (!plus || !minus)
    return std::nullopt;
  // The step actually taken: (x + h) - (x - h) rounded, as the inputs saw it.
  return (*plus - *minus) / ((x + h) - (x - h));
}

double relativeError(const std::vector<double> &a, const std::vector<double> &b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-12);
}

std::string describe(const std::vector<double> &values, size_t limit) {
  std::ostringstream os;
  os.precision(10);
  os << "[";
  for (size_t i = 0; i < values.size() && i < limit; ++i)
    os << (i ? ", " : "") << values[i];
  if (values.size() > limit)
    os << ", ... (" << values.size() << " values)";
  os << "]";
  return os.str();
}

} // namespace rp::gradtest
