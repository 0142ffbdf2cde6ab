//===- Passes.h - graph passes ----------------------------------*- C++ -*-===//
//
// The passes that rewrite `graph` IR (Passes.td) and the autodiff entry points the lowering
// and the reference train step call.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_GRAPH_PASSES_H
#define RP_PASSES_GRAPH_PASSES_H

#include "dialects/Graph/IR/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::rp {

#define GEN_PASS_DECL
#include "passes/Graph/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Graph/Passes.h.inc"

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
  /// Marks each op of the copied forward body with the unit attribute `rp.forward` (the
  /// forward/backward split of buildSplitGradientFunctions reads it and removes it).
  bool tagForwardOps = false;
};

/// Builds the reverse-mode function of `forward` next to it (see rp-autodiff); emits errors
/// and fails on a non-scalar loss, an op without a VJP on a gradient path, or a bad argument.
FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp forward, const AutodiffConfig &config);

/// A layer's gradient function split in two (passes/Graph/SplitGradient.cpp): `forward`
/// runs the layer's forward once and returns its results and the residuals the backward reads;
/// `backward` takes the layer's arguments, the residuals (in the order of its
/// `graph.residuals` attribute: the `forward` result index of each) and the cotangents or the
/// loss seed, and returns what the unsplit gradient function returns after its forward
/// results.
struct SplitGradient {
  func::FuncOp forward;
  func::FuncOp backward;
};

/// Builds the gradient function of `forward` (buildGradientFunction with `config`; in
/// cotangent mode the forward results are kept) and splits it into `<config.output>_fwd`
/// and `<config.output>_bwd` next to `forward`; the unsplit function is not kept. Ops free to
/// rematerialise (param loads, constants, broadcasts, pure non-contraction ops of params and
/// constants only, and reshapes of values the backward has anyway) are re-emitted in the
/// backward instead of saved.
/// Fails (with the autodiff errors, or when a name is taken) without changing the module.
FailureOr<SplitGradient> buildSplitGradientFunctions(func::FuncOp forward,
                                                     const AutodiffConfig &config);

/// The configuration rp-lower-to-schedule splits layer function `layer` with: gradients of
/// its float boundary arguments (`graph.boundary`) and of the params it reads, cotangent
/// arguments, or for the `last` layer (the loss) the seed argument.
AutodiffConfig layerGradientConfig(func::FuncOp layer, bool last);

/// The bytes layer `layer`'s forward keeps for its backward, for one micro-batch: what
/// `<layer>_bwd` of buildSplitGradientFunctions(layer, config) takes from the forward pass
/// and reads, i.e. its residual arguments and the layer arguments the reverse pass reads
/// (the saved tensors of PyTorch autograd). Computed by running that split under temporary
/// names and erasing it (the module is left as it was). Float tensors count `floatBytes`
/// bytes per element (the compute dtype; 0: their own type's size), others their type's
/// size (i1: one byte). Fails (after emitting) where the split fails.
FailureOr<int64_t> layerResidualBytes(func::FuncOp layer, const AutodiffConfig &config,
                                      int64_t floatBytes = 0);

} // namespace mlir::rp

#endif // RP_PASSES_GRAPH_PASSES_H
