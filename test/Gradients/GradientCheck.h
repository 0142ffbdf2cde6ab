//===- GradientCheck.h - finite-difference checks of rp-autodiff ---*- C++ -*-===//
//
// Shared pieces of the gradient tests: running a function on the float64 reference
// interpreter (dialects/Graph/Eval, EvalPrecision::F64), central finite differences of a
// scalar loss, and the error measures the tests assert on.
//
// The graph dialect has no f64 type: the IR uses f32 types and the interpreter evaluates every
// float value in double (storage dtype F64), so a gradient check in F64 is meaningful although
// constants the VJPs create (0.5, 1/sqrt(2), 1/count, ...) are f32-rounded attributes (a
// relative error of at most 2^-24 ~ 6e-8 in a factor).
//
// Finite differences (central): fd = (f(x + h) - f(x - h)) / (2 h), h = 1e-6 * max(1, |x|).
// With double arithmetic the truncation error is O(h^2 f''') ~ 1e-12 and the rounding error
// ~ eps |f| / h ~ 1e-10 |f|.
//
//===----------------------------------------------------------------------===//

#ifndef RP_TEST_GRADIENTS_GRADIENTCHECK_H
#define RP_TEST_GRADIENTS_GRADIENTCHECK_H

#include "dialects/Graph/Eval/Evaluator.h"
#include "base/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace rp::gradtest {

using ::rp::base::HostTensor;

/// Supplies a graph.param's value (as runFunction's loadParam).
using ParamLoader = std::function<mlir::FailureOr<HostTensor>(mlir::rp::graph::ParamOp)>;

/// An MLIR context with every rpc dialect loaded and a handler that collects diagnostics
/// (instead of printing them) so that failures can show them.
class TestContext {
public:
  TestContext();
  ~TestContext();
  mlir::MLIRContext &get() { return context; }
  /// The diagnostics emitted so far, one per line; clears them.
  std::string takeDiagnostics();

private:
  mlir::MLIRContext context;
  std::string diagnostics;
  std::optional<mlir::ScopedDiagnosticHandler> handler;
};

/// Runs `func` with EvalPrecision::F64. On failure returns nullopt (diagnostics went to the
/// context's handler).
std::optional<std::vector<HostTensor>>
runF64(mlir::func::FuncOp func, const std::vector<HostTensor> &args, const ParamLoader &loadParam);

/// A param loader that fails (functions without params).
ParamLoader noParams();

/// Element `i` of a float tensor (F32 or F64) as double.
double at(const HostTensor &t, int64_t i);
/// The tensor converted to F64 (floats) or a copy (others).
HostTensor toF64(const HostTensor &t);
/// A F64 tensor of `shape` with elements drawn from `sample`.
HostTensor randomF64(const std::vector<int64_t> &shape, std::mt19937_64 &rng,
                     const std::function<double(std::mt19937_64 &)> &sample);

/// The central finite-difference step for a value x: 1e-6 * max(1, |x|).
inline double fdStep(double x) { return 1e-6 * std::max(1.0, std::abs(x)); }

/// Central finite difference of the scalar `loss()` with respect to `*slot`:
/// (loss(x + h) - loss(x - h)) / (2 h), restoring `*slot` afterwards. `loss` returns nullopt
/// on failure (then so does this).
std::optional<double> centralDifference(double *slot,
                                        llvm::function_ref<std::optional<double>()> loss);

/// ||a - b||_2 / max(||b||_2, 1e-12) over equal-length vectors.
double relativeError(const std::vector<double> &a, const std::vector<double> &b);

/// "[v0, v1, ...]" with up to `limit` leading values, for messages.
std::string describe(const std::vector<double> &values, size_t limit = 8);

} // namespace rp::gradtest

#endif // RP_TEST_GRADIENTS_GRADIENTCHECK_H
