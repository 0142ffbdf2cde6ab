//===- Passes.h - rpc passes ------------------------------------*- C++ -*-===//

#ifndef RP_PASSES_PASSES_H
#define RP_PASSES_PASSES_H

#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Schedule/IR/ScheduleDialect.h"
#include "passes/OptionEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::rp {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Options of the autodiff transformation (see the rp-autodiff pass).
struct AutodiffConfig {
  std::string output = "train_step";
  SmallVector<unsigned> wrtArgs;
  bool cotangentArgs = false;
  /// Gradients only for the trainable params the function reads (module order), instead of
  /// every trainable param of the module: the per-layer backward functions of a pipeline.
  bool usedParamsOnly = false;
  /// With cotangentArgs: also return the forward results first (rp-autodiff does); off, the
  /// results are the gradients only.
  bool forwardResults = true;
  /// One gradient result per `graph.layer` value (an i64 attribute on `graph.load_param`)
  /// for a trainable param whose loads carry several values, ascending, each with a
  /// `graph.grad_layer` result attribute, instead of one summed result: the per-reader
  /// gradients of a shared param, which the pipeline sums on the host in layer order
  /// (rp-ref --train follows that order). Loads without the attribute count as layer -1.
  bool gradPerLayer = false;
  /// Without cotangentArgs: take the loss's cotangent (the seed, a scalar of the loss type)
  /// as one extra last argument named "loss_seed" instead of seeding with 1 (the runtime's
  /// token weighting and loss scaling; docs/DECISIONS.md).
  bool seedArg = false;
};

/// Builds the reverse-mode function of `forward` next to it (see rp-autodiff); emits errors
/// and fails on a non-scalar loss, an op without a VJP on a gradient path, or a bad argument.
FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp forward, const AutodiffConfig &config);

} // namespace mlir::rp

#endif // RP_PASSES_PASSES_H
