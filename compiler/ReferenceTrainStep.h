//===- ReferenceTrainStep.h - rp-ref --train's training function -*- C++ -*-===//
//
// rp-ref --train differentiates the model as the pipeline runs it: the layer functions of
// rp-group-layers (`graph.layers`), chained into one function whose `graph.load_param`s carry
// the index of their layer (`graph.layer`). rp-autodiff's gradPerLayer then returns a shared
// param's gradient per reading layer, which the reference sums in layer order as the
// executor does (dialects/Schedule/IR/SharedParams.h), so that the two agree bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef RP_COMPILER_REFERENCETRAINSTEP_H
#define RP_COMPILER_REFERENCETRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::rp {

/// Builds `@name` with the signature of `@forward`: the layer functions of the module's
/// `graph.layers` cloned in order, each argument bound to the model input of its
/// `graph.name` or to the earlier layer result of its `graph.boundary` ("<layer>#<result>"),
/// returning the last layer's results. Emits an error and fails when the module has no
/// `graph.layers`, a layer argument is bound to nothing, or the last layer's results do not
/// match `@forward`'s.
FailureOr<func::FuncOp> buildLayeredForward(ModuleOp module, func::FuncOp forward,
                                            StringRef name);

/// The whole-model training function `@output` of a module after rp-group-layers:
/// `@layered_forward` (above) differentiated by rp-autodiff with gradPerLayer (the loss, then
/// each trainable param's gradient, a shared one per reading layer in layer order). With
/// `seedArg`, the loss's seed is a last argument (rp-autodiff's seedArg) instead of 1.
FailureOr<func::FuncOp> buildReferenceTrainStep(ModuleOp module, StringRef output,
                                                bool seedArg);

} // namespace mlir::rp

#endif // RP_COMPILER_REFERENCETRAINSTEP_H
